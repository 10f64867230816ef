"""The policy's outcomes, the runtime's default policy (by side-effect class), and the proxy's policy.

The policy is handed a ``ToolRequest`` and a ``RunView`` and answers a
``PolicyDecision``; the gate records it, with the policy's identity, on the step and in
the ``step.policy`` event. The proxy's policy (proxy-and-mcp-module §2.10) adds the
operator's per-tool outcome, fixed values in the capability, the interruption approval
for a re-run of an attempt whose outcome is unknown, and the reconciliation hook the
gate calls when it takes over a run found mid-call.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

from agentrt_proxy import canonical
from agentrt_proxy.config import DEFAULT_POLICY, READ_ONLY, Config
from agentrt_proxy.gate._model import (
    ALLOW,
    DENY,
    RECONCILE_CONTINUE,
    RECONCILE_WAITING,
    REQUIRE_APPROVAL,
    OfferedTool,
    PolicyDecision,
    Reconciliation,
    RunView,
    ToolRequest,
)
from agentrt_proxy.gate.attempts import INTERRUPTED_SIDE_EFFECT, Attempt, last_interrupted_while_executing
from agentrt_proxy.gate.guards import Guards, Ruling
from agentrt_proxy.store import Run, Step
from agentrt_proxy.text.record_text import (
    DETAIL_TOOL_GONE,
    HOW_ENDED,
    NOTICE_INTERRUPTED,
    QUESTION_INTERRUPTED,
    QUESTION_ORDINARY,
    REASON_CLASS,
    REASON_INTERRUPTED,
    REASON_NO_POLICY,
    REASON_NOT_OFFERED,
    REASON_RULE,
    REASON_UNKNOWN_OUTCOME,
)


def default_policy() -> dict[str, str]:
    """agentrt.DefaultPolicy: reads and local changes run, remote ones ask, destruction is refused."""
    return dict(DEFAULT_POLICY)


class SideEffectPolicy:
    """The runtime's map of class → outcome, with no identity (agentrt.DefaultPolicy)."""

    def __init__(self, classes: Mapping[str, str] | None = None) -> None:
        self.classes = dict(default_policy() if classes is None else classes)

    def policy_id(self) -> str:
        return ""

    def evaluate(self, request: ToolRequest, view: RunView) -> PolicyDecision:
        cls = request.spec.side_effect
        outcome = self.classes.get(cls)
        if outcome is None:
            return PolicyDecision(DENY, REASON_NO_POLICY.format(cls=cls))
        reason = REASON_CLASS.format(cls=cls, outcome=outcome)
        if outcome != REQUIRE_APPROVAL:
            return PolicyDecision(outcome, reason)
        capability = {"args": request.args if request.args is not None else {}, "tool": request.spec.name}
        return PolicyDecision(outcome, reason, cls, capability, capability)


# --------------------------------------------------------------------------- the proxy's policy


def offered_tools_from_config(config: Config) -> dict[str, OfferedTool]:
    """One tool per rule, named as serving names it (rename, else <server>_<tool>)."""
    out: dict[str, OfferedTool] = {}
    for server in config.servers:
        for remote, rule in server.rules.items():
            name = rule.rename or f"{server.name}_{remote}"
            out[name] = OfferedTool(name, server.name, remote, rule.side_effect, rule.outcome, dict(rule.fixed))
    return out


def _decision(ruling: Ruling) -> PolicyDecision:
    return PolicyDecision(ruling.outcome, ruling.reason, ruling.kind, ruling.capability, ruling.presentation)


def _parse_or(raw: str, default: Any) -> Any:
    if not raw or not raw.strip():
        return default
    try:
        return canonical.parse_strict(raw)
    except canonical.JSONBoundaryError:
        return default


