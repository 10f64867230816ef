"""The writes that move a run, its steps and its approvals, each inside the caller's open
transaction (runtime-core §1.5, §1.6, §1.10, §3.2, §3.5).

Every status change is a ``Tx`` compare-and-set, checked against the store's state table
(``store/_states.py``) before it runs. The session, collection, takeover and the operator's
decisions compose these; each writes its rows and events and nothing else.
"""

from __future__ import annotations

from typing import Any

from agentrt_proxy.canonical.encoder import Raw, go_json
from agentrt_proxy.gate._model import (
    Limits,
    Observation,
    PolicyDecision,
    Proposal,
    RunView,
    ToolRequest,
    fmt,
    observation_json,
)
from agentrt_proxy.store import (
    APPROVAL_PENDING,
    APPROVAL_STANDS,
    AWAITING,
    CANCELLED,
    COMPLETED,
    DONE,
    END_APPROVAL_EXPIRED,
    END_GOAL_COMPLETED,
    EXECUTING,
    EXPIRED,
    MSG_RUN_STATE,
    RUNNING,
    STEP_FAILED,
    WAITING,
    Approval,
    LeaseLost,
    NotPending,
    Run,
    RunStateError,
    Step,
    Tx,
    new_id,
)
from agentrt_proxy.text.record_text import DETAIL_EXPIRED, ERR_DECIDED_MEANWHILE, ERR_LEASE_OTHER


def finish_run(tx: Tx, run_id: str, *, expect: str | tuple[str, ...], status: str, reason: str, detail: str,
               at: str, owner: str | None = None, result_json: str | None = None, by: str | None = None) -> Run:
    """Move a run to a terminal status, clear its lease, and write run.finished; the row as
    the update left it."""
    values: dict[str, Any] = {
        "status": status, "reason": reason, "reason_detail": detail, "finished_at": at,
        "lease_owner": "", "lease_expires_at": "",
    }
    if result_json is not None:
        values["result_json"] = result_json
    run = tx.update_run_returning(run_id, expect=expect, owner=owner, **values)
    record_finished(tx, run, at, by)
    return run


def record_finished(tx: Tx, run: Run, at: str, by: str | None = None) -> None:
    """run.finished for ``run``, as the update that ended it left the row."""
    payload: dict[str, Any] = {"status": run.status, "reason": run.reason, "detail": run.reason_detail,
                               "steps": run.step_count}
    if by is not None:
        payload["by"] = by
    tx.append(run.id, "", at, "run.finished", payload)


def resume_run(tx: Tx, run_id: str, *, owner: str, lease_expires_at: str, at: str, payload: dict[str, Any]) -> None:
    """WAITING → RUNNING under ``owner``'s lease, with run.resumed."""
    tx.update_run(run_id, expect=WAITING, status=RUNNING, lease_owner=owner, lease_expires_at=lease_expires_at)
    tx.append(run_id, "", at, "run.resumed", payload)


def fail_step(tx: Tx, step: Step, obs: Observation, at: str, *, expect: str | tuple[str, ...],
              detail: str | None = None) -> None:
    tx.update_step(step.id, expect=expect, status=STEP_FAILED, observation_json=observation_json(obs),
                   observation_hash=obs.content_hash, finished_at=at)
    tx.append(step.run_id, step.id, at, "step.failed",
              {"detail": obs.summary if detail is None else detail, "observation": obs.kind,
               "content_hash": obs.content_hash})


def view_tree(view: RunView) -> dict[str, Any]:
    r = view.run
    tree: dict[str, Any] = {
        "status": r.status, "step_count": r.step_count, "model_calls": r.model_calls,
        "input_tokens": r.input_tokens, "output_tokens": r.output_tokens,
        "cached_input_tokens": r.cached_input_tokens, "estimated_cost_micros": r.estimated_cost_micros,
        "active_ms": r.active_ms, "steps": len(view.steps), "approvals": len(view.approvals),
    }
    if view.context is not None:  # recorded so that recheck decides from what was read then
        tree["context"] = dict(view.context)
    return tree


