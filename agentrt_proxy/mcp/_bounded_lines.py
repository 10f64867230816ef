"""Newline framing with a ceiling on a line's length, for the host's stream.

``LineBuffer`` frames lines of any size, which an upstream needs (a real server answered
800 kB in one line) but which lets a host that never ends its line grow the proxy's memory
without bound. This wrapper holds at most the bound plus one read: past it, the line is
reported once as ``Oversized`` (with its first bytes, so the session can answer its id) and
the rest of it is dropped as it arrives, up to its newline.
"""

from __future__ import annotations

from dataclasses import dataclass

from agentrt_proxy.mcp._framing import LineBuffer

__all__ = ["HEAD_BYTES", "BoundedLines", "Oversized"]

HEAD_BYTES = 1 << 16  # of an oversized line, kept to read its id from (every SDK writes it early)


@dataclass(frozen=True)
class Oversized:
    """A line longer than the bound; ``head`` is its beginning (cut, so never a whole message)."""

    head: bytes


class BoundedLines:
    """Whole lines of at most ``limit`` bytes (without their newline), ``Oversized`` for longer."""

    def __init__(self, limit: int, head_bytes: int = HEAD_BYTES) -> None:
        self._lines = LineBuffer()
        self._limit = limit
        self._head_bytes = min(head_bytes, limit)
        self._discarding = False  # inside an oversized line already reported

    def feed(self, data: bytes) -> list[bytes | Oversized]:
        """Add ``data``; return, in order, every line it completes and every line it overflows."""
        out: list[bytes | Oversized] = []
        if self._discarding:
            nl = data.find(b"\n")
            if nl < 0:
                return out
            self._discarding = False
            data = data[nl + 1 :]
        for line in self._lines.feed(data):
            out.append(self._oversized(line) if len(line) > self._limit else line)
        # One byte of slack: a line of exactly the bound may be waiting for the "\n" of its "\r\n".
        if self._lines.pending > self._limit + 1:
            rest = self._lines.finish()
            assert rest is not None  # pending > 0
            out.append(self._oversized(rest))
            self._discarding = True
        return out

    def finish(self) -> bytes | Oversized | None:
        """At end of stream: the unterminated last line (or its overflow), if any."""
        if self._discarding:
            self._discarding = False
            return None  # already reported when it crossed the bound
        rest = self._lines.finish()
        if rest is not None and len(rest) > self._limit:
            return self._oversized(rest)
        return rest

    @property
    def pending(self) -> int:
        """Bytes held that do not yet form a whole line (at most the bound plus one read)."""
        return self._lines.pending

    def _oversized(self, line: bytes) -> Oversized:
        return Oversized(bytes(line[: self._head_bytes]))
