"""The rules across calls as a pure decision (``proxy/_rules.py``), from rows built here.

No database, no process, no sleep: a ``World`` holds index rows, runs, steps and approvals
in memory and answers the reads the rules ask for as ``store/_index.py`` would (copies, so
the rules never see a later change unless they read again), and writes the settlements
they find. Each case names what the call's request has behind it and what the rules do.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest

from agentrt_proxy.canonical.durations import MINUTE, SECOND, format_time
from agentrt_proxy.gate import Attempt
from agentrt_proxy.proxy import _rules as rules
from agentrt_proxy.proxy._actions import (
    Action,
    AskUnknown,
    AwaitApproval,
    Begin,
    Blocked,
    Collect,
    Duplicate,
    Expire,
    InProgress,
    Refuse,
    Settle,
    SettleEmpty,
    TakeOver,
)
from agentrt_proxy.proxy._view import (
    ATTEMPTS,
    FOR_KEY,
    UNKNOWN_FOR_TOOL,
    UNSETTLED,
    CallView,
    ReadApprovals,
    ReadRows,
    ReadRun,
    ReadSteps,
)
from agentrt_proxy.store import Approval, ProxyCall, Run, Step
from agentrt_proxy.upstream import known_answer_pattern

NOW = 1_900_000_000 * SECOND
WINDOW = 10 * MINUTE
KEY = "key-of-this-request"
OTHER_KEY = "key-of-another-request"
PAY = rules.ToolFacts("bank_pay", "remote_mutation", WINDOW, known_answer_pattern("bank", "pay", "bank_pay"))
REFUND = rules.ToolFacts("bank_refund", "destructive", WINDOW, known_answer_pattern("bank", "refund", "bank_refund"))
BALANCE = rules.ToolFacts("bank_balance", "read_only", WINDOW, known_answer_pattern("bank", "balance", "bank_balance"))
TOOLS = {t.name: t for t in (PAY, REFUND, BALANCE)}
ALLOW, ASK, DENY = "allow", "require_approval", "deny"


def at(ns: int) -> str:
    return format_time(ns)


# ------------------------------------------------------------------------ records


def a_run(run_id: str, status: str, *, reason: str = "", detail: str = "", finished: int | None = None,
          lease_until: int | None = None) -> Run:
    finished_at = at(finished) if finished is not None else ""
    lease_owner, lease_at = ("agentrt-proxy:test/abc", at(lease_until)) if lease_until is not None else ("", "")
    return Run(run_id, "call bank_pay", status, reason, detail, "{}", 1, at(NOW - 30 * MINUTE),
               at(NOW - 30 * MINUTE), finished_at, "", 0, 0, 0, 0, 0, 0, lease_owner, lease_at)


def a_step(run_id: str, observation: dict[str, Any] | None, *, idx: int = 0, status: str = "finished",
           tool: str = "bank_pay", args: dict[str, Any] | None = None) -> Step:
    decision = {"kind": "tool_call", "tool": tool, "args": args if args is not None else {"to": "bob"}}
    return Step(f"{run_id}-s{idx}", run_id, idx, status, json.dumps(decision), "",
                json.dumps(observation) if observation is not None else "", "", at(NOW - 20 * MINUTE), "", "", "")


def an_approval(run_id: str, step_id: str, status: str, *, kind: str = "remote_mutation", note: str = "",
                expires: int | None = None, decided: int | None = None,
                interrupted: Attempt | None = None) -> Approval:
    capability = {"interrupted": interrupted.tree()} if interrupted is not None else {}
    return Approval(f"ap-{run_id}", run_id, step_id, kind, json.dumps(capability), "{}", "{}", "h", status,
                    at(NOW - 20 * MINUTE), at(decided) if decided is not None else "", "", note,
                    at(expires) if expires is not None else "")


def result(text: str = "paid 25.00 to bob") -> dict[str, Any]:
    return {"kind": "tool_result", "content": text}


def tool_error(error: str, failure: str = "error") -> dict[str, Any]:
    return {"kind": "tool_error", "content": {"tool": "bank_pay", "error": error, "failure": failure}}


DECLINED = "bank/pay: 22 bytes, error: card declined for bob"


@dataclass
class History:
    """A run and what it recorded."""

    run: Run | None
    steps: list[Step] = field(default_factory=list)
    approvals: list[Approval] = field(default_factory=list)


def finished_with(run_id: str, observation: dict[str, Any] | None, *, status: str = "COMPLETED", reason: str = "",
                  ago: int = MINUTE, approval: str | None = None, note: str = "", detail: str = "") -> History:
    step = a_step(run_id, observation)
    approvals = [an_approval(run_id, step.id, approval, note=note)] if approval is not None else []
    return History(a_run(run_id, status, reason=reason, detail=detail, finished=NOW - ago), [step], approvals)


def completed(run_id: str, ago: int = MINUTE) -> History:
    return finished_with(run_id, result(), ago=ago)


def declined(run_id: str) -> History:
    return finished_with(run_id, tool_error(DECLINED), status="FAILED")


def unrecorded(run_id: str) -> History:
    return finished_with(run_id, tool_error("bank/pay: nested too deep", "invalid_content"), status="FAILED")


def denied(run_id: str) -> History:
    return finished_with(run_id, {"kind": "policy_denied", "content": {"reason": "no"}}, status="FAILED")


def rejected(run_id: str, ago: int = MINUTE) -> History:
    return finished_with(run_id, None, status="CANCELLED", reason="approval_rejected", approval="rejected",
                         note="not to bob", ago=ago)


def expired(run_id: str) -> History:
    return finished_with(run_id, None, status="CANCELLED", reason="approval_expired", approval="expired")


def cancelled(run_id: str) -> History:
    return finished_with(run_id, None, status="CANCELLED", reason="operator_cancelled", detail="changed my mind")


def timed_out(run_id: str, *, ago: int = 3 * WINDOW, reason: str = "limit_steps") -> History:
    """A mutating call that timed out after its effect; its run has ended with nothing asking."""
    return finished_with(run_id, tool_error("bank/pay: timed out", "timeout"), status="FAILED", reason=reason,
                         ago=ago)


def waiting(run_id: str, status: str = "pending", *, expires: int | None = None, kind: str = "remote_mutation",
            decided: int | None = None, interrupted: Attempt | None = None) -> History:
    step = a_step(run_id, None, status="waiting")
    approval = an_approval(run_id, step.id, status, kind=kind, expires=expires, decided=decided,
                           interrupted=interrupted)
    return History(a_run(run_id, "WAITING_FOR_APPROVAL"), [step], [approval])


def interruption(run_id: str, status: str = "pending", *, expires: int | None = None) -> History:
    """A re-run asking an operator about an unknown outcome (an interrupted_side_effect approval)."""
    attempt = Attempt(run_id, f"{run_id}-s0", at(NOW - 20 * MINUTE), "timed_out")
    timed = a_step(run_id, tool_error("bank/pay: timed out", "timeout"))
    rerun = a_step(run_id, None, idx=1, status="waiting")
    approval = an_approval(run_id, rerun.id, status, kind="interrupted_side_effect", expires=expires,
                           interrupted=attempt)
    return History(a_run(run_id, "WAITING_FOR_APPROVAL"), [timed, rerun], [approval])


def interruption_expired(run_id: str, *, reason: str = "approval_expired") -> History:
    """The same question, expired (or rejected): the run ended with the outcome still unknown."""
    asked = interruption(run_id, "expired" if reason == "approval_expired" else "rejected")
    assert asked.run is not None
    run = dataclasses.replace(asked.run, status="CANCELLED", reason=reason, finished_at=at(NOW - MINUTE))
    return History(run, asked.steps, asked.approvals)


def running(run_id: str, *, lease_until: int) -> History:
    return History(a_run(run_id, "RUNNING", lease_until=lease_until), [a_step(run_id, None, status="executing")])


def never_begun() -> History:
    return History(None)


# ------------------------------------------------------------------------ the world


class World:
    """The index and the runtime's tables in memory; reads return copies, as a database would."""

    def __init__(self) -> None:
        self.rows: list[ProxyCall] = []
        self.histories: dict[str, History] = {}
        self.log: list[str] = []  # reads and writes, in order

    def add(self, history: History, *, key: str = KEY, tool: str = "bank_pay", run_id: str | None = None,
            closed: bool = False, settled: bool = False, outcome: int = 0) -> ProxyCall:
        rid = history.run.id if history.run is not None else (run_id or f"run-{len(self.rows) + 1}")
        for row in self.rows:  # the claim of a new row closes the key's open one
            if row.request_key == key and row.open:
                row.open, row.closed_at = 0, NOW - MINUTE
        row = ProxyCall(len(self.rows) + 1, "test", key, tool, TOOLS[tool].side_effect, rid, NOW - 30 * MINUTE,
                        0 if closed else 1, NOW - MINUTE if closed else 0, NOW - MINUTE if settled else 0,
                        outcome)
        self.rows.append(row)
        self.histories[rid] = history
        return row

    def replace(self, run_id: str, history: History) -> None:
        """What an effect did to a run (the gate's attach, a close)."""
        self.histories[run_id] = history

    # the reads, as store/_index.py and store/_store.py make them
    def rows_for(self, which: str, key: str, tool: str) -> tuple[ProxyCall, ...]:
        rows = self.rows
        if which == FOR_KEY:
            found = [r for r in rows if r.request_key == key and (r.open or r.closed_at >= NOW - WINDOW)][::-1]
        elif which == ATTEMPTS:
            found = [r for r in rows if r.request_key == key and r.outcome != 1][::-1]
        elif which == UNSETTLED:
            found = [r for r in rows if r.settled_at == 0]
        else:
            assert which == UNKNOWN_FOR_TOOL
            newest: dict[str, ProxyCall] = {}
            for r in rows:
                if r.tool == tool and r.request_key != key and r.outcome != 1:
                    newest[r.request_key] = r
            found = sorted((r for r in newest.values() if r.outcome in (0, 3)), key=lambda r: r.id)
        return tuple(dataclasses.replace(r) for r in found)

    def read(self, view: CallView, read: Any, call: rules.CallFacts) -> CallView:
        self.log.append(f"read {type(read).__name__} {getattr(read, 'which', getattr(read, 'run_id', ''))}")
        if isinstance(read, ReadRows):
            return view.with_rows(read.which, self.rows_for(read.which, KEY if call.key is None else call.key,
                                                            call.tool.name))
        history = self.histories.get(read.run_id, History(None))
        if isinstance(read, ReadRun):
            run = history.run
            return view.with_run(read.run_id, dataclasses.replace(run) if run is not None else None)
        if isinstance(read, ReadSteps):
            return view.with_steps(read.run_id, tuple(history.steps))
        assert isinstance(read, ReadApprovals)
        return view.with_approvals(read.run_id, tuple(history.approvals))

    def settle(self, view: CallView, settlements: tuple[Any, ...]) -> CallView:
        for found in settlements:
            row = next(r for r in self.rows if r.id == found.row_id)
            if isinstance(found, Settle) and row.outcome == 0:
                row.outcome, row.settled_at = found.outcome, row.settled_at or NOW
            elif isinstance(found, SettleEmpty) and row.settled_at == 0 and self.histories[row.run_id].run is None:
                row.outcome, row.settled_at = 1, NOW
            self.log.append(f"settle {row.id} {getattr(found, 'outcome', 'empty')}")
        return view.with_settled(frozenset(found.row_id for found in settlements))


