"""The gate's values and the transitions shared by the gate and the operator.

Decisions, observations, limits and verdicts as the runtime records them
(runtime-core §1.4, §1.8, §5.4), and the few multi-row transitions (finish a run,
pause on an approval, expire an approval) that both ``gate.py`` and ``approvals.py``
write inside one transaction.
"""

from __future__ import annotations

import base64
import hashlib
from dataclasses import dataclass
from typing import Any

from agentrt_proxy import canonical
from agentrt_proxy.canonical import Number, durations
from agentrt_proxy.canonical.encoder import Raw, go_json
from agentrt_proxy.gate.policy import PolicyDecision, RunView, ToolRequest
from agentrt_proxy.mcp import outcomes
from agentrt_proxy.store import Approval, Run, Step, Tx, new_id
from agentrt_proxy.text.record_text import DETAIL_CONFLICT as DETAIL_CONFLICT
from agentrt_proxy.text.record_text import DETAIL_EXPIRED as DETAIL_EXPIRED
from agentrt_proxy.text.record_text import DETAIL_FAILURES as DETAIL_FAILURES
from agentrt_proxy.text.record_text import DETAIL_LOOP as DETAIL_LOOP
from agentrt_proxy.text.record_text import DETAIL_POLICY_ERROR as DETAIL_POLICY_ERROR
from agentrt_proxy.text.record_text import DETAIL_POLICY_RUN as DETAIL_POLICY_RUN
from agentrt_proxy.text.record_text import DETAIL_STEP_LIMIT as DETAIL_STEP_LIMIT
from agentrt_proxy.text.record_text import DETAIL_UNKNOWN_OUTCOME as DETAIL_UNKNOWN_OUTCOME
from agentrt_proxy.text.record_text import ERR_ARGS_SCHEMA as ERR_ARGS_SCHEMA
from agentrt_proxy.text.record_text import ERR_ARGS_UNUSABLE as ERR_ARGS_UNUSABLE
from agentrt_proxy.text.record_text import ERR_NO_ANSWER as ERR_NO_ANSWER
from agentrt_proxy.text.record_text import ERR_NO_KIND as ERR_NO_KIND
from agentrt_proxy.text.record_text import ERR_NO_TOOL as ERR_NO_TOOL
from agentrt_proxy.text.record_text import ERR_RPC as ERR_RPC
from agentrt_proxy.text.record_text import ERR_UNKNOWN_KIND as ERR_UNKNOWN_KIND
from agentrt_proxy.text.record_text import ERR_UNKNOWN_ORIGIN as ERR_UNKNOWN_ORIGIN
from agentrt_proxy.text.record_text import ERR_UNKNOWN_TOOL as ERR_UNKNOWN_TOOL
from agentrt_proxy.text.record_text import SUMMARY_ABORTED as SUMMARY_ABORTED
from agentrt_proxy.text.record_text import SUMMARY_ABORTED_RESUME as SUMMARY_ABORTED_RESUME
from agentrt_proxy.text.record_text import SUMMARY_CANCELLED as SUMMARY_CANCELLED
from agentrt_proxy.text.record_text import SUMMARY_DENIED as SUMMARY_DENIED
from agentrt_proxy.text.record_text import SUMMARY_DENIED_RESUME as SUMMARY_DENIED_RESUME
from agentrt_proxy.text.record_text import SUMMARY_INTERRUPTED as SUMMARY_INTERRUPTED
from agentrt_proxy.text.record_text import SUMMARY_INVALID as SUMMARY_INVALID
from agentrt_proxy.text.record_text import SUMMARY_INVALID_CONTENT as SUMMARY_INVALID_CONTENT
from agentrt_proxy.text.record_text import SUMMARY_INVALID_RESUME as SUMMARY_INVALID_RESUME
from agentrt_proxy.text.record_text import SUMMARY_OPERATOR_CANCEL as SUMMARY_OPERATOR_CANCEL
from agentrt_proxy.text.record_text import SUMMARY_PANIC as SUMMARY_PANIC
from agentrt_proxy.text.record_text import SUMMARY_REJECTED as SUMMARY_REJECTED
from agentrt_proxy.text.record_text import SUMMARY_TOOL_ERROR as SUMMARY_TOOL_ERROR

# run statuses
RUNNING = "RUNNING"
WAITING = "WAITING_FOR_APPROVAL"
COMPLETED = "COMPLETED"
FAILED = "FAILED"
CANCELLED = "CANCELLED"
TERMINAL = (COMPLETED, FAILED, CANCELLED)
RESUMABLE = (RUNNING, "INTERRUPTED")

