"""A session: one run under a gate's lease, one step at a time (runtime-core §1.13).

A session has at most one open step: ``step()`` → ``propose(decision)`` → ``execute(call_tool)``
(async), or ``fail(message)`` for the proxy's closing decision. All SQLite work is synchronous;
``execute`` alone awaits (the caller's upstream call and the lease heartbeat), and the record
that a tool is starting commits before the tool is called. The writes themselves are
``_transitions.py``'s; the limits ``_limits.py``'s; the lease ``_leases.py``'s; running the
allowed request ``_execution.py``'s.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any, Protocol

from agentrt_proxy.canonical.clock import Clock
from agentrt_proxy.canonical.encoder import go_json
from agentrt_proxy.gate._dispatch import dispatch_decision, end_on_policy_error
from agentrt_proxy.gate._execution import CallTool, Execution, ExecutionGate, OnRecorded
from agentrt_proxy.gate._leases import check_lease
from agentrt_proxy.gate._limits import limit_reached
from agentrt_proxy.gate._model import (
    DENIED,
    ENDED,
    Decision,
    Limits,
    Policy,
    PreparedDecision,
    Proposal,
    RunView,
    ToolRequest,
    Verdict,
    fmt,
    invalid_decision,
)
from agentrt_proxy.gate._transitions import fail_step, finish_run, resume_run
from agentrt_proxy.store import (
    COMPLETED,
    DECIDING,
    DONE,
    END_GOAL_COMPLETED,
    END_GOAL_FAILED,
    FAILED,
    RUNNING,
    Approval,
    LeaseLost,
    Run,
    RunStateError,
    Step,
    Store,
    StoreError,
    Tx,
    new_id,
)
from agentrt_proxy.text.record_text import (
    ERR_NO_STEP,
    ERR_NOT_ALLOWED,
    ERR_OPEN_STEP,
    ERR_SESSION_CLOSED,
)


class SessionGate(ExecutionGate, Protocol):
    """What a session needs of the gate that opened it (``gate.Gate`` is one): named here, not
    imported, since the gate imports this module to open sessions."""

    @property
    def wall(self) -> Clock: ...

    @property
    def policy(self) -> Policy: ...

    def prepare(self, decision: Decision) -> PreparedDecision: ...

    def with_context(self, view: RunView, request: ToolRequest) -> RunView: ...

    def session_ended(self, run_id: str) -> None: ...

    def session_resumed(self, run_id: str) -> None: ...

class SessionEnded(StoreError):
    """The session has ended (its run paused or finished, or a failed call ended it): attach
    again for a new one. (Named SessionClosed before, which the wire's ``mcp.SessionClosed``
    also is.) A StoreError, as it was: a caller that answers a store refusal answers this too."""


class Session:
    """One run under this gate's lease. Calls are serialised by the caller."""

    def __init__(self, gate: SessionGate, run_id: str, limits: Limits) -> None:
        self.gate, self.run_id, self.limits = gate, run_id, limits
        self.current: Step | None = None
        self._execution: Execution | None = None  # the open step's allowed request
        self._decided = False
        self._over = False
        self._lease_lost = False
        # (transaction, run row) while the transaction that began the run is open and the
        # session has written nothing else to it than its first step's claim, decision and
        # start: the run row is this Run, its only step is ``current`` (if any), it has no
        # approvals. Valid only inside that same transaction (``_known_run``).
        self._fresh: tuple[Tx, Run] | None = None
        # The run row as the recording of a terminal tool's result finished it (set inside
        # that transaction, before ``on_recorded``); None otherwise.
        self.ended_run: Run | None = None
        # The grant a request that reached no server left standing (set inside the recording's
        # transaction, before ``on_recorded``: the run waits for it again); None otherwise.
        self.standing: Approval | None = None

    # the session's life -------------------------------------------------------------
    @property
    def store(self) -> Store:
        return self.gate.store

    @property
    def lease_lost(self) -> bool:
        return self._lease_lost

    def began(self, tx: Tx, run: Run) -> None:
        """``tx`` (still open) began the run as ``run``: later writes in it need not read it."""
        self._fresh = (tx, run)

    def collecting(self, step: Step) -> None:
        """Collection opened this session on ``step``, decided already (awaiting approval)."""
        self.current = step
        self._decided = True

    def end(self) -> None:
        self._fresh = None
        self._over = True
        self.current = None
        self._execution = None
        self.gate.session_ended(self.run_id)


    def close(self) -> None:
        """Release the lease (CAS on the owner) and end the session."""
        if not self._over:
            try:
                self.store.release_lease(self.run_id, self.gate.owner)
            finally:
                self.end()

    def _require_open(self) -> None:
        if self._over:
            raise SessionEnded(ERR_SESSION_CLOSED)

    def _known_run(self, tx: Tx | None) -> Run | None:
        """The run row as this session wrote it in ``tx``, when ``tx`` is the open
        transaction that began the run (nothing else can have written it since); else None."""
        fresh = self._fresh
        return fresh[1] if fresh is not None and tx is not None and fresh[0] is tx else None

    def _guard(self, fn: Callable[[], Any]) -> Any:
        """A failed call ends the session (as the runtime's ErrSessionClosed after an error)."""
        try:
            return fn()
        except (LeaseLost, RunStateError):
            self.end()
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
                self.end()
                return None
            check_lease(run, self.gate.owner, self.gate.wall.now_ns())
            # A run begun in this transaction has no steps yet (current is None here).
            steps = [] if known is not None else tx.steps(self.run_id)
            if limit_reached(tx, run, steps, self.limits, owner=self.gate.owner, at=now):
                self.end()
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
        self._execution = None
        return self.current

    # propose ------------------------------------------------------------------------
    def propose(self, decision: Decision | PreparedDecision) -> Verdict:
        """Propose ``decision`` for the open step; a ``PreparedDecision`` (``Gate.prepare``)
        was parsed and checked already, outside the caller's transaction."""
        self._require_open()
        if self.current is None or self._decided:
            raise RunStateError(ERR_NO_STEP.format(run_id=self.run_id))
        prepared = decision if isinstance(decision, PreparedDecision) else self.gate.prepare(decision)
        return self._guard(lambda: self._propose(prepared))

    def _propose(self, prepared: PreparedDecision) -> Verdict:
        step = self.current
        assert step is not None
        now_ns = self.gate.clock.now_ns()
        now = fmt(now_ns)
        decision, rec, spec = prepared.decision, prepared.recorded, prepared.spec
        spec_hash, spec_json = self.gate.spec_row(spec) if spec is not None else ("", "")
        with self.store.write() as tx:
            self.check_lease(tx)
            tx.update_step(step.id, expect=DECIDING, decision_json=prepared.decision_json, spec_hash=spec_hash)
            if spec is not None:
                tx.put_spec(spec_hash, spec_json)
            tx.append(self.run_id, step.id, now, "step.decided", rec.tree)
        self._decided = True
        error = prepared.error
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
                       reason=END_GOAL_COMPLETED if complete else END_GOAL_FAILED,
                       detail=decision.reason if complete else decision.message, at=now,
                       result_json=go_json(result) if complete and result is not None else None)
        self.end()
        return Verdict(ENDED, run=self.store.get_run(self.run_id))

    def _apply_policy(self, step: Step, request: ToolRequest, now_ns: int, spec_hash: str) -> Verdict:
        view = self.gate.with_context(self._view(step), request)
        now = fmt(now_ns)
        try:
            pd = self.gate.policy.evaluate(request, view)
        except Exception as exc:  # a policy error ends the run, never a traceback
            return self.policy_error(step, str(exc), now)
        prop = Proposal(request, pd, view, now_ns, spec_hash)
        return self.dispatch(step, prop, expect_run=RUNNING, on_resume=False)

    def policy_error(self, step: Step, error: str, now: str) -> Verdict:
        """The policy raised: the step fails and the run ends FAILED (internal_error)."""
        return end_on_policy_error(self, step, error, now)

    def _view(self, step: Step) -> RunView:
        known = self._known_run(self.store.open_tx())
        if known is not None:
            # Begun in this still open transaction: this step is its only one, no approvals.
            return RunView(copy.copy(known), [], [], step)
        run = self.store.get_run(self.run_id)
        steps = [s for s in self.store.steps_of(self.run_id) if s.idx < step.idx]
        return RunView(run, steps, self.store.approvals_of(self.run_id), step)

    def dispatch(self, step: Step, prop: Proposal, *, expect_run: str, on_resume: bool) -> Verdict:
        """One dispatch for proposal and collection (runtime-core §2.3, ``_dispatch.py``)."""
        return dispatch_decision(self, step, prop, expect_run=expect_run, on_resume=on_resume)

    def allow(self, step: Step, prop: Proposal) -> None:
        """The policy allowed ``prop``: it is what ``start_tool`` and ``execute`` run."""
        self._execution = Execution(self, step, prop)

    def resume_running(self, tx: Tx, at: str, payload: dict[str, Any]) -> None:
        """WAITING → RUNNING under this gate's lease, with run.resumed."""
        self._fresh = None
        resume_run(tx, self.run_id, owner=self.gate.owner, lease_expires_at=self.gate.lease_expiry(), at=at,
                   payload=payload)

    # execute ------------------------------------------------------------------------
    def start_tool(self) -> None:
        """Commit (or, inside a caller's open ``store.write()``, join) the record that the
        allowed request's tool is starting: step.policy and step.tool_started, after the
        lease check (and, for a grant, its expiry check). ``execute`` then skips it. The
        caller must not call the tool before this write has committed."""
        self._require_open()
        execution = self._execution
        if execution is None or self.current is None or execution.started:
            raise RunStateError(ERR_NOT_ALLOWED.format(run_id=self.run_id))
        self._guard(execution.start)
        execution.started = True

    async def execute(self, call_tool: CallTool, on_recorded: OnRecorded | None = None) -> Verdict:
        """Run exactly the allowed request once and record its outcome, even if the caller
        is cancelled meanwhile (the recording is shielded). ``on_recorded(observation)``
        runs inside the recording's transaction, after the gate's own writes: what it
        writes commits with the outcome or not at all (if it raises, nothing is recorded
        and ``execute`` raises)."""
        self._require_open()
        execution = self._execution
        if execution is None or self.current is None:
            raise RunStateError(ERR_NOT_ALLOWED.format(run_id=self.run_id))
        return await execution.run(call_tool, on_recorded)


    # what an Execution tells its session -------------------------------------------
    def check_lease(self, tx: Tx) -> None:
        """This gate holds the run's lease, unexpired by the wall clock (``LeaseLost``)."""
        known = self._known_run(tx)
        check_lease(known if known is not None else tx.run(self.run_id), self.gate.owner, self.gate.wall.now_ns())

    def forget_begun(self) -> None:
        """The run row is about to change beyond what ``began`` knows."""
        self._fresh = None

    def mark_lease_lost(self) -> None:
        self._lease_lost = True

    def step_recorded(self, ended_run: Run | None, standing: Approval | None = None) -> None:
        """The step's outcome is written (in the open transaction); ``ended_run``, the run
        row a terminal tool's success finished, when it did; ``standing``, the grant a request
        that reached no server left standing, when it did."""
        self.current = None
        self._execution = None
        if ended_run is not None:
            self.ended_run = ended_run
        self.standing = standing

    def step_restored(self, execution: Execution) -> None:
        """The transaction recording ``execution``'s outcome rolls back: the step is this
        session's again, to release with close()."""
        self.current, self._execution = execution.step, execution
        execution.started = True
        self.ended_run = None
        self.standing = None
        if self._over:
            self._over = False
            self.gate.session_resumed(self.run_id)

    # the proxy's closing decision ---------------------------------------------------
    def fail(self, message: str, origin: str = "operator") -> Verdict:
        """Open a step and record a ``fail`` decision: the run ends FAILED (goal_failed)."""
        step = self.step()
        if step is None:
            return Verdict(ENDED, run=self.store.get_run(self.run_id))
        return self.propose(Decision(kind="fail", message=message, origin=origin))