def a_call(tool: rules.ToolFacts = PAY, policy: str = ASK, *, key: str | None = KEY, now: int = NOW,
           wall: int | None = None) -> rules.CallFacts:
    return rules.CallFacts(tool, key, policy, now, now if wall is None else wall)


def session(max_pending: int = 5, grant_ttl: int = 0) -> rules.SessionFacts:
    return rules.SessionFacts(max_pending, grant_ttl, TOOLS)


def decide(world: World, call: rules.CallFacts | None = None, facts: rules.SessionFacts | None = None,
           view: CallView | None = None) -> tuple[Action, CallView]:
    """Read what the rules ask for until they name an action, as ``calls.CallRules`` does."""
    call = call or a_call()
    view = view or CallView()
    for _ in range(200):
        ruling = rules.decide(view, call, facts or session())
        view = world.settle(view, ruling.settle)
        if not isinstance(ruling.action, (ReadRows, ReadRun, ReadSteps, ReadApprovals)):
            return ruling.action, view
        view = world.read(view, ruling.action, call)
    raise AssertionError("the rules never named an action")


def then(world: World, view: CallView, effect: Action, history: History,
         call: rules.CallFacts | None = None, facts: rules.SessionFacts | None = None) -> Action:
    """Apply an effect the rules named (its result written into the world) and decide again."""
    assert isinstance(effect, (Collect, TakeOver, Expire))
    world.replace(effect.run_id, history)
    action, _ = decide(world, call, facts, view.after_effect(effect.run_id, of_this_request=effect.of_this_request))
    return action


