"""Streamable HTTP (legacy revisions) on stdlib ``http.client``, in worker threads.

Each message is one POST. A request's answer comes back as ``application/json`` or
as an SSE stream (events handed over as they arrive, so progress is live). The
session id and negotiated protocol version ride on every later request. Redirects
are refused (the 3xx fails; its target is never contacted), bodies are capped at
max_message_bytes (a JSON body past it is a refused answer, its connection dropped), and
the operator's static headers are sent but never logged or quoted.

Connections are kept alive and checked before reuse (``http_pool``). A request is written
again, once, on a fresh connection only when the server provably never received it: the
first byte could not be written on a reused connection. A failure to connect is
``NotSentError``; any failure after bytes went out stays a ``TransportError`` (unknown).

A 404 (or the npm servers' 400 "No valid session ID") on a request that carried a
session id means the server no longer knows the session and did not process the
request: ``SessionExpired``, which the session answers by starting a new one. Any other error
status to a request sent whole is the server's refusal, ``HTTPStatusError``: it may have acted
first, so it is never not-sent.

A request's SSE stream that ends before its answer is resumed as 2025-11-25 says: after
the server's ``retry:`` time (1 s if it sent none) the client GETs the endpoint with
``Last-Event-ID`` and reads on until the answer arrives. A stream that carried no event
id cannot be resumed, so it fails the request at once rather than leave it waiting.
``listen`` opens the session's standalone GET stream (``http_listen``).

A server behind authorization (``http_auth``): every request carries the authorizer's headers,
taken in the worker thread just before it is written. A 401, or a 403 asking for more scope,
means the server did not process the request: it goes once more with fresh headers when the
authorizer says a new token may cure it, and otherwise fails as not sent
(``AuthorizationRefused``), never as an unknown outcome.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import ssl
import threading
from collections.abc import Callable
from urllib.parse import urlsplit

import anyio
import anyio.from_thread
import anyio.lowlevel
import anyio.to_thread

from agentrt_proxy.canonical.quoting import go_escape
from agentrt_proxy.mcp.errors import (
    AuthorizationRefused,
    HTTPStatusError,
    MessageTooLarge,
    NotSentError,
    SessionClosed,
    SessionExpired,
    TransportError,
)
from agentrt_proxy.mcp.http_auth import Authorizer, is_scope_challenge
from agentrt_proxy.mcp.http_listen import Listener
from agentrt_proxy.mcp.http_pool import Conn, Pool, describe
from agentrt_proxy.mcp.spans import top_level_id
from agentrt_proxy.mcp.spec import MAX_RESPONSE_BODY_BYTES
from agentrt_proxy.mcp.sse import SSEParser
from agentrt_proxy.mcp.transport import Deliver, OnClosed

__all__ = ["HTTPTransport"]

READ_CHUNK = 1 << 16
DELETE_TIMEOUT = 2.0
CONNECT_TIMEOUT = 30.0
DEFAULT_RETRY_MS = 1000  # the wait before resuming when the server named none
MAX_RESUMES = 5  # reconnections in a row that bring no new event


class _StreamEnd:
    """Where an SSE stream stopped: resumable from ``last_event_id`` after ``retry_ms``."""

    def __init__(self, last_event_id: str | None, retry_ms: int | None) -> None:
        self.last_event_id, self.retry_ms = last_event_id, retry_ms


class _BodyTooLarge(MessageTooLarge):
    """The server's answer is longer than the body limit: it broke what this client accepts."""


class _Challenged(TransportError):
    """The server refused the request's credentials (401, or 403 insufficient_scope): it did not
    process the request. Caught by ``_post``, which asks the authorizer what to do."""

    def __init__(self, status: int, reason: str, challenge: str) -> None:
        super().__init__(f"the server answered HTTP {status} {go_escape(reason)}")
        self.status, self.challenge = status, challenge


class _LostMidAnswer(SessionClosed):
    """The session vanished while a request's answer was being resumed: that request's outcome is
    unknown, but the transport lives on (the next request finds the session gone and renews it)."""


