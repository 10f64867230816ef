"""The standalone GET stream of a streamable-HTTP session: what the server says unasked.

After ``initialize`` the client GETs the endpoint with ``Accept: text/event-stream``; the
server may keep that stream open and send requests (sampling, elicitation, roots, ping)
and notifications (``notifications/tools/list_changed``…) on it. Its events go to the same
``deliver`` as a POST stream's, so the session answers and routes them as it does those.

A 405 (or any other 4xx but 409, or a 501) means the server offers no such stream, or no
longer knows the session: the listener stops (a renewed session opens its own). A stream
that ends is opened again after the server's ``retry:`` time (1 s if it named none), with
``Last-Event-ID`` when it gave ids; a failure to connect, a 5xx or a 409 (the SDK's "only
one stream per session", while the old one is being torn down) waits 1 s doubling to 30 s.

It runs in one daemon thread per session: it never keeps the process from exiting, and
``stop`` shuts its socket down, so a blocked read ends at once and closing never waits.
"""

from __future__ import annotations

import contextlib
import http.client
import threading
from collections.abc import Callable
from enum import Enum

from agentrt_proxy.mcp._http_pool import Conn, Pool, shutdown
from agentrt_proxy.mcp._sse import SSEParser

__all__ = ["Listener"]

READ_CHUNK = 1 << 16
DEFAULT_RETRY_MS = 1000
BACKOFF_FIRST = 1.0
BACKOFF_MAX = 30.0


class _Verdict(Enum):
    STOP = "stop"  # no stream here: do not try again
    MOVED = "moved"  # the stream carried something, then ended: open it again soon
    FAILED = "failed"  # it could not be opened, or ended having carried nothing: back off


class Listener:
    def __init__(
        self,
        pool: Pool,
        path: str,
        headers: dict[str, str],
        dispatch: Callable[[bytes], None],
        *,
        max_event: int,
        name: str,
        auth: Callable[[], dict[str, str]] | None = None,
    ) -> None:
        self._pool, self._path, self._headers = pool, path, dict(headers)
        self._auth = auth  # the credentials, taken afresh for each GET (a token is refreshed meanwhile)
        self._dispatch, self._max_event = dispatch, max_event
        self._stopped = threading.Event()
        self._conn: Conn | None = None
        self._lock = threading.Lock()
        self._last_id: str | None = None
        self._retry_ms: int | None = None
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stopped.set()
        with self._lock:
            conn = self._conn
        if conn is not None:
            shutdown(conn)

    @property
    def running(self) -> bool:
        return self._thread.is_alive()

    def _run(self) -> None:
        failures = 0
        while not self._stopped.is_set():
            try:
                verdict = self._once()
            except Exception:  # a thread of its own: whatever broke, back off and try again
                verdict = _Verdict.FAILED
            if verdict is _Verdict.STOP or self._stopped.is_set():
                return
            if verdict is _Verdict.MOVED:
                failures = 0
                delay = (self._retry_ms if self._retry_ms is not None else DEFAULT_RETRY_MS) / 1000
            else:
                failures += 1
                delay = min(BACKOFF_FIRST * 2 ** (failures - 1), BACKOFF_MAX)
            if self._stopped.wait(delay):
                return

    def _once(self) -> _Verdict:
        try:
            conn = self._pool.connect(None, what="GET")
        except Exception:
            return _Verdict.FAILED
        with self._lock:
            self._conn = conn
        if self._stopped.is_set():  # stopped while connecting: stop never saw this socket
            self._pool.discard(conn)
            return _Verdict.STOP
        try:
            headers = dict(self._headers)
            if self._auth is not None:
                headers.update(self._auth())
            headers["Accept"] = "text/event-stream"
            if self._last_id is not None:
                headers["Last-Event-ID"] = self._last_id
            conn.request("GET", self._path, headers=headers)
            resp = conn.getresponse()
            return self._read(resp)
        except (OSError, http.client.HTTPException):
            return _Verdict.FAILED
        finally:
            with self._lock:
                self._conn = None
            self._pool.discard(conn)

    def _read(self, resp: http.client.HTTPResponse) -> _Verdict:
        status = resp.status
        media = (resp.getheader("Content-Type") or "").split(";")[0].strip().lower()
        if status != 200 or media != "text/event-stream":
            with contextlib.suppress(OSError, http.client.HTTPException):
                resp.read(4096)
            if status == 409 or (status >= 500 and status != 501):
                return _Verdict.FAILED
            return _Verdict.STOP
        parser = SSEParser()
        started_from = self._last_id
        parser.last_event_id, parser.retry_ms = self._last_id, self._retry_ms
        moved = False
        unfinished = 0  # bytes since the last whole event: one event may not outgrow the limit
        while chunk := resp.read1(READ_CHUNK):
            events = parser.feed(chunk)
            unfinished = 0 if events else unfinished + len(chunk)
            for event in events:
                self._dispatch(event)
                moved = True
            self._keep(parser)
            if unfinished > self._max_event:
                return _Verdict.FAILED
            if self._stopped.is_set():
                return _Verdict.STOP
        for event in parser.finish():
            self._dispatch(event)
            moved = True
        moved = moved or parser.last_event_id != started_from
        self._keep(parser)
        return _Verdict.MOVED if moved else _Verdict.FAILED

    def _keep(self, parser: SSEParser) -> None:
        self._last_id, self._retry_ms = parser.last_event_id, parser.retry_ms