def record_policy(tx: Tx, step: Step, decision: PolicyDecision, at: str, *, policy_id: str, spec_hash: str,
                  view: RunView | None) -> None:
    """The step.policy event; the step row's policy columns are set by the caller's CAS."""
    payload: dict[str, Any] = dict(decision.tree())
    if policy_id:
        payload["policy_id"] = policy_id
    payload["spec_hash"] = spec_hash
    if view is not None:
        payload["view"] = view_tree(view)
    tx.append(step.run_id, step.id, at, "step.policy", payload)


def record_policy_row(tx: Tx, step: Step, prop: Proposal, *, policy_id: str, spec_hash: str,
                      expect: str | tuple[str, ...], columns: dict[str, Any] | None = None) -> None:
    """The policy's decision on the step row (with ``columns`` in the same CAS) and step.policy."""
    tx.update_step(step.id, expect=expect, policy_json=go_json(prop.decision.tree()), policy_id=policy_id,
                   **(columns or {}))
    record_policy(tx, step, prop.decision, fmt(prop.at_ns), policy_id=policy_id, spec_hash=spec_hash, view=prop.view)


def pause(tx: Tx, step: Step, request: ToolRequest, decision: PolicyDecision, hash_: str, now_ns: int,
          limits: Limits, *, expect_run: str | tuple[str, ...], expect_step: str | tuple[str, ...],
          owner: str | None, policy_id: str, spec_hash: str, view: RunView | None) -> Approval:
    """Step → awaiting_approval, run → WAITING (lease released), step.policy, the approval
    row and approval.requested: one transaction."""
    at = fmt(now_ns)
    tx.update_step(step.id, expect=expect_step, status=AWAITING, policy_json=go_json(decision.tree()),
                   policy_id=policy_id, spec_hash=spec_hash, observation_json="", observation_hash="",
                   finished_at="")
    record_policy(tx, step, decision, at, policy_id=policy_id, spec_hash=spec_hash, view=view)
    approval = Approval(
        id=new_id(), run_id=step.run_id, step_id=step.id, kind=decision.kind,
        capability_json=go_json(decision.capability if decision.capability is not None else {}),
        presentation_json=go_json(decision.presentation if decision.presentation is not None else {}),
        request_json=go_json(request.tree()), hash=hash_, status=APPROVAL_PENDING, created_at=at,
        decided_at="", decided_by="", note="",
        expires_at=fmt(now_ns + limits.approval_ttl) if limits.approval_ttl else "",
    )
    tx.insert_approval(approval)
    tx.append(step.run_id, step.id, at, "approval.requested", {
        "approval_id": approval.id, "kind": approval.kind, "reason": decision.reason,
        "capability": Raw(approval.capability_json), "presentation": Raw(approval.presentation_json),
        "hash": hash_,
    })
    tx.update_run(step.run_id, expect=expect_run, owner=owner, status=WAITING, lease_owner="",
                  lease_expires_at="")
    return approval


def expire_approval(tx: Tx, approval: Approval, now_ns: int) -> None:
    """An approval (pending or granted) expired: nothing executes; the run is cancelled."""
    at = fmt(now_ns)
    if approval.status == APPROVAL_PENDING:
        ok = tx.update_approval(approval.id, expect=APPROVAL_PENDING, status=EXPIRED, decided_at=at, note=EXPIRED)
    else:
        ok = tx.update_approval(approval.id, expect=approval.status, status=EXPIRED)
    if not ok:
        raise NotPending(ERR_DECIDED_MEANWHILE.format(id=approval.id))
    tx.append(approval.run_id, "", at, "approval.decided", {"approval_id": approval.id, "status": EXPIRED})
    finish_run(tx, approval.run_id, expect=WAITING, status=CANCELLED, reason=END_APPROVAL_EXPIRED,
               detail=DETAIL_EXPIRED.format(id=approval.id), at=at)


