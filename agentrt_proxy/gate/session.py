"""The runtime's Gate for one tool step per run (runtime-core §1.5–1.13, §3, §5).

``Gate.begin`` / ``Gate.attach`` open a ``Session``; a session has at most one open
step: ``step()`` → ``propose(decision)`` → ``execute(call_tool)`` (async), or
``fail(message)`` for the proxy's closing decision. All SQLite work is synchronous;
``execute`` alone awaits (the caller's upstream call and the lease heartbeat), and
the record that a tool is starting commits before the tool is called.
"""

from __future__ import annotations

import asyncio
import copy
import secrets
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import anyio

from agentrt_proxy.canonical import durations
from agentrt_proxy.canonical.encoder import go_json
from agentrt_proxy.gate.model import (
    ALLOWED,
    AWAITING,
    COMPLETED,
    DECIDING,
    DENIED,
    DETAIL_FAILURES,
    DETAIL_LOOP,
    DETAIL_POLICY_ERROR,
    DETAIL_POLICY_RUN,
    DETAIL_STEP_LIMIT,
    DETAIL_UNKNOWN_OUTCOME,
    DONE,
    ENDED,
    ERR_ARGS_SCHEMA,
    ERR_NO_KIND,
    ERR_NO_TOOL,
    ERR_UNKNOWN_KIND,
    ERR_UNKNOWN_ORIGIN,
    ERR_UNKNOWN_TOOL,
    EXECUTED,
    EXECUTING,
    FAILED,
    ORIGINS,
    PENDING,
    RUNNING,
    SUMMARY_ABORTED,
    SUMMARY_CANCELLED,
    SUMMARY_DENIED,
    SUMMARY_PANIC,
    WAITING,
    Decision,
    Limits,
    Observation,
    Verdict,
    expire_approval,
    expired,
    fail_step,
    finish_run,
    fmt,
    invalid_decision,
    observation_from_outcome,
    observation_json,
    observe,
    pause,
    record_decision,
    record_policy,
)
from agentrt_proxy.gate.policy import (
    ABORT,
    ALLOW,
    DENY,
    REQUIRE_APPROVAL,
    Policy,
    PolicyDecision,
    Reconciliation,
    RunView,
    ToolRequest,
)
from agentrt_proxy.mcp import outcomes
from agentrt_proxy.store import (
    MSG_RUN_STATE,
    Approval,
    ApprovalExpired,
    LeaseLost,
    NotFound,
    Run,
    RunLeased,
    RunStateError,
    Step,
    Store,
    StoreError,
    Tx,
    WouldBlock,
    new_id,
)
from agentrt_proxy.text.record_text import ERR_LEASE_EXPIRED as ERR_LEASE_EXPIRED
from agentrt_proxy.text.record_text import ERR_LEASE_OTHER as ERR_LEASE_OTHER
from agentrt_proxy.text.record_text import ERR_LIMITS as ERR_LIMITS
from agentrt_proxy.text.record_text import ERR_NO_STEP as ERR_NO_STEP
from agentrt_proxy.text.record_text import ERR_NOT_ALLOWED as ERR_NOT_ALLOWED
from agentrt_proxy.text.record_text import ERR_OPEN_STEP as ERR_OPEN_STEP
from agentrt_proxy.text.record_text import ERR_SESSION_CLOSED as ERR_SESSION_CLOSED
from agentrt_proxy.upstream import ToolSpec, schema_error

RECORD_GRACE_S = 5.0  # a tool is bounded by its spec's timeout plus this, as a safety net

CallTool = Callable[[ToolRequest], Awaitable[outcomes.ToolOutcome]]
OnRecorded = Callable[[Observation], None]


class Clock(Protocol):
    def now_ns(self) -> int: ...


class WallClock:
    def now_ns(self) -> int:
        return time.time_ns()


Reconcile = Callable[[Run, list[Step]], Reconciliation]


class SessionClosed(StoreError):
    pass


@dataclass
class _Proposal:
    request: ToolRequest
    decision: PolicyDecision
    view: RunView
    at_ns: int
    spec_hash: str
    grant: Approval | None = None


