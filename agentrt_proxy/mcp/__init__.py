"""MCP on the wire: JSON-RPC, framing, the host-facing server session, upstream clients.

Knows nothing of gates, policies or what the model is told.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

# Imported on first use (PEP 562), so ``mcp.spawn`` and ``mcp.spec`` load without anyio
# and the protocol code: ``serve`` starts the stdio servers before importing them (0007).
_WHERE = {
    "client": ("Connection", "ListedTool", "ProgressCallback", "open_connection"),
    "errors": ("ConnectError", "McpError", "ServerSpecError"),
    "framing": ("LineBuffer",),
    "jsonrpc": ("RawJSON",),
    "results": ("INPUT_REQUIRED", "InputRequired", "cap_text", "map_result", "mapped_text"),
    "server": (
        "LATEST_PROTOCOL_VERSION", "SUPPORTED_PROTOCOL_VERSIONS", "CallContext", "JsonRpcError",
        "ServerSession", "ToolHandler", "negotiate_version", "raw_arguments",
    ),
    "spec": (
        "DEFAULT_CONNECT_TIMEOUT_NS", "DEFAULT_MAX_CONTENT_BYTES", "MAX_RESPONSE_BODY_BYTES", "MAX_TOOL_PAGES",
        "MAX_TOOLS", "STDERR_TAIL_BYTES", "ServerSpec", "child_env",
    ),
    "sse": ("SSEParser",),
    "stdio_streams": ("open_stdio",),
}  # fmt: skip
_MODULE_OF = {name: module for module, names in _WHERE.items() for name in names}

if TYPE_CHECKING:
    from .client import Connection, ListedTool, ProgressCallback, open_connection
    from .errors import ConnectError, McpError, ServerSpecError
    from .framing import LineBuffer
    from .jsonrpc import RawJSON
    from .results import INPUT_REQUIRED, InputRequired, cap_text, map_result, mapped_text
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
    from .spec import (
        DEFAULT_CONNECT_TIMEOUT_NS,
        DEFAULT_MAX_CONTENT_BYTES,
        MAX_RESPONSE_BODY_BYTES,
        MAX_TOOL_PAGES,
        MAX_TOOLS,
        STDERR_TAIL_BYTES,
        ServerSpec,
        child_env,
    )
    from .sse import SSEParser
    from .stdio_streams import open_stdio


def __getattr__(name: str) -> Any:
    module = _MODULE_OF.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


__all__ = [
    "DEFAULT_CONNECT_TIMEOUT_NS",
    "DEFAULT_MAX_CONTENT_BYTES",
    "INPUT_REQUIRED",
    "LATEST_PROTOCOL_VERSION",
    "MAX_RESPONSE_BODY_BYTES",
    "MAX_TOOLS",
    "MAX_TOOL_PAGES",
    "STDERR_TAIL_BYTES",
    "SUPPORTED_PROTOCOL_VERSIONS",
    "CallContext",
    "ConnectError",
    "Connection",
    "InputRequired",
    "JsonRpcError",
    "LineBuffer",
    "ListedTool",
    "McpError",
    "ProgressCallback",
    "RawJSON",
    "SSEParser",
    "ServerSession",
    "ServerSpec",
    "ServerSpecError",
    "ToolHandler",
    "cap_text",
    "child_env",
    "map_result",
    "mapped_text",
    "negotiate_version",
    "open_connection",
    "open_stdio",
    "raw_arguments",
]
