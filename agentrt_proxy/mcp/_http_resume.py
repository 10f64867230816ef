"""A request's event stream that ended before its answer, resumed as 2025-11-25 says.

After the server's ``retry:`` time (1 s if it sent none) the client GETs the endpoint with
``Last-Event-ID`` and reads on until the answer arrives. A stream that carried no event id
cannot be resumed, so it fails the request at once rather than leave it waiting; so do
``MAX_RESUMES`` reconnections in a row that bring no new event.
"""

from __future__ import annotations

import http.client
import threading
from collections.abc import Callable
from typing import Protocol

from agentrt_proxy.canonical.quoting import go_escape
from agentrt_proxy.mcp import _messages as M
from agentrt_proxy.mcp._http_answers import AnswerReader, StreamEnd, media_type, session_gone
from agentrt_proxy.mcp._http_credentials import Credentials
from agentrt_proxy.mcp._http_pool import Conn, Pool, describe
from agentrt_proxy.mcp.errors import NotSentError, SessionClosed, TransportError

__all__ = ["LostMidAnswer", "ResumeLink", "Resumer"]

DEFAULT_RETRY_MS = 1000  # the wait before resuming when the server named none
MAX_RESUMES = 5  # reconnections in a row that bring no new event


class LostMidAnswer(SessionClosed):
    """The session vanished while a request's answer was being resumed: that request's outcome is
    unknown, but the transport lives on (the next request finds the session gone and renews it)."""


class ResumeLink(Protocol):
    """What a resumption needs of the transport it serves."""

    @property
    def closed(self) -> bool: ...

    @property
    def session_id(self) -> str | None: ...

    def request_headers(self, content: bool) -> dict[str, str]: ...

    def write_request(self, method: str, body: bytes | None, headers: dict[str, str], timeout: float | None) -> Conn:
        """Write one request on a connection (``NotSentError`` when nothing could be written)."""
        ...


class Resumer:
    """GETs a request's event stream again until its answer came (in the request's worker thread)."""

    def __init__(
        self,
        link: ResumeLink,
        reader: AnswerReader,
        credentials: Credentials,
        pool: Pool,
        answered: Callable[[int], bool],
    ) -> None:
        self._link = link
        self._reader = reader
        self._credentials = credentials
        self._pool = pool
        self._answered = answered
        self._wake = threading.Event()  # set on close: ends a wait before a resumption

    def stop(self) -> None:
        self._wake.set()

    def resume(self, msg_id: int, end: StreamEnd, timeout: float | None) -> None:
        """GET + ``Last-Event-ID`` after the retry time until request ``msg_id`` is answered."""
        tries = 0
        while True:
            if end.last_event_id is None:
                raise TransportError(M.STREAM_ENDED)
            tries += 1
            if tries > MAX_RESUMES:
                raise TransportError(M.RESUMED_TOO_OFTEN.format(times=MAX_RESUMES))
            retry_ms = end.retry_ms if end.retry_ms is not None else DEFAULT_RETRY_MS
            if self._wake.wait(retry_ms / 1000) or self._link.closed:
                raise SessionClosed("connection closed")
            if self._answered(msg_id):  # it came meanwhile on another stream: nothing left to resume
                return
            before = end.last_event_id
            end = self._get(msg_id, end, timeout)
            if self._answered(msg_id):
                return
            if end.last_event_id != before:
                tries = 0  # the stream moved on: a server that polls may close it again

    def _get(self, msg_id: int, end: StreamEnd, timeout: float | None) -> StreamEnd:
        headers = self._credentials.authorized(self._link.request_headers(False))
        headers["Accept"] = "text/event-stream"
        assert end.last_event_id is not None
        headers["Last-Event-ID"] = end.last_event_id
        what = M.RESUME_GET
        try:
            conn = self._link.write_request("GET", None, headers, timeout)
        except NotSentError as exc:  # the request itself went out long ago: its outcome is unknown
            raise TransportError(M.RESUME_FAILED.format(what=what, error=exc)) from exc
        except TransportError as exc:
            raise TransportError(M.RESUME_FAILED.format(what=what, error=exc)) from exc
        try:
            try:
                resp = conn.getresponse()
                if conn.sock is not None and timeout is None:
                    conn.sock.settimeout(None)
            except (OSError, http.client.HTTPException) as exc:
                if self._link.closed:
                    raise SessionClosed("connection closed") from exc
                raise TransportError(f"{what}: {describe(exc)}") from exc
            status = resp.status
            media = media_type(resp)
            if status >= 300 or media != "text/event-stream":
                body = self._reader.read_body(resp)
                if session_gone(status, body) and self._link.session_id is not None:
                    raise LostMidAnswer(M.SESSION_ENDED.format(status=status))
                if status >= 300:
                    problem = M.RESUME_HTTP.format(status=status, q_reason=go_escape(resp.reason))
                else:
                    problem = M.RESUME_CONTENT_TYPE.format(q_media=go_escape(media))
                raise TransportError(M.RESUME_REFUSED.format(problem=problem))
            # A resumed stream may stay open after the answer: stop reading once it came.
            return self._reader.read_sse(resp, end, stop_when_answered=msg_id)
        finally:
            self._pool.discard(conn)
