"""The tasks' pace given by hand: the owner's tick, a driver's poll and a blocking ``tasks/result``
pause until the test ticks (``proxy/_ticker.Ticker``), so a test of tasks in process says how many
ticks go by and asserts on what they did (rows, statuses, the driver's decisions), not on time."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import anyio

PATIENCE_S = 30.0  # bounds a wait that would otherwise hang; never a timing assertion


class ManualTicker:
    """Every pause ends only when the test calls ``tick`` (or the proxy stops)."""

    def __init__(self) -> None:
        self._paused: list[anyio.Event] = []
        self._arrived = anyio.Event()
        self.ticks = 0

    async def pause(self, seconds: float, stop: anyio.Event) -> None:
        woken = anyio.Event()
        self._paused.append(woken)
        self._arrived.set()
        try:
            async with anyio.create_task_group() as tg:

                async def ends(event: anyio.Event) -> None:
                    await event.wait()
                    tg.cancel_scope.cancel()

                tg.start_soon(ends, woken)
                tg.start_soon(ends, stop)
        finally:
            if woken in self._paused:
                self._paused.remove(woken)

    async def tick(self) -> None:
        """Wake every pause; return once one has paused again (the owner's loop always does)."""
        woken, self._paused = self._paused, []
        self._arrived = anyio.Event()
        for event in woken:
            event.set()
        self.ticks += 1
        with anyio.fail_after(PATIENCE_S):
            await self._arrived.wait()

    async def resting(self) -> None:
        """Return once a pause has begun since the last tick (the owner's first tick is done)."""
        with anyio.fail_after(PATIENCE_S):
            await self._arrived.wait()

    async def until(self, holds: Callable[[], Awaitable[bool]]) -> None:
        """Tick until ``holds()`` is true (checked before every tick, so no tick when it already is)."""
        with anyio.fail_after(PATIENCE_S):
            while not await holds():
                await self.tick()
