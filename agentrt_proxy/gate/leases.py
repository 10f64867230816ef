"""The lease a session holds on its run (runtime-core §5.1–5.2): judged before every write
that needs it, and renewed while a tool runs."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import anyio

from agentrt_proxy.canonical import durations
from agentrt_proxy.store import LeaseLost, Run
from agentrt_proxy.text.record_text import ERR_LEASE_EXPIRED, ERR_LEASE_OTHER


def check_lease(run: Run, owner: str, wall_ns: int) -> None:
    """``owner`` holds ``run``'s lease and, by the wall clock, it has not expired."""
    if run.lease_owner != owner:
        raise LeaseLost(ERR_LEASE_OTHER.format(run_id=run.id))
    if not run.lease_expires_at or wall_ns >= durations.parse_time(run.lease_expires_at):
        raise LeaseLost(ERR_LEASE_EXPIRED.format(run_id=run.id, at=run.lease_expires_at))


class LeaseRenewals:
    """Renew a lease every ``period_s`` while a tool runs.

    A timer on the event loop rather than a task per call: most calls end long before the
    first renewal is due, and then this costs a timer set and cancelled (a task group and
    a task cost ~0.1 ms per call). A due renewal runs ``renew`` in a worker thread (the
    store's lease connection), as its own task; ``stop`` waits for one in flight, so no
    renewal outlives the call. ``renew`` answering False (another owner has the run) calls
    ``on_lost`` and renews no more; a store error is retried at the next tick."""

    def __init__(self, period_s: float, renew: Callable[[], bool], on_lost: Callable[[], None]) -> None:
        self._renew_once = renew
        self._on_lost = on_lost
        self._loop = asyncio.get_running_loop()
        self._period = period_s
        self._task: asyncio.Task[None] | None = None
        self._stopped = False
        self._timer: asyncio.TimerHandle | None = self._loop.call_later(self._period, self._due)

    def _due(self) -> None:
        self._timer = None
        if not self._stopped:
            self._task = self._loop.create_task(self._renew())

    async def _renew(self) -> None:
        try:
            ok = await anyio.to_thread.run_sync(self._renew_once)
        except Exception:
            ok = True  # a store error: retried at the next tick
        if not ok:
            self._on_lost()
        elif not self._stopped:
            self._timer = self._loop.call_later(self._period, self._due)

    async def stop(self) -> None:
        self._stopped = True
        if self._timer is not None:
            self._timer.cancel()
        task = self._task
        if task is not None and not task.done():
            with anyio.CancelScope(shield=True):
                await task
