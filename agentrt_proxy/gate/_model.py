"""The gate's values: decisions, observations, limits and verdicts as the runtime records them
(runtime-core §1.4, §1.8, §5.4), and the time stamps they carry. The writes that move runs,
steps and approvals are in ``_transitions.py``; their states are the store's (``store/_states.py``).
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from agentrt_proxy import canonical
from agentrt_proxy.canonical import durations
from agentrt_proxy.canonical.encoder import Raw, go_json
from agentrt_proxy.config import ABORT as ABORT
from agentrt_proxy.config import ALLOW as ALLOW
from agentrt_proxy.config import DENY as DENY
from agentrt_proxy.config import REQUIRE_APPROVAL as REQUIRE_APPROVAL
from agentrt_proxy.gate import attempts
from agentrt_proxy.mcp import outcomes
from agentrt_proxy.store import Approval, Run, Step, Store, Tx
from agentrt_proxy.text.operator_text import BUG_NOT_AN_OUTCOME
from agentrt_proxy.text.record_text import (
    ERR_ARGS_UNUSABLE,
    ERR_HTTP_STATUS,
    ERR_NO_ANSWER,
    ERR_NOT_SENT,
    ERR_RESULT_UNUSABLE,
    ERR_RPC,
    SUMMARY_INVALID,
    SUMMARY_INVALID_CONTENT,
    SUMMARY_INVALID_RESUME,
    SUMMARY_TOOL_ERROR,
)
from agentrt_proxy.upstream import ToolSpec

# The policy's outcomes (ABORT ... REQUIRE_APPROVAL, runtime-core §2.3) are the configuration's
# (config/model), imported above with an alias so that the gate's users import them from here.

# ----------------------------------------------------------------- what a policy is handed and answers


@dataclass(frozen=True)
class ToolRequest:
    """The exact request: what executes, what an approval binds."""

    run_id: str
    step_id: str
    spec: ToolSpec
    args: Any  # a literal-keeping tree; {} when the decision carried none

    def tree(self) -> dict[str, Any]:
        return {"run_id": self.run_id, "step_id": self.step_id, "spec": self.spec.tree(), "args": self.args}


@dataclass(frozen=True)
class PolicyDecision:
    outcome: str
    reason: str = ""
    kind: str = ""
    capability: Any = None  # a tree; None is recorded as {}
    presentation: Any = None

    def tree(self) -> dict[str, Any]:
        out: dict[str, Any] = {"outcome": self.outcome}
        for name in ("reason", "kind"):
            if getattr(self, name):
                out[name] = getattr(self, name)
        for name in ("capability", "presentation"):
            if getattr(self, name) is not None:
                out[name] = getattr(self, name)
        return out


@dataclass(frozen=True)
class RunView:
    """What the policy sees: the run as the step started, the steps before this one, the
    run's approvals, and the current step."""

    run: Run
    steps: list[Step]
    approvals: list[Approval]
    step: Step | None = None
    # What the decision reads besides the run (docs/decisions/0017): each covering budget's
    # spending ("budgets") and the untrusted result this process returned ("untrusted").
    # Read by the gate as it decides, recorded with the view, rebuilt by recheck; None: none.
    context: Mapping[str, Any] | None = None


# what a takeover's reconciliation found (Reconciliation.action)
RECONCILE_CONTINUE = "continue"
RECONCILE_COMPLETED = "completed"  # the call's effect is known done (not a task status)
RECONCILE_WAITING = "waiting"
RECONCILE_CONFLICT = "conflict"


@dataclass(frozen=True)
class Reconciliation:
    """What to do with a run taken over mid-call: continue, completed (+result),
    waiting (+decision for step_id), or conflict (+detail)."""

    action: str  # RECONCILE_*
    step_id: str = ""
    decision: PolicyDecision | None = None
    result: Any = None
    detail: str = ""


# What the gate calls when it takes over a run found mid-call (the proxy's policy supplies it).
Reconcile = Callable[[Run, list[Step]], Reconciliation]


class Policy(Protocol):
    def evaluate(self, request: ToolRequest, view: RunView) -> PolicyDecision: ...

    def policy_id(self) -> str: ...


