"""The texts of the gate's verdicts for the model: a waiting approval, a denial, an invalid request."""

from __future__ import annotations

from agentrt_proxy.gate import INTERRUPTED_SIDE_EFFECT, Verdict, attempts
from agentrt_proxy.gate.guards import OVER_BUDGET_KIND
from agentrt_proxy.store import Approval
from agentrt_proxy.text import model_text


def pending_text(approval: Approval) -> str:
    """PENDING_APPROVAL, or for an interruption INTERRUPTED / UNKNOWN_OUTCOME by how it ended."""
    if approval.kind != INTERRUPTED_SIDE_EFFECT:
        return model_text.pending_approval(approval.id)
    attempt = attempts.interrupted_attempt(approval)
    if attempt is None or attempt.ended == "cut_off":
        return model_text.interrupted(approval.id)
    return model_text.unknown_outcome(attempt.ended, approval.id)


def denied_text(verdict: Verdict) -> str:
    """DENIED with the policy's reason, or INVALID with the validation error."""
    obs = verdict.observation
    content = obs.content if obs is not None and isinstance(obs.content, dict) else {}
    if obs is not None and obs.kind == "invalid_decision":
        return model_text.invalid(str(content.get("error", "")))
    if content.get("kind") == OVER_BUDGET_KIND:
        return model_text.over_budget(str(content.get("reason", "")))
    return model_text.denied(str(content.get("reason", "")))
