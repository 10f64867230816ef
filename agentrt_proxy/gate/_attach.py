"""Attach: collecting a grant (runtime-core §3.6) and taking over a run (runtime-core §5.3, §3.7)."""

from __future__ import annotations

from typing import Protocol, TypeVar

from agentrt_proxy import canonical
from agentrt_proxy.canonical import durations
from agentrt_proxy.canonical.clock import Clock
from agentrt_proxy.canonical.encoder import go_json
from agentrt_proxy.config import READ_ONLY
from agentrt_proxy.gate._arguments import args_error
from agentrt_proxy.gate._model import (
    DENIED,
    ENDED,
    OPEN,
    PENDING,
    RECONCILE_COMPLETED,
    RECONCILE_CONTINUE,
    RECONCILE_WAITING,
    REQUIRE_APPROVAL,
    Limits,
    Policy,
    PolicyDecision,
    Proposal,
    Reconcile,
    Reconciliation,
    RunSession,
    RunView,
    ToolRequest,
    Verdict,
    expired,
    fmt,
    invalid_decision,
    observation_json,
    observe,
)
from agentrt_proxy.gate._transitions import expire_approval, fail_step, finish_run, pause
from agentrt_proxy.gate.approvals import approval_hash, stored_hash
from agentrt_proxy.gate.attempts import INTERRUPTED_SIDE_EFFECT, KIND_INTERRUPTED, last_interrupted_while_executing
from agentrt_proxy.store import (
    APPROVAL_PENDING,
    APPROVED,
    AWAITING,
    COMPLETED,
    DECIDING,
    END_GOAL_COMPLETED,
    END_RECONCILE_CONFLICT,
    EXECUTING,
    FAILED,
    RESUMABLE,
    RUNNING,
    STEP_INTERRUPTED,
    WAITING,
    Approval,
    ApprovalHashError,
    Run,
    RunLeased,
    RunStateError,
    Step,
    Store,
    Tx,
)
from agentrt_proxy.text.record_text import (
    DETAIL_CONFLICT,
    DETAIL_SCHEMA,
    DETAIL_TOOL_UNREGISTERED,
    DETAIL_UNKNOWN_RECONCILIATION,
    ERR_APPROVAL_HASH,
    ERR_NO_AWAITING,
    ERR_NOT_APPROVED,
    ERR_TERMINAL,
    ERR_TOOL_GONE,
    REASON_INTERRUPTED,
    SUMMARY_INTERRUPTED,
)
from agentrt_proxy.upstream import ToolSpec
from agentrt_proxy.upstream.validation import schema_error


class AttachSession(RunSession, Protocol):
    """What attaching needs of a session it opened (``session.Session`` is one)."""

    current: Step | None

    def collecting(self, step: Step) -> None: ...

    def dispatch(self, step: Step, prop: Proposal, *, expect_run: str, on_resume: bool) -> Verdict: ...

    def policy_error(self, step: Step, error: str, now: str) -> Verdict: ...


S = TypeVar("S", bound=AttachSession)
S_co = TypeVar("S_co", bound=AttachSession, covariant=True)


class AttachGate(Protocol[S_co]):
    """What attaching needs of the gate (``gate.Gate`` is an ``AttachGate[Session]``): named
    here, not imported, since the gate imports this module; ``open_session`` says which
    session type an attach hands back."""

    @property
    def store(self) -> Store: ...

    @property
    def owner(self) -> str: ...

    @property
    def clock(self) -> Clock: ...

    @property
    def wall(self) -> Clock: ...

    @property
    def policy(self) -> Policy: ...

    @property
    def reconcile(self) -> Reconcile | None: ...

    def is_active(self, run_id: str) -> bool: ...

    def lease_expiry(self) -> str: ...

    def open_session(self, run_id: str, limits: Limits) -> S_co: ...

    def spec(self, name: str) -> ToolSpec | None: ...

    def with_context(self, view: RunView, request: ToolRequest) -> RunView: ...


def attach(gate: AttachGate[S], run_id: str) -> tuple[S | None, Verdict]:
    run = gate.store.get_run(run_id)
    if run.status == WAITING:
        return _collect(gate, run)
    if run.status in RESUMABLE:
        return _take_over(gate, run)
    raise RunStateError(ERR_TERMINAL.format(run_id=run_id, status=run.status))


# --------------------------------------------------------------------------- collection


