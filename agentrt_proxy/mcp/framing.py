"""Newline-delimited framing: bytes in, whole lines out. No I/O, no line-length limit.

A real server answered 800 kB in one line, and asyncio's default reader limit is
64 KiB, so this buffer frames lines of any size. It remembers how far it already
searched for a newline so a huge line arriving in small chunks costs linear time.
"""

from __future__ import annotations

__all__ = ["LineBuffer"]


class LineBuffer:
    """Accumulates bytes and yields complete lines without their ``\\n`` (or ``\\r\\n``)."""

    def __init__(self) -> None:
        self._buf = bytearray()
        self._scanned = 0  # bytes of _buf already known to hold no newline

    def feed(self, data: bytes) -> list[bytes]:
        """Add ``data``; return every line it completes, in order."""
        self._buf += data
        lines: list[bytes] = []
        start = 0
        search = self._scanned
        while True:
            nl = self._buf.find(b"\n", search)
            if nl < 0:
                break
            end = nl - 1 if nl > start and self._buf[nl - 1] == 0x0D else nl
            lines.append(bytes(self._buf[start:end]))
            start = search = nl + 1
        if start:
            del self._buf[:start]
        self._scanned = len(self._buf)
        return lines

    def finish(self) -> bytes | None:
        """At end of stream: the unterminated last line, if any bytes are left."""
        if not self._buf:
            return None
        rest = bytes(self._buf)
        self._buf.clear()
        self._scanned = 0
        return rest[:-1] if rest.endswith(b"\r") else rest

    @property
    def pending(self) -> int:
        """Bytes held that do not yet form a whole line."""
        return len(self._buf)
