"""The upstream client session, over either transport: handshake, listing, calls.

Ids are proxy-owned integers. ``open_connection`` bounds connect + ``initialize`` +
the whole ``tools/list`` by one deadline; the session outlives it. A call's outcome
is classified for the gate (``outcomes.ToolOutcome``); nothing here raises to the
model.

An HTTP server that no longer knows the session (``SessionExpired``: restarted, or it
timed the session out) did not process the request: the session initializes a new one
and sends the request once more. If that fails, the request was not sent.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import anyio
import anyio.abc

from agentrt_proxy.canonical.durations import format_go
from agentrt_proxy.canonical.encoder import Raw
from agentrt_proxy.canonical.quoting import go_escape, go_quote
from agentrt_proxy.mcp import jsonrpc
from agentrt_proxy.mcp.errors import (
    AuthorizationRefused,
    ConnectError,
    HTTPStatusError,
    McpError,
    MessageTooLarge,
    NotSentError,
    SessionClosed,
    SessionExpired,
    TransportError,
)
from agentrt_proxy.mcp.framing import EDGE_BYTES, Oversize
from agentrt_proxy.mcp.jsonrpc import METHOD_NOT_FOUND, DecodeFailure, ErrorResponse, Notification, Request, Response
from agentrt_proxy.mcp.listing import ListedTool, listed_page
from agentrt_proxy.mcp.outcomes import HttpStatus, NoAnswer, NoAnswerKind, NotSent, Refused, RpcError, ToolOutcome
from agentrt_proxy.mcp.oversize import answer_id, too_long, whole_characters
from agentrt_proxy.mcp.results import map_result
from agentrt_proxy.mcp.spans import top_level_id
from agentrt_proxy.mcp.spec import (
    CLIENT_INFO,
    CLIENT_PROTOCOL_VERSION,
    DEFAULT_MAX_CONTENT_BYTES,
    MAX_TOOL_PAGES,
    MAX_TOOLS,
    ServerSpec,
    child_env,
)
from agentrt_proxy.mcp.transport import Transport

__all__ = ["Connection", "ListedTool", "ProgressCallback", "open_connection"]

ProgressCallback = Callable[[float, float | None, str | None], None]

# What a server may ask of its client. This client declares no client capabilities (but those a
# server's ``forward`` names, relayed by ``request_handlers``: docs/hosts.md, "forward") and offers
# none of them: there is no model to sample, no user to ask and no roots behind the proxy.
NOT_OFFERED = ("sampling/createMessage", "elicitation/create", "roots/list")
MSG_NOT_OFFERED = "the agentrt-proxy client offers no sampling, elicitation or roots: {method} is refused"
# The capability a server's request needs, as ``forward`` and the client's capabilities name it.
FORWARDED_BY = {"sampling/createMessage": "sampling", "elicitation/create": "elicitation"}
# A relay of a server's request: (server's method, its params) -> the answer's ``result`` or
# ``error`` member, as a dict ({"result": ...} or {"error": {"code", "message"}}).
RequestHandler = Callable[[str, dict[str, Any] | None], Awaitable[dict[str, Any]]]


def _number(value: Any) -> float | None:
    """A progress or total as the server sent it, if it is a finite number (not a boolean)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    number = float(value)
    return number if math.isfinite(number) else None


class _Undecodable:
    def __init__(self, reason: str, raw: bytes) -> None:
        self.reason, self.raw = reason, raw


class _Attempt:
    """Whether a call's request may have reached the server yet: a call that times out while a
    new session is being started was never sent."""

    def __init__(self) -> None:
        self.out = False


class _Pending:
    def __init__(self, on_progress: ProgressCallback | None) -> None:
        self.done = anyio.Event()
        self.answer: Response | ErrorResponse | _Undecodable | None = None
        self.failure: TransportError | None = None
        self.on_progress = on_progress