def _collect(gate: AttachGate[S], run: Run) -> tuple[S | None, Verdict]:
    limits = Limits.parse(run.limits_json)
    now_ns = gate.clock.now_ns()
    step = next((s for s in reversed(gate.store.steps_of(run.id)) if s.status == AWAITING), None)
    if step is None:
        raise RunStateError(ERR_NO_AWAITING.format(run_id=run.id))
    grant = gate.store.latest_approval(run.id, step.id)  # an older grant is spent
    if grant is None:
        raise RunStateError(ERR_NO_AWAITING.format(run_id=run.id))
    if grant.status == APPROVAL_PENDING:
        if expired(grant.expires_at, now_ns):
            return None, _expire(gate, grant, now_ns)
        return None, Verdict(PENDING, approval=grant, run=run)
    if grant.status != APPROVED:
        raise RunStateError(ERR_NOT_APPROVED.format(id=grant.id, run_id=run.id, status=grant.status))
    if stored_hash(grant) != grant.hash:
        raise ApprovalHashError(ERR_APPROVAL_HASH.format(id=grant.id))
    recorded = canonical.parse_strict(grant.request_json)
    spec = gate.spec(recorded.get("spec", {}).get("name", ""))
    if spec is None:
        raise RunStateError(ERR_TOOL_GONE.format(name=recorded.get("spec", {}).get("name", ""), run_id=run.id))
    if limits.grant_ttl and expired(grant.decided_at, now_ns, limits.grant_ttl):
        return None, _expire(gate, grant, now_ns)
    request = ToolRequest(run.id, step.id, spec, recorded.get("args", {}))
    session = gate.open_session(run.id, limits)
    session.collecting(step)
    mismatch = args_error(spec, request.args)
    if mismatch:
        return session, _invalid_on_resume(session, step, grant.id, mismatch, now_ns)
    view = gate.with_context(RunView(run, [s for s in gate.store.steps_of(run.id) if s.idx < step.idx],
                                     gate.store.approvals_of(run.id), step), request)
    try:
        pd = gate.policy.evaluate(request, view)
    except Exception as exc:  # a policy error ends the run, never a traceback
        return session, session.policy_error(step, str(exc), fmt(now_ns))
    prop = Proposal(request, pd, view, now_ns, spec.spec_hash(), grant)
    verdict = session.dispatch(step, prop, expect_run=WAITING, on_resume=True)
    return (session if verdict.outcome in ("allowed", DENIED) else None), verdict


def _expire(gate: AttachGate[S], grant: Approval, now_ns: int) -> Verdict:
    with gate.store.write() as tx:
        expire_approval(tx, grant, now_ns)
    return Verdict(ENDED, approval=gate.store.get_approval(grant.id), run=gate.store.get_run(grant.run_id))


def _invalid_on_resume(session: S, step: Step, approval_id: str, error: str, now_ns: int) -> Verdict:
    obs = invalid_decision(error, on_resume=True)
    at = fmt(now_ns)
    with session.store.write() as tx:
        session.resume_running(tx, at, {"approval_id": approval_id})
        fail_step(tx, step, obs, at, expect=AWAITING)
    session.current = None
    return Verdict(DENIED, observation=obs)


# --------------------------------------------------------------------------- takeover


def _take_over(gate: AttachGate[S], run: Run) -> tuple[S | None, Verdict]:
    wall = gate.wall.now_ns()
    if gate.is_active(run.id):
        raise RunLeased(run.id, gate.owner, run.lease_expires_at)
    if _live_lease_of_another(gate, run, wall):
        raise RunLeased(run.id, run.lease_owner, run.lease_expires_at)
    now_ns = gate.clock.now_ns()
    at = fmt(now_ns)
    with gate.store.write() as tx:
        current = tx.run(run.id)
        if current.status not in RESUMABLE or _live_lease_of_another(gate, current, wall):
            raise RunLeased(run.id, current.lease_owner, current.lease_expires_at)
        tx.update_run(run.id, expect=current.status, status=RUNNING, lease_owner=gate.owner,
                      lease_expires_at=gate.lease_expiry())
        if current.lease_owner:
            tx.append(run.id, "", at, "lease.taken_over", {
                "previous_owner": current.lease_owner, "previous_expires_at": current.lease_expires_at,
                "owner": gate.owner})
        _mark_interrupted(tx, run.id, at)
    session = gate.open_session(run.id, Limits.parse(run.limits_json))
    return _reconcile(gate, session, now_ns)


def _live_lease_of_another(gate: AttachGate[S], run: Run, wall: int) -> bool:
    if not run.lease_owner or run.lease_owner == gate.owner or not run.lease_expires_at:
        return False
    return durations.parse_time(run.lease_expires_at) > wall


