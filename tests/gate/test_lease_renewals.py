"""Lease renewals run on a thread of their own (issue 22, item 5): an event loop held by a long
decode cannot hold them back, a renewal that finds another owner reports it once and renews no
more, and ``stop`` leaves no renewal behind."""

from __future__ import annotations

import threading

import pytest

from agentrt_proxy.gate.leases import LeaseRenewals

pytestmark = pytest.mark.anyio

PERIOD_S = 0.01
PATIENCE_S = 60  # a bound on a wait that would otherwise hang, not a timing assertion


async def test_a_lease_is_renewed_while_the_event_loop_is_held() -> None:
    renewed = threading.Event()

    def renew() -> bool:
        renewed.set()
        return True

    renewals = LeaseRenewals(PERIOD_S, renew, lambda: None)
    # The loop is held here (a blocking wait, as a C decode holds it): a renewal scheduled on the
    # loop could never run before the wait ends.
    held_through = renewed.wait(PATIENCE_S)
    await renewals.stop()
    assert held_through


async def test_a_renewal_that_finds_another_owner_reports_it_once_and_renews_no_more() -> None:
    tries: list[int] = []
    lost = threading.Event()

    def renew() -> bool:
        tries.append(1)
        return False

    renewals = LeaseRenewals(PERIOD_S, renew, lost.set)
    assert lost.wait(PATIENCE_S)
    other = threading.Event()
    # A later renewal, due after the lost one would have been again (one thread runs them in order);
    # it answers False too, so it ends there.
    LeaseRenewals(PERIOD_S * 2, lambda: other.set() or False, lambda: None)
    assert other.wait(PATIENCE_S)
    await renewals.stop()
    assert tries == [1]


async def test_no_renewal_runs_after_stop() -> None:
    calls: list[int] = []
    renewals = LeaseRenewals(PERIOD_S, lambda: calls.append(1) is None, lambda: None)
    await renewals.stop()
    later = threading.Event()
    LeaseRenewals(PERIOD_S * 2, lambda: later.set() or False, lambda: None)  # due after the stopped one
    assert later.wait(PATIENCE_S)
    assert calls == []
