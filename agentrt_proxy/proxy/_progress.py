"""Progress toward the host for one ``tools/call``: the proxy's own and the server's, merged.

A call's progress comes from two sources in turn, each on its own scale: the hold's (seconds
waited of the hold, while the call waits on an approval) and then the upstream server's (while
it executes). The host asked under one token, and MCP requires the values under one token to
increase strictly, so ``ProgressMerge`` (pure) maps every report to what the host is sent:

- a source whose first report is above the last value sent keeps its own scale; one whose first
  report is not continues after it: its values and its total are offset by the last value sent
  (12 s of a 60 s hold, then the server's 1 of 5, reach the host as 12 of 60, then 13 of 17), so
  the host's bar moves on instead of standing still or going back;
- a value that would still not be above the last sent (a server repeating itself or going
  back) is sent as the smallest increase over it, a float's next value;
- a total is sent only when it is at least the value sent (a total below it means nothing);
- a value that is not a finite number is dropped (``mcp.client`` already drops those).

The server's message passes as it came: it is the server's text for the host, like its log.

``ProgressRelay`` sends the merged steps under the host's own token, never the server's (the
wire asks the server under its own request id), in order, only while the host still waits. The
wire's reader calls the upstream callback on the event loop, so the callback only queues; one
task per call writes, and what arrived before the answer is written before it.
"""

from __future__ import annotations

import contextlib
import math
from collections import deque
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass

import anyio

from agentrt_proxy.mcp import CallContext
from agentrt_proxy.upstream.loaded_tool import OnProgress

__all__ = ["HOLD", "UPSTREAM", "ProgressMerge", "ProgressRelay", "ProgressStep"]

HOLD = "hold"
UPSTREAM = "upstream"
MAX_QUEUED = 256  # a host that reads slower than a server reports loses the oldest steps, not order
_EXACT_INTEGERS = 2.0**53


@dataclass(frozen=True)
class ProgressStep:
    """One ``notifications/progress`` as the host is sent it (without the token)."""

    progress: float | int
    total: float | int | None
    message: str | None


def _plain(value: float) -> float | int:
    """An integral value as an integer (``3``, not ``3.0``: what the server most likely sent)."""
    return int(value) if value.is_integer() and abs(value) < _EXACT_INTEGERS else value


class ProgressMerge:
    """The values one call's host sees, strictly increasing across its sources (see the module)."""

    def __init__(self) -> None:
        self.last: float | None = None
        self._offsets: dict[str, float] = {}

    def step(self, source: str, progress: float, total: float | None, message: str | None) -> ProgressStep | None:
        if not math.isfinite(progress):
            return None
        if source not in self._offsets:
            self._offsets[source] = 0.0 if self.last is None or progress > self.last else self.last
        offset = self._offsets[source]
        value = offset + progress
        if self.last is not None and not value > self.last:
            value = math.nextafter(self.last, math.inf)
        whole = None if total is None or not math.isfinite(total) else offset + total
        self.last = value
        return ProgressStep(_plain(value), _plain(whole) if whole is not None and whole >= value else None, message)


class ProgressRelay:
    """One call's progress toward its host: the hold's and the server's, merged, sent in order."""

    def __init__(self, ctx: CallContext) -> None:
        self._ctx = ctx
        self._merge = ProgressMerge()
        self._queue: deque[ProgressStep] = deque(maxlen=MAX_QUEUED)
        self._wake = anyio.Event()
        self._closed = False

    @property
    def wanted(self) -> bool:
        """Whether the host asked for progress (a token) and still waits for the answer."""
        return self._ctx.progress_token is not None and self._ctx.live and not self._closed

    def hold(self, progress: float, total: float | None, message: str | None) -> None:
        """The proxy's own progress while the call waits on an approval."""
        self._report(HOLD, progress, total, message)

    def upstream(self, on_message: Callable[[], object] | None = None) -> OnProgress | None:
        """The callback for the server's progress, or ``None`` when the host asked for none
        (then the server is asked for none either). ``on_message``: called as a step carrying
        the server's message is queued for the host (its text is the server's)."""
        if self._ctx.progress_token is None:
            return None

        def on_progress(progress: float, total: float | None, message: str | None) -> None:
            if self._report(UPSTREAM, progress, total, message) and message and on_message is not None:
                on_message()

        return on_progress

    def _report(self, source: str, progress: float, total: float | None, message: str | None) -> bool:
        """Queue the step for the host; whether it was."""
        if not self.wanted:
            return False
        step = self._merge.step(source, progress, total, message)
        if step is None:
            return False
        self._queue.append(step)
        self._wake.set()
        return True

    @contextlib.asynccontextmanager
    async def relaying(self) -> AsyncIterator[None]:
        """The call's handling, with this relay's writer beside it; the steps queued before the
        handling ends are written before its answer is."""
        if self._ctx.progress_token is None:
            yield  # nothing to relay: no writer, no task group
            return
        failure: Exception | None = None
        async with anyio.create_task_group() as tg:
            tg.start_soon(self._write)
            try:
                yield
            except Exception as err:  # raised again below, outside the task group: unwrapped
                failure = err
            finally:
                self._closed = True
                self._wake.set()
        if failure is not None:
            raise failure

    async def _write(self) -> None:
        while True:
            self._wake = anyio.Event()
            while self._queue:
                step = self._queue.popleft()
                await self._ctx.report_progress(step.progress, step.total, step.message)
            if self._closed:
                return
            await self._wake.wait()