def _mark_interrupted(tx: Tx, run_id: str, at: str) -> None:
    for step in tx.steps(run_id):
        if step.status not in (DECIDING, EXECUTING):
            continue
        content = {"previous_status": step.status}
        obs = observe(KIND_INTERRUPTED, content, SUMMARY_INTERRUPTED.format(status=step.status))
        tx.update_step(step.id, expect=step.status, status=STEP_INTERRUPTED, observation_json=observation_json(obs),
                       observation_hash=obs.content_hash, finished_at=at)
        tx.append(run_id, step.id, at, "step.interrupted", content)


def _reconcile(gate: AttachGate[S], session: S, now_ns: int) -> tuple[S | None, Verdict]:
    run = gate.store.get_run(session.run_id)
    steps = gate.store.steps_of(session.run_id)
    rec = gate.reconcile(run, steps) if gate.reconcile is not None else _default_reconcile(gate, steps)
    at = fmt(now_ns)
    if rec.action == RECONCILE_CONTINUE:
        with gate.store.write() as tx:
            tx.append(run.id, "", at, "run.resumed", {"after": "interruption"})
        return session, Verdict(OPEN)
    if rec.action == RECONCILE_COMPLETED:
        with gate.store.write() as tx:
            finish_run(tx, run.id, expect=RUNNING, owner=gate.owner, status=COMPLETED, reason=END_GOAL_COMPLETED,
                       detail=rec.detail, at=at, result_json=go_json(rec.result) if rec.result is not None else None)
        session.end()
        return None, Verdict(ENDED, run=gate.store.get_run(run.id))
    if rec.action == RECONCILE_WAITING and rec.decision is not None:
        return _pause_interrupted(gate, session, rec, steps, now_ns)
    detail = rec.detail or DETAIL_UNKNOWN_RECONCILIATION.format(action=repr(rec.action))
    return None, _conflict(gate, session, detail, steps, rec, at)


def _default_reconcile(gate: AttachGate[S], steps: list[Step]) -> Reconciliation:
    """Without a hook: a non-read-only tool cut off while executing waits for an operator."""
    step = last_interrupted_while_executing(steps)
    if step is None:
        return Reconciliation(RECONCILE_CONTINUE)
    decision = canonical.parse_strict(step.decision_json or "{}")
    spec = gate.spec(decision.get("tool", ""))
    if spec is not None and spec.side_effect == READ_ONLY:
        return Reconciliation(RECONCILE_CONTINUE)
    args = decision.get("args", {})
    cap = {"args": args, "tool": decision.get("tool", "")}
    pd = PolicyDecision(REQUIRE_APPROVAL, REASON_INTERRUPTED, INTERRUPTED_SIDE_EFFECT,
                        cap, {**cap, "side_effect": spec.side_effect if spec else ""})
    return Reconciliation(RECONCILE_WAITING, step.id, pd)


def _pause_interrupted(gate: AttachGate[S], session: S, rec: Reconciliation, steps: list[Step],
                       now_ns: int) -> tuple[S | None, Verdict]:
    step = next(s for s in steps if s.id == rec.step_id)
    decision = canonical.parse_strict(step.decision_json or "{}")
    spec = gate.spec(decision.get("tool", ""))
    at = fmt(now_ns)
    if spec is None:
        return None, _conflict(gate, session, rec.detail or DETAIL_TOOL_UNREGISTERED, steps, rec, at)
    args = decision.get("args", {})
    mismatch = schema_error(spec.input_schema, args)
    if mismatch:
        return None, _conflict(gate, session, DETAIL_SCHEMA.format(error=mismatch), steps, rec, at)
    request = ToolRequest(session.run_id, step.id, spec, args)
    pd = rec.decision
    assert pd is not None
    h = approval_hash(pd.kind, pd.capability, pd.presentation, request.tree())
    with gate.store.write() as tx:
        # A pause written by a reconciliation records no view and no policy identity.
        approval = pause(tx, step, request, pd, h, now_ns, session.limits, expect_run=RUNNING,
                         expect_step=STEP_INTERRUPTED, owner=gate.owner, policy_id="", spec_hash=spec.spec_hash(),
                         view=None)
    session.end()
    return None, Verdict(PENDING, approval=approval, run=gate.store.get_run(session.run_id))


def _conflict(gate: AttachGate[S], session: S, detail: str, steps: list[Step], rec: Reconciliation,
              at: str) -> Verdict:
    step = next((s for s in steps if s.id == rec.step_id), None)
    n = step.idx if step is not None else 0
    with gate.store.write() as tx:
        finish_run(tx, session.run_id, expect=RUNNING, owner=gate.owner, status=FAILED, reason=END_RECONCILE_CONFLICT,
                   detail=DETAIL_CONFLICT.format(n=n, detail=detail), at=at)
    session.end()
    return Verdict(ENDED, run=gate.store.get_run(session.run_id))
