"""A run's lease is stamped and judged by the gate's wall clock alone (runtime-core §5.1–5.3),
which a test moves by hand: no tool starts once the lease has passed, and another gate takes the
run over only then."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from agentrt_proxy.gate import Decision, Gate, ProxyPolicy, Session, SessionEnded
from agentrt_proxy.store import LeaseLost, RunLeased, RunStateError, Store
from tests.gate_fixtures import LIMITS, SECOND, FakeClock, FakeTool, event_types, offered, specs

TTL = 3 * SECOND


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    s = Store.open(str(tmp_path / "leases.db"))
    yield s
    s.close()


def gate_on(store: Store, wall: FakeClock) -> Gate:
    policy = ProxyPolicy({"remote_mutation": "allow"}, offered(), "p")
    return Gate(store, policy, specs(), clock=FakeClock(), reconcile=policy.reconcile, lease_ttl=TTL,
                lease_owner="agentrt-proxy:test", wall=wall)


def allowed_payment(gate: Gate) -> Session:
    sess = gate.begin("s.1", "call bank_pay", LIMITS)
    sess.step()
    verdict = sess.propose(Decision("tool_call", "bank_pay", '{"to":"bob","amount":1}', origin="model"))
    assert verdict.outcome == "allowed"
    return sess


def test_no_tool_starts_once_the_wall_clock_has_passed_the_lease_and_the_session_ends(store: Store) -> None:
    wall = FakeClock()
    sess = allowed_payment(gate_on(store, wall))
    wall.advance(TTL)  # the expiry itself: no longer valid (valid while wall < expiry)
    tool = FakeTool()
    with pytest.raises(LeaseLost, match="expired"):
        anyio.run(sess.execute, tool)
    assert tool.calls == []
    assert "step.tool_started" not in event_types(store, "s.1")
    with pytest.raises(SessionEnded):
        sess.step()


def test_another_gate_takes_a_run_over_only_once_its_lease_has_passed_by_the_wall_clock(store: Store) -> None:
    wall = FakeClock()
    allowed_payment(gate_on(store, wall))  # then abandoned, its lease never renewed
    other = gate_on(store, wall)
    wall.advance(TTL - 1)
    with pytest.raises(RunLeased):
        other.attach("s.1")
    wall.advance(1)
    sess, verdict = other.attach("s.1")
    assert verdict.outcome == "" and sess is not None  # cut off while deciding: nothing ran, it goes on
    assert event_types(store, "s.1")[-3:] == ["lease.taken_over", "step.interrupted", "run.resumed"]
    assert store.get_run("s.1").lease_owner == other.owner


def test_an_answer_that_comes_after_a_takeover_is_kept_as_a_late_outcome_the_operator_is_shown(
    store: Store,
) -> None:
    from agentrt_proxy.cli._late_outcomes import late_outcome_lines
    from agentrt_proxy.gate import LATE_OUTCOME_EVENT

    wall = FakeClock()
    sess = allowed_payment(gate_on(store, wall))
    other = gate_on(store, wall)
    taken: list[object] = []

    class TakenOverMidCall(FakeTool):
        async def __call__(self, request):  # type: ignore[no-untyped-def]
            wall.advance(TTL)  # the lease ran out while the server worked: another gate takes the run
            taken.append(other.attach("s.1"))
            return await super().__call__(request)

    tool = TakenOverMidCall()
    with pytest.raises(LeaseLost):
        anyio.run(sess.execute, tool)
    assert len(tool.calls) == 1 and taken
    types = event_types(store, "s.1")
    assert "lease.taken_over" in types and types[-1] == LATE_OUTCOME_EVENT  # after the takeover's events
    waiting = [a for a in store.approvals_of("s.1") if a.kind == "interrupted_side_effect"]
    assert len(waiting) == 1
    lines = late_outcome_lines(store, waiting[0])
    said = "the earlier attempt's server answered after the run was taken over, with a result: bank/pay: 13 bytes"
    assert lines == [said]


def test_a_completed_runs_active_time_holds_the_time_its_tool_took_added_by_the_update_that_completes_it(
    store: Store,
) -> None:
    sess = allowed_payment(gate_on(store, FakeClock()))

    class TakesAWhile(FakeTool):
        async def __call__(self, request):  # type: ignore[no-untyped-def]
            await anyio.sleep(0.05)  # the call's duration is the monotonic clock's: at least this
            return await super().__call__(request)

    anyio.run(sess.execute, TakesAWhile())
    run = store.get_run("s.1")
    assert (run.status, run.lease_owner) == ("COMPLETED", "") and run.active_ms >= 50
    assert event_types(store, "s.1")[-2:] == ["step.tool_finished", "run.finished"]


def test_an_outcome_for_a_run_moved_on_under_its_own_lease_is_refused_and_nothing_of_it_is_recorded(
    store: Store,
) -> None:
    sess = allowed_payment(gate_on(store, FakeClock()))
    before: list[str] = []

    class RunEndedBehindTheGatesBack(FakeTool):
        async def __call__(self, request):  # type: ignore[no-untyped-def]
            before.extend(event_types(store, "s.1"))  # up to step.tool_started
            conn = sqlite3.connect(store.path)  # the lease owner stays: only the status moves
            with conn:
                conn.execute("UPDATE runs SET status = 'FAILED' WHERE id = 's.1'")
            conn.close()
            return await super().__call__(request)

    tool = RunEndedBehindTheGatesBack()
    with pytest.raises(RunStateError):
        anyio.run(sess.execute, tool)
    assert len(tool.calls) == 1
    run = store.get_run("s.1")
    assert (run.status, run.active_ms) == ("FAILED", 0)
    (step,) = store.steps_of("s.1")
    assert step.status == "executing" and event_types(store, "s.1") == before and before[-1] == "step.tool_started"