def _session_gone(status: int, body: bytes) -> bool:
    return status == 404 or (status == 400 and b"No valid session ID" in body)


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
            raise TransportError(f"the endpoint {go_escape(endpoint)} is not an http:// or https:// URL")
        self._server = server
        self._https = parts.scheme == "https"
        self._host = parts.hostname
        self._port = parts.port
        self._path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        self._headers = dict(headers or {})
        self._auth = auth
        self._max_body = max_body
        self._pool = Pool(self._host, self._port, https=self._https, connect_timeout=CONNECT_TIMEOUT)
        self._listener: Listener | None = None
        self._token: anyio.lowlevel.EventLoopToken | None = None
        self._deliver: Deliver | None = None
        self._on_closed: OnClosed | None = None
        self._dead: str | None = None
        self._closed = False
        self._wake = threading.Event()  # set on close: ends a wait before a resumption
        self.session_id: str | None = None
        self.protocol_version: str | None = None  # set by the session after initialize
        # Set by the session: whether the request with this id has had its answer.
        self.is_answered: Callable[[int], bool] | None = None

    async def start(self, deliver: Deliver, on_closed: OnClosed) -> None:
        self._deliver, self._on_closed = deliver, on_closed
        self._token = anyio.lowlevel.current_token()  # the GET stream's thread is not anyio's

    async def failure_detail(self) -> str:
        return ""

    # ------------------------------------------------------------- sending

    async def send(self, data: bytes, *, expects_answer: bool, timeout: float | None) -> None:
        if self._dead is not None:
            raise SessionClosed(self._dead)
        if self._closed:
            raise SessionClosed("connection closed")
        # Taken here, on the event loop: a request carries the session that was current when it
        # was sent, never one a renewal is halfway through replacing.
        headers = self._request_headers(True)
        try:
            await anyio.to_thread.run_sync(self._post, data, headers, expects_answer, timeout, abandon_on_cancel=True)
        except SessionClosed as exc:
            if not isinstance(exc, _LostMidAnswer):
                self._kill(str(exc))
            raise

    def _kill(self, reason: str) -> None:
        if self._dead is None:
            self._dead = reason
            if self._on_closed is not None:
                self._on_closed(reason)

    def _request_headers(self, content: bool) -> dict[str, str]:
        headers = dict(self._headers)
        if content:
            headers["Content-Type"] = "application/json"
            headers["Accept"] = "application/json, text/event-stream"
        if self.session_id is not None:
            headers["Mcp-Session-Id"] = self.session_id
        if self.protocol_version is not None:
            headers["MCP-Protocol-Version"] = self.protocol_version
        return headers

    def _authorized(self, headers: dict[str, str]) -> dict[str, str]:
        """``headers`` with the authorizer's credentials (in a worker thread: it may refresh)."""
        if self._auth is None:
            return headers
        try:
            credentials = self._auth.headers()
        except Exception as exc:  # the authorizer's own failure: nothing was written yet
            raise NotSentError(f"the credentials for the request could not be had: {describe(exc)}") from exc
        return {**headers, **credentials}

    def _write(self, method: str, body: bytes | None, headers: dict[str, str], timeout: float | None) -> Conn:
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
                    raise NotSentError(f"{method}: nothing could be written: {describe(exc)}") from exc
                conn = None

    def _post(self, data: bytes, headers: dict[str, str], expects_answer: bool, timeout: float | None) -> None:
        """POST ``data``; a refusal of its credentials is judged by the authorizer: written once
        more with fresh headers, or failed as not sent."""
        sent = self._authorized(headers)
        try:
            self._post_once(data, sent, expects_answer, timeout)
            return
        except _Challenged as refusal:
            verdict = self._verdict(refusal, sent, final=False)
        if verdict is not None:
            raise AuthorizationRefused(verdict)
        sent = self._authorized(headers)
        try:
            self._post_once(data, sent, expects_answer, timeout)
        except _Challenged as refusal:
            raise AuthorizationRefused(self._verdict(refusal, sent, final=True) or str(refusal)) from None

    def _verdict(self, refusal: _Challenged, sent: dict[str, str], *, final: bool) -> str | None:
        if self._auth is None:
            return f"{refusal}: the server needs authorization"
        return self._auth.rejected(refusal.status, refusal.challenge, sent, final=final)

    def _post_once(self, data: bytes, headers: dict[str, str], expects_answer: bool, timeout: float | None) -> None:
        conn = self._write("POST", data, headers, timeout)
        resp: http.client.HTTPResponse | None = None
        reusable = False
        sent_session = headers.get("Mcp-Session-Id")
        end: _StreamEnd | None = None
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
            reusable, end = self._handle(resp, expects_answer, sent_session)
        finally:
            self._pool.release(conn, resp, reusable)
        if end is not None and expects_answer:
            msg_id = top_level_id(data.decode("utf-8", "replace"))
            if isinstance(msg_id, int) and not self._answered(msg_id):
                self._resume(msg_id, end, timeout)

    def _answered(self, msg_id: int) -> bool:
        check = self.is_answered
        if check is None:
            return True  # nobody to tell: never resume
        try:
            return bool(anyio.from_thread.run_sync(check, msg_id, token=self._token))
        except RuntimeError:  # the event loop is gone
            return True

    def _resume(self, msg_id: int, end: _StreamEnd, timeout: float | None) -> None:
        """GET + ``Last-Event-ID`` after the retry time until request ``msg_id`` is answered."""
        tries = 0
        while True:
            if end.last_event_id is None:
                raise TransportError("the server ended the answer's event stream without the answer")
            tries += 1
            if tries > MAX_RESUMES:
                raise TransportError(f"the answer's event stream was resumed {MAX_RESUMES} times without the answer")
            retry_ms = end.retry_ms if end.retry_ms is not None else DEFAULT_RETRY_MS
            if self._wake.wait(retry_ms / 1000) or self._closed:
                raise SessionClosed("connection closed")
            before = end.last_event_id
            end = self._get(msg_id, end, timeout)
            if self._answered(msg_id):
                return
            if end.last_event_id != before:
                tries = 0  # the stream moved on: a server that polls may close it again

    def _get(self, msg_id: int, end: _StreamEnd, timeout: float | None) -> _StreamEnd:
        headers = self._authorized(self._request_headers(False))
        headers["Accept"] = "text/event-stream"
        assert end.last_event_id is not None
        headers["Last-Event-ID"] = end.last_event_id
        what = "GET to resume the answer"
        try:
            conn = self._write("GET", None, headers, timeout)
        except NotSentError as exc:  # the request itself went out long ago: its outcome is unknown
            raise TransportError(f"{what}: {exc}") from exc
        except TransportError as exc:
            raise TransportError(f"{what}: {exc}") from exc
        try:
            try:
                resp = conn.getresponse()
                if conn.sock is not None and timeout is None:
                    conn.sock.settimeout(None)
            except (OSError, http.client.HTTPException) as exc:
                if self._closed:
                    raise SessionClosed("connection closed") from exc
                raise TransportError(f"{what}: {describe(exc)}") from exc
            status = resp.status
            media = (resp.getheader("Content-Type") or "").split(";")[0].strip().lower()
            if status >= 300 or media != "text/event-stream":
                body = self._read_body(resp)
                if _session_gone(status, body) and self.session_id is not None:
                    raise _LostMidAnswer(f"the server ended the session (HTTP {status})")
                if status >= 300:
                    problem = f"HTTP {status} {go_escape(resp.reason)}"
                else:
                    problem = f"content type {go_escape(media)}"
                raise TransportError(f"the server answered the GET that resumes the answer with {problem}")
            # A resumed stream may stay open after the answer: stop reading once it came.
            return self._read_sse(resp, end, stop_when_answered=msg_id)
        finally:
            self._pool.discard(conn)

    def _handle(
        self, resp: http.client.HTTPResponse, expects_answer: bool, sent_session: str | None
    ) -> tuple[bool, _StreamEnd | None]:
        status = resp.status
        if 300 <= status < 400:
            raise TransportError(
                f"the server answered HTTP {status} {go_escape(resp.reason)}; redirects are not followed"
            )
        if status in (202, 204) or (not expects_answer and 200 <= status < 300):
            self._read_body(resp)
            return not resp.will_close, None
        if status >= 400:
            body = self._read_body(resp)
            challenge = resp.getheader("WWW-Authenticate") or ""
            if status == 401 or is_scope_challenge(status, challenge):
                raise _Challenged(status, resp.reason, challenge)
            if sent_session is not None and _session_gone(status, body):
                raise SessionExpired(f"the server no longer knows the session (HTTP {status})", sent_session, status)
            if self._deliver_error(body):
                return not resp.will_close, None
            snippet = go_escape(body[:200].decode("utf-8", "replace").strip())
            raise HTTPStatusError(
                f"the server answered HTTP {status} {go_escape(resp.reason)}" + (f": {snippet}" if snippet else ""),
                status,
            )
        media = (resp.getheader("Content-Type") or "").split(";")[0].strip().lower()
        if media == "text/event-stream":
            end = self._read_sse(resp, _StreamEnd(None, None))
            return not resp.will_close, end
        if media == "application/json":
            self._dispatch(self._read_body(resp, answer=expects_answer))
            return not resp.will_close, None
        self._read_body(resp)
        raise TransportError(f"the server answered with content type {go_escape(media or 'none')}")

    def _deliver_error(self, body: bytes) -> bool:
        """A JSON-RPC error answer carried by an HTTP error status, if it names a request."""
        try:
            obj = json.loads(body)
        except ValueError:
            return False
        if isinstance(obj, dict) and isinstance(obj.get("error"), dict) and isinstance(obj.get("id"), int):
            self._dispatch(body)
            return True
        return False

    def _check_length(self, resp: http.client.HTTPResponse, answer: bool = False) -> None:
        length = resp.getheader("Content-Length")
        if length is not None and length.strip().isdigit() and int(length) > self._max_body:
            raise _BodyTooLarge(f"mcp: response body of {int(length)} bytes exceeds {self._max_body}", answered=answer)

    def _read_body(self, resp: http.client.HTTPResponse, answer: bool = False) -> bytes:
        """The whole body, at most the limit; ``answer``: it is the request's JSON-RPC answer."""
        self._check_length(resp, answer)
        body = bytearray()
        while chunk := self._read_chunk(resp):
            body += chunk
            if len(body) > self._max_body:
                raise _BodyTooLarge(f"mcp: response body exceeds {self._max_body} bytes", answered=answer)
        resp.read()  # marks the response complete, so the connection can carry the next request
        return bytes(body)

    def _read_sse(
        self, resp: http.client.HTTPResponse, start: _StreamEnd, *, stop_when_answered: int | None = None
    ) -> _StreamEnd:
        """Dispatch every event; return where the stream stopped (its last id and retry)."""
        self._check_length(resp)
        parser = SSEParser()
        parser.last_event_id, parser.retry_ms = start.last_event_id, start.retry_ms
        total = 0
        while chunk := self._read_chunk(resp):
            total += len(chunk)
            if total > self._max_body:
                raise _BodyTooLarge(f"mcp: response body exceeds {self._max_body} bytes")
            events = parser.feed(chunk)
            for event in events:
                self._dispatch(event)
            if events and stop_when_answered is not None and self._answered(stop_when_answered):
                return _StreamEnd(parser.last_event_id, parser.retry_ms)
        resp.read()
        for event in parser.finish():
            self._dispatch(event)
        return _StreamEnd(parser.last_event_id, parser.retry_ms)

    def _read_chunk(self, resp: http.client.HTTPResponse) -> bytes:
        try:
            return resp.read1(READ_CHUNK)
        except (OSError, http.client.HTTPException) as exc:
            if self._closed:
                raise SessionClosed("connection closed") from exc
            raise TransportError(f"reading the answer: {describe(exc)}") from exc

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
            self._request_headers(False),
            self._dispatch,
            auth=self._auth.headers if self._auth is not None else None,
            max_event=self._max_body,
            name=f"mcp-http-get {self._server}",
        )
        self._listener.start()

    # ------------------------------------------------------------- closing

    async def aclose(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._wake.set()
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
            conn.request("DELETE", self._path, headers=self._authorized(self._request_headers(False)))
            conn.getresponse().read()  # 405 (no session deletion) is fine too
        finally:
            conn.close()