class Connection:
    """A live session with one upstream server."""

    def __init__(self, spec: ServerSpec, transport: Transport, tg: anyio.abc.TaskGroup, cap: int) -> None:
        self.spec = spec
        self.server = spec.name
        self._transport = transport
        self._tg = tg
        self._cap = cap
        self._next_id = 0
        self._pending: dict[int, _Pending] = {}
        self._dead: str | None = None
        self.closed = anyio.Event()  # set when the session ends: what a supervisor waits for
        self._renewing = anyio.Lock()  # one new session at a time, however many requests found it gone
        self._stale = False  # the server forgot the session and no new one could be started yet
        self.tools: list[ListedTool] = []
        self.protocol_version: str | None = None
        self.server_info: dict[str, Any] = {}
        self.capabilities: dict[str, Any] = {}  # what the server's initialize result offers
        self.instructions: str | None = None  # the initialize result's instructions (the scanner reads them)
        # What the layers above do with the server's other notifications, by method (a log
        # message, a changed list, a resource update); called on the event loop, must not block.
        self.notification_handlers: dict[str, Callable[[Notification], None]] = {}
        # Who relays the server's requests its ``forward`` names, by method (shared across
        # restarts like the notification handlers); a request with none is refused.
        self.request_handlers: dict[str, RequestHandler] = {}
        if hasattr(transport, "is_answered"):
            transport.is_answered = self._is_answered  # an HTTP stream that ends early is resumed

    # -------------------------------------------------------------- incoming

    def _is_answered(self, msg_id: int) -> bool:
        pending = self._pending.get(msg_id)
        return pending is None or pending.answer is not None or pending.failure is not None

    def _deliver(self, data: bytes | Oversize) -> None:
        if isinstance(data, Oversize):
            self._oversize(data)
            return
        decoded = jsonrpc.decode_line(data)
        if decoded is None or isinstance(decoded, jsonrpc.Batch):
            return  # never sent a batch
        if isinstance(decoded, jsonrpc.Invalid):
            # An answer whose envelope says two things (a repeated key) is refused, not ignored.
            pending = self._pending.get(decoded.id) if isinstance(decoded.id, int) else None
            if pending is not None and pending.answer is None and not decoded.is_request:
                pending.answer = _Undecodable(decoded.reason, whole_characters(data[:EDGE_BYTES]))
                pending.done.set()
            return  # nothing sensible to match another invalid message to
        if isinstance(decoded, DecodeFailure):
            edges = (data[:EDGE_BYTES], data[-EDGE_BYTES:])  # a message refused by its weight: never scanned
            msg_id = answer_id(*edges) if decoded.undecoded else top_level_id(data.decode("utf-8", "replace"))
            pending = self._pending.get(msg_id) if isinstance(msg_id, int) else None
            if pending is not None and pending.answer is None:
                kept = whole_characters(data[:EDGE_BYTES]) if decoded.undecoded else data
                pending.answer = _Undecodable(decoded.reason, kept)
                pending.done.set()
            return
        if isinstance(decoded, Response | ErrorResponse):
            pending = self._pending.get(decoded.id) if isinstance(decoded.id, int) else None
            if pending is not None and pending.answer is None:
                pending.answer = decoded
                pending.done.set()
            return
        if isinstance(decoded, Request):
            self._tg.start_soon(self._answer_server_request, decoded)
            return
        self._notification(decoded)

    def _oversize(self, line: Oversize) -> None:
        """A message past max_message_bytes, skipped by the transport (the server keeps running):
        the answer to the call it names is refused, as an answer that broke the boundary, naming
        its size once its end has come; when it names none, every call in flight fails as a
        protocol failure. Other calls go on."""
        msg_id = answer_id(line.head, line.tail)
        if msg_id is not None:  # (reported twice, a line named at its beginning is named at its end)
            pending = self._pending.get(msg_id)
            if pending is not None and pending.answer is None and pending.failure is None:
                # What the record keeps of it: its first bytes.
                pending.answer = _Undecodable(too_long(line), whole_characters(line.head))
                pending.done.set()
            return
        if line.tail is None:
            return  # its end may still name the call
        reason = f"the server sent a message of {line.size} bytes, over the limit of {line.limit} (max_message_bytes)"
        for pending in self._pending.values():
            if pending.answer is None and pending.failure is None:
                pending.failure = TransportError(f"{reason}, naming no request it answers")
                pending.done.set()

    def _notification(self, note: Notification) -> None:
        if note.method != "notifications/progress":
            handler = self.notification_handlers.get(note.method)
            if handler is not None:
                handler(note)
            return
        if not note.params:
            return
        token = note.params.get("progressToken")
        # The token is this request's own id (``_request``): a call's progress reaches only its
        # own callback, whatever token another call or the host uses.
        pending = self._pending.get(token) if isinstance(token, int) and not isinstance(token, bool) else None
        progress = _number(note.params.get("progress"))
        if pending is None or pending.on_progress is None or progress is None:
            return
        message = note.params.get("message")
        pending.on_progress(progress, _number(note.params.get("total")), message if isinstance(message, str) else None)

    async def _answer_server_request(self, req: Request) -> None:
        # Answered at once, whatever the method (a server waiting on its client would hold the
        # call that made it ask until that call timed out), but a request the server's
        # ``forward`` names while a relay is set: that one waits for the host's answer.
        relay = self.request_handlers.get(req.method) if FORWARDED_BY.get(req.method) in self.spec.forward else None
        if req.method == "ping":
            answer = jsonrpc.result(req.id, {})
        elif relay is not None:  # waits on the host: the server asked for exactly that
            relayed = await relay(req.method, req.params)
            answer = {"jsonrpc": "2.0", "id": req.id, **relayed}
        elif req.method in NOT_OFFERED:
            answer = jsonrpc.error(req.id, METHOD_NOT_FOUND, MSG_NOT_OFFERED.format(method=req.method), req.method)
        else:
            answer = jsonrpc.error(req.id, METHOD_NOT_FOUND, jsonrpc.error_message(METHOD_NOT_FOUND), req.method)
        with contextlib.suppress(TransportError):
            await self._transport.send(jsonrpc.encode(answer), expects_answer=False, timeout=5)

    def _on_closed(self, reason: str) -> None:
        if self._dead is None:
            self._dead = reason
        self.closed.set()
        for pending in list(self._pending.values()):
            if pending.answer is None and pending.failure is None:
                pending.failure = SessionClosed(self._dead)
                pending.done.set()

    # -------------------------------------------------------------- requests

    async def _request(
        self,
        method: str,
        params: dict[str, Any] | None,
        *,
        on_progress: ProgressCallback | None = None,
        renewal: bool = False,
        attempt: _Attempt | None = None,
    ) -> tuple[int, _Pending]:
        """Send a request; return its id and pending slot (the caller awaits ``done``)."""
        if self._dead is not None:
            raise SessionClosed(self._dead)
        self._next_id += 1
        msg_id = self._next_id
        if on_progress is not None:
            params = {**(params or {}), "_meta": {"progressToken": msg_id}}
        pending = _Pending(on_progress)
        self._pending[msg_id] = pending
        data = jsonrpc.encode(jsonrpc.request(msg_id, method, params))
        try:
            if renewal:  # the new session's own handshake: sent as it is, never renewed itself
                await self._transport.send(data, expects_answer=True, timeout=None)
            else:
                await self._send_in_session(data, attempt or _Attempt())
        except TransportError as exc:
            if pending.answer is None:
                pending.failure = exc
                pending.done.set()
        except BaseException:  # cancelled before the caller had the id: nobody will wait on the slot
            self._pending.pop(msg_id, None)
            raise
        return msg_id, pending

    async def _send_in_session(self, data: bytes, attempt: _Attempt) -> None:
        """Send a request in a live session: a request the server refused for a session it no
        longer knows was not processed, so it goes once more, on a new session. The same refusal
        in the session just begun is the server's answer to a request it was sent whole twice
        (``HTTPStatusError``, never not-sent: a server that forgets a new session keeps no promise
        about what it processed); no loop."""
        if self._stale or self._renewing.locked():
            await self._renew(None)
        try:
            attempt.out = True
            await self._transport.send(data, expects_answer=True, timeout=None)
        except SessionExpired as exc:
            attempt.out = False
            await self._renew(exc.session_id)
            attempt.out = True
            try:
                await self._transport.send(data, expects_answer=True, timeout=None)
            except SessionExpired as again:
                raise HTTPStatusError(f"{again}, again in the session just begun", again.status) from again

    async def _renew(self, expired: str | None) -> None:
        """Start a new session after the server forgot ``expired`` (None: wait for a renewal under
        way, or retry one that failed). Raises ``NotSentError`` when no new session could be had."""
        async with self._renewing:
            current = getattr(self._transport, "session_id", None)
            if not self._stale and (expired is None or current != expired):
                return  # another request renewed it meanwhile
            self._stale = True
            if hasattr(self._transport, "session_id"):
                self._transport.session_id = None  # type: ignore[attr-defined]  # the new initialize goes without it
                self._transport.protocol_version = None  # type: ignore[attr-defined]
            try:
                with anyio.fail_after(self.spec.effective_connect_timeout_ns / 1e9):
                    await self._initialize(renewal=True)
            except (TransportError, TimeoutError) as exc:
                detail = str(exc) or "timed out"
                raise NotSentError(f"the server ended the session and no new one could be started: {detail}") from exc
            self._stale = False

    async def _roundtrip(self, method: str, params: dict[str, Any] | None, *, renewal: bool = False) -> Response:
        """A request whose error answer or failure is an exception (handshake, listing)."""
        msg_id, pending = await self._request(method, params, renewal=renewal)
        try:
            await pending.done.wait()
        finally:
            self._pending.pop(msg_id, None)
        if pending.failure is not None:
            raise pending.failure
        answer = pending.answer
        if isinstance(answer, ErrorResponse):
            raise TransportError(f"the server answered {method} with error {answer.code}: {go_escape(answer.message)}")
        if isinstance(answer, _Undecodable):
            raise TransportError(f"the answer to {method} cannot be read: {answer.reason}")
        assert isinstance(answer, Response)
        return answer

    async def request(
        self, method: str, params: dict[str, Any] | None, timeout_ns: int
    ) -> Response | ErrorResponse:
        """One request passed through for the layers above (resources, prompts, completion):
        the server's answer, a JSON-RPC error included; ``TransportError`` when there is none
        (the session ended, the answer cannot be read, or ``timeout_ns`` passed)."""
        msg_id: int | None = None
        pending: _Pending | None = None
        try:
            with anyio.move_on_after(timeout_ns / 1e9) as scope:
                msg_id, pending = await self._request(method, params)
                await pending.done.wait()
        finally:
            if msg_id is not None:
                self._pending.pop(msg_id, None)
        if scope.cancelled_caught or pending is None:
            if msg_id is not None and self._dead is None:
                with contextlib.suppress(RuntimeError):  # the connection is being torn down
                    self._tg.start_soon(self._cancel_upstream, msg_id, timeout_ns)
            raise TransportError(f"{method}: timed out after {format_go(timeout_ns)}")
        if pending.failure is not None:
            raise pending.failure
        answer = pending.answer
        if isinstance(answer, _Undecodable):
            raise TransportError(f"the answer to {method} cannot be read: {answer.reason}")
        assert isinstance(answer, Response | ErrorResponse)
        return answer

    async def _notify(self, method: str, params: dict[str, Any] | None = None) -> None:
        await self._transport.send(
            jsonrpc.encode(jsonrpc.notification(method, params)), expects_answer=False, timeout=5
        )

    # ------------------------------------------------------------ handshake

    async def _initialize(self, *, renewal: bool = False) -> None:
        answer = await self._roundtrip(
            "initialize",
            {
                "protocolVersion": CLIENT_PROTOCOL_VERSION,
                "capabilities": {name: {} for name in self.spec.forward},
                "clientInfo": dict(CLIENT_INFO),
            },
            renewal=renewal,
        )
        result = answer.result if isinstance(answer.result, dict) else {}
        version = result.get("protocolVersion")
        self.protocol_version = version if isinstance(version, str) else CLIENT_PROTOCOL_VERSION
        if hasattr(self._transport, "protocol_version"):
            self._transport.protocol_version = self.protocol_version  # type: ignore[attr-defined]
        info = result.get("serverInfo")
        self.server_info = info if isinstance(info, dict) else {}
        capabilities = result.get("capabilities")
        self.capabilities = capabilities if isinstance(capabilities, dict) else {}
        instructions = result.get("instructions")
        self.instructions = instructions if isinstance(instructions, str) else None
        await self._notify("notifications/initialized")
        listen = getattr(self._transport, "listen", None)
        if callable(listen):
            listen()  # the standalone GET stream: what the server says unasked reaches _deliver

    async def list_tools(self, timeout_ns: int) -> list[ListedTool]:
        """List the tools again (the server sent ``notifications/tools/list_changed``); ``tools``
        holds the new listing. ``TransportError`` when it fails or takes over ``timeout_ns``."""
        with anyio.move_on_after(timeout_ns / 1e9) as scope:
            tools = await self._list_tools()
        if scope.cancelled_caught:
            raise TransportError(f"tools/list: timed out after {format_go(timeout_ns)}")
        self.tools = tools
        return tools

    async def _list_tools(self) -> list[ListedTool]:
        if "tools" not in self.capabilities:
            return []  # a server that offers no tools (only resources or prompts, say) is not asked for them
        tools: list[ListedTool] = []
        names: set[str] = set()
        cursors: set[str] = set()
        cursor: str | None = None
        for _page in range(MAX_TOOL_PAGES):
            answer = await self._roundtrip("tools/list", {"cursor": cursor} if cursor is not None else None)
            tools.extend(listed_page(answer, names))
            if len(tools) > MAX_TOOLS:
                raise TransportError(f"more than {MAX_TOOLS} tools")
            nxt = answer.result.get("nextCursor") if isinstance(answer.result, dict) else None
            if not isinstance(nxt, str) or nxt == "":
                return tools
            if nxt in cursors:
                raise TransportError(f"the cursor {go_quote(nxt)} repeats")
            cursors.add(nxt)
            cursor = nxt
        raise TransportError(f"more than {MAX_TOOL_PAGES} pages")

    # ------------------------------------------------------------------ calls

    async def call_tool(
        self,
        name: str,
        arguments_text: str | None,
        timeout_ns: int | None,
        *,
        on_progress: ProgressCallback | None = None,
    ) -> ToolOutcome:
        """Call ``name`` upstream with ``arguments_text`` as given; classify what came back."""
        prefix = f"mcp: server {go_quote(self.server)}: tool {go_quote(name)}"
        if self._dead is not None:  # the session ended before this request: nothing was written
            return NotSent(f"{prefix}: {go_escape(self._dead)}")
        params: dict[str, Any] = {"name": name}
        if arguments_text is not None and arguments_text.strip():
            params["arguments"] = Raw(arguments_text)
        msg_id: int | None = None
        pending: _Pending | None = None
        attempt = _Attempt()
        timeout = None if not timeout_ns else timeout_ns / 1e9
        try:
            with anyio.move_on_after(timeout) as scope:
                try:
                    msg_id, pending = await self._request(
                        "tools/call", params, on_progress=on_progress, attempt=attempt
                    )
                except SessionClosed as exc:  # raised before writing: the session had already ended
                    return NotSent(f"{prefix}: {go_escape(str(exc))}")
                await pending.done.wait()
        finally:
            if msg_id is not None:
                self._pending.pop(msg_id, None)
        if scope.cancelled_caught or pending is None:
            assert timeout_ns
            if not attempt.out:  # the time ran out while a new session was being started
                return NotSent(f"{prefix}: timed out after {format_go(timeout_ns)} starting a new session")
            if msg_id is not None and self._dead is None:
                with contextlib.suppress(RuntimeError):  # the connection is being torn down
                    self._tg.start_soon(self._cancel_upstream, msg_id, timeout_ns)
                drop = getattr(self._transport, "drop_partial", None)
                if drop is not None:  # a line still arriving for it never outlives the call
                    drop(msg_id, alone=not self._pending)
            return NoAnswer("timeout", f"{prefix}: timed out after {format_go(timeout_ns)}")
        if isinstance(pending.failure, NotSentError):
            return NotSent(f"{prefix}: {go_escape(str(pending.failure))}")
        if isinstance(pending.failure, HTTPStatusError):  # the server refused it: it may have acted first
            return HttpStatus(pending.failure.status, f"{prefix}: {go_escape(str(pending.failure))}")
        if isinstance(pending.failure, MessageTooLarge) and pending.failure.answered:
            return Refused(f"{pending.failure} (max_message_bytes)", b"")  # the server answered
        if pending.failure is not None:
            kind: NoAnswerKind = "dropped" if isinstance(pending.failure, SessionClosed) else "protocol"
            return NoAnswer(kind, f"{prefix}: {go_escape(str(pending.failure))}")
        answer = pending.answer
        if isinstance(answer, ErrorResponse):
            return RpcError(answer.code, answer.message, answer.data)
        if isinstance(answer, _Undecodable):
            return Refused(answer.reason, answer.raw)
        assert isinstance(answer, Response)
        return map_result(self.server, name, answer.result, answer.text, self._cap)

    async def _cancel_upstream(self, msg_id: int, timeout_ns: int) -> None:
        with contextlib.suppress(TransportError), anyio.move_on_after(5):
            await self._notify(
                "notifications/cancelled", {"requestId": msg_id, "reason": f"timed out after {format_go(timeout_ns)}"}
            )

    # ------------------------------------------------------------------ close

    @property
    def alive(self) -> bool:
        return self._dead is None

    @property
    def ended(self) -> str | None:
        """Why the session ended (None while it lives)."""
        return self._dead

    @property
    def exit_status(self) -> int | None:
        """A stdio server's exit status once it has exited and been reaped (None before, or over HTTP)."""
        return getattr(self._transport, "returncode", None)

    async def aclose(self) -> None:
        """End the session; safe twice and while a call is in flight (it fails at once)."""
        self._on_closed("connection closed")
        await self._transport.aclose()