def text_of(action: Action) -> str:
    text = getattr(action, "text", None)
    assert isinstance(text, str), action
    return text


# ------------------------------------------------------------- this request: rules 0 to 7

Case = tuple[str, Callable[[World], Any], rules.ToolFacts, Callable[[Action, Any], None]]


def is_(kind: type) -> Callable[[Action, Any], None]:
    def check(action: Action, _: Any) -> None:
        assert type(action) is kind, action

    return check


def says(kind: type, *words: str) -> Callable[[Action, Any], None]:
    def check(action: Action, _: Any) -> None:
        assert type(action) is kind, action
        for word in words:
            assert word in text_of(action), (word, text_of(action))

    return check


def begins(*, prior: str | None = None, reuse: bool = False, prev: bool = False) -> Callable[[Action, Any], None]:
    def check(action: Action, built: Any) -> None:
        assert isinstance(action, Begin), action
        assert (action.prior.ended if action.prior else None) == prior, action.prior
        assert (action.reuse.id if action.reuse else None) == (built.id if reuse else None), action.reuse
        assert (action.prev.id if action.prev else None) == (built.id if prev else None), action.prev

    return check


def collects(action: Action, built: Any) -> None:
    assert isinstance(action, Collect) and action.run_id == built.run_id and action.grant.status == "approved"


