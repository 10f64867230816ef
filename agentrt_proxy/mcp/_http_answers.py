"""What an HTTP server's answer to a POST means, read within the body limit.

A redirect is refused (its target is never contacted); a 401 or a scope challenge is the
credentials' concern (``Challenged``); a 404 (or the npm servers' 400 "No valid session ID") to
a request that carried a session id is ``SessionExpired``; any other error status is the
server's refusal (``HTTPStatusError``), unless its body is a JSON-RPC error naming a request.
An ``application/json`` body is one message; an SSE stream is handed over event by event as it
arrives, so progress is live. A body past max_message_bytes is a refused answer.
"""

from __future__ import annotations

import http.client
import json
from collections.abc import Callable

from agentrt_proxy.canonical.quoting import go_escape
from agentrt_proxy.mcp import _messages as M
from agentrt_proxy.mcp._http_credentials import Challenged
from agentrt_proxy.mcp._http_pool import describe
from agentrt_proxy.mcp._sse import SSEParser
from agentrt_proxy.mcp.errors import HTTPStatusError, MessageTooLarge, SessionClosed, SessionExpired, TransportError
from agentrt_proxy.mcp.http_auth import is_scope_challenge

__all__ = ["AnswerReader", "StreamEnd", "session_gone"]

READ_CHUNK = 1 << 16


class StreamEnd:
    """Where an SSE stream stopped: resumable from ``last_event_id`` after ``retry_ms``."""

    def __init__(self, last_event_id: str | None, retry_ms: int | None) -> None:
        self.last_event_id, self.retry_ms = last_event_id, retry_ms


class _BodyTooLarge(MessageTooLarge):
    """The server's answer is longer than the body limit: it broke what this client accepts."""


def session_gone(status: int, body: bytes) -> bool:
    return status == 404 or (status == 400 and b"No valid session ID" in body)


def media_type(resp: http.client.HTTPResponse) -> str:
    return (resp.getheader("Content-Type") or "").split(";")[0].strip().lower()


class AnswerReader:
    """Reads responses in a worker thread, handing each message to ``dispatch``."""

    def __init__(
        self,
        max_body: int,
        dispatch: Callable[[bytes], None],
        answered: Callable[[int], bool],
        closed: Callable[[], bool],
    ) -> None:
        self._max_body = max_body
        self._dispatch = dispatch
        self._answered = answered  # whether the request with this id has had its answer
        self._closed = closed

    def handle(
        self, resp: http.client.HTTPResponse, expects_answer: bool, sent_session: str | None
    ) -> tuple[bool, StreamEnd | None]:
        """Read a POST's response; whether its connection may be reused, and where its event
        stream stopped (None: it had none)."""
        status = resp.status
        if 300 <= status < 400:
            raise TransportError(M.REDIRECT_REFUSED.format(status=status, q_reason=go_escape(resp.reason)))
        if status in (202, 204) or (not expects_answer and 200 <= status < 300):
            self.read_body(resp)
            return not resp.will_close, None
        if status >= 400:
            body = self.read_body(resp)
            challenge = resp.getheader("WWW-Authenticate") or ""
            if status == 401 or is_scope_challenge(status, challenge):
                raise Challenged(status, resp.reason, challenge)
            if sent_session is not None and session_gone(status, body):
                raise SessionExpired(M.SESSION_UNKNOWN.format(status=status), sent_session, status)
            if self._deliver_error(body):
                return not resp.will_close, None
            snippet = go_escape(body[:200].decode("utf-8", "replace").strip())
            template = M.ANSWERED_HTTP_DETAIL if snippet else M.ANSWERED_HTTP
            raise HTTPStatusError(
                template.format(status=status, q_reason=go_escape(resp.reason), q_snippet=snippet), status
            )
        media = media_type(resp)
        if media == "text/event-stream":
            end = self.read_sse(resp, StreamEnd(None, None))
            return not resp.will_close, end
        if media == "application/json":
            self._dispatch(self.read_body(resp, answer=expects_answer))
            return not resp.will_close, None
        self.read_body(resp)
        raise TransportError(M.CONTENT_TYPE_REFUSED.format(q_media=go_escape(media or "none")))

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
            raise _BodyTooLarge(M.BODY_LENGTH_OVER.format(length=int(length), limit=self._max_body), answered=answer)

    def read_body(self, resp: http.client.HTTPResponse, answer: bool = False) -> bytes:
        """The whole body, at most the limit; ``answer``: it is the request's JSON-RPC answer."""
        self._check_length(resp, answer)
        body = bytearray()
        while chunk := self._read_chunk(resp):
            body += chunk
            if len(body) > self._max_body:
                raise _BodyTooLarge(M.BODY_OVER.format(limit=self._max_body), answered=answer)
        resp.read()  # marks the response complete, so the connection can carry the next request
        return bytes(body)

    def read_sse(
        self, resp: http.client.HTTPResponse, start: StreamEnd, *, stop_when_answered: int | None = None
    ) -> StreamEnd:
        """Dispatch every event; return where the stream stopped (its last id and retry)."""
        self._check_length(resp)
        parser = SSEParser()
        parser.last_event_id, parser.retry_ms = start.last_event_id, start.retry_ms
        total = 0
        while chunk := self._read_chunk(resp):
            total += len(chunk)
            if total > self._max_body:
                raise _BodyTooLarge(M.BODY_OVER.format(limit=self._max_body))
            events = parser.feed(chunk)
            for event in events:
                self._dispatch(event)
            if events and stop_when_answered is not None and self._answered(stop_when_answered):
                return StreamEnd(parser.last_event_id, parser.retry_ms)
        resp.read()
        for event in parser.finish():
            self._dispatch(event)
        return StreamEnd(parser.last_event_id, parser.retry_ms)

    def _read_chunk(self, resp: http.client.HTTPResponse) -> bytes:
        try:
            return resp.read1(READ_CHUNK)
        except (OSError, http.client.HTTPException) as exc:
            if self._closed():
                raise SessionClosed("connection closed") from exc
            raise TransportError(M.READING_FAILED.format(detail=describe(exc))) from exc
