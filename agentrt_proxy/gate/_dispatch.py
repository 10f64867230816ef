"""What the policy's decision on a step does, for a proposal and a collection alike
(runtime-core §2.3, §3.6): allow it (the session keeps it for ``execute``), refuse it (deny:
the step fails; abort: the run ends too), pause it on an approval, or, for an outcome the
runtime does not know or a policy that raised, end the run (internal_error).

Each function works on a session through ``DispatchSession``: the members it needs, which
``session.Session`` has. Naming them here, not the class, keeps this module below the session.
"""

from __future__ import annotations

from typing import Protocol

from agentrt_proxy.gate._model import (
    ABORT,
    ALLOW,
    ALLOWED,
    DENIED,
    DENY,
    ENDED,
    PENDING,
    REQUIRE_APPROVAL,
    Proposal,
    RunSession,
    Verdict,
    fmt,
    invalid_decision,
    observe,
)
from agentrt_proxy.gate._transitions import fail_step, finish_run, pause, record_policy_row
from agentrt_proxy.gate.approvals import approval_hash
from agentrt_proxy.store import (
    AWAITING,
    DECIDING,
    END_INTERNAL_ERROR,
    END_POLICY_ABORT,
    FAILED,
    RUNNING,
    WAITING,
    Step,
)
from agentrt_proxy.text.record_text import (
    DETAIL_POLICY_ERROR,
    DETAIL_POLICY_RUN,
    DETAIL_UNKNOWN_OUTCOME,
    SUMMARY_ABORTED,
    SUMMARY_ABORTED_RESUME,
    SUMMARY_DENIED,
    SUMMARY_DENIED_RESUME,
)
from agentrt_proxy.upstream import ToolSpec


class DispatchGate(Protocol):
    """What dispatching needs of the session's gate."""

    @property
    def owner(self) -> str: ...

    @property
    def policy_id(self) -> str: ...

    def spec_row(self, spec: ToolSpec) -> tuple[str, str]: ...


class DispatchSession(RunSession, Protocol):
    """What dispatching a decision needs of the session it acts on."""

    current: Step | None

    @property
    def gate(self) -> DispatchGate: ...

    def allow(self, step: Step, prop: Proposal) -> None: ...

    def forget_begun(self) -> None: ...


# the observation's summary for a policy's deny or abort, by (outcome, at collection)
_REFUSED = {
    (DENY, False): SUMMARY_DENIED,
    (ABORT, False): SUMMARY_ABORTED,
    (DENY, True): SUMMARY_DENIED_RESUME,
    (ABORT, True): SUMMARY_ABORTED_RESUME,
}


def dispatch_decision(
    session: DispatchSession, step: Step, prop: Proposal, *, expect_run: str, on_resume: bool
) -> Verdict:
    pd, request = prop.decision, prop.request
    at = fmt(prop.at_ns)
    if pd.outcome == ALLOW or (
        prop.grant is not None
        and pd.outcome == REQUIRE_APPROVAL
        and approval_hash(pd.kind, pd.capability, pd.presentation, request.tree()) == prop.grant.hash
    ):
        session.allow(step, prop)
        return Verdict(ALLOWED, request=request)
    if pd.outcome in (DENY, ABORT):
        return _refuse(session, step, prop, on_resume, at)
    if pd.outcome == REQUIRE_APPROVAL:
        gate = session.gate
        h = approval_hash(pd.kind, pd.capability, pd.presentation, request.tree())
        with session.store.write() as tx:
            approval = pause(
                tx,
                step,
                request,
                pd,
                h,
                prop.at_ns,
                session.limits,
                expect_run=expect_run,
                expect_step=(DECIDING, AWAITING),
                owner=gate.owner if expect_run == RUNNING else None,
                policy_id=gate.policy_id,
                spec_hash=prop.spec_hash,
                view=prop.view,
            )
        session.end()
        return Verdict(PENDING, approval=approval, run=session.store.get_run(session.run_id))
    return end_on_policy_error(session, step, DETAIL_UNKNOWN_OUTCOME.format(outcome=pd.outcome), at)


def _refuse(session: DispatchSession, step: Step, prop: Proposal, on_resume: bool, at: str) -> Verdict:
    pd, gate = prop.decision, session.gate
    content = {"tool": prop.request.spec.name, "reason": pd.reason}
    if pd.kind:  # a guard's refusal says which (over_budget: the model hears OVER_BUDGET)
        content["kind"] = pd.kind
    obs = observe("policy_denied", content, _REFUSED[(pd.outcome, on_resume)].format(reason=pd.reason))
    session.forget_begun()  # the run now has a finished step
    with session.store.write() as tx:
        if on_resume:
            session.resume_running(tx, at, {"approval_id": prop.grant.id if prop.grant else ""})
        record_policy_row(
            tx,
            step,
            prop,
            policy_id=gate.policy_id,
            spec_hash=gate.spec_row(prop.request.spec)[0],
            expect=(DECIDING, AWAITING),
        )
        fail_step(tx, step, obs, at, expect=(DECIDING, AWAITING))
        if pd.outcome == ABORT:
            finish_run(
                tx,
                session.run_id,
                expect=RUNNING,
                owner=gate.owner,
                status=FAILED,
                reason=END_POLICY_ABORT,
                detail=pd.reason,
                at=at,
            )
    session.current = None
    if pd.outcome == ABORT:
        session.end()
        return Verdict(ENDED, observation=obs, run=session.store.get_run(session.run_id))
    return Verdict(DENIED, observation=obs)


def end_on_policy_error(session: DispatchSession, step: Step, error: str, now: str) -> Verdict:
    """The policy raised (or answered what the runtime does not know): the step fails and
    the run ends FAILED (internal_error)."""
    obs = invalid_decision(DETAIL_POLICY_ERROR.format(error=error))
    with session.store.write() as tx:
        fail_step(tx, step, obs, now, expect=(DECIDING, AWAITING), detail=DETAIL_POLICY_ERROR.format(error=error))
        finish_run(
            tx,
            session.run_id,
            expect=(RUNNING, WAITING),
            status=FAILED,
            reason=END_INTERNAL_ERROR,
            detail=DETAIL_POLICY_RUN.format(error=error),
            at=now,
        )
    session.end()
    return Verdict(ENDED, run=session.store.get_run(session.run_id))
