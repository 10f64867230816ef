"""The gate's transitions and their events, in the order of runtime-core §1.10 and
proxy-and-mcp-module §2.5."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest

from agentrt_proxy import canonical
from agentrt_proxy.canonical.durations import parse_time
from agentrt_proxy.gate import Decision, ProxyPolicy, approvals
from agentrt_proxy.mcp import outcomes
from agentrt_proxy.store import ApprovalExpired, Store
from tests.gate_fixtures import LIMITS, SECOND, FakeClock, FakeTool, ManualTimer, event_types, make_gate, offered

PAY = '{"to":"bob","amount":25}'


@pytest.fixture
def store(tmp_path: Path) -> Store:
    s = Store.open(str(tmp_path / "gate.db"))
    yield s
    s.close()


def call(decision_tool: str, args: str | bytes = PAY, origin: str = "model") -> Decision:
    return Decision("tool_call", decision_tool, args, origin=origin)


def pending_run(store: Store, clock: FakeClock, run_id: str = "s.1", policy: ProxyPolicy | None = None):
    gate = make_gate(store, clock, policy)
    sess = gate.begin(run_id, "call bank_pay", LIMITS)
    sess.step()
    verdict = sess.propose(call("bank_pay"))
    assert verdict.outcome == "pending"
    return gate, verdict.approval


def test_an_allowed_call_executes_once_and_completes_its_run(store: Store) -> None:
    clock, tool = FakeClock(), FakeTool()
    sess = make_gate(store, clock).begin("s.1", "call bank_note", LIMITS)
    sess.step()
    assert sess.propose(call("bank_note", "{}")).outcome == "allowed"
    verdict = anyio.run(sess.execute, tool)
    assert verdict.outcome == "ended" and verdict.run.status == "COMPLETED"
    assert len(tool.calls) == 1
    assert event_types(store, "s.1") == [
        "run.created", "run.started", "step.started", "step.decided", "step.policy", "step.tool_started",
        "step.tool_finished", "run.finished"]
    step = store.steps_of("s.1")[0]
    assert step.policy_id == "agentrt-proxy/sha256:test"
    policy_event = next(e for e in store.events_of("s.1") if e.type == "step.policy")
    assert json.loads(policy_event.payload_json)["policy_id"] == "agentrt-proxy/sha256:test"


def test_a_denied_call_fails_its_step_and_the_closing_fail_ends_the_run(store: Store) -> None:
    sess = make_gate(store, FakeClock()).begin("s.1", "call bank_wipe", LIMITS)
    sess.step()
    verdict = sess.propose(call("bank_wipe", "{}"))
    assert verdict.outcome == "denied"
    assert verdict.observation.summary == "denied: side effect destructive is deny by policy"
    end = sess.fail("one call per run: the request was denied")
    assert end.outcome == "ended" and end.run.status == "FAILED" and end.run.reason == "goal_failed"
    assert event_types(store, "s.1") == [
        "run.created", "run.started", "step.started", "step.decided", "step.policy", "step.failed",
        "step.started", "step.decided", "run.finished"]
    decided = [json.loads(e.payload_json) for e in store.events_of("s.1") if e.type == "step.decided"]
    assert decided[0]["origin"] == "model" and decided[1]["origin"] == "operator"


def test_arguments_the_boundary_refuses_are_recorded_verbatim_and_the_step_is_invalid(store: Store) -> None:
    sess = make_gate(store, FakeClock()).begin("s.1", "call bank_pay", LIMITS)
    sess.step()
    raw = '{"to":"bob","to":"eve","amount":1}'
    verdict = sess.propose(call("bank_pay", raw))
    assert verdict.outcome == "denied"
    assert verdict.observation.content == {"error": 'arguments are not usable JSON: duplicate key "to"'}
    decision = json.loads(store.steps_of("s.1")[0].decision_json)
    assert decision["invalid_args"] == raw and "args" not in decision
    sess.fail("one call per run: the request was invalid")
    assert event_types(store, "s.1") == [
        "run.created", "run.started", "step.started", "step.decided", "step.failed", "step.started",
        "step.decided", "run.finished"]


def test_arguments_that_do_not_match_the_schema_are_an_invalid_decision(store: Store) -> None:
    sess = make_gate(store, FakeClock()).begin("s.1", "call bank_pay", LIMITS)
    sess.step()
    verdict = sess.propose(call("bank_pay", '{"to":"bob"}'))
    assert verdict.outcome == "denied"
    assert verdict.observation.content["error"].startswith("arguments do not match schema:")


def test_an_approved_request_is_collected_and_executes_the_recorded_request(store: Store) -> None:
    clock, tool = FakeClock(), FakeTool()
    gate, approval = pending_run(store, clock)
    approvals.approve_shown(store, "s.1", approval.id, approval.hash, "op", now_ns=clock.now)
    sess, verdict = gate.attach("s.1")
    assert verdict.outcome == "allowed"
    done = anyio.run(sess.execute, tool)
    assert done.run.status == "COMPLETED"
    assert canonical.canonical_bytes(tool.calls[0].args) == b'{"amount":25,"to":"bob"}'
    assert event_types(store, "s.1") == [
        "run.created", "run.started", "step.started", "step.decided", "step.policy", "approval.requested",
        "approval.decided", "run.resumed", "step.policy", "step.tool_started", "step.tool_finished",
        "run.finished"]
    started = next(e for e in store.events_of("s.1") if e.type == "step.tool_started")
    assert json.loads(started.payload_json)["approval_id"] == approval.id


def test_a_pending_approval_is_reported_pending_and_nothing_changes(store: Store) -> None:
    clock = FakeClock()
    gate, approval = pending_run(store, clock)
    sess, verdict = gate.attach("s.1")
    assert sess is None and verdict.outcome == "pending" and verdict.approval.id == approval.id
    assert store.get_run("s.1").status == "WAITING_FOR_APPROVAL"


def test_a_rejected_approval_cancels_the_run_and_fails_its_step(store: Store) -> None:
    clock = FakeClock()
    _gate, approval = pending_run(store, clock)
    approvals.reject_shown(store, "s.1", approval.id, approval.hash, "op", "not today", now_ns=clock.now)
    run = store.get_run("s.1")
    assert (run.status, run.reason, run.reason_detail) == ("CANCELLED", "approval_rejected", "not today")
    step = store.steps_of("s.1")[0]
    assert step.status == "failed"
    assert json.loads(step.observation_json)["summary"] == "approval rejected: not today"
    assert event_types(store, "s.1")[-2:] == ["approval.decided", "run.finished"]


def test_a_pending_approval_past_its_ttl_expires_when_collected_and_nothing_runs(store: Store) -> None:
    clock = FakeClock()
    gate, approval = pending_run(store, clock)
    clock.advance(3600 * SECOND)  # exactly at the expiry: not yet expired (strictly after)
    assert gate.attach("s.1")[1].outcome == "pending"
    clock.advance(1)
    sess, verdict = gate.attach("s.1")
    assert sess is None and verdict.outcome == "ended"
    run = store.get_run("s.1")
    assert (run.status, run.reason) == ("CANCELLED", "approval_expired")
    assert store.get_approval(approval.id).status == "expired"
    assert event_types(store, "s.1")[-2:] == ["approval.decided", "run.finished"]


def test_an_operator_cannot_approve_an_expired_approval(store: Store) -> None:
    clock = FakeClock()
    _gate, approval = pending_run(store, clock)
    with pytest.raises(ApprovalExpired):
        approvals.approve_shown(store, "s.1", approval.id, approval.hash, "op", now_ns=clock.now + 3601 * SECOND)
    assert store.get_run("s.1").status == "CANCELLED"


def test_a_grant_not_collected_within_grant_ttl_expires_and_nothing_runs(store: Store) -> None:
    clock, tool = FakeClock(), FakeTool()
    gate, approval = pending_run(store, clock)
    approvals.approve_shown(store, "s.1", approval.id, approval.hash, "op", now_ns=clock.now)
    clock.advance(3600 * SECOND + 1)
    sess, verdict = gate.attach("s.1")
    assert sess is None and verdict.outcome == "ended"
    assert store.get_run("s.1").reason == "approval_expired"
    assert tool.calls == []


def test_a_grant_is_judged_again_at_execute(store: Store) -> None:
    clock, tool = FakeClock(), FakeTool()
    gate, approval = pending_run(store, clock)
    approvals.approve_shown(store, "s.1", approval.id, approval.hash, "op", now_ns=clock.now)
    sess, verdict = gate.attach("s.1")
    assert verdict.outcome == "allowed"
    clock.advance(3600 * SECOND + 1)
    with pytest.raises(ApprovalExpired):
        anyio.run(sess.execute, tool)
    assert tool.calls == [] and store.get_run("s.1").reason == "approval_expired"


def test_a_changed_fixed_value_asks_for_a_new_approval_at_collection(store: Store) -> None:
    clock = FakeClock()
    _gate, approval = pending_run(store, clock, policy=ProxyPolicy({}, offered({"currency": "EUR"}), "p1"))
    approvals.approve_shown(store, "s.1", approval.id, approval.hash, "op", now_ns=clock.now)
    gate2 = make_gate(store, clock, ProxyPolicy({}, offered({"currency": "USD"}), "p2"))
    sess, verdict = gate2.attach("s.1")
    assert sess is None and verdict.outcome == "pending" and verdict.approval.id != approval.id
    assert event_types(store, "s.1")[-2:] == ["step.policy", "approval.requested"]


def test_a_policy_that_now_denies_refuses_the_grant_on_resume(store: Store) -> None:
    clock = FakeClock()
    _gate, approval = pending_run(store, clock)
    approvals.approve_shown(store, "s.1", approval.id, approval.hash, "op", now_ns=clock.now)
    gate2 = make_gate(store, clock, ProxyPolicy({}, offered(outcome="deny"), "p2"))
    sess, verdict = gate2.attach("s.1")
    assert verdict.outcome == "denied"
    assert verdict.observation.summary == "denied on resume: tool bank_pay is deny by the operator's rule"
    assert event_types(store, "s.1")[-3:] == ["run.resumed", "step.policy", "step.failed"]
    assert sess.fail("one call per run: the request was denied").run.status == "FAILED"


def test_a_timed_out_mutating_call_is_proposed_again_and_waits_for_an_operator(store: Store) -> None:
    from agentrt_proxy.gate import Attempt

    clock = FakeClock()
    policy = ProxyPolicy({"remote_mutation": "allow"}, offered(), "p")
    sess = make_gate(store, clock, policy).begin("s.1", "call bank_pay", LIMITS)
    sess.step()
    assert sess.propose(call("bank_pay")).outcome == "allowed"
    first = anyio.run(sess.execute, FakeTool(outcomes.NoAnswer("timeout", "context deadline exceeded")))
    assert first.outcome == "executed" and first.observation.content["failure"] == "timeout"
    step0 = store.steps_of("s.1")[0]
    policy.mark_rerun("s.1", Attempt("s.1", step0.id, step0.started_at, "timed_out"))
    sess.step()
    verdict = sess.propose(call("bank_pay", origin="operator"))
    assert verdict.outcome == "pending" and verdict.approval.kind == "interrupted_side_effect"
    assert event_types(store, "s.1") == [
        "run.created", "run.started", "step.started", "step.decided", "step.policy", "step.tool_started",
        "step.tool_finished", "step.failed", "step.started", "step.decided", "step.policy", "approval.requested"]


def test_results_are_recorded_even_when_the_caller_is_cancelled(store: Store) -> None:
    sess = make_gate(store, FakeClock()).begin("s.1", "call bank_note", LIMITS)
    sess.step()
    sess.propose(call("bank_note", "{}"))

    async def slow(_request):
        await anyio.sleep(10)

    async def main() -> None:
        with anyio.move_on_after(0.05):
            await sess.execute(slow)

    anyio.run(main)
    step = store.steps_of("s.1")[0]
    assert step.status == "failed" and json.loads(step.observation_json)["kind"] == "interrupted"


def test_a_call_longer_than_the_lease_keeps_its_lease_and_completes(store: Store) -> None:
    wall = FakeClock()
    timer = ManualTimer(wall)
    ttl = 3 * SECOND
    sess = make_gate(store, FakeClock(), lease_ttl=ttl, wall=wall, renewal_timer=timer).begin(
        "s.1", "call bank_note", LIMITS)
    sess.step()
    sess.propose(call("bank_note", "{}"))
    seen = [store.get_run("s.1").lease_expires_at]

    async def long_call(_request):
        for _ in range(3):  # 3 s of the wall clock: the whole lease, renewed every second
            timer.advance(ttl // 3)
            seen.append(store.get_run("s.1").lease_expires_at)
        return outcomes.Result("done", "done", "bank/note: 4 bytes", False, False)

    verdict = anyio.run(sess.execute, long_call)
    assert verdict.observation is not None and verdict.observation.kind == "tool_result"
    assert not sess.lease_lost
    # Renewed every ttl/3 while the tool ran, each time to a full ttl from the renewal.
    assert [parse_time(at) - parse_time(seen[0]) for at in seen] == [0, SECOND, 2 * SECOND, 3 * SECOND]
    assert store.get_run("s.1").status == "COMPLETED"


def test_no_lease_renewal_outlives_a_call(store: Store) -> None:
    wall = FakeClock()
    timer = ManualTimer(wall)
    gate = make_gate(store, FakeClock(), lease_ttl=3 * SECOND, wall=wall, renewal_timer=timer)
    sess = gate.begin("s.1", "call bank_note", LIMITS)
    sess.step()
    sess.propose(call("bank_note", "{}"))

    async def quick(_request):
        return outcomes.Result("done", "done", "bank/note: 4 bytes", False, False)

    anyio.run(sess.execute, quick)
    sess.close()
    assert timer.pending == 1  # the first renewal, scheduled as the call began
    timer.advance(3 * SECOND)  # three renewal periods after the call
    run = store.get_run("s.1")
    assert run.lease_owner == "" and run.lease_expires_at == ""
    assert timer.pending == 0  # it came due, renewed nothing and scheduled no other


def test_every_run_names_tool_specs_that_are_stored_even_after_a_rolled_back_begin(store: Store) -> None:
    gate = make_gate(store, FakeClock())
    with pytest.raises(RuntimeError), store.write():
        gate.begin("s.0", "call bank_note", LIMITS)
        raise RuntimeError("rolled back")
    gate._active.clear()  # the rolled-back session's run does not exist
    for run_id in ("s.1", "s.2"):
        gate.begin(run_id, "call bank_note", LIMITS).close()
    stored = {h for (h,) in store._conn.execute("SELECT hash FROM tool_specs")}
    for run_id in ("s.1", "s.2"):
        [created] = [e for e in store.events_of(run_id, limit=10) if e.type == "run.created"]
        named = json.loads(created.payload_json)["tools"]
        assert named and set(named) <= stored


def test_a_run_hits_its_step_limit_at_the_fourth_step(store: Store) -> None:
    sess = make_gate(store, FakeClock()).begin("s.1", "call bank_pay", LIMITS)
    for _ in range(3):
        sess.step()
        sess.propose(call("bank_pay", '{"to":1}'))
    assert sess.step() is None
    run = store.get_run("s.1")
    assert (run.status, run.reason) == ("FAILED", "limit_steps")  # steps are checked before failures
    assert event_types(store, "s.1")[-2:] == ["limit.exceeded", "run.finished"]


def test_the_decider_the_note_and_the_times_are_not_hashed(store: Store) -> None:
    from agentrt_proxy.gate import stored_hash

    clock = FakeClock()
    _gate, approval = pending_run(store, clock)
    decided = approvals.approve_shown(store, "s.1", approval.id, approval.hash, "someone", "a note",
                                      now_ns=clock.now + 5)
    assert (decided.decided_by, decided.note) == ("someone", "a note")
    assert stored_hash(decided) == approval.hash == decided.hash
