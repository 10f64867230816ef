"""The rules across calls as a decision: what one ``tools/call`` does, from what was read.

``decide(view, call, session)`` is pure: no store, no clock, no I/O. It applies the rules in
order (proxy-and-mcp-module §2.6.2, docs/decisions/0004) over a ``view.CallView`` and
answers a ``NextStep`` (``_actions.py``): what to do, and the index rows it found finished and
unsettled on the way. What to do is a ``Read`` the rules reached and the view lacks
(``reading.CallReader`` reads it and the rules decide again), or an action: an answer,
an approval to wait on, an effect on a run, asking again about an unknown outcome, or a
new run.

Where the order of the rules puts an effect between two of them (an approval's expiry
before rule 4 can answer EXPIRED; a take-over of another run of this tool before the rest
of the session's rows are scanned), the effect is an action: it is applied, its run is
marked in ``view.acted_on`` and read again, and the rules decide again from the top;
``acted_on`` is how they know not to act on that run twice. Each pass either reads
something not read yet or acts on a run not acted on yet, so a decision ends.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from agentrt_proxy import canonical
from agentrt_proxy.canonical.durations import format_go, format_time_seconds, parse_time
from agentrt_proxy.config import READ_ONLY
from agentrt_proxy.gate import (
    DENY,
    INTERRUPTED_SIDE_EFFECT,
    OUTCOME_NONE,
    REQUIRE_APPROVAL,
    TERMINAL,
    WAITING,
    Attempt,
    LastAttempt,
    attempts,
)
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
    NextStep,
    Refuse,
    Settle,
    SettleEmpty,
    Settlement,
    TakeOver,
)
from agentrt_proxy.proxy._view import (
    ATTEMPTS,
    FOR_KEY,
    UNKNOWN_FOR_TOOL,
    UNSETTLED,
    CallView,
    Read,
    ReadApprovals,
    ReadRows,
    ReadRun,
    ReadSteps,
)
from agentrt_proxy.store import (
    APPROVAL_PENDING,
    APPROVED,
    END_APPROVAL_EXPIRED,
    END_APPROVAL_REJECTED,
    END_OPERATOR_CANCELLED,
    Approval,
    ProxyCall,
    Run,
    Step,
)
from agentrt_proxy.text import model_text

# ------------------------------------------------------------------------------ the facts


@dataclass(frozen=True)
class ToolFacts:
    """What the rules need of an offered tool."""

    name: str
    side_effect: str
    repeat_window: int  # ns; 0 turns rules 4 and 5 off
    known_answer: re.Pattern[str]  # a recorded error matching it is the server's own answer

    @property
    def read_only(self) -> bool:
        return self.side_effect == READ_ONLY

    def is_known_answer(self, error: str) -> bool:
        return bool(self.known_answer.match(error))


@dataclass(frozen=True)
class CallFacts:
    """This call: its tool, its request key (None: arguments the JSON boundary refused), what
    the policy says of the tool, and the clocks, each read once for the whole decision."""

    tool: ToolFacts
    key: str | None
    policy_outcome: str  # allow, require_approval or deny, before any re-run
    now: int  # the proxy's clock, ns: windows, expiries, grant ages
    wall_now: int  # the wall clock, ns: leases are never judged on the proxy's clock


@dataclass(frozen=True)
class SessionFacts:
    """The configuration's part in the rules, and every tool offered (another request's run is
    judged by its own tool)."""

    max_pending: int
    grant_ttl: int  # ns; 0: a grant never grows too old
    tools: Mapping[str, ToolFacts]


def decide(view: CallView, call: CallFacts, session: SessionFacts) -> NextStep:
    """What this call does next, given what has been read so far."""
    rules = _Rules(view, call, session)
    try:
        action: Action | Read = rules.decide()
    except _NotRead as missing:
        action = missing.read
    return NextStep(action, tuple(rules.settlements))


# ----------------------------------------------------------------- pure facts of records


def lease_live(run: Run, wall_now: int) -> bool:
    return bool(run.lease_owner) and bool(run.lease_expires_at) and parse_time(run.lease_expires_at) > wall_now


def past_expiry(approval: Approval, now: int) -> bool:
    return bool(approval.expires_at) and now > parse_time(approval.expires_at)


def live(approval: Approval, now: int, grant_ttl: int) -> bool:
    """A pending approval not past its expiry, or a grant not too old to be collected."""
    if approval.status == APPROVAL_PENDING:
        return not past_expiry(approval, now)
    if approval.status == APPROVED:
        return grant_ttl == 0 or now <= parse_time(approval.decided_at) + grant_ttl
    return False


def last_attempt_of(
    tool: ToolFacts | None, run_id: str, steps: Sequence[Step], approvals: Sequence[Approval]
) -> LastAttempt:
    """What the run's last attempt came to, judged by its tool (None: no longer offered)."""
    return attempts.last_attempt(
        run_id,
        steps,
        approvals,
        read_only=tool is not None and tool.read_only,
        tool_offered=tool is not None,
        is_known_answer=lambda text: tool is not None and tool.is_known_answer(text),
    )