def waits(action: Action, built: Any) -> None:
    assert isinstance(action, AwaitApproval) and action.approval.run_id == built.run_id


def takes_over_its_own(action: Action, built: Any) -> None:
    assert action == TakeOver(built.run_id, of_this_request=True)


def expires_its_own(action: Action, built: Any) -> None:
    assert action == Expire(built.run_id, of_this_request=True)


OWN_HISTORY: list[Case] = [
    ("nothing before it begins a new run", lambda w: None, PAY, begins()),
    ("a pending approval is waited on", lambda w: w.add(waiting("r1", expires=NOW + MINUTE)), PAY, waits),
    ("a pending approval that never expires is waited on", lambda w: w.add(waiting("r1")), PAY, waits),
    ("a pending approval past its expiry is expired first",
     lambda w: w.add(waiting("r1", expires=NOW - SECOND)), PAY, expires_its_own),
    ("an approved request is collected", lambda w: w.add(waiting("r1", "approved", decided=NOW - MINUTE)), PAY,
     collects),
    ("a run waiting with no approval is in progress",
     lambda w: w.add(History(a_run("r1", "WAITING_FOR_APPROVAL"))), PAY, is_(InProgress)),
    ("a run waiting on a decided approval is in progress",
     lambda w: w.add(waiting("r1", "rejected")), PAY, is_(InProgress)),
    ("a run under a live lease is in progress",
     lambda w: w.add(running("r1", lease_until=NOW + MINUTE)), PAY, is_(InProgress)),
    ("a run whose lease expired is taken over",
     lambda w: w.add(running("r1", lease_until=NOW - SECOND)), PAY, takes_over_its_own),
    ("an open row whose run never began is begun under its id",
     lambda w: w.add(never_begun(), run_id="r1"), PAY, begins(reuse=True)),
    ("a rejection within the window is refused with the operator's note",
     lambda w: w.add(rejected("r1")), PAY, says(Refuse, "REJECTED:", "approval ap-r1", '"not to bob"')),
    ("a cancellation within the window is refused",
     lambda w: w.add(cancelled("r1")), PAY, says(Refuse, "REJECTED: an operator cancelled", "changed my mind")),
    ("an expiry within the window is refused", lambda w: w.add(expired("r1")), PAY,
     says(Refuse, "EXPIRED:", "approval ap-r1")),
    ("a rejection before the window asks again", lambda w: w.add(rejected("r1", ago=2 * WINDOW)), PAY,
     begins(prev=True)),
    ("a rejected read is refused too", lambda w: w.add(rejected("r1"), tool="bank_balance"), BALANCE,
     says(Refuse, "REJECTED:")),
    ("a payment that succeeded within the window is a duplicate", lambda w: w.add(completed("r1")), PAY,
     says(Duplicate, "DUPLICATE:", "10m0s", "it succeeded, with this result: paid 25.00 to bob")),
    ("a payment the server declined within the window is a duplicate", lambda w: w.add(declined("r1")), PAY,
     says(Duplicate, "it failed, with this error: ", "card declined for bob")),
    ("an answer that could not be recorded executed, and is a duplicate", lambda w: w.add(unrecorded("r1")), PAY,
     says(Duplicate, "its result could not be recorded")),
    ("a denied payment ran nothing and begins again", lambda w: w.add(denied("r1")), PAY, begins(prev=True)),
    ("a read is never a duplicate", lambda w: w.add(completed("r1"), tool="bank_balance"), BALANCE,
     begins(prev=True)),
    ("a payment that succeeded before the window begins again", lambda w: w.add(completed("r1", ago=2 * WINDOW)),
     PAY, begins(prev=True)),
    ("a window of zero turns the duplicate rule off",
     lambda w: w.add(completed("r1")), dataclasses.replace(PAY, repeat_window=0), begins(prev=True)),
    ("a window of zero turns the refusal of a rejection off",
     lambda w: w.add(rejected("r1")), dataclasses.replace(PAY, repeat_window=0), begins(prev=True)),
    ("a payment that timed out, at any age, asks an operator in the new run",
     lambda w: w.add(timed_out("r1")), PAY, begins(prior="timed_out", prev=True)),
    ("a payment that failed with no answer asks an operator",
     lambda w: w.add(finished_with("r1", tool_error("mcp: connection closed"), status="FAILED", ago=3 * WINDOW)),
     PAY, begins(prior="no_answer", prev=True)),
    ("a read that timed out is a known failure", lambda w: w.add(timed_out("r1"), tool="bank_balance"), BALANCE,
     begins(prev=True)),
    ("an unknown outcome since resolved by a known one does not ask",
     lambda w: (w.add(timed_out("r1", ago=4 * WINDOW), closed=True), w.add(completed("r2", ago=3 * WINDOW)))[1],
     PAY, begins(prev=True)),
    ("an expired question about an unknown outcome asks again rather than refusing EXPIRED",
     lambda w: w.add(interruption_expired("r1")), PAY, begins(prior="timed_out", prev=True)),
    ("a rejected question about an unknown outcome is refused within the window",
     lambda w: w.add(interruption_expired("r1", reason="approval_rejected")), PAY, says(Refuse, "REJECTED:")),
]


