"""Streamable HTTP (legacy revisions) on stdlib ``http.client``, in worker threads.

Each message is one POST. A request's answer comes back as ``application/json`` or
as an SSE stream (events handed over as they arrive, so progress is live). The
session id and negotiated protocol version ride on every later request. Redirects
are refused (the 3xx fails; its target is never contacted), bodies are capped at
max_message_bytes (a JSON body past it is a refused answer, its connection dropped), and
the operator's static headers are sent but never logged or quoted.

Connections are kept alive and checked before reuse (``_http_pool``). A request is written
again, once, on a fresh connection only when the server provably never received it: the
first byte could not be written on a reused connection. A failure to connect is
``NotSentError``; any failure after bytes went out stays a ``TransportError`` (unknown).

A 404 (or the npm servers' 400 "No valid session ID") on a request that carried a
session id means the server no longer knows the session and did not process the
request: ``SessionExpired``, which the session answers by starting a new one. Any other error
status to a request sent whole is the server's refusal, ``HTTPStatusError``: it may have acted
first, so it is never not-sent.

The transport owns one helper per concern: ``_http_answers`` reads what a response means,
``_http_resume`` resumes a request's SSE stream that ended before its answer (2025-11-25),
``_http_credentials`` puts the authorizer's headers on each request and judges a refusal of
them, and ``listen`` opens the session's standalone GET stream (``_http_listen``).
"""

from __future__ import annotations

import contextlib
import http.client
import ssl
from collections.abc import Callable
from urllib.parse import urlsplit

import anyio
import anyio.from_thread
import anyio.lowlevel
import anyio.to_thread

from agentrt_proxy.canonical.quoting import go_escape
from agentrt_proxy.mcp import _messages as M
from agentrt_proxy.mcp._http_answers import AnswerReader, StreamEnd
from agentrt_proxy.mcp._http_credentials import Credentials
from agentrt_proxy.mcp._http_listen import Listener
from agentrt_proxy.mcp._http_pool import Conn, Pool, describe
from agentrt_proxy.mcp._http_resume import LostMidAnswer, Resumer
from agentrt_proxy.mcp._transport import Deliver, OnClosed
from agentrt_proxy.mcp.errors import NotSentError, SessionClosed, TransportError
from agentrt_proxy.mcp.http_auth import Authorizer
from agentrt_proxy.mcp.spans import top_level_id
from agentrt_proxy.mcp.spec import MAX_RESPONSE_BODY_BYTES

__all__ = ["HTTPTransport"]

DELETE_TIMEOUT = 2.0
CONNECT_TIMEOUT = 30.0


