"""A process SIGKILLed between "tool starting" (committed) and "outcome recorded"."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import anyio
import pytest

from agentrt_proxy.canonical.durations import parse_time
from agentrt_proxy.gate import Decision, ProxyPolicy, approvals
from agentrt_proxy.store import RunLeased, Store
from tests.gate_fixtures import LIMITS, SECOND, FakeClock, FakeTool, event_types, make_gate, offered

CHILD = """
import sys, time, anyio
from tests.gate_fixtures import LIMITS, make_gate, SECOND
from agentrt_proxy.gate import Decision, ProxyPolicy, WallClock
from tests.gate_fixtures import offered
from agentrt_proxy.store import Store
store = Store.open({db!r})
gate = make_gate(store, WallClock(), ProxyPolicy({{"remote_mutation": "allow"}}, offered(), "p"), lease_ttl=3 * SECOND)
sess = gate.begin("s.crash", "call bank_pay", LIMITS)
sess.step()
verdict = sess.propose(Decision("tool_call", "bank_pay", '{{"to":"bob","amount":25}}', origin="model"))
assert verdict.outcome == "allowed"
async def hang(request):
    print("STARTED", flush=True)
    await anyio.sleep(3600)
anyio.run(sess.execute, hang)
"""


@pytest.mark.timeout(60)
def test_a_killed_call_is_taken_over_as_an_interrupted_side_effect_and_never_rerun_without_approval(
        tmp_path: Path) -> None:
    from agentrt_proxy.gate import WallClock

    db = str(tmp_path / "crash.db")
    Store.open(db).close()
    code = CHILD.format(db=db)
    child = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True,
                             env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])})
    assert child.stdout.readline().strip() == "STARTED"
    os.kill(child.pid, signal.SIGKILL)
    child.wait()

    store = Store.open(db)
    assert store.get_run("s.crash").status == "RUNNING"
    assert event_types(store, "s.crash")[-1] == "step.tool_started"  # committed before the tool ran
    policy = ProxyPolicy({"remote_mutation": "allow"}, offered(), "p")
    wall = FakeClock(time.time_ns())  # the wall clock, from now on moved by hand
    gate = make_gate(store, WallClock(), policy, lease_ttl=3 * SECOND, wall=wall)
    with pytest.raises(RunLeased):
        gate.attach("s.crash")  # the dead process's lease is still live

    wall.now = parse_time(store.get_run("s.crash").lease_expires_at)  # the dead process's lease runs out
    sess, verdict = gate.attach("s.crash")
    assert sess is None and verdict.outcome == "pending"
    assert verdict.approval.kind == "interrupted_side_effect"
    cap = json.loads(verdict.approval.capability_json)
    assert cap["interrupted"]["ended"] == "cut_off" and cap["interrupted"]["run_id"] == "s.crash"
    assert event_types(store, "s.crash")[-4:] == [
        "lease.taken_over", "step.interrupted", "step.policy", "approval.requested"]

    tool = FakeTool()
    assert gate.attach("s.crash")[1].outcome == "pending"  # no approval: nothing runs
    assert tool.calls == []
    approvals.approve_shown(store, "s.crash", verdict.approval.id, verdict.approval.hash, "op")
    sess, collected = gate.attach("s.crash")
    assert collected.outcome == "allowed"
    done = anyio.run(sess.execute, tool)
    assert done.run.status == "COMPLETED" and len(tool.calls) == 1
    assert event_types(store, "s.crash") == [
        "run.created", "run.started", "step.started", "step.decided", "step.policy", "step.tool_started",
        "lease.taken_over", "step.interrupted", "step.policy", "approval.requested", "approval.decided",
        "run.resumed", "step.policy", "step.tool_started", "step.tool_finished", "run.finished"]
    assert store.verify().intact


def test_a_read_cut_off_continues_and_the_proxy_ends_it(tmp_path: Path) -> None:
    store = Store.open(str(tmp_path / "a.db"))
    gate = make_gate(store, FakeClock(), lease_ttl=3 * SECOND)
    sess = gate.begin("s.1", "call bank_balance", LIMITS)
    sess.step()
    sess.propose(Decision("tool_call", "bank_balance", "{}", origin="model"))
    # Abandon the session after the policy allowed it: the step stays deciding.
    gate2 = make_gate(store, FakeClock(), lease_ttl=3 * SECOND)
    with store.write() as tx:  # the lease ran out
        tx.update_run("s.1", expect="RUNNING", lease_expires_at="2000-01-01T00:00:00Z")
    sess2, verdict = gate2.attach("s.1")
    assert verdict.outcome == "" and sess2 is not None
    assert sess2.fail("one call per run: taken over after an interruption, with nothing left in it to execute"
                      ).run.status == "FAILED"
    assert event_types(store, "s.1")[-6:] == [
        "lease.taken_over", "step.interrupted", "run.resumed", "step.started", "step.decided", "run.finished"]