@pytest.mark.parametrize(("build", "tool", "check"), [c[1:] for c in OWN_HISTORY], ids=[c[0] for c in OWN_HISTORY])
def test_this_requests_own_history_decides_by_rules_1_to_7(build: Callable[[World], Any], tool: rules.ToolFacts,
                                                           check: Callable[[Action, Any], None]) -> None:
    world = World()
    built = build(world)
    action, _ = decide(world, a_call(tool))
    check(action, built)


def test_arguments_with_no_key_begin_at_once_without_reading_anything() -> None:
    world = World()
    world.add(completed("r1"))
    action, _ = decide(world, a_call(key=None))
    assert action == Begin()
    assert world.log == []


def test_a_lease_is_judged_on_the_wall_clock_never_the_proxys() -> None:
    world = World()
    world.add(running("r1", lease_until=NOW + MINUTE))
    assert type(decide(world, a_call(now=NOW + 2 * MINUTE, wall=NOW))[0]) is InProgress
    assert decide(world, a_call(now=NOW, wall=NOW + 2 * MINUTE))[0] == TakeOver("r1", of_this_request=True)


def test_the_newest_row_that_decides_anything_decides() -> None:
    world = World()
    world.add(completed("r1", ago=5 * MINUTE), closed=True)
    world.add(rejected("r2", ago=MINUTE))
    assert text_of(decide(world)[0]).startswith("REJECTED:")
    world = World()
    world.add(rejected("r1", ago=5 * MINUTE), closed=True)
    world.add(denied("r2"))  # nothing ran: the older row decides
    assert text_of(decide(world)[0]).startswith("REJECTED:")


# ---------------------------------------------------------------- the session's rules: BLOCKED


def blocked_naming(approval_id: str) -> Callable[[Action, Any], None]:
    def check(action: Action, _: Any) -> None:
        assert isinstance(action, Blocked), action
        assert text_of(action).startswith("BLOCKED: an earlier call to bank_pay")
        assert f"(approval {approval_id})" in text_of(action)

    return check


def asks_again_about(run_id: str) -> Callable[[Action, Any], None]:
    def check(action: Action, _: Any) -> None:
        assert isinstance(action, AskUnknown), action
        assert action.request_key == OTHER_KEY
        assert action.args_text == '{"to":"bob"}'
        assert (action.attempt.run_id, action.attempt.ended) == (run_id, "timed_out")

    return check


def pending_others(count: int, tool: str = "bank_pay") -> Callable[[World], Any]:
    def build(world: World) -> None:
        for i in range(count):
            world.add(waiting(f"p{i}", expires=NOW + MINUTE), key=f"other-{i}", tool=tool)

    return build


