"""The upstream client session, over either transport: handshake, listing, calls.

Ids are proxy-owned integers. ``open_connection`` bounds connect + ``initialize`` +
the whole ``tools/list`` by one deadline; the session outlives it. A call's outcome
is classified for the gate (``outcomes.ToolOutcome``); nothing here raises to the
model.

The connection owns three helpers, one concern each: the ``Inbox`` matches what the server
sends to the requests in flight (``_client_inbox``), ``ServerAsks`` answers the server's own
requests and hands its notifications on (``_client_asks``), and ``Renewal`` sends a request in
a live session, starting a new one when an HTTP server forgot the old (``_renewal``).
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable
from typing import Any

import anyio
import anyio.abc

from agentrt_proxy.canonical.durations import format_go
from agentrt_proxy.canonical.encoder import Raw
from agentrt_proxy.canonical.quoting import go_escape, go_quote
from agentrt_proxy.mcp import _messages as M
from agentrt_proxy.mcp import jsonrpc
from agentrt_proxy.mcp._client_asks import RequestHandler, ServerAsks
from agentrt_proxy.mcp._client_inbox import Inbox, PendingAnswer, ProgressCallback, Undecodable
from agentrt_proxy.mcp._framing import Oversize
from agentrt_proxy.mcp._listing import ListedTool, list_every_tool
from agentrt_proxy.mcp._renewal import Renewal, SendAttempt
from agentrt_proxy.mcp._transport import Transport
from agentrt_proxy.mcp.errors import (
    AuthorizationRefused,
    ConnectError,
    HTTPStatusError,
    McpError,
    MessageTooLarge,
    NotSentError,
    SessionClosed,
    TransportError,
)
from agentrt_proxy.mcp.jsonrpc import ErrorResponse, Notification, Request, Response
from agentrt_proxy.mcp.outcomes import HttpStatus, NoAnswer, NoAnswerKind, NotSent, Refused, RpcError, ToolOutcome
from agentrt_proxy.mcp.results import map_result
from agentrt_proxy.mcp.spec import (
    CLIENT_INFO,
    CLIENT_PROTOCOL_VERSION,
    DEFAULT_MAX_CONTENT_BYTES,
    ServerSpec,
    child_env,
)

__all__ = ["Connection", "ListedTool", "ProgressCallback", "open_connection"]


class Connection:
    """A live session with one upstream server."""

    def __init__(self, spec: ServerSpec, transport: Transport, tg: anyio.abc.TaskGroup, cap: int) -> None:
        self.spec = spec
        self.server = spec.name
        self._transport = transport
        self._tg = tg
        self._cap = cap
        self._dead: str | None = None
        self.closed = anyio.Event()  # set when the session ends: what a supervisor waits for
        self.tools: list[ListedTool] = []
        self.protocol_version: str | None = None
        self.server_info: dict[str, Any] = {}
        self.capabilities: dict[str, Any] = {}  # what the server's initialize result offers
        self.instructions: str | None = None  # the initialize result's instructions (the scanner reads them)
        self._asks = ServerAsks(spec.forward, self._send_unanswered)
        self._inbox = Inbox(self._server_request, self._asks.notified)
        self._renewal = Renewal(transport, spec.effective_connect_timeout_ns, self._renew_session)
        if hasattr(transport, "is_answered"):
            transport.is_answered = self._inbox.is_answered  # an HTTP stream that ends early is resumed

    # The server's notifications and requests, by method: the layers above set these (and a
    # supervisor hands the same dicts to every new connection of a server).

    @property
    def notification_handlers(self) -> dict[str, Callable[[Notification], None]]:
        return self._asks.notification_handlers

    @notification_handlers.setter
    def notification_handlers(self, handlers: dict[str, Callable[[Notification], None]]) -> None:
        self._asks.notification_handlers = handlers

    @property
    def request_handlers(self) -> dict[str, RequestHandler]:
        return self._asks.request_handlers

    @request_handlers.setter
    def request_handlers(self, handlers: dict[str, RequestHandler]) -> None:
        self._asks.request_handlers = handlers

    # -------------------------------------------------------------- incoming

    @property
    def _pending(self) -> dict[int, PendingAnswer]:
        return self._inbox.pending

    def _deliver(self, data: bytes | Oversize) -> None:
        self._inbox.deliver(data)

    def _server_request(self, req: Request) -> None:
        self._tg.start_soon(self._asks.answer, req)

    def _on_closed(self, reason: str) -> None:
        if self._dead is None:
            self._dead = reason
        self.closed.set()
        dead = self._dead
        self._inbox.fail_all(lambda: SessionClosed(dead))

    # -------------------------------------------------------------- requests

    async def _send_unanswered(self, data: bytes) -> None:
        await self._transport.send(data, expects_answer=False, timeout=5)

    async def _request(
        self,
        method: str,
        params: dict[str, Any] | None,
        *,
        on_progress: ProgressCallback | None = None,
        renewal: bool = False,
        attempt: SendAttempt | None = None,
    ) -> tuple[int, PendingAnswer]:
        """Send a request; return its id and pending slot (the caller awaits ``done``)."""
        if self._dead is not None:
            raise SessionClosed(self._dead)
        msg_id, pending = self._inbox.open(on_progress)
        if on_progress is not None:
            params = {**(params or {}), "_meta": {"progressToken": msg_id}}
        data = jsonrpc.encode(jsonrpc.request(msg_id, method, params))
        try:
            if renewal:  # the new session's own handshake: sent as it is, never renewed itself
                await self._transport.send(data, expects_answer=True, timeout=None)
            else:
                await self._renewal.send(data, attempt or SendAttempt())
        except TransportError as exc:
            if pending.answer is None:
                pending.failed(exc)
        except BaseException:  # cancelled before the caller had the id: nobody will wait on the slot
            self._inbox.drop(msg_id)
            raise
        return msg_id, pending

    async def _roundtrip(self, method: str, params: dict[str, Any] | None, *, renewal: bool = False) -> Response:
        """A request whose error answer or failure is an exception (handshake, listing)."""
        msg_id, pending = await self._request(method, params, renewal=renewal)
        try:
            await pending.done.wait()
        finally:
            self._inbox.drop(msg_id)
        if pending.failure is not None:
            raise pending.failure
        answer = pending.answer
        if isinstance(answer, ErrorResponse):
            raise TransportError(
                M.ANSWERED_WITH_ERROR.format(method=method, code=answer.code, q_message=go_escape(answer.message))
            )
        if isinstance(answer, Undecodable):
            raise TransportError(M.ANSWER_UNREADABLE.format(method=method, reason=answer.reason))
        assert isinstance(answer, Response)
        return answer

    async def request(self, method: str, params: dict[str, Any] | None, timeout_ns: int) -> Response | ErrorResponse:
        """One request passed through for the layers above (resources, prompts, completion):
        the server's answer, a JSON-RPC error included; ``TransportError`` when there is none
        (the session ended, the answer cannot be read, or ``timeout_ns`` passed)."""
        msg_id: int | None = None
        pending: PendingAnswer | None = None
        try:
            with anyio.move_on_after(timeout_ns / 1e9) as scope:
                msg_id, pending = await self._request(method, params)
                await pending.done.wait()
        finally:
            if msg_id is not None:
                self._inbox.drop(msg_id)
        if scope.cancelled_caught or pending is None:
            if msg_id is not None and self._dead is None:
                with contextlib.suppress(RuntimeError):  # the connection is being torn down
                    self._tg.start_soon(self._cancel_upstream, msg_id, timeout_ns)
            raise TransportError(M.METHOD_TIMED_OUT.format(method=method, duration=format_go(timeout_ns)))
        if pending.failure is not None:
            raise pending.failure
        answer = pending.answer
        if isinstance(answer, Undecodable):
            raise TransportError(M.ANSWER_UNREADABLE.format(method=method, reason=answer.reason))
        assert isinstance(answer, Response | ErrorResponse)
        return answer

    async def _notify(self, method: str, params: dict[str, Any] | None = None) -> None:
        await self._send_unanswered(jsonrpc.encode(jsonrpc.notification(method, params)))

    # ------------------------------------------------------------ handshake

    async def _renew_session(self) -> None:
        await self._initialize(renewal=True)

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
            raise TransportError(M.METHOD_TIMED_OUT.format(method="tools/list", duration=format_go(timeout_ns)))
        self.tools = tools
        return tools

    async def _list_tools(self) -> list[ListedTool]:
        if "tools" not in self.capabilities:
            return []  # a server that offers no tools (only resources or prompts, say) is not asked for them
        return await list_every_tool(self._roundtrip)

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
        prefix = M.TOOL_PREFIX.format(q_server=go_quote(self.server), q_tool=go_quote(name))
        if self._dead is not None:  # the session ended before this request: nothing was written
            return NotSent(M.TOOL_FAILED.format(prefix=prefix, q_detail=go_escape(self._dead)))
        params: dict[str, Any] = {"name": name}
        if arguments_text is not None and arguments_text.strip():
            params["arguments"] = Raw(arguments_text)
        msg_id: int | None = None
        pending: PendingAnswer | None = None
        attempt = SendAttempt()
        timeout = None if not timeout_ns else timeout_ns / 1e9
        try:
            with anyio.move_on_after(timeout) as scope:
                try:
                    msg_id, pending = await self._request(
                        "tools/call", params, on_progress=on_progress, attempt=attempt
                    )
                except SessionClosed as exc:  # raised before writing: the session had already ended
                    return NotSent(M.TOOL_FAILED.format(prefix=prefix, q_detail=go_escape(str(exc))))
                await pending.done.wait()
        finally:
            if msg_id is not None:
                self._inbox.drop(msg_id)
        if scope.cancelled_caught or pending is None:
            assert timeout_ns
            if not attempt.out:  # the time ran out while a new session was being started
                return NotSent(M.TOOL_TIMED_OUT_RENEWING.format(prefix=prefix, duration=format_go(timeout_ns)))
            if msg_id is not None and self._dead is None:
                with contextlib.suppress(RuntimeError):  # the connection is being torn down
                    self._tg.start_soon(self._cancel_upstream, msg_id, timeout_ns)
                drop = getattr(self._transport, "drop_partial", None)
                if drop is not None:  # a line still arriving for it never outlives the call
                    drop(msg_id, alone=not self._inbox.pending)
            return NoAnswer("timeout", M.TOOL_TIMED_OUT.format(prefix=prefix, duration=format_go(timeout_ns)))
        if isinstance(pending.failure, NotSentError):
            return NotSent(M.TOOL_FAILED.format(prefix=prefix, q_detail=go_escape(str(pending.failure))))
        if isinstance(pending.failure, HTTPStatusError):  # the server refused it: it may have acted first
            return HttpStatus(
                pending.failure.status, M.TOOL_FAILED.format(prefix=prefix, q_detail=go_escape(str(pending.failure)))
            )
        if isinstance(pending.failure, MessageTooLarge) and pending.failure.answered:
            return Refused(M.ANSWERED_TOO_LARGE.format(failure=pending.failure), b"")  # the server answered
        if pending.failure is not None:
            kind: NoAnswerKind = "dropped" if isinstance(pending.failure, SessionClosed) else "protocol"
            return NoAnswer(kind, M.TOOL_FAILED.format(prefix=prefix, q_detail=go_escape(str(pending.failure))))
        answer = pending.answer
        if isinstance(answer, ErrorResponse):
            return RpcError(answer.code, answer.message, answer.data)
        if isinstance(answer, Undecodable):
            return Refused(answer.reason, answer.raw)
        assert isinstance(answer, Response)
        return map_result(self.server, name, answer.result, answer.text, self._cap)

    async def _cancel_upstream(self, msg_id: int, timeout_ns: int) -> None:
        with contextlib.suppress(TransportError), anyio.move_on_after(5):
            await self._notify(
                "notifications/cancelled",
                {"requestId": msg_id, "reason": M.TIMED_OUT.format(duration=format_go(timeout_ns))},
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
    from agentrt_proxy.mcp._http import HTTPTransport

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
                failure = ConnectError(
                    M.CONNECT_TIMED_OUT.format(q_server=q, phase=phase, duration=format_go(bound_ns), detail=detail)
                )
            else:
                refusal = str(error) if isinstance(error, AuthorizationRefused) else None
                failure = ConnectError(
                    M.CONNECT_FAILED.format(q_server=q, phase=phase, q_error=go_escape(str(error)), detail=detail),
                    authorization=refusal,
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