# step statuses
DECIDING, AWAITING, EXECUTING = "deciding", "awaiting_approval", "executing"
DONE, STEP_FAILED, INTERRUPTED = "done", "failed", "interrupted"
IN_FLIGHT = (DECIDING, AWAITING, EXECUTING)

# verdict outcomes
ALLOWED, DENIED, PENDING, ENDED = "allowed", "denied", "pending", "ended"
EXECUTED = "executed"  # a non-terminal step recorded its outcome; the run goes on
OPEN = ""  # attach left a session open with no step

ORIGINS = ("", "model", "plan", "operator")


@dataclass(frozen=True)
class Limits:
    max_steps: int = 3
    max_consecutive_tool_failures: int = 3
    loop_threshold: int = 3
    approval_ttl: int = 0  # ns; 0 = none
    grant_ttl: int = 0

    def json(self) -> str:
        out: dict[str, Any] = {
            "max_steps": self.max_steps,
            "max_consecutive_tool_failures": self.max_consecutive_tool_failures,
            "loop_threshold": self.loop_threshold,
        }
        if self.approval_ttl:
            out["approval_ttl"] = self.approval_ttl
        if self.grant_ttl:
            out["grant_ttl"] = self.grant_ttl
        return go_json(out)

    @classmethod
    def parse(cls, text: str) -> Limits:
        v = canonical.to_python(canonical.parse_strict(text)) if text else {}
        return cls(**{k: int(v.get(k, 0)) for k in cls.__dataclass_fields__})


def proxy_limits(approval_ttl: int, grant_ttl: int) -> Limits:
    """Every proxy run: three steps, three failures, loop threshold three, and the TTLs."""
    return Limits(3, 3, 3, approval_ttl, grant_ttl)


@dataclass(frozen=True)
class Decision:
    kind: str
    tool: str = ""
    args: str | bytes | None = None  # raw JSON as the model sent it
    reason: str = ""
    result: str | bytes | None = None
    message: str = ""
    origin: str = ""


@dataclass(frozen=True)
class RecordedDecision:
    """The decision as recorded: args/result moved to invalid_* when the boundary refused them."""

    tree: dict[str, Any]
    args: Any  # parsed tree, or None
    result: Any
    error: str  # the first validation failure, "" if none so far


def _raw_text(raw: str | bytes | None) -> str | bytes | None:
    if raw is None:
        return None
    stripped = raw.strip()
    return stripped if stripped else None


def _invalid_field(raw: str | bytes) -> tuple[str, bool]:
    if isinstance(raw, bytes):
        try:
            return raw.decode("utf-8"), False
        except UnicodeDecodeError:
            return base64.b64encode(raw).decode("ascii"), True
    try:
        raw.encode("utf-8")
    except UnicodeEncodeError:
        return base64.b64encode(raw.encode("utf-8", "surrogatepass")).decode("ascii"), True
    return raw, False


def record_decision(d: Decision) -> RecordedDecision:
    """Verbatim before validation (§1.8), with the strict boundary applied to args/result."""
    tree: dict[str, Any] = {"kind": d.kind}
    if d.tool:
        tree["tool"] = d.tool
    parsed: dict[str, Any] = {"args": None, "result": None}
    invalid: dict[str, str] = {}
    b64 = False
    error = ""
    for name, raw in (("args", _raw_text(d.args)), ("result", _raw_text(d.result))):
        if raw is None:
            continue
        try:
            parsed[name] = canonical.parse_strict(raw)
        except canonical.JSONBoundaryError as exc:
            invalid[name], was_b64 = _invalid_field(raw)
            b64 = b64 or was_b64
            error = error or (ERR_ARGS_UNUSABLE if name == "args" else "result is not usable JSON: {reason}").format(
                reason=exc.reason)
    if parsed["args"] is not None:
        tree["args"] = Raw(go_json(parsed["args"]))
    if d.reason:
        tree["reason"] = d.reason
    if parsed["result"] is not None:
        tree["result"] = Raw(go_json(parsed["result"]))
    if d.message:
        tree["message"] = d.message
    if d.origin:
        tree["origin"] = d.origin
    for name in ("args", "result"):
        if name in invalid:
            tree[f"invalid_{name}"] = invalid[name]
    if b64:
        tree["invalid_base64"] = True
    return RecordedDecision(tree, parsed["args"], parsed["result"], error)


@dataclass(frozen=True)
class Observation:
    kind: str
    content: Any
    summary: str
    content_hash: str

    def tree(self) -> dict[str, Any]:
        return {"kind": self.kind, "content": self.content, "summary": self.summary, "content_hash": self.content_hash}

    @property
    def failure(self) -> bool:
        return self.kind != "tool_result"


