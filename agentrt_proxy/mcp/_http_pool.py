"""Keep-alive connections to one HTTP origin, checked before reuse (stdlib ``http.client``).

Servers close an idle keep-alive connection after a few seconds (uvicorn and Node after
5 s). Writing a request onto such a connection "succeeds" into the kernel and fails only
when the answer is read, and by then the proxy cannot tell whether the server saw it. So an
idle connection is checked before it carries a request: a socket that polls readable while
no request is outstanding is unfit whatever it holds (end of stream, a reset, or bytes
nobody asked for, such as a 408 sent before closing), so it is closed, not peeked at. A
server's ``Keep-Alive: timeout=N`` retires a connection a second before the server would.

A new connection is connected explicitly, before anything is written, so a failure to
connect (refused, unreachable, DNS, TLS) is told apart from one after the request went out:
the first raises ``NotSentError``. Each connection counts the bytes the kernel accepted
from it, so the sender can tell "nothing was written" from "something was".
"""

from __future__ import annotations

import contextlib
import http.client
import select
import socket
import ssl
import threading
import time
from typing import Any

from agentrt_proxy.canonical.quoting import go_escape
from agentrt_proxy.mcp import _messages as M
from agentrt_proxy.mcp.errors import NotSentError

__all__ = ["Conn", "Pool", "describe"]

KEEP_ALIVE_MARGIN = 1.0  # seconds before the server's announced timeout that a connection retires


def describe(exc: BaseException) -> str:
    """An exception as the one-line detail the operator reads."""
    return go_escape(str(exc) or type(exc).__name__)


class _Counting:
    """Sends through ``socket.send`` rather than ``sendall``, counting what the kernel took."""

    sock: Any
    raw: Any = None  # the connected socket, kept after http.client hands it to a closing response
    written: int = 0
    # When a connection went back to the pool, and when it must no longer be reused.
    idle_since: float = 0.0
    retire_at: float | None = None

    def send(self, data: Any) -> None:
        if self.sock is None:  # never auto-connect: connecting is the pool's, and is told apart
            raise http.client.NotConnected()
        if not isinstance(data, bytes | bytearray | memoryview):
            raise TypeError(M.ONLY_BYTES)
        view = memoryview(data).cast("B")
        while view:
            n = self.sock.send(view)
            self.written += n
            view = view[n:]


class _HTTP(_Counting, http.client.HTTPConnection):
    pass


class _HTTPS(_Counting, http.client.HTTPSConnection):
    pass


Conn = _HTTP | _HTTPS


def _looks_open(conn: Conn) -> bool:
    """True when an idle connection can carry a request: connected and silent."""
    sock = conn.sock
    if sock is None:
        return False
    if isinstance(sock, ssl.SSLSocket) and sock.pending():
        return False  # decrypted bytes nobody asked for
    try:
        if hasattr(select, "poll"):
            poller = select.poll()
            poller.register(sock, select.POLLIN | select.POLLPRI)
            return not poller.poll(0)
        readable, _, errored = select.select([sock], [], [sock], 0)
        return not readable and not errored
    except (OSError, ValueError):
        return False


def _keep_alive_seconds(header: str | None) -> float | None:
    """The ``timeout=N`` of a ``Keep-Alive`` header, if any."""
    if not header:
        return None
    for part in header.split(","):
        name, _, value = part.strip().partition("=")
        if name.strip().lower() == "timeout" and value.strip().isdigit():
            return float(value.strip())
    return None


class Pool:
    """The idle connections to one origin, and the ones carrying a request now."""

    def __init__(self, host: str, port: int | None, *, https: bool, connect_timeout: float) -> None:
        self._host, self._port, self._https = host, port, https
        self._connect_timeout = connect_timeout
        self._lock = threading.Lock()
        self._idle: list[Conn] = []
        self._active: set[Conn] = set()
        self._closed = False

    def _make(self, timeout: float) -> Conn:
        if self._https:
            return _HTTPS(self._host, self._port, timeout=timeout, context=ssl.create_default_context())
        return _HTTP(self._host, self._port, timeout=timeout)

    def take_idle(self, timeout: float | None) -> Conn | None:
        """The most recently used idle connection that is still open, or None."""
        while True:
            with self._lock:
                if not self._idle or self._closed:
                    return None
                conn = self._idle.pop()
                self._active.add(conn)
            retired = conn.retire_at is not None and time.monotonic() >= conn.retire_at
            if not retired and _looks_open(conn):
                conn.written = 0
                conn.sock.settimeout(timeout)
                return conn
            self.discard(conn)  # closed by the server while idle: nothing was sent on it

    def connect(self, timeout: float | None, *, what: str) -> Conn:
        """A new connection, connected; ``NotSentError`` (naming ``what``) when that fails."""
        conn = self._make(timeout if timeout is not None else self._connect_timeout)
        with self._lock:
            if self._closed:
                raise NotSentError("connection closed")
            self._active.add(conn)
        try:
            conn.connect()
        except (OSError, http.client.HTTPException) as exc:
            self.discard(conn)
            raise NotSentError(M.CONNECT_REFUSED.format(what=what, detail=describe(exc))) from exc
        conn.raw = conn.sock
        conn.sock.settimeout(timeout)
        return conn

    def release(self, conn: Conn, resp: http.client.HTTPResponse | None, reusable: bool) -> None:
        """Give a connection back after its answer was read to the end, or close it."""
        keep = _keep_alive_seconds(resp.getheader("Keep-Alive")) if resp is not None else None
        if keep is not None and keep <= KEEP_ALIVE_MARGIN:
            reusable = False
        with self._lock:
            self._active.discard(conn)
            if reusable and not self._closed and conn.sock is not None:
                conn.idle_since = time.monotonic()
                conn.retire_at = None if keep is None else conn.idle_since + keep - KEEP_ALIVE_MARGIN
                self._idle.append(conn)
                return
        conn.close()

    def discard(self, conn: Conn) -> None:
        with self._lock:
            self._active.discard(conn)
        conn.close()

    def close(self) -> None:
        """Close every connection; a worker thread blocked reading on one is woken."""
        with self._lock:
            self._closed = True
            conns = list(self._idle) + list(self._active)
            self._idle.clear()
            self._active.clear()
        for conn in conns:
            shutdown(conn)
            conn.close()


def shutdown(conn: Conn) -> None:
    """Unblock a thread reading from ``conn`` (closing alone does not wake a blocked read)."""
    sock = conn.raw if conn.raw is not None else conn.sock
    if sock is not None:
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_RDWR)