SESSION: list[tuple[str, Callable[[World], Any], rules.CallFacts, rules.SessionFacts, Callable[[Action, Any], None]]]
SESSION = [
    ("a live question about another payment blocks this payment",
     lambda w: w.add(interruption("o1"), key=OTHER_KEY), a_call(), session(), blocked_naming("ap-o1")),
    ("it blocks an allowed payment too",
     lambda w: w.add(interruption("o1"), key=OTHER_KEY), a_call(policy=ALLOW), session(), blocked_naming("ap-o1")),
    ("it does not block another tool",
     lambda w: w.add(interruption("o1"), key=OTHER_KEY), a_call(REFUND), session(), begins()),
    ("it does not block a read that needs an approval",
     lambda w: w.add(interruption("o1"), key=OTHER_KEY), a_call(BALANCE, ASK), session(), begins()),
    ("an expired question about another payment is expired first, then asked again",
     lambda w: w.add(interruption("o1", expires=NOW - SECOND), key=OTHER_KEY), a_call(), session(),
     lambda action, _: action == Expire("o1", of_this_request=False)),
    ("another payment's unknown outcome nobody asks about is asked again",
     lambda w: w.add(interruption_expired("o1"), key=OTHER_KEY), a_call(), session(), asks_again_about("o1")),
    ("so is one whose re-run met the step limit",
     lambda w: w.add(timed_out("o1"), key=OTHER_KEY), a_call(), session(), asks_again_about("o1")),
    ("it is asked again for an allowed payment too",
     lambda w: w.add(timed_out("o1"), key=OTHER_KEY), a_call(policy=ALLOW), session(), asks_again_about("o1")),
    ("not when the policy denies this tool outright",
     lambda w: w.add(timed_out("o1"), key=OTHER_KEY), a_call(policy=DENY), session(), begins()),
    ("an operator's rejection resolves it",
     lambda w: w.add(interruption_expired("o1", reason="approval_rejected"), key=OTHER_KEY), a_call(), session(),
     begins()),
    ("so does a cancellation",
     lambda w: w.add(interruption_expired("o1", reason="operator_cancelled"), key=OTHER_KEY), a_call(), session(),
     begins()),
    ("another payment left running by a call that is gone is taken over",
     lambda w: w.add(running("o1", lease_until=NOW - SECOND), key=OTHER_KEY), a_call(), session(),
     lambda action, _: action == TakeOver("o1", of_this_request=False)),
    ("one under a live lease is left alone",
     lambda w: w.add(running("o1", lease_until=NOW + MINUTE), key=OTHER_KEY), a_call(), session(), begins()),
    ("the pending cap blocks a call that needs an approval",
     pending_others(2), a_call(), session(max_pending=2), says(Blocked, "BLOCKED: 2 requests are already waiting")),
    ("below the cap it asks", pending_others(1), a_call(), session(max_pending=2), begins()),
    ("the cap counts pending approvals of every tool",
     pending_others(2, tool="bank_refund"), a_call(), session(max_pending=2), says(Blocked, "2 requests")),
    ("a call that needs no approval is not capped", pending_others(2), a_call(policy=ALLOW), session(max_pending=2),
     begins()),
    ("an allowed read skips the session's rules", pending_others(2), a_call(BALANCE, ALLOW), session(max_pending=2),
     begins()),
    ("a read that needs an approval is capped", pending_others(2), a_call(BALANCE, ASK), session(max_pending=2),
     says(Blocked, "2 requests")),
    ("an expired pending approval is not counted",
     lambda w: [w.add(waiting(f"p{i}", expires=NOW - SECOND), key=f"other-{i}") for i in range(2)], a_call(),
     session(max_pending=2), begins()),
    ("a grant awaiting collection is not counted",
     lambda w: [w.add(waiting(f"p{i}", "approved", decided=NOW), key=f"other-{i}") for i in range(2)], a_call(),
     session(max_pending=2), begins()),
]


@pytest.mark.parametrize(("build", "call", "facts", "check"), [c[1:] for c in SESSION], ids=[c[0] for c in SESSION])
def test_the_sessions_rules_block_or_let_the_call_begin(build: Callable[[World], Any], call: rules.CallFacts,
                                                        facts: rules.SessionFacts,
                                                        check: Callable[[Action, Any], None]) -> None:
    world = World()
    built = build(world)
    action, _ = decide(world, call, facts)
    check(action, built)


def test_a_re_run_of_an_unknown_outcome_needs_an_approval_so_the_cap_holds_it_even_when_allowed() -> None:
    world = World()
    world.add(timed_out("r1"))
    pending_others(2, tool="bank_refund")(world)
    action, _ = decide(world, a_call(policy=ALLOW), session(max_pending=2))
    assert text_of(action).startswith("BLOCKED: 2 requests")


# ------------------------------------------------------------------------ the order