class ProxyPolicy:
    """The gate's policy for the proxy. Thread-safe: re-runs are registered per run."""

    def __init__(self, classes: Mapping[str, str], tools: Mapping[str, OfferedTool], identity: str,
                 guards: Guards | None = None) -> None:
        self.classes = {**default_policy(), **classes}
        self.tools = dict(tools)
        self._identity = identity
        self.guards = guards  # budgets and the clean-context rule; None: neither
        self._reruns: dict[str, Attempt] = {}
        self._lock = threading.Lock()

    @classmethod
    def from_config(cls, config: Config, tools: Mapping[str, OfferedTool] | None = None) -> ProxyPolicy:
        guards = Guards.from_config(config)
        return cls(config.policy, offered_tools_from_config(config) if tools is None else tools, config.policy_id(),
                   guards if guards.active else None)

    def policy_id(self) -> str:
        return self._identity

    # the in-memory mark of a re-run, set by the proxy as it proposes one ---------------
    def mark_rerun(self, run_id: str, attempt: Attempt) -> None:
        with self._lock:
            self._reruns[run_id] = attempt

    def forget_rerun(self, run_id: str) -> None:
        with self._lock:
            self._reruns.pop(run_id, None)

    # deciding -------------------------------------------------------------------------
    def decide(self, tool: OfferedTool) -> tuple[str, str]:
        """The replaceable evaluator: the rule's outcome, else the class's."""
        if tool.outcome:
            return tool.outcome, REASON_RULE.format(name=tool.name, outcome=tool.outcome)
        outcome = self.classes.get(tool.side_effect)
        if outcome is None:
            return DENY, REASON_NO_POLICY.format(cls=tool.side_effect)
        return outcome, REASON_CLASS.format(cls=tool.side_effect, outcome=outcome)

    def simply_allows(self, name: str) -> bool:
        """Whether every call of the tool ``name`` is allowed as it comes: its outcome is
        ``allow`` and no guard (a budget, the clean-context rule) can ask or refuse. Any other
        tool's calls may be answered in the proxy's prose (PENDING_APPROVAL, DENIED, …)."""
        tool = self.tools.get(name)
        if tool is None or self.decide(tool)[0] != ALLOW:
            return False
        return self.guards is None or not (self.guards.budgets.covers(name) or name in self.guards.clean)

    def evaluate(self, request: ToolRequest, view: RunView) -> PolicyDecision:
        tool = self.tools.get(request.spec.name)
        if tool is None:
            return PolicyDecision(DENY, REASON_NOT_OFFERED.format(name=request.spec.name))
        outcome, reason = self.decide(tool)
        if outcome == DENY:
            return PolicyDecision(DENY, reason)  # deny beats a re-run
        attempt = self.rerun_attempt(request, view)
        if attempt is not None:
            return self.interruption(tool, request.args, attempt)  # its spending was reserved when it first ran
        if self.guards is not None and outcome in (ALLOW, REQUIRE_APPROVAL):
            guarded = self.guards.check(tool, request, view, lambda t, args: self.capability(t, args, None))
            if guarded is None:
                guarded = self.guards.granted(view, request.step_id)
            if guarded is not None:
                return _decision(guarded)
        if outcome == ALLOW:
            return PolicyDecision(ALLOW, reason)
        if outcome == REQUIRE_APPROVAL:
            return self.ordinary(tool, request.args, reason)
        return PolicyDecision(DENY, REASON_UNKNOWN_OUTCOME.format(outcome=outcome))

    def rerun_attempt(self, request: ToolRequest, view: RunView) -> Attempt | None:
        """The attempt this request re-runs: named by the step's latest approval when that
        is an interruption, else the one the proxy registered while proposing."""
        latest = next((a for a in reversed(view.approvals) if a.step_id == request.step_id), None)
        if latest is not None and latest.kind == INTERRUPTED_SIDE_EFFECT:
            named = Attempt.from_tree(_parse_or(latest.capability_json, {}).get("interrupted"))
            if named is not None:
                return named
            started = view.step.started_at if view.step is not None and view.step.id == request.step_id else ""
            return Attempt(request.run_id, request.step_id, started, "cut_off")
        with self._lock:
            return self._reruns.get(request.run_id)

    # approvals ------------------------------------------------------------------------
    def capability(self, tool: OfferedTool, args: Any, attempt: Attempt | None) -> dict[str, Any]:
        cap: dict[str, Any] = {
            "server": tool.server,
            "tool": tool.remote,
            "name": tool.name,
            "side_effect": tool.side_effect,
            "args": args if args is not None else {},
        }
        if tool.fixed:
            cap["fixed"] = dict(tool.fixed)
        if attempt is not None:
            cap["interrupted"] = attempt.tree()
        return cap

    def ordinary(self, tool: OfferedTool, args: Any, reason: str) -> PolicyDecision:
        cap = self.capability(tool, args, None)
        pres = {"question": QUESTION_ORDINARY.format(remote=tool.remote, server=tool.server), **cap, "reason": reason}
        return PolicyDecision(REQUIRE_APPROVAL, reason, tool.side_effect, cap, pres)

    def interruption(self, tool: OfferedTool, args: Any, attempt: Attempt) -> PolicyDecision:
        cap = self.capability(tool, args, attempt)
        notice = NOTICE_INTERRUPTED.format(
            started_at=attempt.started_at, run_id=attempt.run_id, how=HOW_ENDED.get(attempt.ended, attempt.ended)
        )
        pres = {
            "question": QUESTION_INTERRUPTED.format(remote=tool.remote, server=tool.server),
            **cap,
            "reason": REASON_INTERRUPTED,
            "notice": notice,
        }
        return PolicyDecision(REQUIRE_APPROVAL, REASON_INTERRUPTED, INTERRUPTED_SIDE_EFFECT, cap, pres)

    # reconciliation -------------------------------------------------------------------
    def reconcile(self, run: Run, steps: list[Step]) -> Reconciliation:
        """The gate's hook for a run taken over mid-call: a mutating tool cut off while
        executing waits for an operator; anything else continues (the proxy then ends it)."""
        step = last_interrupted_while_executing(steps)
        if step is None:
            return Reconciliation(RECONCILE_CONTINUE)
        decision = _parse_or(step.decision_json, {})
        name = decision.get("tool", "") if isinstance(decision, dict) else ""
        tool = self.tools.get(name) if isinstance(name, str) else None
        if tool is None:
            bare = PolicyDecision(REQUIRE_APPROVAL, REASON_INTERRUPTED, INTERRUPTED_SIDE_EFFECT)
            return Reconciliation(RECONCILE_WAITING, step.id, bare, detail=DETAIL_TOOL_GONE)
        if tool.side_effect == READ_ONLY:
            return Reconciliation(RECONCILE_CONTINUE)
        args = decision.get("args", {}) if isinstance(decision, dict) else {}
        attempt = Attempt(run.id, step.id, step.started_at, "cut_off")
        interruption = self.interruption(tool, args if args is not None else {}, attempt)
        return Reconciliation(RECONCILE_WAITING, step.id, interruption)