def settlement(row: ProxyCall, last: LastAttempt) -> Settle | None:
    """The row's settlement for its run's last attempt, unless it is settled already."""
    if row.outcome == 0 or row.settled_at == 0:
        return Settle(row.id, last.outcome if last.outcome != 0 else OUTCOME_NONE)
    return None


def recorded_args(steps: Sequence[Step]) -> str:
    """The arguments a run's tool call recorded, as the policy saw them."""
    for step in steps:
        if attempts.is_tool_call(step):
            args = attempts.decision(step).get("args", {})
            return canonical.policy_text(args if args is not None else {})
    return "{}"


def duplicate_outcome(step: Step) -> str:
    """How the executed step ended, as DUPLICATE tells it."""
    obs = attempts.observation(step)
    if obs.get("kind") == "tool_result":
        return model_text.duplicate_succeeded(attempts.result_text(obs))
    content = obs.get("content")
    if isinstance(content, dict) and content.get("failure") == "invalid_content":
        return model_text.duplicate_unrecorded(attempts.error_text(obs))
    return model_text.duplicate_failed(attempts.error_text(obs))


# ----------------------------------------------------------------------------- the rules


class _NotRead(Exception):
    """The rules reached a record the view does not hold yet."""

    def __init__(self, read: Read) -> None:
        self.read = read