def observe(kind: str, content: Any, summary: str) -> Observation:
    return Observation(kind, content, summary, hashlib.sha256(canonical.canonical_bytes(content)).hexdigest())


def observation_from_outcome(tool: str, outcome: outcomes.ToolOutcome) -> Observation:
    """Map the wire's classified outcome onto the runtime's observations (docs/design.md)."""
    if isinstance(outcome, outcomes.Result):
        if not outcome.is_error:
            content = outcome.content if outcome.content is not None else {}
            return observe("tool_result", content, outcome.summary)
        return tool_error(tool, outcome.error_text, "error")
    if isinstance(outcome, outcomes.NoAnswer):
        if outcome.kind == "timeout":
            return tool_error(tool, outcome.detail or "timeout", "timeout")
        return tool_error(tool, ERR_NO_ANSWER.format(tool=tool, kind=outcome.kind, detail=outcome.detail), "error")
    if isinstance(outcome, outcomes.RpcError):
        return tool_error(tool, ERR_RPC.format(tool=tool, code=outcome.code, message=outcome.message), "error")
    if isinstance(outcome, outcomes.Refused):
        refused: dict[str, Any] = {"tool": tool, "error": outcome.reason, "failure": "invalid_content"}
        try:
            refused["content"] = outcome.raw.decode("utf-8")
        except UnicodeDecodeError:
            refused["content_base64"] = base64.b64encode(outcome.raw).decode("ascii")
        return observe("tool_error", refused, SUMMARY_INVALID_CONTENT.format(tool=tool, reason=outcome.reason))
    raise TypeError(f"not a tool outcome: {type(outcome).__name__}")


def tool_error(tool: str, error: str, failure: str) -> Observation:
    content = {"tool": tool, "error": error, "failure": failure}
    return observe("tool_error", content, SUMMARY_TOOL_ERROR.format(tool=tool, failure=failure, error=error))


def invalid_decision(error: str, on_resume: bool = False) -> Observation:
    template = SUMMARY_INVALID_RESUME if on_resume else SUMMARY_INVALID
    return observe("invalid_decision", {"error": error}, template.format(error=error))


def observation_json(obs: Observation) -> str:
    return go_json(obs.tree())


@dataclass
class Verdict:
    outcome: str
    request: ToolRequest | None = None
    observation: Observation | None = None
    approval: Approval | None = None
    run: Run | None = None


# --------------------------------------------------------------------------- shared transitions


def fmt(ns: int) -> str:
    return durations.format_time(ns)


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
    payload: dict[str, Any] = {"status": status, "reason": reason, "detail": detail, "steps": run.step_count}
    if by is not None:
        payload["by"] = by
    tx.append(run_id, "", at, "run.finished", payload)
    return run


def fail_step(tx: Tx, step: Step, obs: Observation, at: str, *, expect: str | tuple[str, ...],
              detail: str | None = None) -> None:
    tx.update_step(step.id, expect=expect, status=STEP_FAILED, observation_json=observation_json(obs),
                   observation_hash=obs.content_hash, finished_at=at)
    tx.append(step.run_id, step.id, at, "step.failed",
              {"detail": obs.summary if detail is None else detail, "observation": obs.kind,
               "content_hash": obs.content_hash})


def view_tree(view: RunView) -> dict[str, Any]:
    r = view.run
    return {
        "status": r.status, "step_count": r.step_count, "model_calls": r.model_calls,
        "input_tokens": r.input_tokens, "output_tokens": r.output_tokens,
        "cached_input_tokens": r.cached_input_tokens, "estimated_cost_micros": r.estimated_cost_micros,
        "active_ms": r.active_ms, "steps": len(view.steps), "approvals": len(view.approvals),
    }


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
        request_json=go_json(request.tree()), hash=hash_, status="pending", created_at=at,
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
    if approval.status == "pending":
        ok = tx.update_approval(approval.id, expect="pending", status="expired", decided_at=at, note="expired")
    else:
        ok = tx.update_approval(approval.id, expect=approval.status, status="expired")
    if not ok:
        from agentrt_proxy.store import NotPending

        raise NotPending(f"agentrt: approval {approval.id} was decided meanwhile")
    tx.append(approval.run_id, "", at, "approval.decided", {"approval_id": approval.id, "status": "expired"})
    finish_run(tx, approval.run_id, expect=WAITING, status=CANCELLED, reason="approval_expired",
               detail=DETAIL_EXPIRED.format(id=approval.id), at=at)


def expired(deadline_text: str, now_ns: int, ttl: int = 0) -> bool:
    """Strictly after: a deadline equal to now has not passed."""
    if not deadline_text:
        return False
    return now_ns > durations.parse_time(deadline_text) + ttl


def num(value: int) -> Number:
    return Number(str(value))