class HTTPTransport:
    def __init__(
        self,
        server: str,
        endpoint: str,
        headers: dict[str, str] | None = None,
        *,
        max_body: int = MAX_RESPONSE_BODY_BYTES,
        auth: Authorizer | None = None,
    ) -> None:
        parts = urlsplit(endpoint)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise TransportError(M.NOT_AN_HTTP_URL.format(q_endpoint=go_escape(endpoint)))
        self._server = server
        self._https = parts.scheme == "https"
        self._host = parts.hostname
        self._port = parts.port
        self._path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        self._headers = dict(headers or {})
        self._max_body = max_body
        self._pool = Pool(self._host, self._port, https=self._https, connect_timeout=CONNECT_TIMEOUT)
        self._listener: Listener | None = None
        self._token: anyio.lowlevel.EventLoopToken | None = None
        self._deliver: Deliver | None = None
        self._on_closed: OnClosed | None = None
        self._dead: str | None = None
        self._closed = False
        self.session_id: str | None = None
        self.protocol_version: str | None = None  # set by the session after initialize
        # Set by the session: whether the request with this id has had its answer.
        self.is_answered: Callable[[int], bool] | None = None
        self._credentials = Credentials(auth)
        self._reader = AnswerReader(max_body, self._dispatch, self._answered, lambda: self._closed)
        self._resumer = Resumer(self, self._reader, self._credentials, self._pool, self._answered)

    async def start(self, deliver: Deliver, on_closed: OnClosed) -> None:
        self._deliver, self._on_closed = deliver, on_closed
        self._token = anyio.lowlevel.current_token()  # the GET stream's thread is not anyio's

    async def failure_detail(self) -> str:
        return ""

    @property
    def closed(self) -> bool:
        return self._closed

    # ------------------------------------------------------------- sending

    async def send(self, data: bytes, *, expects_answer: bool, timeout: float | None) -> None:
        if self._dead is not None:
            raise SessionClosed(self._dead)
        if self._closed:
            raise SessionClosed("connection closed")
        # Taken here, on the event loop: a request carries the session that was current when it
        # was sent, never one a renewal is halfway through replacing.
        headers = self.request_headers(True)

        def post() -> None:
            self._credentials.post(lambda sent: self._post_once(data, sent, expects_answer, timeout), headers)

        try:
            await anyio.to_thread.run_sync(post, abandon_on_cancel=True)
        except SessionClosed as exc:
            if not isinstance(exc, LostMidAnswer):
                self._kill(str(exc))
            raise

    def _kill(self, reason: str) -> None:
        if self._dead is None:
            self._dead = reason
            if self._on_closed is not None:
                self._on_closed(reason)

    def request_headers(self, content: bool) -> dict[str, str]:
        headers = dict(self._headers)
        if content:
            headers["Content-Type"] = "application/json"
            headers["Accept"] = "application/json, text/event-stream"
        if self.session_id is not None:
            headers["Mcp-Session-Id"] = self.session_id
        if self.protocol_version is not None:
            headers["MCP-Protocol-Version"] = self.protocol_version
        return headers

    def write_request(self, method: str, body: bytes | None, headers: dict[str, str], timeout: float | None) -> Conn:
        """Write one request on a connection. Only a request the server provably never received
        is written again: one whose first byte could not be written on a reused connection (the
        server closed it between the check and the write) goes once more on a fresh one."""
        conn = self._pool.take_idle(timeout)
        while True:
            reused = conn is not None
            if conn is None:
                conn = self._pool.connect(timeout, what=method)  # NotSentError when that fails
            try:
                conn.request(method, self._path, body=body, headers=headers)
                return conn
            except (OSError, http.client.HTTPException) as exc:
                written = conn.written
                self._pool.discard(conn)
                if self._closed:
                    raise SessionClosed("connection closed") from exc
                if written:  # part of the request is out: the server may act on it
                    raise TransportError(f"{method}: {describe(exc)}") from exc
                if not reused:
                    raise NotSentError(M.NOTHING_WRITTEN.format(method=method, detail=describe(exc))) from exc
                conn = None

    def _post_once(self, data: bytes, headers: dict[str, str], expects_answer: bool, timeout: float | None) -> None:
        conn = self.write_request("POST", data, headers, timeout)
        resp: http.client.HTTPResponse | None = None
        reusable = False
        sent_session = headers.get("Mcp-Session-Id")
        end: StreamEnd | None = None
        try:
            try:
                resp = conn.getresponse()
                if conn.sock is not None and timeout is None:
                    conn.sock.settimeout(None)  # a call may legitimately run for a long time
            except (OSError, http.client.HTTPException) as exc:
                if self._closed:
                    raise SessionClosed("connection closed") from exc
                raise TransportError(f"POST: {describe(exc)}") from exc
            session = resp.getheader("Mcp-Session-Id")
            if session and sent_session is None:  # a session is assigned by initialize's answer only
                self.session_id = session
            reusable, end = self._reader.handle(resp, expects_answer, sent_session)
        finally:
            self._pool.release(conn, resp, reusable)
        if end is not None and expects_answer:
            msg_id = top_level_id(data.decode("utf-8", "replace"))
            if isinstance(msg_id, int) and not self._answered(msg_id):
                self._resumer.resume(msg_id, end, timeout)

    def _answered(self, msg_id: int) -> bool:
        check = self.is_answered
        if check is None:
            return True  # nobody to tell: never resume
        try:
            return bool(anyio.from_thread.run_sync(check, msg_id, token=self._token))
        except RuntimeError:  # the event loop is gone
            return True

    def _dispatch(self, message: bytes) -> None:
        deliver = self._deliver
        if deliver is None or not message.strip():
            return
        with contextlib.suppress(RuntimeError):  # the event loop is gone
            anyio.from_thread.run_sync(deliver, message, token=self._token)

    # ---------------------------------------------------------- the GET stream

    def listen(self) -> None:
        """Open the session's standalone GET stream in the background (after ``initialize``);
        a listener for an earlier session stops."""
        if self._listener is not None:
            self._listener.stop()
            self._listener = None
        if self._closed or self._dead is not None:
            return
        self._listener = Listener(
            self._pool,
            self._path,
            self.request_headers(False),
            self._dispatch,
            auth=self._credentials.source,
            max_event=self._max_body,
            name=f"mcp-http-get {self._server}",
        )
        self._listener.start()

    # ------------------------------------------------------------- closing

    async def aclose(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._resumer.stop()
        if self._listener is not None:
            self._listener.stop()
        with anyio.CancelScope(shield=True):
            if self.session_id is not None and self._dead is None:
                with contextlib.suppress(Exception):
                    await anyio.to_thread.run_sync(self._delete, abandon_on_cancel=True)
            self._pool.close()  # also unblocks a worker thread still reading an answer nobody waits for

    def _delete(self) -> None:
        conn: http.client.HTTPConnection
        if self._https:
            conn = http.client.HTTPSConnection(
                self._host, self._port, timeout=DELETE_TIMEOUT, context=ssl.create_default_context()
            )
        else:
            conn = http.client.HTTPConnection(self._host, self._port, timeout=DELETE_TIMEOUT)
        try:
            headers = self._credentials.authorized(self.request_headers(False))
            conn.request("DELETE", self._path, headers=headers)
            conn.getresponse().read()  # 405 (no session deletion) is fine too
        finally:
            conn.close()
