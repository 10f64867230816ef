"""What the host-facing session and the application it serves share.

The application's ``ToolHandler``, the ``CallContext`` a tool call runs with, the
``JsonRpcError`` a handler raises to answer an error, and the handshake's protocol versions
(``handshake``'s, named here too).
"""

from __future__ import annotations

from collections.abc import Awaitable
from dataclasses import dataclass, field
from typing import Any, Protocol

import anyio

from agentrt_proxy.errors import AgentrtError
from agentrt_proxy.mcp import jsonrpc, modern
from agentrt_proxy.mcp.handshake import LATEST_PROTOCOL_VERSION, SUPPORTED_PROTOCOL_VERSIONS, negotiate_version
from agentrt_proxy.mcp.jsonrpc import RequestId
from agentrt_proxy.mcp.spans import find_span

__all__ = [
    "LATEST_PROTOCOL_VERSION",
    "SUPPORTED_PROTOCOL_VERSIONS",
    "CallContext",
    "JsonRpcError",
    "Sender",
    "ToolHandler",
    "negotiate_version",
    "raw_arguments",
    "rejected",
]


def raw_arguments(request_text: str) -> str | None:
    """The exact wire text of ``params.arguments`` in a request, or ``None`` if absent."""
    span = find_span(request_text, ["params", "arguments"])
    return None if span is None else request_text[span[0] : span[1]]


class Sender(Protocol):
    """Where a call's progress goes: the session's one writer of the host's stream."""

    async def send(self, message: Any) -> None: ...


@dataclass
class CallContext:
    """What a tool handler knows about the ``tools/call`` it serves."""

    request_id: RequestId
    progress_token: str | int | None
    meta: dict[str, Any]
    protocol_version: str
    cancelled: anyio.Event = field(default_factory=anyio.Event)
    # 2025-11-25: the ``params.task`` the host asked the call to run as (None: a plain call).
    task: dict[str, Any] | None = None
    _session: Sender | None = None
    _done: bool = False

    @property
    def live(self) -> bool:
        """True until the call is answered or the host cancels it."""
        return not self._done and not self.cancelled.is_set()

    async def report_progress(self, progress: float, total: float | None = None, message: str | None = None) -> None:
        """Send ``notifications/progress`` if the host asked for progress and still waits."""
        if self.progress_token is None or not self.live or self._session is None:
            return
        params: dict[str, Any] = {"progressToken": self.progress_token, "progress": progress}
        if total is not None:
            params["total"] = total
        if message is not None:
            params["message"] = message
        await self._session.send(jsonrpc.notification("notifications/progress", params))


class ToolHandler(Protocol):
    """What the application serves. It may also serve tasks (``serves_tasks`` true, with
    ``async task_request(era, method, params) -> result`` for ``tasks/*`` and
    ``listen_tasks(ids, send) / unlisten_tasks(send)`` for the extension's notifications), and
    offer ``methods`` (a collection of method
    names), ``async handle(method, params) -> result`` answering them (raise ``JsonRpcError``
    to answer an error), and ``capabilities() -> dict`` (or awaitable) merged into the
    ``initialize`` result's capabilities."""

    def list_tools(self) -> list[dict[str, Any]] | Awaitable[list[dict[str, Any]]]: ...

    async def call_tool(self, name: str, arguments_text: str | None, ctx: CallContext) -> dict[str, Any]:
        """Return a ``CallToolResult`` dict (a ``canonical.encoder.Raw`` is written verbatim)."""
        ...


class JsonRpcError(AgentrtError):
    """Raise from a handler (or inside the session) to answer with a JSON-RPC error. Whose fault
    it is the code says (-32602: the host's request; -32603: the proxy's own state), so it sits
    at the root of the tree rather than under one branch."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code, self.message, self.data = code, message, data


def rejected(rejection: modern.Rejection) -> JsonRpcError:
    """A modern envelope's refusal, raised as the error that answers it."""
    return JsonRpcError(rejection.code, rejection.message, rejection.data)
