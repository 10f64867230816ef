"""The answer to each request the host sends, in the era the session serves.

The first request decides the era, once: ``initialize`` opens a handshake session (served as
every legacy revision says: nothing but ping before it); a request whose ``_meta`` names a
protocol version opens a modern one (2026-07-28, ``modern.py``: every request's envelope
checked, every result shaped). What tools exist and what a call does belong to the application
(``ToolHandler``); tasks, where it serves them, are the ``tasks_wire`` revision's own.
"""

from __future__ import annotations

import inspect
import logging
from typing import Any, Protocol

import anyio

from agentrt_proxy.mcp import _messages as M
from agentrt_proxy.mcp import handshake, jsonrpc, modern, tasks_wire
from agentrt_proxy.mcp._host_requests import HostRequests
from agentrt_proxy.mcp._server_listen import listen
from agentrt_proxy.mcp._serving import (
    LATEST_PROTOCOL_VERSION,
    CallContext,
    JsonRpcError,
    ToolHandler,
    raw_arguments,
    rejected,
)
from agentrt_proxy.mcp.jsonrpc import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    Request,
    RequestId,
)
from agentrt_proxy.mcp.levels import LOG_LEVELS, is_level
from agentrt_proxy.mcp.spans import SpanError

__all__ = ["LEGACY", "MODERN", "AnsweredSession", "Answering"]

log = logging.getLogger("agentrt_proxy.mcp.server")  # the session's log, whichever helper writes it

LEGACY, MODERN = "legacy", "modern"  # the session's era (``ServerSession.era``)


class AnsweredSession(Protocol):
    """The session state the answers read and settle."""

    protocol_version: str | None  # the handshake's version; None in the modern era
    era: str | None
    log_level: str | None

    @property
    def handler(self) -> ToolHandler: ...

    @property
    def host_requests(self) -> HostRequests: ...

    @property
    def input_closed(self) -> anyio.Event: ...

    async def send(self, message: Any) -> None: ...


