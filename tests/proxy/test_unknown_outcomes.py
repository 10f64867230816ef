"""Unknown outcomes: a mutating call that timed out, failed with no answer, or was cut off.

The port of the original proxy's ``proxy/unknown_test.go`` (proxy-and-mcp-module §5.4),
one test per original test, with the same meaning. ``TIMEOUT_PAY`` is the original's
``timeoutPay``: ``bank_pay`` allowed by its rule, with a 300 ms timeout, so a payment in
``mode: block`` is recorded in the ledger (the effect) and then times out, until the test
creates ``<ledger>.release``. Effects are counted in the fake bank's ledger.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agentrt_proxy import canonical
from agentrt_proxy.canonical.clock import WALL
from agentrt_proxy.canonical.durations import format_time
from agentrt_proxy.gate import ALLOWED, Decision, attempts
from agentrt_proxy.store import LeaseLost, RunStateError
from agentrt_proxy.text.operator_text import CLOSE_NOT_SENT
from agentrt_proxy.upstream import Supervision, known_answer_pattern
from tests.harness import DEFAULT_RULES, Harness, draw_run_ids, is_error, proxy_harness, text_of
from tests.waiting import until

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(120)]

TIMEOUT_PAY: dict[str, Any] = {
    **DEFAULT_RULES,
    "pay": {"side_effect": "remote_mutation", "timeout": "300ms", "outcome": "allow"},
}

KIM = {"to": "kim", "amount": 7, "mode": "block"}
LEE = {"to": "lee", "amount": 1}

# proxy-and-mcp-module §2.5 "timed out, then waits"
TIMED_OUT_THEN_WAITS = [
    "run.created",
    "run.started",
    "step.started",
    "step.decided",
    "step.policy",
    "step.tool_started",
    "step.tool_finished",
    "step.failed",
    "step.started",
    "step.decided",
    "step.policy",
    "approval.requested",
]


def release(h: Harness) -> None:
    """Let every ``mode: block`` payment answer from now on."""
    (h.directory / "ledger.release").write_text("")


def pending_ids(h: Harness) -> list[str]:
    return [a.id for a in h.pending()]


def interruptions(h: Harness) -> list[Any]:
    return [a for a in h.approvals() if a.kind == "interrupted_side_effect"]


def capability(approval: Any) -> dict[str, Any]:
    value = json.loads(approval.capability_json)
    assert isinstance(value, dict)
    return value


async def status(h: Harness, approval_id: str) -> str:
    result = await h.call("gate_status", {"approval_id": approval_id})
    assert not is_error(result)
    return text_of(result)


def assert_unknown(result: Any, approval_id: str | None = None) -> str:
    text = text_of(result)
    assert text.startswith("UNKNOWN_OUTCOME: "), text
    assert not is_error(result)
    if approval_id is not None:
        assert f"(approval {approval_id})" in text, text
    return text


def assert_blocked(result: Any, approval_id: str) -> None:
    text = text_of(result)
    assert text.startswith("BLOCKED: "), text
    assert is_error(result)
    assert f"(approval {approval_id})" in text, text


async def time_out_once(h: Harness, args: dict[str, Any] = KIM) -> str:
    """A payment that takes effect and times out: UNKNOWN_OUTCOME naming its interruption approval."""
    before = h.payments()
    result = await h.call("bank_pay", args)
    text = assert_unknown(result)
    assert h.payments() == before + 1
    waiting = [a for a in h.pending() if a.kind == "interrupted_side_effect"]
    assert waiting, h.approvals()
    approval = waiting[-1]
    assert f"(approval {approval.id})" in text
    return approval.id


# Go: TestUnknown_TimeoutAfterTheEffectWaitsForAnOperator
async def test_a_timeout_after_the_effect_waits_for_an_operator(tmp_path: Path) -> None:
    async with proxy_harness(tmp_path, rules=TIMEOUT_PAY) as h:
        result = await h.call("bank_pay", KIM)
        text = assert_unknown(result)
        assert "may have" in text and "timed out" in text
        assert h.payments() == 1
        [approval] = h.pending()
        assert approval.kind == "interrupted_side_effect"
        assert f"(approval {approval.id})" in text
        assert capability(approval)["interrupted"]["ended"] == "timed_out"
        run_id = approval.run_id
        assert h.events(run_id) == TIMED_OUT_THEN_WAITS
        assert any("approve -db " in line and f"{run_id} -approval {approval.id}" in line for line in h.stderr)

        # The identical call answers the same and runs nothing; another payment is BLOCKED.
        assert_unknown(await h.call("bank_pay", KIM), approval.id)
        assert_blocked(await h.call("bank_pay", LEE), approval.id)
        # An hour later (no expiry within 24 h) the question still stands.
        h.clock.advance(3600)
        assert_unknown(await h.call("bank_pay", KIM), approval.id)
        assert h.payments() == 1

        # Approved: the identical call runs it once more.
        release(h)
        h.approve(approval.id)
        paid = await h.call("bank_pay", KIM)
        assert not is_error(paid) and text_of(paid) == "paid 7.00 to kim"
        assert h.payments() == 2
        dup = await h.call("bank_pay", KIM)
        assert is_error(dup) and text_of(dup).startswith("DUPLICATE: ")
        assert h.payments() == 2
        other = await h.call("bank_pay", LEE)
        assert text_of(other) == "paid 1.00 to lee"
        assert h.payments() == 3
        assert "APPROVED and executed" in await status(h, approval.id)


# Go: TestUnknown_RejectionUnblocksAndAnIdenticalCallAsksAgain
async def test_a_rejection_unblocks_the_tool_and_an_identical_call_asks_again(tmp_path: Path) -> None:
    async with proxy_harness(tmp_path, rules=TIMEOUT_PAY) as h:
        first = await time_out_once(h)
        h.reject(first, "not twice")
        rejected = await h.call("bank_pay", KIM)
        assert is_error(rejected) and text_of(rejected).startswith("REJECTED: ")
        assert '"not twice"' in text_of(rejected)
        other = await h.call("bank_pay", LEE)
        assert text_of(other) == "paid 1.00 to lee"
        assert h.payments() == 2

        asked = {first}
        for _ in range(3):
            # After the window the identical call asks an operator again; allow alone never runs it.
            h.clock.advance(11 * 60)
            again = await h.call("bank_pay", KIM)
            assert_unknown(again)
            [approval] = h.pending()
            assert approval.kind == "interrupted_side_effect" and approval.id not in asked
            assert f"(approval {approval.id})" in text_of(again)
            asked.add(approval.id)
            h.reject(approval.id, "still no")
            assert text_of(await h.call("bank_pay", KIM)).startswith("REJECTED: ")
        assert h.payments() == 2


# Go: TestUnknown_ServerErrorIsAKnownFailure
async def test_an_error_the_server_returned_is_a_known_failure(tmp_path: Path) -> None:
    async with proxy_harness(tmp_path, rules=TIMEOUT_PAY) as h:
        declined = {"to": "oli", "amount": 3, "mode": "error"}
        result = await h.call("bank_pay", declined)
        assert is_error(result) and "card declined for oli" in text_of(result)
        assert h.approvals() == []
        dup = await h.call("bank_pay", declined)
        assert is_error(dup) and text_of(dup).startswith("DUPLICATE: ")
        assert "card declined" in text_of(dup)
        assert h.payments() == 1
        h.clock.advance(11 * 60)
        again = await h.call("bank_pay", declined)
        assert is_error(again) and "card declined for oli" in text_of(again)
        assert h.payments() == 2
        assert h.approvals() == []


# Go: TestUnknown_ClassifiesRecordedErrors
@pytest.mark.parametrize(
    ("failure", "error", "read_only", "unknown"),
    [
        ("timeout", "context deadline exceeded", False, True),
        ("error", 'mcp: server "bank": tool "pay": connection closed', False, True),
        ("error", "anything else", False, True),
        ("error", "bank/pay: 22 bytes, error: card declined for x", False, False),
        ("error", "bank/pay: 70000 bytes, truncated, error: long", False, False),
        ("error", 'bank_pay: parameter "currency" is fixed by the operator', False, False),
        ("error", "bank_pay: arguments are not a JSON object: x", False, False),
        ("invalid_content", "bank/pay: invalid content", False, False),
        ("error", "bank/payx: 1 bytes, error: x", False, True),  # another tool's answer is not this one's
        ("timeout", "context deadline exceeded", True, False),  # a read's timeout
    ],
)
def test_recorded_errors_are_classified_as_known_or_unknown(
    failure: str, error: str, read_only: bool, unknown: bool
) -> None:
    pattern = known_answer_pattern("bank", "pay", "bank_pay")
    obs = {"kind": "tool_error", "content": {"tool": "bank_pay", "error": error, "failure": failure}}
    ended = attempts.classify_tool_error(obs, read_only, lambda text: bool(pattern.match(text)))
    assert (ended is not None) == unknown, (failure, error, ended)
    if unknown:
        assert ended == ("timed_out" if failure == "timeout" else "no_answer")


# Go: TestUnknown_StatusSaysWhatCameOfAnApprovedRequest
async def test_the_status_tool_says_what_came_of_an_approved_request(tmp_path: Path) -> None:
    rules = {**DEFAULT_RULES, "pay": {"side_effect": "remote_mutation", "timeout": "300ms"}}  # asks
    async with proxy_harness(tmp_path, rules=rules) as h:

        async def approved_and_collected(args: dict[str, Any]) -> tuple[str, Any]:
            pending = await h.call("bank_pay", args)
            assert text_of(pending).startswith("PENDING_APPROVAL: ")
            [approval] = h.pending()
            h.approve(approval.id)
            return approval.id, await h.call("bank_pay", args)

        declined, result = await approved_and_collected({"to": "oli", "amount": 2, "mode": "error"})
        assert is_error(result)
        said = await status(h, declined)
        assert "APPROVED and executed, and the server reported a failure: " in said
        assert "card declined for oli" in said

        paid, result = await approved_and_collected({"to": "pia", "amount": 4})
        assert text_of(result) == "paid 4.00 to pia"
        assert "APPROVED and executed, and it succeeded." in await status(h, paid)

        timed_out, result = await approved_and_collected(KIM)
        assert_unknown(result)
        [following] = h.pending()
        assert following.kind == "interrupted_side_effect" and following.id != timed_out
        said = await status(h, timed_out)
        assert (
            "APPROVED and executed, but it timed out before the server answered, so whether it took effect is unknown"
        ) in said, said
        assert f"Approval {following.id} now waits" in said, said
        assert h.payments() == 3


# Go: TestUnknown_StepLimitKeepsTheToolBlocked
async def test_a_re_run_that_meets_the_step_limit_keeps_the_tool_blocked(tmp_path: Path) -> None:
    async with proxy_harness(tmp_path, rules=TIMEOUT_PAY) as h:
        approval = await time_out_once(h)
        first_run = h.pending()[0].run_id
        for _ in range(2):  # two approved re-runs, both time out again
            h.approve(approval)
            result = await h.call("bank_pay", KIM)
            assert_unknown(result)
            [waiting] = h.pending()
            assert waiting.id != approval
            approval = waiting.id
        assert h.payments() == 3
        # The step limit ended the first run: the question is asked again in a fresh run.
        [asked] = h.pending()
        assert asked.kind == "interrupted_side_effect" and asked.run_id != first_run
        [ended] = [r for r in h.runs() if r.id == first_run]
        assert ended.status == "FAILED" and ended.step_count == 3, ended
        assert_blocked(await h.call("bank_pay", LEE), asked.id)
        assert_unknown(await h.call("bank_pay", KIM), asked.id)
        h.reject(asked.id, "enough")
        other = await h.call("bank_pay", LEE)
        assert text_of(other) == "paid 1.00 to lee"
        assert h.payments() == 4


async def _begin_allowed(h: Harness, args: dict[str, Any]) -> tuple[Any, Any, str]:
    """Begin a run of ``bank_pay`` under the proxy's own index and gate, proposed and allowed,
    as a call would before it executes. Returns (session, tool, run id)."""
    await h.proxy.ready.wait()
    runtime = h.proxy.runtime
    tool = runtime.tools["bank_pay"]
    text = canonical.policy_text(args)
    key = canonical.request_key("bank_pay", text)
    run_id = f"test.{'c' * 16}"
    runtime.store.index.claim("test", key, "bank_pay", "remote_mutation", run_id, None, h.clock.now_ns())
    session = runtime.gate.begin(run_id, "call bank_pay", runtime.rules.limits)
    assert session.step() is not None
    verdict = session.propose(Decision(kind="tool_call", tool="bank_pay", args=text, origin="model"))
    assert verdict.outcome == ALLOWED
    return session, tool, run_id


def _call_upstream(tool: Any) -> Any:
    async def call(request: Any) -> Any:
        return await tool.call(canonical.policy_text(request.args))

    return call


# Go: TestUnknown_CrashBeforeTheReRunKeepsTheToolBlocked
async def test_a_crash_before_the_re_run_was_proposed_keeps_the_tool_blocked(tmp_path: Path) -> None:
    async with proxy_harness(tmp_path, rules=TIMEOUT_PAY) as h:
        # The timeout is recorded, then the process "stops": no re-run is proposed.
        session, tool, run_id = await _begin_allowed(h, KIM)
        verdict = await session.execute(_call_upstream(tool))
        assert verdict.observation is not None and verdict.observation.kind == "tool_error"
        session.close()
        assert h.payments() == 1 and h.approvals() == []

        blocked = await h.call("bank_pay", LEE)
        [asked] = h.pending()
        assert asked.kind == "interrupted_side_effect" and asked.run_id != run_id
        assert capability(asked)["interrupted"]["run_id"] == run_id
        assert_blocked(blocked, asked.id)
        assert_unknown(await h.call("bank_pay", KIM), asked.id)
        release(h)
        h.approve(asked.id)
        assert text_of(await h.call("bank_pay", KIM)) == "paid 7.00 to kim"
        assert text_of(await h.call("bank_pay", LEE)) == "paid 1.00 to lee"
        assert h.payments() == 3


async def test_asking_again_under_a_taken_run_id_draws_another(tmp_path: Path) -> None:
    async with proxy_harness(tmp_path, rules=TIMEOUT_PAY) as h:
        session, tool, run_id = await _begin_allowed(h, KIM)
        await session.execute(_call_upstream(tool))  # times out after the effect
        session.close()
        fresh = "test.0000000002bbbbbb"
        drawn = draw_run_ids(h, [run_id, fresh])  # the question's run first draws the interrupted run's id
        blocked = await h.call("bank_pay", LEE)
        [asked] = h.pending()
        assert drawn == [run_id, fresh]
        assert asked.run_id == fresh and capability(asked)["interrupted"]["run_id"] == run_id
        assert_blocked(blocked, asked.id)
        assert not [line for line in h.stderr if "error:" in line], h.stderr
        assert h.payments() == 1


# Go: TestUnknown_ExpiryAsksAgainRatherThanUnblocks
async def test_an_expiry_asks_again_rather_than_unblocking(tmp_path: Path) -> None:
    async with proxy_harness(tmp_path, rules=TIMEOUT_PAY, approval_ttl="1m") as h:
        first = await time_out_once(h)
        h.clock.advance(120)
        blocked = await h.call("bank_pay", LEE)
        [second] = h.pending()
        assert second.id != first and second.kind == "interrupted_side_effect"
        assert_blocked(blocked, second.id)
        assert_unknown(await h.call("bank_pay", KIM), second.id)
        h.clock.advance(120)
        third = assert_unknown(await h.call("bank_pay", KIM))
        [waiting] = h.pending()
        assert waiting.id not in (first, second) and waiting.kind == "interrupted_side_effect"
        assert f"(approval {waiting.id})" in third
        assert h.payments() == 1


# Go: TestUnknown_CutOffBeforeExecutingIsNoAttempt
@pytest.mark.parametrize("how", ["abandoned after it was allowed", "lease lost before Execute"])
async def test_a_call_cut_off_before_executing_is_no_attempt(tmp_path: Path, how: str) -> None:
    async with proxy_harness(tmp_path, rules=TIMEOUT_PAY) as h:
        args = {"to": "kim", "amount": 7}
        session, tool, run_id = await _begin_allowed(h, args)
        if how == "abandoned after it was allowed":
            session.close()
        else:
            runtime = h.proxy.runtime
            assert runtime.store.renew_lease(run_id, runtime.gate.owner, format_time(WALL.now_ns() - 1_000_000_000))
            with pytest.raises((LeaseLost, RunStateError)):
                await session.execute(_call_upstream(tool))
        assert h.payments() == 0

        assert text_of(await h.call("bank_pay", LEE)) == "paid 1.00 to lee"
        paid = await h.call("bank_pay", args)
        assert not is_error(paid) and text_of(paid) == "paid 7.00 to kim"
        [cut] = [r for r in h.runs() if r.id == run_id]
        assert cut.status == "FAILED"
        assert "taken over after an interruption" in cut.reason_detail
        assert h.approvals() == []
        assert h.payments() == 2


# Go: TestUnknown_UnrecordedResultCountsAsExecuted
async def test_an_unrecorded_result_counts_as_executed(tmp_path: Path) -> None:
    async with proxy_harness(tmp_path, rules=TIMEOUT_PAY) as h:
        deep = {"to": "max", "amount": 5, "mode": "deep"}
        result = await h.call("bank_pay", deep)
        text = text_of(result)
        assert text.startswith("UNRECORDED: ") and not is_error(result)
        assert "so it executed" in text and "could not be recorded" in text and "failed" not in text
        dup = await h.call("bank_pay", deep)
        assert is_error(dup) and text_of(dup).startswith("DUPLICATE: ")
        assert "could not be recorded" in text_of(dup)
        assert text_of(await h.call("bank_pay", LEE)) == "paid 1.00 to lee"
        assert h.approvals() == []
        assert h.payments() == 2
        [run] = [r for r in h.runs() if r.goal == "call bank_pay" and r.status == "FAILED"]
        store = h.store()
        try:
            failures = [
                attempts.observation(s).get("content", {}).get("failure")
                for s in store.steps_of(run.id)
                if attempts.is_tool_call(s)
            ]
        finally:
            store.close()
        assert failures == ["invalid_content"]


ALLOWED_PAY: dict[str, Any] = {
    **DEFAULT_RULES,
    "pay": {"side_effect": "remote_mutation", "timeout": "10s", "outcome": "allow"},
}


async def kill_upstream(h: Harness) -> None:
    import os
    import signal


    os.kill(h.upstream_pid(), signal.SIGKILL)
    # the proxy sees the server's end (its stdout closes)
    await until("the server's end", lambda: not h.proxy.runtime.opened.connections[0].connection.alive, 10)


async def never(seconds: float) -> None:
    """A restart backoff that never ends: the server stays down for the whole test."""
    import anyio

    await anyio.sleep_forever()


async def test_a_payment_to_a_server_that_died_is_a_known_failure_that_sent_nothing(tmp_path: Path) -> None:
    async with proxy_harness(tmp_path, rules=ALLOWED_PAY, supervision=Supervision(wait=never)) as h:
        await kill_upstream(h)
        for _ in range(2):  # the same payment again: neither DUPLICATE nor BLOCKED, and no operator asked
            result = await h.call("bank_pay", LEE)
            text = text_of(result)
            assert is_error(result) and "nothing was sent" in text and 'server "bank"' in text, text
            assert h.payments() == 0
            assert h.pending() == []
        runs = h.runs()
        assert len(runs) == 2 and all(run.reason_detail == CLOSE_NOT_SENT for run in runs), runs
        result = await h.call("bank_pay", {"to": "ann", "amount": 2})  # another payment: not blocked either
        assert "nothing was sent" in text_of(result) and h.pending() == []