ORDER: list[tuple[str, Callable[[World], Any], rules.SessionFacts, type]] = [
    ("a waiting approval for this request wins over the duplicate rule",
     lambda w: (w.add(completed("r1"), closed=True), w.add(waiting("r2", expires=NOW + MINUTE))),
     session(), AwaitApproval),
    ("a grant for this request wins over the pending cap",
     lambda w: (w.add(waiting("r1", "approved", decided=NOW)), pending_others(3)(w)), session(max_pending=1),
     Collect),
    ("a rejection within the window wins over rule 6's unknown outcome",
     lambda w: (w.add(timed_out("r1", ago=4 * MINUTE), closed=True), w.add(rejected("r2"))), session(), Refuse),
    ("a duplicate wins over another request's question blocking the tool",
     lambda w: (w.add(completed("r1")), w.add(interruption("o1"), key=OTHER_KEY)), session(), Duplicate),
    ("a duplicate wins over the pending cap",
     lambda w: (w.add(completed("r1")), pending_others(3)(w)), session(max_pending=1), Duplicate),
    ("a question about another payment wins over the cap",
     lambda w: (pending_others(3)(w), w.add(interruption("o1"), key=OTHER_KEY)), session(max_pending=1), Blocked),
    ("asking again about another payment wins over the cap",
     lambda w: (pending_others(3)(w), w.add(timed_out("o1"), key=OTHER_KEY)), session(max_pending=1), AskUnknown),
    ("a live question blocks before one nobody asks about is asked again",
     lambda w: (w.add(timed_out("o1"), key="third-key"), w.add(interruption("o2"), key=OTHER_KEY)), session(),
     Blocked),
    ("an in-progress run of this request wins over everything of the session",
     lambda w: (w.add(running("r1", lease_until=NOW + MINUTE)), w.add(interruption("o1"), key=OTHER_KEY)), session(),
     InProgress),
]


@pytest.mark.parametrize(("build", "facts", "kind"), [c[1:] for c in ORDER], ids=[c[0] for c in ORDER])
def test_the_rules_apply_in_order(build: Callable[[World], Any], facts: rules.SessionFacts, kind: type) -> None:
    world = World()
    build(world)
    action, _ = decide(world, a_call(), facts)
    assert type(action) is kind, action


def test_a_live_question_blocks_whichever_row_comes_first_in_the_session() -> None:
    world = World()
    world.add(interruption("o1"), key=OTHER_KEY)
    world.add(interruption("o2"), key="third-key")
    assert "(approval ap-o1)" in text_of(decide(world)[0])


# ---------------------------------------------------------- effects, then decided again


def test_an_expired_approval_of_this_request_is_expired_then_refused_expired() -> None:
    world = World()
    world.add(waiting("r1", expires=NOW - SECOND))
    effect, view = decide(world)
    assert effect == Expire("r1", of_this_request=True)
    reads_before = len(world.log)
    after = then(world, view, effect, expired("r1"))
    assert text_of(after).startswith("EXPIRED:")
    # this request's rows and its run are read again; nothing is expired twice
    assert world.log[reads_before:reads_before + 2] == ["read ReadRows for_key", "read ReadRun r1"]


def test_an_effect_that_leaves_this_requests_run_unfinished_answers_in_progress_without_acting_again() -> None:
    world = World()
    world.add(running("r1", lease_until=NOW - SECOND))
    effect, view = decide(world)
    assert effect == TakeOver("r1", of_this_request=True)
    assert type(then(world, view, effect, running("r1", lease_until=NOW - SECOND))) is InProgress


def test_a_run_taken_over_and_ended_is_judged_by_rules_4_to_7() -> None:
    world = World()
    world.add(running("r1", lease_until=NOW - SECOND))
    effect, view = decide(world)
    after = then(world, view, effect, finished_with("r1", None, status="FAILED"))
    assert isinstance(after, Begin) and after.prior is None and after.reuse is None
    assert after.prev is not None and after.prev.id == world.rows[0].id


def test_a_grant_the_gate_found_too_old_is_refused_expired() -> None:
    world = World()
    world.add(waiting("r1", "approved", decided=NOW - 2 * WINDOW))
    effect, view = decide(world, facts=session(grant_ttl=WINDOW))
    assert isinstance(effect, Collect)
    assert text_of(then(world, view, effect, expired("r1"))).startswith("EXPIRED:")


def test_another_payment_taken_over_is_scanned_once_and_the_call_goes_on() -> None:
    world = World()
    world.add(running("o1", lease_until=NOW - SECOND), key=OTHER_KEY)
    world.add(waiting("p1", expires=NOW + MINUTE), key="third-key")
    effect, view = decide(world, facts=session(max_pending=1))
    assert effect == TakeOver("o1", of_this_request=False)
    # ended with nothing to execute: the rest of the session is scanned (the cap), not o1 again
    after = then(world, view, effect, finished_with("o1", None, status="FAILED"), facts=session(max_pending=1))
    assert text_of(after).startswith("BLOCKED: 1 requests")