class Answering:
    """Answers one request at a time for ``session`` (many run concurrently)."""

    def __init__(self, session: AnsweredSession, server_info: dict[str, Any], instructions: str | None) -> None:
        self._session = session
        self._server_info = server_info
        self._instructions = instructions
        self.in_flight: dict[tuple[type, RequestId], CallContext] = {}  # what a cancellation reaches

    def cancel(self, request_id: RequestId) -> None:
        """The host withdrew ``request_id``: the call or listen serving it hears so."""
        ctx = self.in_flight.get((type(request_id), request_id))
        if ctx is not None:
            ctx.cancelled.set()

    def _era_of(self, req: Request) -> str | None:
        """The era the session serves ``req`` in, settled by the first request that says."""
        session = self._session
        if session.era is None:
            if req.method == "initialize":
                session.era = LEGACY
            elif modern.has_envelope(req.params):
                session.era = MODERN
        return session.era

    async def answer(self, req: Request) -> dict[str, Any] | None:
        """The answer to one request, or ``None`` if the host cancelled it."""
        try:
            if self._era_of(req) == MODERN:
                return await self._answer_modern(req)
            return await self._answer_legacy(req)
        except JsonRpcError as exc:
            return jsonrpc.error(req.id, exc.code, exc.message, exc.data)
        except Exception:
            # Never a traceback to the host; the application logs its own failures.
            log.exception(M.LOG_INTERNAL_ERROR, req.method)
            return jsonrpc.error(req.id, INTERNAL_ERROR, jsonrpc.error_message(INTERNAL_ERROR))

    async def _answer_legacy(self, req: Request) -> dict[str, Any] | None:
        handler, version = self._session.handler, self._session.protocol_version
        if req.method == "ping":
            return jsonrpc.result(req.id, {})
        if req.method == "initialize":
            return jsonrpc.result(req.id, await self._initialize(req))
        if req.method in ("tools/list", "tools/call") and version is None:
            # The lifecycle: nothing but ping before initialize (a tool is never run for a
            # host that has not said which revision it speaks).
            raise JsonRpcError(INVALID_REQUEST, jsonrpc.MSG_NOT_INITIALIZED)
        if req.method == "tools/list":
            tools = handler.list_tools()
            if inspect.isawaitable(tools):  # the application may still be connecting upstreams
                tools = await tools
            if self._tasks_2025():
                tools = tasks_wire.with_task_support(tools)
            return jsonrpc.result(req.id, {"tools": tools})
        if req.method in tasks_wire.METHODS_2025 and self._tasks_2025():
            params = req.params or {}
            task_answer = await handler.task_request(  # type: ignore[attr-defined]
                tasks_wire.TASKS_VERSION_2025, req.method, params
            )
            return jsonrpc.result(req.id, task_answer)
        if req.method == "tools/call":
            called = await self._call(req, version or LATEST_PROTOCOL_VERSION)
            return None if called is None else jsonrpc.result(req.id, called)
        if req.method == "logging/setLevel":
            return jsonrpc.result(req.id, self._set_level(req))
        extra = getattr(handler, "handle", None)  # the application's other methods, if any
        if extra is not None and req.method in getattr(handler, "methods", ()):
            if version is None:
                raise JsonRpcError(INVALID_REQUEST, jsonrpc.MSG_NOT_INITIALIZED)
            return jsonrpc.result(req.id, await extra(req.method, req.params or {}))
        raise JsonRpcError(METHOD_NOT_FOUND, jsonrpc.error_message(METHOD_NOT_FOUND), req.method)

    async def _answer_modern(self, req: Request) -> dict[str, Any] | None:
        """A request of the 2026-07-28 revision: its envelope checked, its result shaped."""
        if req.method == "initialize":
            raise rejected(modern.initialize_refused(req.params))
        envelope = modern.read_envelope(req.params)
        if isinstance(envelope, modern.Rejection):
            raise rejected(envelope)
        handler = self._session.handler
        result: Any  # a dict, or a server's own text (a ``Raw``) from the passthrough
        extra = getattr(handler, "handle", None)
        if req.method == "server/discover":
            capabilities = await self._capabilities(modern_era=True)
            result = modern.discover_result(capabilities, self._server_info, self._instructions)
        elif req.method == "tools/list":
            tools = handler.list_tools()
            result = {"tools": await tools if inspect.isawaitable(tools) else tools}
        elif req.method == "tools/call":
            result = await self._call(req, envelope.version)
            if result is None:
                return None
        elif req.method in tasks_wire.METHODS_EXTENSION and self._serves_tasks():
            refusal = modern.missing_capability(envelope, tasks_wire.TASKS_EXTENSION)
            if refusal is not None:
                raise rejected(refusal)
            result = await handler.task_request(  # type: ignore[attr-defined]
                tasks_wire.TASKS_EXTENSION, req.method, req.params or {}
            )
        elif req.method == tasks_wire.LISTEN_METHOD and self._serves_tasks():
            listened = await listen(self._session, handler, self.in_flight, req, envelope)
            if listened is None:
                return None
            result = listened
        elif (
            extra is not None
            and req.method not in modern.REMOVED_METHODS
            and req.method in getattr(handler, "methods", ())
        ):
            result = await extra(req.method, req.params or {})
        else:
            raise JsonRpcError(METHOD_NOT_FOUND, jsonrpc.error_message(METHOD_NOT_FOUND), req.method)
        return jsonrpc.result(req.id, modern.shape_result(req.method, result or {}, self._server_info))

    def _serves_tasks(self) -> bool:
        return bool(getattr(self._session.handler, "serves_tasks", False))

    def _tasks_2025(self) -> bool:
        """Whether this handshake session speaks 2025-11-25's tasks (the one revision that has them)."""
        return self._session.protocol_version == tasks_wire.TASKS_VERSION_2025 and self._serves_tasks()

    async def _offered(self) -> dict[str, Any]:
        """What the application adds to the capabilities (resources…); it may wait for them."""
        offered = getattr(self._session.handler, "capabilities", None)
        if offered is None:
            return {}
        more = offered()
        added: dict[str, Any] = await more if inspect.isawaitable(more) else more
        return added

    async def _capabilities(self, *, modern_era: bool = False) -> dict[str, Any]:
        return handshake.capabilities(self._serves_tasks(), await self._offered(), modern_era=modern_era)

    async def _initialize(self, req: Request) -> dict[str, Any]:
        # The one source of the answer, which ``serve`` may also give before the session starts.
        settled, result = handshake.initialize_result(
            req.params or {}, self._server_info, self._instructions, self._serves_tasks(), await self._offered()
        )
        self._session.protocol_version = settled.version
        self._session.host_requests.capabilities = settled.host_capabilities
        return result

    def _set_level(self, req: Request) -> dict[str, Any]:
        if self._session.protocol_version is None:
            raise JsonRpcError(INVALID_REQUEST, jsonrpc.MSG_NOT_INITIALIZED)
        level = (req.params or {}).get("level")
        if not is_level(level):
            raise JsonRpcError(INVALID_PARAMS, M.SET_LEVEL_NEEDS_LEVEL.format(levels=", ".join(LOG_LEVELS)))
        self._session.log_level = level
        return {}

    async def _call(self, req: Request, version: str) -> dict[str, Any] | None:
        """The handler's ``CallToolResult``, or ``None`` if the host withdrew the request."""
        params = req.params or {}
        name = params.get("name")
        if not isinstance(name, str):
            raise JsonRpcError(INVALID_PARAMS, M.CALL_NEEDS_NAME)
        try:
            arguments_text = raw_arguments(req.text)
        except SpanError as exc:  # pragma: no cover - the line already decoded as JSON
            raise JsonRpcError(INVALID_PARAMS, M.ARGUMENTS_UNREADABLE) from exc
        meta = params.get("_meta")
        meta = meta if isinstance(meta, dict) else {}
        token = meta.get("progressToken")
        if not (isinstance(token, (str, int)) and not isinstance(token, bool)):
            token = None
        task = params.get("task") if version == tasks_wire.TASKS_VERSION_2025 and self._tasks_2025() else None
        if task is not None and not isinstance(task, dict):
            raise JsonRpcError(INVALID_PARAMS, M.TASK_NOT_OBJECT)
        ctx = CallContext(
            request_id=req.id,
            progress_token=token,
            meta=meta,
            protocol_version=version,
            task=task,
            _session=self._session,
        )
        key = (type(req.id), req.id)
        self.in_flight[key] = ctx
        try:
            result = await self._session.handler.call_tool(name, arguments_text, ctx)
        finally:
            ctx._done = True
            self.in_flight.pop(key, None)
        if ctx.cancelled.is_set():
            return None  # the host withdrew the request: it gets no answer
        return result
