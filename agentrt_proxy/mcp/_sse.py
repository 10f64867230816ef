"""Server-sent events, incremental and free of I/O (the body of a streamable-HTTP reply).

Lines end in CR, LF or CRLF (a CR at the end of one chunk and an LF at the start of
the next are one line end). ``data:`` lines (one optional space removed) join with
``\\n``; comments are ignored; ``id:`` sets ``last_event_id`` (unless it holds a NUL) and
an all-digits ``retry:`` sets ``retry_ms``, both kept across events as WHATWG says, for
resuming a stream with GET + ``Last-Event-ID``; an event is dispatched at a blank line or
at end of stream. Only events named empty or ``message`` (trimmed) are
returned, as MCP SDKs act only on those; empty-data events (the 2025-11-25 priming
event) carry no message and are skipped.
"""

from __future__ import annotations

__all__ = ["SSEParser"]


class SSEParser:
    def __init__(self) -> None:
        self._line = bytearray()
        self._after_cr = False
        self._data: list[bytes] = []
        self._event = b""
        self._has_data = False
        self.last_event_id: str | None = None  # the last ``id:`` seen (the priming event's too)
        self.retry_ms: int | None = None  # the server's reconnection time, if it sent one

    def feed(self, chunk: bytes) -> list[bytes]:
        """Add body bytes; return the ``data`` of every event they complete."""
        out: list[bytes] = []
        start = 0
        n = len(chunk)
        i = 0
        while i < n:
            c = chunk[i]
            if c == 0x0A and self._after_cr:  # the LF of a CRLF split or not
                self._after_cr = False
                start = i + 1
            elif c in (0x0A, 0x0D):
                self._line += chunk[start:i]
                self._after_cr = c == 0x0D
                self._end_line(out)
                start = i + 1
            else:
                self._after_cr = False
                # Jump to the next line end at C speed.
                j = _next_eol(chunk, i)
                i = j
                continue
            i += 1
        self._line += chunk[start:n]
        return out

    def finish(self) -> list[bytes]:
        """End of stream: dispatch what is pending (an unterminated last event)."""
        out: list[bytes] = []
        if self._line:
            self._end_line(out)
        self._dispatch(out)
        return out

    def _end_line(self, out: list[bytes]) -> None:
        line = bytes(self._line)
        self._line.clear()
        if not line:
            self._dispatch(out)
            return
        if line.startswith(b":"):
            return
        field, sep, value = line.partition(b":")
        if sep and value.startswith(b" "):
            value = value[1:]
        if field == b"data":
            self._data.append(value)
            self._has_data = True
        elif field == b"event":
            self._event = value
        elif field == b"id" and b"\0" not in value:
            self.last_event_id = value.decode("utf-8", "replace")
        elif field == b"retry" and value.isdigit():  # bytes.isdigit: ASCII digits only
            self.retry_ms = int(value)

    def _dispatch(self, out: list[bytes]) -> None:
        data = b"\n".join(self._data)
        name = self._event.strip()
        if self._has_data and name in (b"", b"message") and data.strip():
            out.append(data)
        self._data = []
        self._event = b""
        self._has_data = False


def _next_eol(chunk: bytes, i: int) -> int:
    lf = chunk.find(b"\n", i)
    cr = chunk.find(b"\r", i)
    if lf < 0:
        return cr if cr >= 0 else len(chunk)
    if cr < 0:
        return lf
    return min(lf, cr)
