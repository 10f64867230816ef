"""Lease renewals run on a timer the gate is given: in production a thread of its own, so an event
loop held by a long decode cannot hold them back. The rest is driven by a timer the test moves by
hand (``ManualTimer``): a renewal comes due every period, a store error is tried again at the next,
a renewal that finds another owner reports it once and renews no more, and ``stop`` leaves no
renewal behind."""

from __future__ import annotations

import threading

import pytest

from agentrt_proxy.errors import StoreUnavailable
from agentrt_proxy.gate._leases import LeaseRenewals
from tests.gate_fixtures import SECOND, FakeClock, ManualTimer

pytestmark = pytest.mark.anyio

PERIOD_S = 1
PATIENCE_S = 60  # a bound on a wait that would otherwise hang, not a timing assertion


async def test_a_lease_is_renewed_while_the_event_loop_is_held() -> None:
    renewed = threading.Event()

    def renew() -> bool:
        renewed.set()
        return True

    renewals = LeaseRenewals(0.01, renew, lambda: None)  # the production timer: the renewal thread
    # The loop is held here (a blocking wait, as a C decode holds it): a renewal scheduled on the
    # loop could never run before the wait ends.
    held_through = renewed.wait(PATIENCE_S)
    await renewals.stop()
    assert held_through


async def test_a_renewal_comes_due_every_period_and_a_store_error_is_tried_again_at_the_next() -> None:
    timer = ManualTimer(FakeClock())
    tries: list[int] = []
    lost: list[int] = []

    def renew() -> bool:
        tries.append(timer.clock.now)
        if len(tries) == 2:
            raise StoreUnavailable("database is locked")
        return True

    start = timer.clock.now
    renewals = LeaseRenewals(PERIOD_S, renew, lambda: lost.append(1), timer)
    timer.advance(PERIOD_S * SECOND - 1)
    assert tries == []  # not due yet
    timer.advance(2 * PERIOD_S * SECOND + 1)
    assert [t - start for t in tries] == [SECOND, 2 * SECOND, 3 * SECOND]
    assert lost == [] and timer.pending == 1
    await renewals.stop()


async def test_a_renewal_that_finds_another_owner_reports_it_once_and_renews_no_more() -> None:
    timer = ManualTimer(FakeClock())
    tries: list[int] = []
    lost: list[int] = []

    def renew() -> bool:
        tries.append(1)
        return False

    renewals = LeaseRenewals(PERIOD_S, renew, lambda: lost.append(1), timer)
    timer.advance(10 * PERIOD_S * SECOND)
    await renewals.stop()
    assert tries == [1] and lost == [1] and timer.pending == 0


async def test_no_renewal_runs_after_stop() -> None:
    timer = ManualTimer(FakeClock())
    calls: list[int] = []
    renewals = LeaseRenewals(PERIOD_S, lambda: calls.append(1) is None, lambda: None, timer)
    await renewals.stop()
    timer.advance(10 * PERIOD_S * SECOND)
    assert calls == [] and timer.pending == 0
