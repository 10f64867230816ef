"""Newline-delimited framing: bytes in, whole lines out, each at most ``limit`` bytes. No I/O.

A real server answered 800 kB in one line, and asyncio's default reader limit is
64 KiB, so this buffer frames lines of any size up to its limit (the configuration's
``max_message_bytes``). It remembers how far it already searched for a newline so a huge
line arriving in small chunks costs linear time.

A line longer than the limit is never held: once it passes the limit the buffer keeps only
its first and its last ``EDGE_BYTES`` (enough to read its ``id``, which a server may write
first or last) and drops the rest as it arrives, reporting it twice as an ``Oversize``: when
it passes the limit, and when it ends. So a server sending 100 MB in one line costs the
proxy the limit, not 100 MB.

A partial line can also be dropped on purpose (``drop``: the call it answers timed out). The
bytes that follow up to the next newline are then either the rest of that line, which must
never be read as a message of its own (its inner members could pass for an answer), or a
new message from a server that abandoned the line. The rest of a JSON object is never JSON
by itself, so the first line after a drop is passed on only when it is whole JSON.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import cast

__all__ = ["EDGE_BYTES", "BoundedLineBuffer", "LineBuffer", "Oversize"]

EDGE_BYTES = 4096


@dataclass(frozen=True)
class Oversize:
    """A line longer than the limit: its first bytes, and its last ones once it has ended."""

    head: bytes
    tail: bytes | None  # None while the line is still arriving
    size: int  # its bytes so far; all of them once it has ended
    limit: int


class _Skipping:
    """The line being dropped: what is kept of it, and whether to report its end."""

    def __init__(self, head: bytes, tail: bytes, size: int, report: bool) -> None:
        self.head, self.tail, self.size, self.report = head, tail, size, report

    def add(self, piece: bytes | bytearray) -> None:
        self.size += len(piece)
        if len(piece) >= EDGE_BYTES:
            self.tail = bytes(piece[-EDGE_BYTES:])
        else:
            self.tail = (self.tail + piece)[-EDGE_BYTES:]


class BoundedLineBuffer:
    """Accumulates bytes and yields complete lines without their ``\\n`` (or ``\\r\\n``), and
    an ``Oversize`` for a line longer than ``limit`` (none when ``limit`` is ``None``)."""

    def __init__(self, limit: int | None) -> None:
        self._buf = bytearray()
        self._scanned = 0  # bytes of _buf already known to hold no newline
        self._limit = limit
        self._skipping: _Skipping | None = None
        self._after_drop = False  # the next line may be the rest of a dropped one

    def feed(self, data: bytes) -> list[bytes | Oversize]:
        """Add ``data``; return every line it completes (or reports), in order."""
        out: list[bytes | Oversize] = []
        if self._skipping is not None:
            nl = data.find(b"\n")
            if nl < 0:
                self._skipping.add(data)
                return out
            self._skipping.add(data[:nl])
            self._end_skip(out)
            data = data[nl + 1 :]
        self._buf += data
        start = 0
        search = self._scanned
        while True:
            nl = self._buf.find(b"\n", search)
            if nl < 0:
                break
            end = nl - 1 if nl > start and self._buf[nl - 1] == 0x0D else nl
            if self._limit is not None and end - start > self._limit:
                self._start_skip(start, end, out)
                self._end_skip(out)
            else:
                self._line(bytes(self._buf[start:end]), out)
            start = search = nl + 1
        if start:
            del self._buf[:start]
        if self._limit is not None and len(self._buf) > self._limit:
            self._start_skip(0, len(self._buf), out)
            self._buf.clear()
        self._scanned = len(self._buf)
        return out

    def _line(self, line: bytes, out: list[bytes | Oversize]) -> None:
        if self._after_drop:
            self._after_drop = False
            if not _whole_json(line):
                return  # the rest of the line dropped at a timeout
        out.append(line)

    def _start_skip(self, start: int, end: int, out: list[bytes | Oversize]) -> None:
        """Keep only the edges of ``_buf[start:end]`` (copied; never the whole line)."""
        report = not self._after_drop  # the rest of a dropped line is not a message to report
        self._after_drop = False
        head = bytes(self._buf[start : min(end, start + EDGE_BYTES)])
        tail = bytes(self._buf[max(start, end - EDGE_BYTES) : end])
        self._skipping = _Skipping(head, tail, end - start, report)
        if report:
            out.append(Oversize(self._skipping.head, None, self._skipping.size, self._limit or 0))

    def _end_skip(self, out: list[bytes | Oversize]) -> None:
        skipping, self._skipping = self._skipping, None
        assert skipping is not None
        if skipping.report:
            tail = skipping.tail[:-1] if skipping.tail.endswith(b"\r") else skipping.tail
            out.append(Oversize(skipping.head, tail, skipping.size, self._limit or 0))

    def drop(self) -> bool:
        """Forget the partial line (its call timed out); whether there was one."""
        if self._skipping is not None:
            self._skipping.report = False  # it was reported when it passed the limit
            return True
        if not self._buf:
            return False
        self._buf.clear()
        self._scanned = 0
        self._after_drop = True
        return True

    def partial_head(self) -> bytes:
        """The first bytes of the line under way (``b""`` when none is)."""
        if self._skipping is not None:
            return self._skipping.head
        return bytes(self._buf[:EDGE_BYTES])

    def finish(self) -> bytes | Oversize | None:
        """At end of stream: the unterminated last line, if any bytes are left."""
        if self._skipping is not None:
            out: list[bytes | Oversize] = []
            self._end_skip(out)
            return out[0] if out else None
        if not self._buf:
            return None
        rest = bytes(self._buf)
        self._buf.clear()
        self._scanned = 0
        rest = rest[:-1] if rest.endswith(b"\r") else rest
        lines: list[bytes | Oversize] = []
        self._line(rest, lines)
        return lines[0] if lines else None

    @property
    def pending(self) -> int:
        """Bytes held that do not yet form a whole line."""
        return len(self._buf)

    @property
    def skipping(self) -> int:
        """How many bytes of the over-long line under way were seen (0 when none is being skipped)."""
        return self._skipping.size if self._skipping is not None else 0


def _whole_json(line: bytes) -> bool:
    try:
        json.loads(line)
    except (ValueError, RecursionError):
        return False
    return True


class LineBuffer:
    """A ``BoundedLineBuffer`` without a limit (the host's side): lines only."""

    def __init__(self) -> None:
        self._inner = BoundedLineBuffer(None)

    def feed(self, data: bytes) -> list[bytes]:
        """Add ``data``; return every line it completes, in order."""
        return cast("list[bytes]", self._inner.feed(data))  # no limit: never an Oversize

    def finish(self) -> bytes | None:
        """At end of stream: the unterminated last line, if any bytes are left."""
        return cast("bytes | None", self._inner.finish())

    @property
    def pending(self) -> int:
        """Bytes held that do not yet form a whole line."""
        return self._inner.pending