class Gate:
    def __init__(self, store: Store, policy: Policy, tools: Sequence[ToolSpec], *, clock: Clock | None = None,
                 reconcile: Reconcile | None = None, lease_ttl: int = 30_000_000_000,
                 lease_owner: str = "") -> None:
        names = [t.name for t in tools]
        if len(set(names)) != len(names) or any(not n for n in names):
            raise ValueError("agentrt: tool names must be non-empty and unique")
        for t in tools:
            if t.timeout <= 0:
                raise ValueError(f"agentrt: tool {t.name}: timeout must be above zero")
        self.store = store
        self.policy = policy
        self.policy_id = policy.policy_id()
        self.tools = {t.name: t for t in sorted(tools, key=lambda t: t.name)}
        self.clock: Clock = clock or WallClock()
        self.reconcile = reconcile
        self.lease_ttl = lease_ttl
        # Random bits only, never new_id()'s time prefix: two gates made in the same
        # millisecond (two processes) must not share an owner, or each would renew and
        # release the other's leases (runtime-core §5.1).
        self.owner = f"{lease_owner}/{secrets.token_hex(6)}" if lease_owner else secrets.token_hex(16)
        self._active: set[str] = set()
        # (hash, recorded JSON) of each tool, computed once: begin and propose write them
        self._spec_rows = {name: (spec.spec_hash(), go_json(spec.tree())) for name, spec in self.tools.items()}

    # opening sessions ----------------------------------------------------------------
    def begin(self, run_id: str, goal: str, limits: Limits) -> Session:
        if min(limits.max_steps, limits.max_consecutive_tool_failures, limits.loop_threshold) <= 0:
            raise ValueError(ERR_LIMITS)
        now = fmt(self.clock.now_ns())
        limits_json, expires = limits.json(), self.lease_expiry()
        with self.store.write() as tx:
            tx.insert_run(run_id, goal, limits_json, now, self.owner, expires)
            tools = [spec_hash for spec_hash, _ in self._spec_rows.values()]
            for spec_hash, spec_json in self._spec_rows.values():
                tx.put_spec(spec_hash, spec_json)
            tx.append(run_id, "", now, "run.created", {"goal": goal, "limits": _raw(limits_json), "tools": tools})
            tx.append(run_id, "", now, "run.started", None)
        session = self._session(run_id, limits)
        # The row as insert_run wrote it (every other column takes its default): the
        # session's next writes in the same transaction use it instead of reading it back.
        session._fresh = (tx, Run(run_id, goal, RUNNING, "", "", limits_json, 0, now, now, "", "", 0, 0, 0, 0, 0, 0,
                                  self.owner, expires))
        return session

    def attach(self, run_id: str) -> tuple[Session | None, Verdict]:
        from agentrt_proxy.gate.attach import attach

        return attach(self, run_id)

    def _session(self, run_id: str, limits: Limits) -> Session:
        if run_id in self._active:
            raise RunLeased(run_id, self.owner, "")
        self._active.add(run_id)
        return Session(self, run_id, limits)

    def lease_expiry(self) -> str:
        return fmt(durations.wall_ns() + self.lease_ttl)

    def spec(self, name: str) -> ToolSpec | None:
        return self.tools.get(name)

    def spec_row(self, spec: ToolSpec) -> tuple[str, str]:
        """The spec's hash and recorded JSON (cached for the registered specs)."""
        row = self._spec_rows.get(spec.name)
        if row is not None and self.tools.get(spec.name) is spec:
            return row
        return spec.spec_hash(), go_json(spec.tree())


def _raw(text: str) -> Any:
    from agentrt_proxy.canonical.encoder import Raw

    return Raw(text)


