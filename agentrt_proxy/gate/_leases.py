"""The lease a session holds on its run (runtime-core §5.1–5.2): judged before every write
that needs it, and renewed while a tool runs."""

from __future__ import annotations

import heapq
import itertools
import sys
import threading
import time
from collections.abc import Callable
from typing import Protocol

import anyio

from agentrt_proxy.canonical import durations
from agentrt_proxy.errors import StoreError
from agentrt_proxy.errors.bugs import write_traceback
from agentrt_proxy.store import LeaseLost, Run
from agentrt_proxy.text import operator_text
from agentrt_proxy.text.record_text import ERR_LEASE_EXPIRED, ERR_LEASE_OTHER


def check_lease(run: Run, owner: str, wall_ns: int) -> None:
    """``owner`` holds ``run``'s lease and, by the wall clock, it has not expired."""
    if run.lease_owner != owner:
        raise LeaseLost(ERR_LEASE_OTHER.format(run_id=run.id))
    if not run.lease_expires_at or wall_ns >= durations.parse_time(run.lease_expires_at):
        raise LeaseLost(ERR_LEASE_EXPIRED.format(run_id=run.id, at=run.lease_expires_at))


class RenewalTimer(Protocol):
    """What runs a lease's renewals: ``schedule`` calls ``renewals.fire()`` once, ``delay_s``
    from now, off the caller's stack. Production passes ``RENEWAL_THREAD``; a test passes a timer
    whose time it moves by hand (``tests/gate_fixtures.ManualTimer``), and asserts on the
    renewals written and the losses reported, not on time passing."""

    def schedule(self, delay_s: float, renewals: LeaseRenewals) -> None: ...


class RenewalThread:
    """One daemon thread that runs every due renewal of the process, in due order.

    Not the event loop: a message the loop is decoding, validating or canonicalising (a C call
    that holds the loop for as long as it runs) would hold a ``call_later`` timer with it, and a
    lease renewed late is a run another proxy takes over while its tool runs (SECURITY.md).
    A thread of its own only waits for the GIL, which no single step of the proxy holds for long
    (a message's size and value count are bounded before it is decoded). A call that ends before
    its first renewal costs one heap entry, dropped when it comes due."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._due: list[tuple[float, int, LeaseRenewals]] = []
        self._order = itertools.count()
        self._thread: threading.Thread | None = None

    def schedule(self, delay_s: float, renewals: LeaseRenewals) -> None:
        with self._cond:
            entry = (time.monotonic() + delay_s, next(self._order), renewals)
            heapq.heappush(self._due, entry)
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="agentrt-lease-renewals", daemon=True)
                self._thread.start()
            elif self._due[0] is entry:
                self._cond.notify()

    def _run(self) -> None:
        while True:
            with self._cond:
                while True:
                    if not self._due:
                        self._cond.wait()
                        continue
                    wait = self._due[0][0] - time.monotonic()
                    if wait > 0:
                        self._cond.wait(wait)
                        continue
                    renewals = heapq.heappop(self._due)[2]
                    break
            renewals.fire()


RENEWAL_THREAD: RenewalTimer = RenewalThread()


class LeaseRenewals:
    """Renew a lease every ``period_s`` while a tool runs, on ``timer`` (``RENEWAL_THREAD``
    unless a test passes its own).

    ``renew`` runs there (the store's lease connection, which any thread may use); answering
    False (another owner has the run) calls ``on_lost`` there too (so it must be safe from any
    thread: the session's sets a flag) and renews no more; a store error is retried at the next
    tick. ``stop`` waits for a renewal in flight, so no renewal outlives the call."""

    def __init__(self, period_s: float, renew: Callable[[], bool], on_lost: Callable[[], None],
                 timer: RenewalTimer = RENEWAL_THREAD) -> None:
        self._renew_once = renew
        self._timer = timer
        self._on_lost = on_lost
        self._period = period_s
        self._state = threading.Condition()
        self._stopped = False
        self._renewing = False
        timer.schedule(self._period, self)

    def fire(self) -> None:
        """One renewal, due now (the timer calls it)."""
        with self._state:
            if self._stopped:
                return
            self._renewing = True
        try:
            ok = self._renew_once()
        except StoreError:
            ok = True  # a store error: retried at the next tick
        except Exception as err:  # a bug: said, kept in a file, and the renewal tried again all the same
            sys.stderr.write(operator_text.lease_renewal_bug(err, write_traceback(err)))
            ok = True
        if not ok:
            self._on_lost()
        with self._state:
            self._renewing = False
            self._state.notify_all()
            if ok and not self._stopped:
                self._timer.schedule(self._period, self)

    def _wait_idle(self) -> None:
        with self._state:
            while self._renewing:
                self._state.wait()

    async def stop(self) -> None:
        with self._state:
            self._stopped = True
            renewing = self._renewing
        if renewing:
            with anyio.CancelScope(shield=True):
                await anyio.to_thread.run_sync(self._wait_idle)