@dataclass(frozen=True)
class OfferedTool:
    """A tool the proxy offers: its registered name, where it goes, and the operator's rule."""

    name: str
    server: str
    remote: str
    side_effect: str
    outcome: str | None = None
    fixed: Mapping[str, Any] = field(default_factory=dict)


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
class PreparedDecision:
    """A decision parsed, checked and encoded before the transaction that records it
    (``Gate.prepare``): for large arguments that work is most of a call's, and done inside
    the transaction it would hold the database's write lock (and starve every other
    proxy's lease renewals) for as long."""

    decision: Decision
    recorded: RecordedDecision
    decision_json: str  # the recorded tree as stored
    spec: Any  # the tool's ToolSpec, or None
    error: str  # validation_error's verdict on the decision


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
    """Verbatim before validation (runtime-core §1.8), with the strict boundary applied to args/result."""
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
            error = error or (ERR_ARGS_UNUSABLE if name == "args" else ERR_RESULT_UNUSABLE).format(reason=exc.reason)
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
    # How ``content`` is to be read: "" (a record's text or structured content, as every record
    # before decision 0015 has it) or ``outcomes.CALL_TOOL_RESULT`` (the server's own fields).
    # Outside the content, so no old content can be mistaken for the new form.
    form: str = ""

    def tree(self) -> dict[str, Any]:
        tree = {"kind": self.kind, "content": self.content, "summary": self.summary, "content_hash": self.content_hash}
        if self.form:
            tree["form"] = self.form
        return tree

    @property
    def failure(self) -> bool:
        return self.kind != "tool_result"


def observe(kind: str, content: Any, summary: str, form: str = "") -> Observation:
    return Observation(kind, content, summary, hashlib.sha256(canonical.canonical_bytes(content)).hexdigest(), form)


def observation_from_outcome(tool: str, outcome: outcomes.ToolOutcome) -> Observation:
    """Map the wire's classified outcome onto the runtime's observations (docs/design.md)."""
    if isinstance(outcome, outcomes.Result):
        if not outcome.is_error:
            content = outcome.content if outcome.content is not None else {}
            return observe("tool_result", content, outcome.summary, outcome.form)
        return tool_error(tool, outcome.error_text, "error")
    if isinstance(outcome, outcomes.NoAnswer):
        if outcome.kind == "timeout":
            return tool_error(tool, outcome.detail or "timeout", "timeout")
        return tool_error(tool, ERR_NO_ANSWER.format(tool=tool, kind=outcome.kind, detail=outcome.detail), "error")
    if isinstance(outcome, outcomes.NotSent):
        return tool_error(tool, ERR_NOT_SENT.format(tool=tool, detail=outcome.detail), attempts.NOT_SENT)
    if isinstance(outcome, outcomes.HttpStatus):
        return tool_error(tool, ERR_HTTP_STATUS.format(tool=tool, detail=outcome.detail), attempts.HTTP_STATUS)
    if isinstance(outcome, outcomes.RpcError):
        return tool_error(tool, ERR_RPC.format(tool=tool, code=outcome.code, message=outcome.message), "error")
    if isinstance(outcome, outcomes.Refused):
        refused: dict[str, Any] = {"tool": tool, "error": outcome.reason, "failure": "invalid_content"}
        try:
            refused["content"] = outcome.raw.decode("utf-8")
        except UnicodeDecodeError:
            refused["content_base64"] = base64.b64encode(outcome.raw).decode("ascii")
        return observe("tool_error", refused, SUMMARY_INVALID_CONTENT.format(tool=tool, reason=outcome.reason))
    raise TypeError(BUG_NOT_AN_OUTCOME.format(type=type(outcome).__name__))


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


@dataclass
class Proposal:
    """What a decided step carries between the policy's verdict and its tool's start: made by the
    session (a proposal) and by collection (a grant acted on)."""

    request: ToolRequest
    decision: PolicyDecision
    view: RunView
    at_ns: int  # the Now it was decided at
    spec_hash: str
    grant: Approval | None = None  # the approval being acted on, when collected


# --------------------------------------------------------------------------- time stamps


def fmt(ns: int) -> str:
    """A time as the runtime stores it (RFC 3339, fraction trimmed)."""
    return durations.format_time(ns)


def expired(deadline_text: str, now_ns: int, ttl: int = 0) -> bool:
    """Strictly after: a deadline equal to now has not passed."""
    if not deadline_text:
        return False
    return now_ns > durations.parse_time(deadline_text) + ttl


class RunSession(Protocol):
    """What every helper of a session (dispatch, execution, attach) needs of it: the run it is
    on, its limits and store, ending it, and resuming it under the gate's lease. Each helper's
    own protocol adds what only it needs; ``session.Session`` satisfies all of them."""

    @property
    def run_id(self) -> str: ...

    @property
    def limits(self) -> Limits: ...

    @property
    def store(self) -> Store: ...

    def end(self) -> None: ...

    def resume_running(self, tx: Tx, at: str, payload: dict[str, Any]) -> None: ...