def stand_not_sent(tx: Tx, step: Step, obs: Observation, grant: Approval, *, tool: str, duration_ms: int,
                   owner: str, at: str) -> None:
    """A granted request that provably never reached its server (the server down, restarting,
    refusing the connection): nothing ran, so the operator's approval of exactly this request
    still stands. The step goes back to awaiting its grant and the run to WAITING (lease
    released), with step.tool_finished recording the failure and ``approval.stands``: the
    identical call collects the same grant and executes it once, until the grant expires
    (``grant_ttl``). Raises ``LeaseLost`` / ``RunStateError`` as ``record_outcome`` does."""
    if not tx.add_active_ms(step.run_id, duration_ms, owner):
        _lease_lost_or(tx, step.run_id, owner)
        raise RunStateError(MSG_RUN_STATE.format(run_id=step.run_id, expected=RUNNING))
    tx.update_step(step.id, expect=EXECUTING, status=AWAITING)
    failure = obs.content.get("failure") if isinstance(obs.content, dict) else None
    tx.append(step.run_id, step.id, at, "step.tool_finished",
              {"tool": tool, "duration_ms": duration_ms, "error": obs.summary, "failure": failure})
    tx.append(step.run_id, step.id, at, APPROVAL_STANDS, {"approval_id": grant.id, "tool": tool})
    tx.update_run(step.run_id, expect=RUNNING, owner=owner, status=WAITING, lease_owner="", lease_expires_at="")


def record_outcome(tx: Tx, step: Step, obs: Observation, *, tool: str, terminal: bool, duration_ms: int,
                   owner: str, at: str) -> Run | None:
    """A tool's outcome: the run's active time, the step done or failed, step.tool_finished
    (and step.failed), and, when a terminal tool succeeded, the run COMPLETED; that run row,
    else None. Raises ``LeaseLost`` when another owner took the run over meanwhile (the step
    is theirs to settle) and ``RunStateError`` when the run moved on under this lease."""
    # The CAS (RUNNING under this lease) adds the time in place, and, when the outcome ends the
    # run, completes it in the same UPDATE; the row is read only when it fails, to tell a
    # takeover from a run moved on under this lease.
    ended: Run | None = None
    if terminal and not obs.failure:
        try:
            ended = tx.update_run_adding_active_ms(
                step.run_id, duration_ms, expect=RUNNING, owner=owner, status=COMPLETED, reason=END_GOAL_COMPLETED,
                reason_detail="", finished_at=at, lease_owner="", lease_expires_at="", result_json=go_json(obs.content))
        except RunStateError:
            _lease_lost_or(tx, step.run_id, owner)
            raise
    elif not tx.add_active_ms(step.run_id, duration_ms, owner):
        _lease_lost_or(tx, step.run_id, owner)
        raise RunStateError(MSG_RUN_STATE.format(run_id=step.run_id, expected=RUNNING))
    tx.update_step(step.id, expect=EXECUTING, status=STEP_FAILED if obs.failure else DONE,
                   observation_json=observation_json(obs), observation_hash=obs.content_hash, finished_at=at)
    finished: dict[str, Any] = {"tool": tool, "duration_ms": duration_ms}
    if obs.failure:
        finished["error"] = obs.summary
        failure = obs.content.get("failure") if isinstance(obs.content, dict) else None
        if isinstance(failure, str):
            # How it failed (timeout, not_sent, …): verify holds the call index's cached
            # outcome to it (store/_replay.py). An addition of ours; runtime-core readers ignore it.
            finished["failure"] = failure
    else:
        finished.update(summary=obs.summary, content_hash=obs.content_hash)
    tx.append(step.run_id, step.id, at, "step.tool_finished", finished)
    if obs.failure:
        tx.append(step.run_id, step.id, at, "step.failed",
                  {"detail": obs.summary, "observation": obs.kind, "content_hash": obs.content_hash})
        return None
    if ended is not None:
        record_finished(tx, ended, at)
    return ended


def _lease_lost_or(tx: Tx, run_id: str, owner: str) -> None:
    """``LeaseLost`` when another owner holds the run now (its CAS under ``owner`` failed);
    else returns, for the caller to raise what a run moved on under this lease is."""
    if tx.run(run_id).lease_owner != owner:
        raise LeaseLost(ERR_LEASE_OTHER.format(run_id=run_id))
