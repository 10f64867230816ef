"""MCP on the wire: JSON-RPC, framing, the host-facing server session, upstream clients.

Knows nothing of gates, policies or what the model is told.
"""

from __future__ import annotations

from .framing import LineBuffer
from .jsonrpc import RawJSON
from .server import (
    LATEST_PROTOCOL_VERSION,
    SUPPORTED_PROTOCOL_VERSIONS,
    CallContext,
    JsonRpcError,
    ServerSession,
    ToolHandler,
    negotiate_version,
    raw_arguments,
)
from .sse import SSEParser
from .stdio_streams import open_stdio

__all__ = [
    "LATEST_PROTOCOL_VERSION",
    "SUPPORTED_PROTOCOL_VERSIONS",
    "CallContext",
    "JsonRpcError",
    "LineBuffer",
    "RawJSON",
    "SSEParser",
    "ServerSession",
    "ToolHandler",
    "negotiate_version",
    "open_stdio",
    "raw_arguments",
]
