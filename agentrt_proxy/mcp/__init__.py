"""MCP on the wire: JSON-RPC, framing, the host-facing server session, upstream clients.

Knows nothing of gates, policies or what the model is told; imports nothing of the program but
``canonical`` and ``errors``.

Each public name is imported from its module on first use (PEP 562): ``serve`` imports
``mcp.spawn`` to start the stdio servers before anyio and the protocol code load (decision 0007),
and importing a submodule runs this file first, so it imports nothing itself.

A module whose name begins with an underscore is the package's own (as h11 marks its modules):
nothing outside ``mcp`` imports it; what callers need of it is named here. The public modules
(``client``, ``server``, ``jsonrpc``, ``outcomes``, ``tasks_wire``…) are the ones other layers use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agentrt_proxy.mcp._client_asks import FORWARDED_BY
    from agentrt_proxy.mcp._framing import LineBuffer
    from agentrt_proxy.mcp._sse import SSEParser
    from agentrt_proxy.mcp.client import Connection, ListedTool, ProgressCallback, open_connection
    from agentrt_proxy.mcp.errors import ConnectError, McpError, ServerSpecError
    from agentrt_proxy.mcp.results import INPUT_REQUIRED, InputRequired, cap_text, map_result, mapped_text
    from agentrt_proxy.mcp.server import (
        LATEST_PROTOCOL_VERSION,
        SUPPORTED_PROTOCOL_VERSIONS,
        CallContext,
        JsonRpcError,
        ServerSession,
        ToolHandler,
        negotiate_version,
        raw_arguments,
    )
    from agentrt_proxy.mcp.spec import (
        DEFAULT_CONNECT_TIMEOUT_NS,
        DEFAULT_MAX_CONTENT_BYTES,
        MAX_RESPONSE_BODY_BYTES,
        MAX_TOOL_PAGES,
        MAX_TOOLS,
        STDERR_TAIL_BYTES,
        ServerSpec,
        child_env,
    )
    from agentrt_proxy.mcp.stdio_streams import open_stdio

_CLIENT = {"Connection", "ListedTool", "ProgressCallback", "open_connection"}
_ERRORS = {"ConnectError", "McpError", "ServerSpecError"}
_RESULTS = {"INPUT_REQUIRED", "InputRequired", "cap_text", "map_result", "mapped_text"}
_SERVER = {
    "LATEST_PROTOCOL_VERSION", "SUPPORTED_PROTOCOL_VERSIONS", "CallContext", "JsonRpcError", "ServerSession",
    "ToolHandler", "negotiate_version", "raw_arguments",
}  # fmt: skip
_SPEC = {
    "DEFAULT_CONNECT_TIMEOUT_NS", "DEFAULT_MAX_CONTENT_BYTES", "MAX_RESPONSE_BODY_BYTES", "MAX_TOOL_PAGES",
    "MAX_TOOLS", "STDERR_TAIL_BYTES", "ServerSpec", "child_env",
}  # fmt: skip


def __getattr__(name: str) -> Any:
    # Lazy (see the module's description): the cold start imports mcp.spawn before anyio may load.
    value = _from_its_module(name)
    globals()[name] = value
    return value


def _from_its_module(name: str) -> Any:
    if name == "FORWARDED_BY":
        from agentrt_proxy.mcp._client_asks import FORWARDED_BY

        return FORWARDED_BY
    if name in _CLIENT:
        from agentrt_proxy.mcp import client

        return getattr(client, name)
    if name in _ERRORS:
        from agentrt_proxy.mcp import errors

        return getattr(errors, name)
    if name == "LineBuffer":
        from agentrt_proxy.mcp._framing import LineBuffer

        return LineBuffer
    if name in _RESULTS:
        from agentrt_proxy.mcp import results

        return getattr(results, name)
    if name in _SERVER:
        from agentrt_proxy.mcp import server

        return getattr(server, name)
    if name in _SPEC:
        from agentrt_proxy.mcp import spec

        return getattr(spec, name)
    if name == "SSEParser":
        from agentrt_proxy.mcp._sse import SSEParser

        return SSEParser
    if name == "open_stdio":
        from agentrt_proxy.mcp.stdio_streams import open_stdio

        return open_stdio
    from agentrt_proxy.mcp._messages import NO_ATTRIBUTE

    raise AttributeError(NO_ATTRIBUTE.format(module=__name__, name=name))


__all__ = [
    "DEFAULT_CONNECT_TIMEOUT_NS",
    "DEFAULT_MAX_CONTENT_BYTES",
    "FORWARDED_BY",
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