class Session:
    """One run under this gate's lease. Calls are serialised by the caller."""

    def __init__(self, gate: Gate, run_id: str, limits: Limits) -> None:
        self.gate, self.run_id, self.limits = gate, run_id, limits
        self.current: Step | None = None
        self._proposal: _Proposal | None = None
        self._decided = False
        self._over = False
        self._lease_lost = False
        self._started = False  # start_tool() wrote the step's start for the allowed proposal
        # (transaction, run row) while the transaction that began the run is open and the
        # session has written nothing else to it than its first step's claim, decision and
        # start: the run row is this Run, its only step is ``current`` (if any), it has no
        # approvals. Valid only inside that same transaction (``_known_run``).
        self._fresh: tuple[Tx, Run] | None = None
        # The run row as the recording of a terminal tool's result finished it (set inside
        # that transaction, before ``on_recorded``); None otherwise.
        self.ended_run: Run | None = None

    # helpers ------------------------------------------------------------------------
    @property
    def store(self) -> Store:
        return self.gate.store

    def _require_open(self) -> None:
        if self._over:
            raise SessionClosed(ERR_SESSION_CLOSED)

    def _end(self) -> None:
        self._fresh = None
        self._over = True
        self.current = None
        self._proposal = None
        self.gate._active.discard(self.run_id)

    def _known_run(self, tx: Tx | None) -> Run | None:
        """The run row as this session wrote it in ``tx``, when ``tx`` is the open
        transaction that began the run (nothing else can have written it since); else None."""
        fresh = self._fresh
        return fresh[1] if fresh is not None and tx is not None and fresh[0] is tx else None

    def _check_lease(self, run: Run) -> None:
        if run.lease_owner != self.gate.owner:
            raise LeaseLost(ERR_LEASE_OTHER.format(run_id=self.run_id))
        if not run.lease_expires_at or durations.wall_ns() >= durations.parse_time(run.lease_expires_at):
            raise LeaseLost(ERR_LEASE_EXPIRED.format(run_id=self.run_id, at=run.lease_expires_at))

    def _guard(self, fn: Callable[[], Any]) -> Any:
        """A failed call ends the session (as the runtime's ErrSessionClosed after an error)."""
        try:
            return fn()
        except (LeaseLost, RunStateError):
            self._end()
            raise

    # step ---------------------------------------------------------------------------
    def step(self) -> Step | None:
        """Start the next step, or end the run on a limit. None when the run is no longer
        RUNNING or a limit ended it."""
        self._require_open()
        if self.current is not None:
            raise RunStateError(ERR_OPEN_STEP.format(run_id=self.run_id))
        return self._guard(self._step)

    def _step(self) -> Step | None:
        now = fmt(self.gate.clock.now_ns())
        step_id = new_id()
        with self.store.write() as tx:
            known = self._known_run(tx)
            run = known if known is not None else tx.run(self.run_id)
            if run.status != RUNNING:
                self._end()
                return None
            self._check_lease(run)
            # A run begun in this transaction has no steps yet (current is None here).
            if self._limit_reached(tx, run, now, [] if known is not None else None):
                self._end()
                return None
            tx.claim_step(self.run_id, run.step_count, self.gate.owner, step_id, now)
            tx.append(self.run_id, step_id, now, "step.started", {"index": run.step_count})
            if known is not None:
                counted = copy.copy(known)  # (dataclasses.replace costs ~8x a copy)
                counted.step_count += 1
                self._fresh = (tx, counted)
        # The row claim_step just inserted (the other columns take their defaults).
        self.current = Step(step_id, self.run_id, run.step_count, DECIDING, "", "", "", "", now, "", "", "")
        self._decided = False
        self._proposal = None
        self._started = False
        return self.current

    def _limit_reached(self, tx: Tx, run: Run, now: str, steps: list[Step] | None = None) -> bool:
        if steps is None:
            steps = tx.steps(self.run_id)
        lim = self.limits
        found: tuple[str, str] | None = None
        if run.step_count >= lim.max_steps:
            found = ("limit_steps", DETAIL_STEP_LIMIT.format(n=lim.max_steps))
        elif _trailing_failures(steps) >= lim.max_consecutive_tool_failures:
            found = ("repeated_tool_failures", DETAIL_FAILURES.format(n=_trailing_failures(steps)))
        if found is not None:
            tx.append(self.run_id, "", now, "limit.exceeded", {"reason": found[0], "detail": found[1]})
            finish_run(tx, self.run_id, expect=RUNNING, owner=self.gate.owner, status=FAILED, reason=found[0],
                       detail=found[1], at=now)
            return True
        loop = _loop(steps, lim.loop_threshold)
        if loop is not None:
            tx.append(self.run_id, "", now, "loop.detected", loop)
            finish_run(tx, self.run_id, expect=RUNNING, owner=self.gate.owner, status=FAILED,
                       reason="loop_detected", detail=DETAIL_LOOP.format(tool=loop["tool"], n=loop["repeats"]),
                       at=now)
            return True
        return False

    # propose ------------------------------------------------------------------------
    def propose(self, decision: Decision) -> Verdict:
        self._require_open()
        if self.current is None or self._decided:
            raise RunStateError(ERR_NO_STEP.format(run_id=self.run_id))
        return self._guard(lambda: self._propose(decision))

    def _propose(self, decision: Decision) -> Verdict:
        step = self.current
        assert step is not None
        now_ns = self.gate.clock.now_ns()
        now = fmt(now_ns)
        rec = record_decision(decision)
        spec = self.gate.spec(decision.tool) if decision.kind == "tool_call" else None
        spec_hash, spec_json = self.gate.spec_row(spec) if spec is not None else ("", "")
        with self.store.write() as tx:
            known = self._known_run(tx)
            self._check_lease(known if known is not None else tx.run(self.run_id))
            tx.update_step(step.id, expect=DECIDING, decision_json=go_json(rec.tree), spec_hash=spec_hash)
            if spec is not None:
                tx.put_spec(spec_hash, spec_json)
            tx.append(self.run_id, step.id, now, "step.decided", rec.tree)
        self._decided = True
        error = _validation_error(decision, rec.error, spec, rec.args)
        if error:
            return self._fail_invalid(step, error, now)
        if decision.kind in ("complete", "fail"):
            return self._finish_decision(step, decision, rec.result, now)
        assert spec is not None
        request = ToolRequest(self.run_id, step.id, spec, rec.args if rec.args is not None else {})
        return self._apply_policy(step, request, now_ns, spec_hash)

    def _fail_invalid(self, step: Step, error: str, now: str) -> Verdict:
        obs = invalid_decision(error)
        self._fresh = None  # the run now has a finished step
        with self.store.write() as tx:
            fail_step(tx, step, obs, now, expect=DECIDING)
        self.current = None
        return Verdict(DENIED, observation=obs)

    def _finish_decision(self, step: Step, decision: Decision, result: Any, now: str) -> Verdict:
        complete = decision.kind == "complete"
        with self.store.write() as tx:
            tx.update_step(step.id, expect=DECIDING, status=DONE, finished_at=now)
            finish_run(tx, self.run_id, expect=RUNNING, owner=self.gate.owner,
                       status=COMPLETED if complete else FAILED,
                       reason="goal_completed" if complete else "goal_failed",
                       detail=decision.reason if complete else decision.message, at=now,
                       result_json=go_json(result) if complete and result is not None else None)
        self._end()
        return Verdict(ENDED, run=self.store.get_run(self.run_id))

    def _apply_policy(self, step: Step, request: ToolRequest, now_ns: int, spec_hash: str) -> Verdict:
        view = self._view(step)
        now = fmt(now_ns)
        try:
            pd = self.gate.policy.evaluate(request, view)
        except Exception as exc:  # a policy error ends the run, never a traceback
            return self._policy_error(step, str(exc), now)
        prop = _Proposal(request, pd, view, now_ns, spec_hash)
        return self.dispatch(step, prop, expect_run=RUNNING, on_resume=False)

    def _policy_error(self, step: Step, error: str, now: str) -> Verdict:
        obs = invalid_decision(DETAIL_POLICY_ERROR.format(error=error))
        with self.store.write() as tx:
            fail_step(tx, step, obs, now, expect=(DECIDING, AWAITING), detail=DETAIL_POLICY_ERROR.format(error=error))
            finish_run(tx, self.run_id, expect=(RUNNING, WAITING), status=FAILED, reason="internal_error",
                       detail=DETAIL_POLICY_RUN.format(error=error), at=now)
        self._end()
        return Verdict(ENDED, run=self.store.get_run(self.run_id))

    def _view(self, step: Step) -> RunView:
        known = self._known_run(self.store.open_tx())
        if known is not None:
            # Begun in this still open transaction: this step is its only one, no approvals.
            return RunView(copy.copy(known), [], [], step)
        run = self.store.get_run(self.run_id)
        steps = [s for s in self.store.steps_of(self.run_id) if s.idx < step.idx]
        return RunView(run, steps, self.store.approvals_of(self.run_id), step)

    def dispatch(self, step: Step, prop: _Proposal, *, expect_run: str, on_resume: bool) -> Verdict:
        """One dispatch for proposal and collection (§2.3)."""
        from agentrt_proxy.gate.approvals import approval_hash
        from agentrt_proxy.gate.model import SUMMARY_ABORTED_RESUME, SUMMARY_DENIED_RESUME

        pd, request = prop.decision, prop.request
        at = fmt(prop.at_ns)
        if pd.outcome == ALLOW or (prop.grant is not None and pd.outcome == REQUIRE_APPROVAL and approval_hash(
                pd.kind, pd.capability, pd.presentation, request.tree()) == prop.grant.hash):
            self._proposal = prop
            return Verdict(ALLOWED, request=request)
        if pd.outcome in (DENY, ABORT):
            template = {(DENY, False): SUMMARY_DENIED, (ABORT, False): SUMMARY_ABORTED,
                        (DENY, True): SUMMARY_DENIED_RESUME, (ABORT, True): SUMMARY_ABORTED_RESUME}
            obs = observe("policy_denied", {"tool": request.spec.name, "reason": pd.reason},
                          template[(pd.outcome, on_resume)].format(reason=pd.reason))
            self._fresh = None  # the run now has a finished step
            with self.store.write() as tx:
                if on_resume:
                    self.resume_running(tx, at, {"approval_id": prop.grant.id if prop.grant else ""})
                self._record_policy_row(tx, step, prop, expect=(DECIDING, AWAITING))
                fail_step(tx, step, obs, at, expect=(DECIDING, AWAITING))
                if pd.outcome == ABORT:
                    finish_run(tx, self.run_id, expect=RUNNING, owner=self.gate.owner, status=FAILED,
                               reason="policy_abort", detail=pd.reason, at=at)
            self.current = None
            if pd.outcome == ABORT:
                self._end()
                return Verdict(ENDED, observation=obs, run=self.store.get_run(self.run_id))
            return Verdict(DENIED, observation=obs)
        if pd.outcome == REQUIRE_APPROVAL:
            h = approval_hash(pd.kind, pd.capability, pd.presentation, request.tree())
            with self.store.write() as tx:
                approval = pause(tx, step, request, pd, h, prop.at_ns, self.limits, expect_run=expect_run,
                                 expect_step=(DECIDING, AWAITING),
                                 owner=self.gate.owner if expect_run == RUNNING else None,
                                 policy_id=self.gate.policy_id, spec_hash=prop.spec_hash, view=prop.view)
            self._end()
            return Verdict(PENDING, approval=approval, run=self.store.get_run(self.run_id))
        detail = DETAIL_UNKNOWN_OUTCOME.format(outcome=pd.outcome)
        return self._policy_error(step, detail, at)

    def _record_policy_row(self, tx: Tx, step: Step, prop: _Proposal, *, expect: Any, **extra: Any) -> None:
        tx.update_step(step.id, expect=expect, policy_json=go_json(prop.decision.tree()),
                       policy_id=self.gate.policy_id, **extra)
        record_policy(tx, step, prop.decision, fmt(prop.at_ns), policy_id=self.gate.policy_id,
                      spec_hash=self.gate.spec_row(prop.request.spec)[0], view=prop.view)

    def resume_running(self, tx: Tx, at: str, payload: dict[str, Any]) -> None:
        """WAITING → RUNNING under this gate's lease, with run.resumed."""
        self._fresh = None
        tx.update_run(self.run_id, expect=WAITING, status=RUNNING, lease_owner=self.gate.owner,
                      lease_expires_at=self.gate.lease_expiry())
        tx.append(self.run_id, "", at, "run.resumed", payload)

    # execute ------------------------------------------------------------------------
    def start_tool(self) -> None:
        """Commit (or, inside a caller's open ``store.write()``, join) the record that the
        allowed request's tool is starting: step.policy and step.tool_started, after the
        lease check (and, for a grant, its expiry check). ``execute`` then skips it. The
        caller must not call the tool before this write has committed."""
        self._require_open()
        prop = self._proposal
        if prop is None or self.current is None or self._started:
            raise RunStateError(ERR_NOT_ALLOWED.format(run_id=self.run_id))
        step = self.current
        self._guard(lambda: self._start_tool(step, prop))
        self._started = True

    async def execute(self, call_tool: CallTool, on_recorded: OnRecorded | None = None) -> Verdict:
        """Run exactly the allowed request once and record its outcome, even if the caller
        is cancelled meanwhile (the recording is shielded). ``on_recorded(observation)``
        runs inside the recording's transaction, after the gate's own writes: what it
        writes commits with the outcome or not at all (if it raises, nothing is recorded
        and ``execute`` raises)."""
        self._require_open()
        prop = self._proposal
        if prop is None or self.current is None:
            raise RunStateError(ERR_NOT_ALLOWED.format(run_id=self.run_id))
        step = self.current
        if not self._started:
            await anyio.to_thread.run_sync(self.start_tool)
        started = time.monotonic()
        try:
            outcome = await self._call_with_heartbeat(call_tool, prop.request)
        except anyio.get_cancelled_exc_class():
            obs = observe("interrupted", {"tool": prop.request.spec.name, "error": "cancelled",
                                          "failure": "cancelled"},
                          SUMMARY_CANCELLED.format(tool=prop.request.spec.name, error="cancelled"))
            with anyio.CancelScope(shield=True):
                await anyio.to_thread.run_sync(self._record, step, prop, obs, _ms(started), on_recorded)
            raise
        except Exception as exc:  # the caller's tool failed unexpectedly: a recorded failure
            name = prop.request.spec.name
            obs = observe("tool_error", {"tool": name, "error": f"panic: {exc}"}, SUMMARY_PANIC.format(tool=name))
        else:
            obs = observation_from_outcome(prop.request.spec.name, outcome)
        duration_ms = _ms(started)
        with anyio.CancelScope(shield=True):
            inline = self._record_inline(step, prop, obs, duration_ms, on_recorded)
            verdict: Verdict = inline if inline is not None else await anyio.to_thread.run_sync(
                self._record, step, prop, obs, duration_ms, on_recorded)
        return verdict

    def _record_inline(self, step: Step, prop: _Proposal, obs: Observation, duration_ms: int,
                       on_recorded: OnRecorded | None) -> Verdict | None:
        """``_record`` on the event loop when nothing makes it wait (``Store.nowait``; the
        reason is in ``calls.CallRules._decide_inline``), else None: nothing was written,
        record in a worker thread."""
        with self.store.nowait() as free:
            if not free:
                return None
            try:
                return self._record(step, prop, obs, duration_ms, on_recorded)
            except WouldBlock:
                return None

    def _start_tool(self, step: Step, prop: _Proposal) -> None:
        now_ns = self.gate.clock.now_ns()
        now = fmt(now_ns)
        grant = prop.grant
        if grant is not None and self.limits.grant_ttl and expired(grant.decided_at, now_ns, self.limits.grant_ttl):
            with self.store.write() as tx:
                expire_approval(tx, grant, now_ns)
            self._end()
            raise ApprovalExpired(f"agentrt: approval {grant.id} expired", grant.id)
        with self.store.write() as tx:
            if grant is not None:
                self.resume_running(tx, now, {"approval_id": grant.id})
            else:
                known = self._known_run(tx)
                self._check_lease(known if known is not None else tx.run(self.run_id))
            self._record_policy_row(tx, step, prop, expect=(DECIDING, AWAITING), status=EXECUTING,
                                    started_at=now, spec_hash=self.gate.spec_row(prop.request.spec)[0])
            payload: dict[str, Any] = {"tool": prop.request.spec.name, "args": prop.request.args}
            if grant is not None:
                payload["approval_id"] = grant.id
            tx.append(self.run_id, step.id, now, "step.tool_started", payload)

    async def _call_with_heartbeat(self, call_tool: CallTool, request: ToolRequest) -> outcomes.ToolOutcome:
        bound = request.spec.timeout / 1e9 + RECORD_GRACE_S
        renewals = _LeaseRenewals(self)
        outcome: outcomes.ToolOutcome
        try:
            with anyio.fail_after(bound):
                outcome = await call_tool(request)
        except TimeoutError:
            outcome = outcomes.NoAnswer("timeout", f"{request.spec.name}: no outcome within {bound:g}s")
        finally:
            await renewals.stop()
        return outcome

    def _record(self, step: Step, prop: _Proposal, obs: Observation, duration_ms: int,
                on_recorded: OnRecorded | None = None) -> Verdict:
        now = fmt(self.gate.clock.now_ns())
        name = prop.request.spec.name
        terminal_done = not obs.failure and prop.request.spec.terminal
        self._fresh = None
        with self.store.write() as tx:
            # The CAS (RUNNING under this lease) adds the time in place; the row is read only
            # when it fails, to tell a takeover from a run moved on under this lease.
            if not tx.add_active_ms(self.run_id, duration_ms, self.gate.owner):
                run = tx.run(self.run_id)
                if run.lease_owner != self.gate.owner:
                    self._end()  # someone took the run over: the step is theirs to settle
                    raise LeaseLost(ERR_LEASE_OTHER.format(run_id=self.run_id))
                raise RunStateError(MSG_RUN_STATE.format(run_id=self.run_id, expected=RUNNING))
            tx.update_step(step.id, expect=EXECUTING, status=STEP_FAILED_OR_DONE[obs.failure],
                           observation_json=observation_json(obs), observation_hash=obs.content_hash,
                           finished_at=now)
            finished: dict[str, Any] = {"tool": name, "duration_ms": duration_ms}
            if obs.failure:
                finished["error"] = obs.summary
            else:
                finished.update(summary=obs.summary, content_hash=obs.content_hash)
            tx.append(self.run_id, step.id, now, "step.tool_finished", finished)
            if obs.failure:
                tx.append(self.run_id, step.id, now, "step.failed",
                          {"detail": obs.summary, "observation": obs.kind, "content_hash": obs.content_hash})
            elif terminal_done:
                self.ended_run = finish_run(tx, self.run_id, expect=RUNNING, owner=self.gate.owner,
                                            status=COMPLETED, reason="goal_completed", detail="", at=now,
                                            result_json=go_json(obs.content))
            self.current = None  # the hook may open the run's next step (the proxy's closing decision)
            self._proposal = None
            self._started = False
            if on_recorded is not None:
                try:
                    on_recorded(obs)
                except BaseException:
                    # Nothing is recorded (the transaction rolls back): the step is still this
                    # session's, to release with close().
                    self.current, self._proposal, self._started = step, prop, True
                    self.ended_run = None
                    if self._over:
                        self._over = False
                        self.gate._active.add(self.run_id)
                    raise
        if terminal_done:
            self._end()
            return Verdict(ENDED, observation=obs, run=self.ended_run)  # the row as committed
        return Verdict(EXECUTED, observation=obs)

    # the proxy's closing decision, and closing -------------------------------------
    def fail(self, message: str, origin: str = "operator") -> Verdict:
        """Open a step and record a ``fail`` decision: the run ends FAILED (goal_failed)."""
        step = self.step()
        if step is None:
            return Verdict(ENDED, run=self.store.get_run(self.run_id))
        return self.propose(Decision(kind="fail", message=message, origin=origin))

    def close(self) -> None:
        """Release the lease (CAS on the owner) and end the session."""
        if not self._over:
            try:
                self.store.release_lease(self.run_id, self.gate.owner)
            finally:
                self._end()

    @property
    def lease_lost(self) -> bool:
        return self._lease_lost


