"""What paces the task owner's tick and a task's waits: a pause that the proxy's stop ends early.

The owner's loop (``_tasks.TaskBook``) pauses a tick between two looks at its tasks, a driver
between two looks at the approval it waits on, and a blocking ``tasks/result`` between two looks at
its task. Production pauses real time (``REAL_TICKER``: ``anyio.move_on_after``, the 0.5 s tick and
the hold's poll); an in-process test passes a ticker whose ticks it gives by hand
(``tests/task_ticks.ManualTicker``, as ``gate/_leases.RenewalTimer`` has ``ManualTimer``) and
asserts on what a tick did (rows, statuses, notifications), not on time passing. The black-box
tests run the real pace: it is the product.
"""

from __future__ import annotations

from typing import Protocol

import anyio


class Ticker(Protocol):
    """Pauses the caller for ``seconds``, or until ``stop`` is set, whichever comes first."""

    async def pause(self, seconds: float, stop: anyio.Event) -> None: ...


class AnyioTicker:
    """Real time: the event loop's timer, cut short by ``stop``."""

    async def pause(self, seconds: float, stop: anyio.Event) -> None:
        with anyio.move_on_after(seconds):
            await stop.wait()


REAL_TICKER = AnyioTicker()
