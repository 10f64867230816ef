"""What an upstream server sends its client, matched to the request it answers.

Ids are the client's own integers, handed out here; each request in flight has a ``PendingAnswer``
slot that its answer, or the failure that stands for one, fills exactly once. A call's progress
reaches only its own callback (the progress token is the request's id). A request of the
server's and every other notification go to the callbacks the connection gave.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import anyio

from agentrt_proxy.mcp import _messages as M
from agentrt_proxy.mcp import jsonrpc
from agentrt_proxy.mcp._framing import EDGE_BYTES, Oversize
from agentrt_proxy.mcp._oversize import answer_id, too_long, whole_characters
from agentrt_proxy.mcp.errors import TransportError
from agentrt_proxy.mcp.jsonrpc import DecodeFailure, ErrorResponse, Notification, Request, Response
from agentrt_proxy.mcp.spans import top_level_id

__all__ = ["Inbox", "PendingAnswer", "ProgressCallback", "Undecodable"]

ProgressCallback = Callable[[float, float | None, str | None], None]


def _number(value: Any) -> float | None:
    """A progress or total as the server sent it, if it is a finite number (not a boolean)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    number = float(value)
    return number if math.isfinite(number) else None


class Undecodable:
    """An answer that came but cannot be read: why, and what the record keeps of it."""

    def __init__(self, reason: str, raw: bytes) -> None:
        self.reason, self.raw = reason, raw


class PendingAnswer:
    """One request in flight: set ``done`` once ``answer`` or ``failure`` is in."""

    def __init__(self, on_progress: ProgressCallback | None) -> None:
        self.done = anyio.Event()
        self.answer: Response | ErrorResponse | Undecodable | None = None
        self.failure: TransportError | None = None
        self.on_progress = on_progress

    @property
    def settled(self) -> bool:
        return self.answer is not None or self.failure is not None

    def answered(self, answer: Response | ErrorResponse | Undecodable) -> None:
        self.answer = answer
        self.done.set()

    def failed(self, failure: TransportError) -> None:
        self.failure = failure
        self.done.set()


class Inbox:
    """The requests in flight, by id, and the matching of what the server sends to them."""

    def __init__(self, on_request: Callable[[Request], None], on_notification: Callable[[Notification], None]) -> None:
        self._on_request = on_request
        self._on_notification = on_notification
        self._next_id = 0
        self.pending: dict[int, PendingAnswer] = {}

    def open(self, on_progress: ProgressCallback | None) -> tuple[int, PendingAnswer]:
        """A new request id and the slot its answer will fill."""
        self._next_id += 1
        slot = PendingAnswer(on_progress)
        self.pending[self._next_id] = slot
        return self._next_id, slot

    def drop(self, msg_id: int) -> None:
        self.pending.pop(msg_id, None)

    def is_answered(self, msg_id: int) -> bool:
        pending = self.pending.get(msg_id)
        return pending is None or pending.settled

    def fail_all(self, failure: Callable[[], TransportError]) -> None:
        """Every request still waiting fails with a ``failure()`` of its own."""
        for pending in list(self.pending.values()):
            if not pending.settled:
                pending.failed(failure())

    def _waiting(self, msg_id: Any) -> PendingAnswer | None:
        pending = self.pending.get(msg_id) if isinstance(msg_id, int) else None
        return pending if pending is not None and pending.answer is None else None

    def deliver(self, data: bytes | Oversize) -> None:
        if isinstance(data, Oversize):
            self._oversize(data)
            return
        decoded = jsonrpc.decode_line(data)
        if decoded is None or isinstance(decoded, jsonrpc.Batch):
            return  # never sent a batch
        if isinstance(decoded, jsonrpc.Invalid):
            # An answer whose envelope says two things (a repeated key) is refused, not ignored.
            pending = self._waiting(decoded.id)
            if pending is not None and not decoded.is_request:
                pending.answered(Undecodable(decoded.reason, whole_characters(data[:EDGE_BYTES])))
            return  # nothing sensible to match another invalid message to
        if isinstance(decoded, DecodeFailure):
            edges = (data[:EDGE_BYTES], data[-EDGE_BYTES:])  # a message refused by its weight: never scanned
            msg_id = answer_id(*edges) if decoded.undecoded else top_level_id(data.decode("utf-8", "replace"))
            pending = self._waiting(msg_id)
            if pending is not None:
                kept = whole_characters(data[:EDGE_BYTES]) if decoded.undecoded else data
                pending.answered(Undecodable(decoded.reason, kept))
            return
        if isinstance(decoded, Response | ErrorResponse):
            pending = self._waiting(decoded.id)
            if pending is not None:
                pending.answered(decoded)
            return
        if isinstance(decoded, Request):
            self._on_request(decoded)
            return
        if decoded.method == "notifications/progress":
            self._progress(decoded)
        else:
            self._on_notification(decoded)

    def _oversize(self, line: Oversize) -> None:
        """A message past max_message_bytes, skipped by the transport (the server keeps running):
        the answer to the call it names is refused, as an answer that broke the boundary, naming
        its size once its end has come; when it names none, every call in flight fails as a
        protocol failure. Other calls go on."""
        msg_id = answer_id(line.head, line.tail)
        if msg_id is not None:  # (reported twice, a line named at its beginning is named at its end)
            pending = self.pending.get(msg_id)
            if pending is not None and not pending.settled:
                # What the record keeps of it: its first bytes.
                pending.answered(Undecodable(too_long(line), whole_characters(line.head)))
            return
        if line.tail is None:
            return  # its end may still name the call
        reason = M.MESSAGE_OVER_LIMIT.format(size=line.size, limit=line.limit)
        self.fail_all(lambda: TransportError(M.NAMING_NO_REQUEST.format(reason=reason)))

    def _progress(self, note: Notification) -> None:
        if not note.params:
            return
        token = note.params.get("progressToken")
        # The token is this request's own id (``Inbox.open``): a call's progress reaches only its
        # own callback, whatever token another call or the host uses.
        pending = self.pending.get(token) if isinstance(token, int) and not isinstance(token, bool) else None
        progress = _number(note.params.get("progress"))
        if pending is None or pending.on_progress is None or progress is None:
            return
        message = note.params.get("message")
        pending.on_progress(progress, _number(note.params.get("total")), message if isinstance(message, str) else None)
