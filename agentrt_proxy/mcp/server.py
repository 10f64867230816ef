"""The host-facing MCP server session over a byte stream pair (the proxy's stdin/stdout).

It speaks the legacy handshake era (2024-11-05 … 2025-11-25) and, beside it, the 2026-07-28
revision (``modern.py``): the first request decides, once. ``initialize`` opens a handshake
session, served exactly as before the modern era existed; a request whose ``_meta`` names a
protocol version opens a modern one (``server/discover`` answered, every request's envelope
checked, every result shaped). A ``server/discover`` without that envelope, and every unknown
method, is answered at once with -32601 (the Python SDK 2.x client probes first and waits
10 s on silence). It handles requests concurrently, and is the only writer of the output
stream. What tools exist and what a
call does belong to the application (``ToolHandler``).
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any, Protocol

import anyio
import anyio.abc

from agentrt_proxy.errors import AgentrtError
from agentrt_proxy.mcp import jsonrpc, modern, tasks_wire
from agentrt_proxy.mcp.bounded_lines import BoundedLines, Oversized
from agentrt_proxy.mcp.host_requests import HostRequests
from agentrt_proxy.mcp.jsonrpc import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    PARSE_ERROR,
    Batch,
    DecodeFailure,
    ErrorResponse,
    Invalid,
    Notification,
    Request,
    RequestId,
    Response,
)
from agentrt_proxy.mcp.levels import LOG_LEVELS, is_level, passes_level
from agentrt_proxy.mcp.spans import SpanError, find_span, iter_elements

__all__ = [
    "LATEST_PROTOCOL_VERSION",
    "SUPPORTED_PROTOCOL_VERSIONS",
    "CallContext",
    "JsonRpcError",
    "ServerSession",
    "ToolHandler",
    "negotiate_version",
    "raw_arguments",
]

log = logging.getLogger(__name__)

SUPPORTED_PROTOCOL_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
LATEST_PROTOCOL_VERSION = "2025-11-25"
BATCH_VERSION = "2025-03-26"  # the only revision that allows JSON-RPC batches
READ_CHUNK = 1 << 16
# The longest line the host may send. The proxy's ``max_message_bytes`` setting bounds the
# upstream side; this is its host-side counterpart, to be wired to the same setting.
MAX_HOST_MESSAGE_BYTES = 16 << 20
LEGACY, MODERN = "legacy", "modern"  # the session's era (``ServerSession.era``)


def negotiate_version(requested: object) -> str:
    """Echo a legacy version the host asked for; otherwise offer the latest."""
    if isinstance(requested, str) and requested in SUPPORTED_PROTOCOL_VERSIONS:
        return requested
    return LATEST_PROTOCOL_VERSION


def raw_arguments(request_text: str) -> str | None:
    """The exact wire text of ``params.arguments`` in a request, or ``None`` if absent."""
    span = find_span(request_text, ["params", "arguments"])
    return None if span is None else request_text[span[0] : span[1]]


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
    _session: ServerSession | None = None
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


class ServerSession:
    """Serve one host over ``receive`` (its requests) and ``send`` (protocol only)."""

    def __init__(
        self,
        receive: anyio.abc.ByteReceiveStream,
        send: anyio.abc.ByteSendStream,
        handler: ToolHandler,
        server_info: dict[str, Any],
        *,
        instructions: str | None = None,
        on_eof: Callable[[], Awaitable[None] | None] | None = None,
        max_message_bytes: int = MAX_HOST_MESSAGE_BYTES,
    ) -> None:
        self._receive = receive
        self._send = send
        self._handler = handler
        self._server_info = server_info
        self._instructions = instructions
        self._on_eof = on_eof
        self._max_message_bytes = max_message_bytes
        self._write_lock = anyio.Lock()
        self._in_flight: dict[tuple[type, RequestId], CallContext] = {}
        self._ids: set[tuple[type, RequestId]] = set()  # every request not yet answered
        self._writer_broken = False
        self.protocol_version: str | None = None  # the handshake's version; None in the modern era
        self.era: str | None = None  # LEGACY or MODERN once the first request has said which
        self.log_level: str | None = None  # the host's logging/setLevel; None: every message goes
        self.initialized = anyio.Event()  # set at notifications/initialized
        self.input_closed = anyio.Event()  # set when the host's stream reaches EOF
        self.host_requests = HostRequests(self.send)  # a server's sampling or elicitation, relayed

    # ------------------------------------------------------------------ output

    async def send(self, message: Any) -> None:
        """Write one message as one line; serialised, and silent once the host is gone."""
        data = jsonrpc.encode(message) + b"\n"
        async with self._write_lock:
            if self._writer_broken:
                return
            try:
                await self._send.send(data)
            except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
                self._writer_broken = True

    async def notify(self, method: str, params: dict[str, Any] | None = None) -> None:
        """Send the host one notification (a relayed log message, a resource update…).

        Nothing goes before ``initialize`` is answered, and a log message only at or above the
        level the host chose with ``logging/setLevel``: the session keeps what the protocol
        promises whoever calls it. A modern session gets none: the revision sends change
        notifications only on a ``subscriptions/listen`` stream, which is not served."""
        if self.protocol_version is None:
            return
        if method == "notifications/message" and not passes_level((params or {}).get("level"), self.log_level):
            return
        await self.send(jsonrpc.notification(method, params))

    # ------------------------------------------------------------------- input

    async def run(self) -> None:
        """Read until EOF, then let in-flight requests finish and their answers be written."""
        buffer = BoundedLines(self._max_message_bytes)
        async with anyio.create_task_group() as tg:
            while True:
                try:
                    chunk = await self._receive.receive(READ_CHUNK)
                except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
                    break
                for line in buffer.feed(chunk):
                    await self._dispatch_line(line, tg)
            rest = buffer.finish()
            if rest is not None:
                await self._dispatch_line(rest, tg)
            self.input_closed.set()
            if self._on_eof is not None:
                maybe = self._on_eof()
                if maybe is not None:
                    await maybe

    async def end_input(self) -> None:
        """Stop reading as if the host's stream had ended: ``run`` returns once the requests
        in flight are answered (for a stream whose ``aclose`` ends a pending read)."""
        await self._receive.aclose()

    async def _dispatch_line(self, line: bytes | Oversized, tg: anyio.abc.TaskGroup) -> None:
        if isinstance(line, Oversized):
            # Never decoded: answered by the id its beginning carries (none: id null, as JSON-RPC
            # answers a request whose id cannot be read).
            reason = f"the message is larger than {self._max_message_bytes} bytes"
            await self.send(jsonrpc.error(jsonrpc.oversized_request_id(line.head), INVALID_REQUEST, reason))
            return
        decoded = jsonrpc.decode_line(line)
        if decoded is None:
            return
        if isinstance(decoded, DecodeFailure):
            if decoded.request_id is not None:
                # Valid JSON too deep to decode: the request is still answered, by its own id.
                await self.send(jsonrpc.error(decoded.request_id, INVALID_REQUEST, decoded.reason))
            else:
                await self.send(jsonrpc.error(None, PARSE_ERROR, jsonrpc.error_message(PARSE_ERROR)))
            return
        if isinstance(decoded, Batch):
            await self._dispatch_batch(decoded, tg)
            return
        answer = await self._take(decoded, tg, self._answer_single)
        if answer is not None:
            await self.send(answer)

    async def _answer_single(self, req: Request) -> None:
        answer = await self._answer(req)
        if answer is not None:
            await self.send(answer)

    async def _take(
        self,
        msg: Request | Notification | Response | ErrorResponse | Invalid,
        tg: anyio.abc.TaskGroup,
        start: Callable[[Request], Coroutine[Any, Any, None]],
    ) -> dict[str, Any] | None:
        """Handle one message; return an immediate answer, or start a task for a request."""
        if isinstance(msg, Invalid):
            if msg.is_request or msg.id is not None:
                return jsonrpc.error(msg.id, INVALID_REQUEST, msg.reason)
            return None  # e.g. a stray response: nothing to answer
        if isinstance(msg, (Response, ErrorResponse)):
            self.host_requests.answered(msg)  # an answer to a request of ours, or nothing to match
            return None
        if isinstance(msg, Notification):
            self._notification(msg)
            return None
        key = (type(msg.id), msg.id)
        if key in self._ids:
            return jsonrpc.error(msg.id, INVALID_REQUEST, "request id already in use")
        self._ids.add(key)
        tg.start_soon(start, msg)
        return None

    async def _dispatch_batch(self, batch: Batch, tg: anyio.abc.TaskGroup) -> None:
        if self.protocol_version != BATCH_VERSION or not batch.items:
            await self.send(jsonrpc.error(None, INVALID_REQUEST, jsonrpc.error_message(INVALID_REQUEST)))
            return
        answers: list[dict[str, Any]] = []
        requests: list[Request] = []
        for (start, end), item in zip(iter_elements(batch.text, 0), batch.items, strict=True):
            msg = jsonrpc.classify(item, batch.text[start:end])
            if isinstance(msg, Request) and msg.method == "initialize":
                answers.append(jsonrpc.error(msg.id, INVALID_REQUEST, "initialize must not be batched"))
                continue
            if isinstance(msg, Request):
                key = (type(msg.id), msg.id)
                if key in self._ids:
                    answers.append(jsonrpc.error(msg.id, INVALID_REQUEST, "request id already in use"))
                else:
                    self._ids.add(key)
                    requests.append(msg)
                continue
            immediate = await self._take(msg, tg, self._answer_single)
            if immediate is not None:
                answers.append(immediate)

        async def run_batch() -> None:
            results: list[dict[str, Any] | None] = [None] * len(requests)

            async def one(i: int, req: Request) -> None:
                results[i] = await self._answer(req)

            async with anyio.create_task_group() as inner:
                for i, req in enumerate(requests):
                    inner.start_soon(one, i, req)
            answers.extend(r for r in results if r is not None)
            if answers:
                await self.send(answers)

        tg.start_soon(run_batch)

    def _notification(self, msg: Notification) -> None:
        if msg.method == "notifications/initialized":
            self.initialized.set()
        elif msg.method == "notifications/cancelled":
            request_id = (msg.params or {}).get("requestId")
            if isinstance(request_id, (str, int)) and not isinstance(request_id, bool):
                ctx = self._in_flight.get((type(request_id), request_id))
                if ctx is not None:
                    ctx.cancelled.set()
        # Every other notification (progress from the host, roots changes…) is ignored.

    # --------------------------------------------------------------- requests

    def _era_of(self, req: Request) -> str | None:
        """The era the session serves ``req`` in, settled by the first request that says."""
        if self.era is None:
            if req.method == "initialize":
                self.era = LEGACY
            elif modern.has_envelope(req.params):
                self.era = MODERN
        return self.era

    async def _answer(self, req: Request) -> dict[str, Any] | None:
        """The answer to one request, or ``None`` if the host cancelled it."""
        try:
            if self._era_of(req) == MODERN:
                return await self._answer_modern(req)
            if req.method == "ping":
                return jsonrpc.result(req.id, {})
            if req.method == "initialize":
                return jsonrpc.result(req.id, await self._initialize(req))
            if req.method in ("tools/list", "tools/call") and self.protocol_version is None:
                # The lifecycle: nothing but ping before initialize (a tool is never run for a
                # host that has not said which revision it speaks).
                raise JsonRpcError(INVALID_REQUEST, jsonrpc.MSG_NOT_INITIALIZED)
            if req.method == "tools/list":
                tools = self._handler.list_tools()
                if inspect.isawaitable(tools):  # the application may still be connecting upstreams
                    tools = await tools
                if self._tasks_2025():
                    tools = tasks_wire.with_task_support(tools)
                return jsonrpc.result(req.id, {"tools": tools})
            if req.method in tasks_wire.METHODS_2025 and self._tasks_2025():
                params = req.params or {}
                return jsonrpc.result(req.id, await self._handler.task_request(  # type: ignore[attr-defined]
                    tasks_wire.TASKS_VERSION_2025, req.method, params))
            if req.method == "tools/call":
                called = await self._call(req, self.protocol_version or LATEST_PROTOCOL_VERSION)
                return None if called is None else jsonrpc.result(req.id, called)
            if req.method == "logging/setLevel":
                return jsonrpc.result(req.id, self._set_level(req))
            extra = getattr(self._handler, "handle", None)  # the application's other methods, if any
            if extra is not None and req.method in getattr(self._handler, "methods", ()):
                if self.protocol_version is None:
                    raise JsonRpcError(INVALID_REQUEST, jsonrpc.MSG_NOT_INITIALIZED)
                return jsonrpc.result(req.id, await extra(req.method, req.params or {}))
            raise JsonRpcError(METHOD_NOT_FOUND, jsonrpc.error_message(METHOD_NOT_FOUND), req.method)
        except JsonRpcError as exc:
            return jsonrpc.error(req.id, exc.code, exc.message, exc.data)
        except Exception:
            # Never a traceback to the host; the application logs its own failures.
            log.exception("internal error answering %s", req.method)
            return jsonrpc.error(req.id, INTERNAL_ERROR, jsonrpc.error_message(INTERNAL_ERROR))
        finally:
            self._ids.discard((type(req.id), req.id))

    async def _answer_modern(self, req: Request) -> dict[str, Any] | None:
        """A request of the 2026-07-28 revision: its envelope checked, its result shaped."""
        if req.method == "initialize":
            raise _rejected(modern.initialize_refused(req.params))
        envelope = modern.read_envelope(req.params)
        if isinstance(envelope, modern.Rejection):
            raise _rejected(envelope)
        result: Any  # a dict, or a server's own text (a ``Raw``) from the passthrough
        extra = getattr(self._handler, "handle", None)
        if req.method == "server/discover":
            capabilities = await self._capabilities(modern_era=True)
            result = modern.discover_result(capabilities, self._server_info, self._instructions)
        elif req.method == "tools/list":
            tools = self._handler.list_tools()
            result = {"tools": await tools if inspect.isawaitable(tools) else tools}
        elif req.method == "tools/call":
            result = await self._call(req, envelope.version)
            if result is None:
                return None
        elif req.method in tasks_wire.METHODS_EXTENSION and self._serves_tasks():
            refusal = modern.missing_capability(envelope, tasks_wire.TASKS_EXTENSION)
            if refusal is not None:
                raise _rejected(refusal)
            result = await self._handler.task_request(  # type: ignore[attr-defined]
                tasks_wire.TASKS_EXTENSION, req.method, req.params or {})
        elif req.method == tasks_wire.LISTEN_METHOD and self._serves_tasks():
            listened = await self._listen(req, envelope)
            if listened is None:
                return None
            result = listened
        elif (
            extra is not None
            and req.method not in modern.REMOVED_METHODS
            and req.method in getattr(self._handler, "methods", ())
        ):
            result = await extra(req.method, req.params or {})
        else:
            raise JsonRpcError(METHOD_NOT_FOUND, jsonrpc.error_message(METHOD_NOT_FOUND), req.method)
        return jsonrpc.result(req.id, modern.shape_result(req.method, result or {}, self._server_info))

    def _serves_tasks(self) -> bool:
        return bool(getattr(self._handler, "serves_tasks", False))

    def _tasks_2025(self) -> bool:
        """Whether this handshake session speaks 2025-11-25's tasks (the one revision that has them)."""
        return self.protocol_version == tasks_wire.TASKS_VERSION_2025 and self._serves_tasks()

    async def _capabilities(self, *, modern_era: bool = False, version: str | None = None) -> dict[str, Any]:
        # The handshake era is told when the offered tools change (a server's tool no longer
        # matching its pin); a session of the modern revision gets no unsolicited notifications,
        # its lists carry ttlMs instead.
        capabilities: dict[str, Any] = {"tools": {"listChanged": not modern_era}, "logging": {}}
        if self._serves_tasks():
            if modern_era:
                capabilities["extensions"] = {tasks_wire.TASKS_EXTENSION: {}}
            elif version == tasks_wire.TASKS_VERSION_2025:
                capabilities["tasks"] = dict(tasks_wire.CAPABILITIES_2025)
        offered = getattr(self._handler, "capabilities", None)  # what the application adds (resources…)
        if offered is not None:
            more = offered()
            capabilities.update(await more if inspect.isawaitable(more) else more)
        return capabilities

    async def _initialize(self, req: Request) -> dict[str, Any]:
        params = req.params or {}
        version = negotiate_version(params.get("protocolVersion"))
        capabilities = await self._capabilities(version=version)
        self.protocol_version = version
        declared = params.get("capabilities")
        self.host_requests.capabilities = declared if isinstance(declared, dict) else {}
        result: dict[str, Any] = {
            "protocolVersion": self.protocol_version,
            "capabilities": capabilities,
            "serverInfo": self._server_info,
        }
        if self._instructions:
            result["instructions"] = self._instructions
        return result

    def _set_level(self, req: Request) -> dict[str, Any]:
        if self.protocol_version is None:
            raise JsonRpcError(INVALID_REQUEST, jsonrpc.MSG_NOT_INITIALIZED)
        level = (req.params or {}).get("level")
        if not is_level(level):
            raise JsonRpcError(INVALID_PARAMS, f"logging/setLevel needs a level, one of: {', '.join(LOG_LEVELS)}")
        self.log_level = level
        return {}

    async def _call(self, req: Request, version: str) -> dict[str, Any] | None:
        """The handler's ``CallToolResult``, or ``None`` if the host withdrew the request."""
        params = req.params or {}
        name = params.get("name")
        if not isinstance(name, str):
            raise JsonRpcError(INVALID_PARAMS, "tools/call needs a tool name")
        try:
            arguments_text = raw_arguments(req.text)
        except SpanError as exc:  # pragma: no cover - the line already decoded as JSON
            raise JsonRpcError(INVALID_PARAMS, "the arguments cannot be read") from exc
        meta = params.get("_meta")
        meta = meta if isinstance(meta, dict) else {}
        token = meta.get("progressToken")
        if not (isinstance(token, (str, int)) and not isinstance(token, bool)):
            token = None
        task = params.get("task") if version == tasks_wire.TASKS_VERSION_2025 and self._tasks_2025() else None
        if task is not None and not isinstance(task, dict):
            raise JsonRpcError(INVALID_PARAMS, "params.task must be an object")
        ctx = CallContext(
            request_id=req.id,
            progress_token=token,
            meta=meta,
            protocol_version=version,
            task=task,
            _session=self,
        )
        key = (type(req.id), req.id)
        self._in_flight[key] = ctx
        try:
            result = await self._handler.call_tool(name, arguments_text, ctx)
        finally:
            ctx._done = True
            self._in_flight.pop(key, None)
        if ctx.cancelled.is_set():
            return None  # the host withdrew the request: it gets no answer
        return result


    async def _listen(self, req: Request, envelope: modern.Envelope) -> dict[str, Any] | None:
        """``subscriptions/listen`` (2026-07-28): task status notifications for the task ids it
        names (nothing else is offered: the tool list is fixed, decision 0016). Acknowledged
        first; then open until the host cancels it (no answer) or the proxy stops (a closing
        result)."""
        params = req.params or {}
        try:
            task_ids = tasks_wire.listened_task_ids(params)
        except ValueError as exc:
            raise JsonRpcError(INVALID_PARAMS, str(exc)) from exc
        if task_ids is not None:
            refusal = modern.missing_capability(envelope, tasks_wire.TASKS_EXTENSION)
            if refusal is not None:
                raise _rejected(refusal)
        tag = {tasks_wire.SUBSCRIPTION_ID_KEY: req.id}

        async def send(method: str, notification: dict[str, Any]) -> None:
            meta = notification.get("_meta")
            merged = {**meta, **tag} if isinstance(meta, dict) else dict(tag)
            await self.send(jsonrpc.notification(method, {**notification, "_meta": merged}))

        handler: Any = self._handler
        agreed = await handler.listen_tasks(task_ids, send) if task_ids else []
        ctx = CallContext(request_id=req.id, progress_token=None, meta={}, protocol_version=envelope.version)
        key = (type(req.id), req.id)
        self._in_flight[key] = ctx
        try:
            acknowledged: dict[str, Any] = {"taskIds": agreed} if task_ids is not None else {}
            await self.send(jsonrpc.notification(tasks_wire.LISTEN_ACKNOWLEDGED,
                                                 {"_meta": dict(tag), "notifications": acknowledged}))
            async with anyio.create_task_group() as tg:

                async def until(event: anyio.Event) -> None:
                    await event.wait()
                    tg.cancel_scope.cancel()

                tg.start_soon(until, ctx.cancelled)
                tg.start_soon(until, self.input_closed)
                closing = getattr(handler, "stopping", None)
                if isinstance(closing, anyio.Event):
                    tg.start_soon(until, closing)
        finally:
            if task_ids:
                handler.unlisten_tasks(send)
            self._in_flight.pop(key, None)
        if ctx.cancelled.is_set():
            return None
        return {"_meta": dict(tag)}


def _rejected(rejection: modern.Rejection) -> JsonRpcError:
    return JsonRpcError(rejection.code, rejection.message, rejection.data)
