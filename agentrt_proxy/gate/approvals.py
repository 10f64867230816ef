"""The approval hash and the operator's decisions (runtime-core §3.3–3.4).

The hash binds kind, capability, presentation and the exact request; the decider, the
note and the times are not hashed. A decision is bound to the hash the operator was
shown: the UPDATE is conditional on ``status = 'pending' AND hash = ?``, so of two
operators deciding at once exactly one wins and the other is told it is not pending.
"""

from __future__ import annotations

import hashlib
from typing import Any

from agentrt_proxy import canonical
from agentrt_proxy.canonical import durations
from agentrt_proxy.canonical.clock import WALL
from agentrt_proxy.gate._model import expired, fmt, observation_json, observe
from agentrt_proxy.gate._transitions import expire_approval, finish_run
from agentrt_proxy.gate.attempts import INTERRUPTED_SIDE_EFFECT, KIND_INTERRUPTED, interrupted_attempt
from agentrt_proxy.store import (
    APPROVAL_PENDING,
    APPROVED,
    CANCELLED,
    END_APPROVAL_REJECTED,
    END_OPERATOR_CANCELLED,
    EXPIRED,
    HOLD_SPENT,
    IN_FLIGHT,
    REJECTED,
    STEP_FAILED,
    TERMINAL,
    WAITING,
    Approval,
    ApprovalChanged,
    ApprovalExpired,
    ApprovalHashError,
    NotFound,
    NotPending,
    RunStateError,
    Store,
    Tx,
    holds,
)
from agentrt_proxy.text.record_text import (
    ERR_CANNOT_CANCEL,
    ERR_CHANGED,
    ERR_EXPIRED,
    ERR_HASH,
    ERR_NO_HASH,
    ERR_NOT_FOUND,
    ERR_NOT_PENDING,
    ERR_NOT_WAITING,
    SUMMARY_OPERATOR_CANCEL,
    SUMMARY_REJECTED,
)


def approval_hash(kind: str, capability: Any, presentation: Any, request: Any) -> str:
    """Hex SHA-256 of the canonical JSON of {kind, capability, presentation, request}."""
    body = {
        "kind": kind,
        "capability": capability if capability is not None else {},
        "presentation": presentation if presentation is not None else {},
        "request": request,
    }
    return hashlib.sha256(canonical.canonical_bytes(body)).hexdigest()


def stored_hash(a: Approval) -> str:
    """What the stored fields hash to now (a row that does not parse hashes to nothing)."""
    try:
        return approval_hash(
            a.kind,
            canonical.parse_strict(a.capability_json or "{}"),
            canonical.parse_strict(a.presentation_json or "{}"),
            canonical.parse_strict(a.request_json),
        )
    except (canonical.JSONBoundaryError, ValueError):
        return ""


def _checked_approval(tx: Tx, run_id: str, approval_id: str, shown: str) -> Approval:
    run = tx.run(run_id)
    if run.status != WAITING:
        raise RunStateError(ERR_NOT_WAITING.format(run_id=run_id))
    a = tx.approval(approval_id)
    if a is None or a.run_id != run_id:
        raise NotFound(ERR_NOT_FOUND.format(id=approval_id, run_id=run_id))
    if a.status == EXPIRED:
        raise ApprovalExpired(ERR_EXPIRED.format(id=approval_id), approval_id)
    if a.status != APPROVAL_PENDING:
        raise NotPending(ERR_NOT_PENDING.format(id=approval_id, status=a.status))
    if not shown:
        raise ApprovalChanged(ERR_NO_HASH.format(id=approval_id))
    if shown != a.hash:
        raise ApprovalChanged(ERR_CHANGED.format(id=approval_id, shown=shown, stored=a.hash))
    if stored_hash(a) != a.hash:
        raise ApprovalHashError(ERR_HASH.format(id=approval_id))
    return a