STEP_FAILED_OR_DONE = {True: "failed", False: DONE}


class _LeaseRenewals:
    """Renew a session's lease every lease_ttl/3 while its tool runs.

    A timer on the event loop rather than a task per call: most calls end long before the
    first renewal is due, and then this costs a timer set and cancelled (a task group and
    a task cost ~0.1 ms per call). A due renewal runs in a worker thread on the store's
    lease connection, as its own task; ``stop`` waits for one in flight, so no renewal
    outlives the call."""

    def __init__(self, session: Session) -> None:
        self._session = session
        self._loop = asyncio.get_running_loop()
        self._period = session.gate.lease_ttl / 3 / 1e9
        self._task: asyncio.Task[None] | None = None
        self._stopped = False
        self._timer: asyncio.TimerHandle | None = self._loop.call_later(self._period, self._due)

    def _due(self) -> None:
        self._timer = None
        if not self._stopped:
            self._task = self._loop.create_task(self._renew())

    async def _renew(self) -> None:
        session = self._session
        try:
            ok = await anyio.to_thread.run_sync(
                session.store.renew_lease, session.run_id, session.gate.owner, session.gate.lease_expiry())
        except Exception:
            ok = True  # a store error: retried at the next tick
        if not ok:
            session._lease_lost = True
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