def _make_transport(spec: ServerSpec, tg: anyio.abc.TaskGroup) -> Transport:
    # Lazy: only the transport this server speaks loads (a stdio start never loads http.client and ssl).
    if spec.command:
        from agentrt_proxy.mcp.stdio import StdioTransport

        return StdioTransport(spec.name, spec.command, child_env(spec), tg, max_message_bytes=spec.max_message_bytes)
    from agentrt_proxy.mcp.http import HTTPTransport

    assert spec.endpoint is not None
    return HTTPTransport(spec.name, spec.endpoint, dict(spec.headers), max_body=spec.max_message_bytes, auth=spec.auth)


@contextlib.asynccontextmanager
async def open_connection(
    spec: ServerSpec,
    *,
    timeout_ns: int | None = None,
    max_content_bytes: int = DEFAULT_MAX_CONTENT_BYTES,
) -> AsyncIterator[Connection]:
    """Connect, initialize and list every tool within ``timeout_ns`` (default: the spec's).

    Raises ``ServerSpecError`` for a bad entry and ``ConnectError`` naming the server and
    the phase (``connect`` or ``list tools``) otherwise. The connection is closed on
    leaving the block.
    """
    spec.validate()
    bound_ns = timeout_ns or spec.effective_connect_timeout_ns
    failure: ConnectError | None = None
    # The failure is raised outside the task group, so callers see it unwrapped.
    async with anyio.create_task_group() as tg:
        transport = _make_transport(spec, tg)
        conn = Connection(spec, transport, tg, max_content_bytes)
        phase = "connect"
        error: BaseException | None = None
        with anyio.move_on_after(bound_ns / 1e9) as scope:
            try:
                await transport.start(conn._deliver, conn._on_closed)
                await conn._initialize()
                phase = "list tools"
                conn.tools = await conn._list_tools()
            except (TransportError, McpError, OSError) as exc:
                error = exc
            except BaseException:
                if not scope.cancel_called:  # the caller's cancellation: propagate it, the server closed
                    with anyio.CancelScope(shield=True):
                        await conn.aclose()
                raise
        if scope.cancelled_caught or error is not None:
            with anyio.CancelScope(shield=True):
                await conn.aclose()
                detail = await transport.failure_detail()
            q = go_quote(spec.name)
            if scope.cancelled_caught:
                failure = ConnectError(f"mcp: server {q}: {phase}: timed out after {format_go(bound_ns)}{detail}")
            else:
                refusal = str(error) if isinstance(error, AuthorizationRefused) else None
                failure = ConnectError(
                    f"mcp: server {q}: {phase}: {go_escape(str(error))}{detail}", authorization=refusal
                )
            tg.cancel_scope.cancel()
        else:
            try:
                yield conn
            finally:
                with anyio.CancelScope(shield=True):
                    await conn.aclose()
                    tg.cancel_scope.cancel()
    if failure is not None:
        raise failure