def _decide(store: Store, run_id: str, approval_id: str, shown: str, by: str, note: str, status: str,
            now_ns: int | None) -> Approval:
    now = WALL.now_ns() if now_ns is None else now_ns
    at = fmt(now)
    expired_now = False
    with store.write() as tx:
        a = _checked_approval(tx, run_id, approval_id, shown)
        if expired(a.expires_at, now):
            expire_approval(tx, a, now)
            expired_now = True
        else:
            if not tx.update_approval(a.id, expect=APPROVAL_PENDING, expect_hash=a.hash, status=status, decided_at=at,
                                      decided_by=by, note=note):
                raise NotPending(ERR_NOT_PENDING.format(id=approval_id, status="decided"))
            tx.append(run_id, "", at, "approval.decided",
                      {"approval_id": a.id, "status": status, "by": by, "note": note})
            if status == REJECTED:
                _reject_run(tx, a, note, at)
    if expired_now:
        # The expiry is committed; the decision is refused.
        raise ApprovalExpired(ERR_EXPIRED.format(id=approval_id), approval_id)
    return store.get_approval(approval_id)


def _reject_run(tx: Tx, a: Approval, note: str, at: str) -> None:
    obs = observe("policy_denied", {"approval_id": a.id, "note": note}, SUMMARY_REJECTED.format(note=note))
    tx.update_step(a.step_id, expect=IN_FLIGHT, status=STEP_FAILED, observation_json=observation_json(obs),
                   observation_hash=obs.content_hash, finished_at=at)
    finish_run(tx, a.run_id, expect=WAITING, status=CANCELLED, reason=END_APPROVAL_REJECTED, detail=note, at=at)
    settle_rejected(tx, a, at)


def settle_rejected(tx: Tx, a: Approval, at: str) -> None:
    """A rejection settles what the run reserved from its budgets. Rejecting an ordinary
    question frees it (nothing ran). Rejecting the question whether a call that may have taken
    effect runs again keeps it spent, the run's own and the one a fresh run asking about
    it would have taken over: the payment may have happened (decision 0017). Only the operator's
    ``budget release`` gives it back."""
    now = durations.parse_time(at)
    if a.kind != INTERRUPTED_SIDE_EFFECT:
        holds.release(tx, a.run_id, now)
        return
    holds.release(tx, a.run_id, now, HOLD_SPENT)
    attempt = interrupted_attempt(a)
    if attempt is not None and attempt.run_id != a.run_id:
        holds.release(tx, attempt.run_id, now, HOLD_SPENT)


def approve_shown(store: Store, run_id: str, approval_id: str, shown_hash: str, by: str, note: str = "",
                  now_ns: int | None = None) -> Approval:
    """Grant the approval the operator was shown. The run stays WAITING until collected."""
    return _decide(store, run_id, approval_id, shown_hash, by, note, APPROVED, now_ns)


def reject_shown(store: Store, run_id: str, approval_id: str, shown_hash: str, by: str, note: str = "",
                 now_ns: int | None = None) -> Approval:
    """Refuse it: the step fails with the note, the run is cancelled (approval_rejected)."""
    return _decide(store, run_id, approval_id, shown_hash, by, note, REJECTED, now_ns)


def cancel(store: Store, run_id: str, by: str, note: str = "", now_ns: int | None = None) -> None:
    """End any non-terminal run (operator_cancelled); needs no lease. In-flight steps fail
    with an ``interrupted`` observation; pending approvals are left as they are."""
    now = WALL.now_ns() if now_ns is None else now_ns
    at = fmt(now)
    with store.write() as tx:
        run = tx.run(run_id)
        if run.status in TERMINAL:
            raise RunStateError(ERR_CANNOT_CANCEL.format(run_id=run_id, status=run.status))
        obs = observe(KIND_INTERRUPTED, {"by": by, "note": note}, SUMMARY_OPERATOR_CANCEL.format(note=note))
        for step in tx.steps(run_id):
            if step.status in IN_FLIGHT:
                tx.update_step(step.id, expect=step.status, status=STEP_FAILED,
                               observation_json=observation_json(obs), observation_hash=obs.content_hash,
                               finished_at=at)
        finish_run(tx, run_id, expect=run.status, status=CANCELLED, reason=END_OPERATOR_CANCELLED, detail=note,
                   at=at, by=by)