def _ms(started: float) -> int:
    return int((time.monotonic() - started) * 1000)


def _validation_error(d: Decision, boundary_error: str, spec: ToolSpec | None, args: Any) -> str:
    if not d.kind:
        return ERR_NO_KIND
    if d.origin not in ORIGINS:
        return ERR_UNKNOWN_ORIGIN.format(origin=d.origin)
    if d.kind in ("complete", "fail"):
        return boundary_error if boundary_error.startswith("result") else ""
    if d.kind != "tool_call":
        return ERR_UNKNOWN_KIND.format(kind=d.kind)
    if not d.tool:
        return ERR_NO_TOOL
    if spec is None:
        return ERR_UNKNOWN_TOOL.format(name=d.tool)
    if boundary_error:
        return boundary_error
    mismatch = schema_error(spec.input_schema, args if args is not None else {})
    return ERR_ARGS_SCHEMA.format(error=mismatch) if mismatch else ""


def _obs(step: Step) -> dict[str, Any]:
    import json

    try:
        v = json.loads(step.observation_json) if step.observation_json else {}
    except ValueError:
        return {}
    return v if isinstance(v, dict) else {}


def _trailing_failures(steps: list[Step]) -> int:
    n = 0
    for s in reversed(steps):
        kind = _obs(s).get("kind")
        if not kind or kind == "tool_result":
            break
        n += 1
    return n


def _loop(steps: list[Step], threshold: int) -> dict[str, Any] | None:
    """Trailing tool calls with the same tool, arguments and observation (§5.4)."""
    from agentrt_proxy import canonical

    sig = None
    n = 0
    for s in reversed(steps):
        try:
            d = canonical.parse_strict(s.decision_json) if s.decision_json else {}
        except canonical.JSONBoundaryError:
            break
        obs = _obs(s)
        if d.get("kind") != "tool_call" or obs.get("kind") == "invalid_decision" or "invalid_args" in d:
            break
        args = d.get("args", {})
        this = (d.get("tool", ""), canonical.sha256_hex(canonical.canonical_bytes(args)), obs.get("content_hash", ""))
        if sig is None:
            sig = this
        elif this != sig:
            break
        n += 1
    if sig is None or n < threshold:
        return None
    return {"repeats": n, "tool": sig[0], "args_hash": sig[1], "observation_hash": sig[2]}


__all__ = ["CallTool", "Clock", "Gate", "NotFound", "Session", "SessionClosed", "WallClock"]