def test_an_expired_question_about_another_payment_is_expired_then_asked_again() -> None:
    world = World()
    world.add(interruption("o1", expires=NOW - SECOND), key=OTHER_KEY)
    effect, view = decide(world)
    assert effect == Expire("o1", of_this_request=False)
    asks_again_about("o1")(then(world, view, effect, interruption_expired("o1")), None)


def test_an_expiry_of_another_payments_question_that_failed_is_not_tried_twice() -> None:
    world = World()
    world.add(interruption("o1", expires=NOW - SECOND), key=OTHER_KEY)
    effect, view = decide(world)
    assert effect == Expire("o1", of_this_request=False)
    # the gate could not attach: the run still waits on the expired question
    assert then(world, view, effect, interruption("o1", expires=NOW - SECOND)) == Begin()


# ------------------------------------------------------------- what is read and written


def reads(world: World) -> list[str]:
    return [line for line in world.log if line.startswith("read ReadRows")]


def test_an_allowed_read_reads_only_this_requests_rows() -> None:
    world = World()
    pending_others(2)(world)
    action, _ = decide(world, a_call(BALANCE, ALLOW))
    assert isinstance(action, Begin)
    assert world.log == ["read ReadRows for_key"]


def test_a_payment_reads_its_rows_its_attempts_the_unsettled_rows_and_the_tools_unknown_outcomes_in_order() -> None:
    world = World()
    action, _ = decide(world, a_call(policy=ALLOW))
    assert isinstance(action, Begin)
    assert world.log == ["read ReadRows for_key", "read ReadRows attempts", "read ReadRows unsettled",
                         "read ReadRows unknown_for_tool"]


def test_a_duplicate_reads_its_own_run_once_and_nothing_of_the_session() -> None:
    world = World()
    world.add(completed("r1"), settled=True, outcome=2)
    pending_others(2)(world)
    action, _ = decide(world)
    assert isinstance(action, Duplicate)
    assert world.log == ["read ReadRows for_key", "read ReadRun r1", "read ReadSteps r1", "read ReadApprovals r1"]


def test_each_record_is_read_once_per_decision() -> None:
    world = World()
    world.add(timed_out("r1"))  # judged by rule 4 (outside the window, its rows) and rule 6 (its attempts)
    world.add(timed_out("o1"), key=OTHER_KEY)  # judged by the session's scan and the unknown block
    decide(world)
    records = [line for line in world.log if not line.startswith(("read ReadRows", "settle"))]
    assert len(records) == len(set(records)) == 6


def test_a_finished_unsettled_row_is_settled_once_before_the_index_is_read_again() -> None:
    world = World()
    world.add(declined("r1"), closed=True)
    world.rows[-1].closed_at = NOW - 2 * WINDOW  # closed before the window: only rule 6 reads it
    world.add(denied("r2"))
    action, _ = decide(world, a_call(policy=ALLOW))
    assert isinstance(action, Begin) and action.prior is None
    assert [line for line in world.log if line.startswith(("settle", "read ReadRows"))] == [
        "read ReadRows for_key",
        "settle 2 1",  # rule 4 finds the denied run: nothing ran; written before rule 6 reads the attempts
        "read ReadRows attempts",  # so they are the declined run's row alone
        "settle 1 2",  # rule 6 finds it known
        "read ReadRows unsettled",
        "read ReadRows unknown_for_tool",
    ]
    assert [(r.outcome, r.settled_at) for r in world.rows] == [(2, NOW), (1, NOW)]


def test_a_row_whose_run_never_began_is_settled_empty_by_anothers_scan() -> None:
    world = World()
    world.add(never_begun(), key=OTHER_KEY, run_id="gone")
    action, _ = decide(world)
    assert isinstance(action, Begin)
    assert "settle 1 empty" in world.log
    assert (world.rows[0].outcome, world.rows[0].settled_at) == (1, NOW)


def test_a_finished_run_of_a_tool_no_longer_offered_settles_as_unknown() -> None:
    world = World()
    world.add(declined("o1"), key=OTHER_KEY, tool="bank_refund")
    facts = rules.SessionFacts(5, 0, {"bank_pay": PAY})  # bank_refund is gone
    decide(world, facts=facts)
    assert world.rows[0].outcome == 3