class _Rules:
    """One pass of the rules over a view. Its accessors raise ``_NotRead`` for a record not
    read yet; ``settle`` collects the rows found finished and unsettled."""

    def __init__(self, view: CallView, call: CallFacts, session: SessionFacts) -> None:
        self.view = view
        self.call = call
        self.tool = call.tool
        self.session = session
        self.settlements: list[Settlement] = []
        self._settling: set[int] = set()

    # -------------------------------------------------------------------- the view

    def rows(self, which: str) -> tuple[ProxyCall, ...]:
        rows = self.view.rows.get(which)
        if rows is None:
            raise _NotRead(ReadRows(which))
        return rows

    def run(self, run_id: str) -> Run | None:
        if run_id not in self.view.runs:
            raise _NotRead(ReadRun(run_id))
        return self.view.runs[run_id]

    def steps(self, run_id: str) -> tuple[Step, ...]:
        steps = self.view.steps.get(run_id)
        if steps is None:
            raise _NotRead(ReadSteps(run_id))
        return steps

    def approvals(self, run_id: str) -> tuple[Approval, ...]:
        approvals = self.view.approvals.get(run_id)
        if approvals is None:
            raise _NotRead(ReadApprovals(run_id))
        return approvals

    def last_attempt(self, tool: ToolFacts | None, run: Run) -> LastAttempt:
        steps = self.steps(run.id)  # steps first, then approvals: the order they were always read in
        return last_attempt_of(tool, run.id, steps, self.approvals(run.id))

    def settle(self, row: ProxyCall, last: LastAttempt) -> None:
        if row.id in self.view.settled or row.id in self._settling:
            return
        found = settlement(row, last)
        if found is not None:
            self.settlements.append(found)
            self._settling.add(row.id)

    def settle_empty(self, row: ProxyCall) -> None:
        if row.id not in self.view.settled and row.id not in self._settling:
            self.settlements.append(SettleEmpty(row.id))
            self._settling.add(row.id)

    # ------------------------------------------------------------------- in order

    def decide(self) -> Action:
        if self.call.key is None:
            return Begin()  # no key, no rule: a fresh run records the arguments INVALID
        rows = self.rows(FOR_KEY)
        open_row = next((row for row in rows if row.open), None)
        reuse: ProxyCall | None = None
        if open_row is not None:
            run = self.run(open_row.run_id)
            if open_row.run_id in self.view.acted_on and (run is None or run.status not in TERMINAL):
                return InProgress()  # this decision moved the run and it is still not finished
            if run is None:
                reuse = open_row  # a row whose run never began: begin it under the row's id
            elif run.status not in TERMINAL:
                return self.own_unfinished_run(run)
        if self.tool.repeat_window > 0:
            refusal = self.refusal(rows)
            if refusal is not None:
                return refusal
        prior = None if self.tool.read_only else self.unresolved()
        blocked = self.session_rules(prior)
        if blocked is not None:
            return blocked
        return Begin(prior, reuse, None if reuse is not None else open_row)

    # -------------------------------------------------------------- rules 1 to 3

    def own_unfinished_run(self, run: Run) -> Action:
        if run.status != WAITING:
            if lease_live(run, self.call.wall_now):
                return InProgress()  # rule 2
            return TakeOver(run.id, of_this_request=True)  # rule 3
        approval = attempts.latest_approval(self.approvals(run.id))  # rule 1
        if approval is None:
            return InProgress()
        if approval.status == APPROVAL_PENDING:
            if not past_expiry(approval, self.call.now):
                return AwaitApproval(approval)
            return Expire(run.id, of_this_request=True)  # it ends the run; then rule 4 answers EXPIRED
        if approval.status == APPROVED:
            return Collect(run.id, approval)
        return InProgress()

    # ------------------------------------------------------------ rules 4 and 5

    def refusal(self, rows: Sequence[ProxyCall]) -> Action | None:
        """The newest finished run of this request within the window that decides anything."""
        window, now = self.tool.repeat_window, self.call.now
        for row in rows:
            run = self.run(row.run_id)
            if run is None or run.status not in TERMINAL:
                continue
            steps = self.steps(run.id)
            approvals = self.approvals(run.id)
            last = last_attempt_of(self.tool, run.id, steps, approvals)
            self.settle(row, last)
            if not run.finished_at:
                continue
            finished = parse_time(run.finished_at)
            if finished < now - window:
                continue
            until = format_time_seconds(finished + window)
            latest = attempts.latest_approval(approvals)
            if run.reason == END_APPROVAL_REJECTED and latest is not None:
                return Refuse(model_text.rejected(latest.id, latest.note, until))
            if run.reason == END_APPROVAL_EXPIRED:
                if last.unknown:
                    return None  # rule 6 asks again
                if latest is not None:
                    return Refuse(model_text.expired(latest.id, until))
            if run.reason == END_OPERATOR_CANCELLED:
                return Refuse(model_text.cancelled(run.reason_detail, until))
            if not self.tool.read_only:
                if last.unknown:
                    return None  # rule 6
                executed = attempts.executed_step(steps)
                if last.known and executed is not None:
                    earlier = format_time_seconds(finished)
                    text = model_text.duplicate(earlier, format_go(window), duplicate_outcome(executed))
                    return Duplicate(text, run.id, attempts.carries_server_text(attempts.observation(executed)))
        return None

    # ------------------------------------------------------------------ rule 6

    def unresolved(self) -> Attempt | None:
        """This request's last attempt, at any age, when its outcome is unknown."""
        for row in self.rows(ATTEMPTS):
            if row.outcome == attempts.OUTCOME_KNOWN:
                return None
            run = self.run(row.run_id)
            if run is None or run.status not in TERMINAL:
                continue
            last = self.last_attempt(self.tool, run)
            self.settle(row, last)
            if last.known:
                return None
            if last.unknown:
                return last.attempt
        return None

    # ------------------------------------------------------------ session rules

    def session_rules(self, prior: Attempt | None) -> Action | None:
        """BLOCKED by another request's unknown outcome, or by the cap on pending approvals."""
        outcome = self.call.policy_outcome
        needs_approval = outcome == REQUIRE_APPROVAL or (prior is not None and outcome != DENY)
        read_only = self.tool.read_only
        if read_only and not needs_approval:
            return None
        waiting = 0
        for row in self.rows(UNSETTLED):
            if row.request_key == self.call.key or row.run_id in self.view.acted_on:
                continue  # this request's own rows; a run this decision already moved
            run = self.run(row.run_id)
            if run is None:
                self.settle_empty(row)
                continue
            if run.status in TERMINAL:
                self.settle(row, self.last_attempt(self.session.tools.get(row.tool), run))
                continue
            same_tool = not read_only and row.tool == self.tool.name
            if run.status == WAITING:
                approval = attempts.latest_approval(self.approvals(run.id))
                if approval is None:
                    continue
                is_live = live(approval, self.call.now, self.session.grant_ttl)
                if same_tool and approval.kind == INTERRUPTED_SIDE_EFFECT:
                    if is_live:
                        return Blocked(model_text.blocked_unknown(self.tool.name, approval.id))
                    return Expire(run.id, of_this_request=False)  # an expiry resolves nothing: asked again below
                if is_live and approval.status == APPROVAL_PENDING:
                    waiting += 1
            elif same_tool and not lease_live(run, self.call.wall_now):
                return TakeOver(run.id, of_this_request=False)
        if not read_only and outcome != DENY:
            asked = self.unknown_block()
            if asked is not None:
                return asked
        if needs_approval and waiting >= self.session.max_pending:
            return Blocked(model_text.blocked_cap(self.session.max_pending))
        return None

    def unknown_block(self) -> AskUnknown | None:
        """Another request to this tool with an unknown outcome that nothing asks about now."""
        for row in self.rows(UNKNOWN_FOR_TOOL):
            run = self.run(row.run_id)
            if run is None or run.status not in TERMINAL:
                continue
            last = self.last_attempt(self.tool, run)
            self.settle(row, last)
            if not last.unknown or last.attempt is None:
                continue
            if run.reason in (END_APPROVAL_REJECTED, END_OPERATOR_CANCELLED):
                continue  # an operator resolved it
            return AskUnknown(row.request_key, recorded_args(self.steps(run.id)), last.attempt)
        return None
