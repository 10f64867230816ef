"""The proxy policy's two guards beyond the rules (docs/decisions/0017): spending budgets and
the clean-context rule. Pure: each reads the request, the view (its ``context`` carries what
the budgets have used and the untrusted result this process returned, recorded with the
decision so ``recheck`` rebuilds it) and the configuration.

An approval the operator granted for this step of kind ``over_budget`` or ``clean_context``
accepts that guard's question; the decision at collection is then that grant's, so its hash
still matches.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from agentrt_proxy import canonical
from agentrt_proxy.canonical.durations import format_go
from agentrt_proxy.config import TRUSTED, Budget, Config
from agentrt_proxy.gate._amounts import Unresolved, exact, show
from agentrt_proxy.gate._model import DENY, REQUIRE_APPROVAL, OfferedTool, RunView, ToolRequest
from agentrt_proxy.gate.budgets import Budgets, Priced
from agentrt_proxy.store import APPROVED, Store
from agentrt_proxy.text.model_text import status_budget_line
from agentrt_proxy.text.record_text import (
    FREES_AT,
    FREES_LIFETIME,
    FREES_NEVER,
    PER_WINDOW,
    QUESTION_CLEAN_CONTEXT,
    QUESTION_OVER_BUDGET,
    REASON_CLEAN_CONTEXT,
    REASON_NO_SPENDING,
    REASON_OVER_BUDGET,
    REASON_OVER_BUDGET_ASK,
    REASON_UNCOVERED_CURRENCY,
    REASON_UNPRICED_BUDGET,
    REASON_UNRESOLVED,
    untrusted_what,
)

OVER_BUDGET_KIND = "over_budget"
CLEAN_CONTEXT_KIND = "clean_context"
UNRESOLVED_KIND = "unresolved_amount"
UNREAD_KIND = "budget_unread"  # the spending could not be read: DENIED, no allowance's end
GUARD_KINDS = (OVER_BUDGET_KIND, CLEAN_CONTEXT_KIND)


@dataclass(frozen=True)
class Ruling:
    """A guard's answer, as the policy's decision carries it (``Ruling(*fields)``)."""

    outcome: str
    reason: str
    kind: str
    capability: Any = None
    presentation: Any = None


Capability = Callable[["OfferedTool", Any], dict[str, Any]]


@dataclass(frozen=True)
class Guards:
    budgets: Budgets
    clean: Mapping[str, str] = field(default_factory=dict)  # registered name -> require_approval | deny
    untrusted_servers: frozenset[str] = frozenset()

    @classmethod
    def from_config(cls, config: Config) -> Guards:
        priced: dict[str, Priced] = {}
        clean: dict[str, str] = {}
        for server in config.servers:
            for remote, rule in server.rules.items():
                name = rule.rename or f"{server.name}_{remote}"
                if rule.amount_field is not None:
                    priced[name] = Priced(rule.amount_field, rule.currency_field)
                if rule.requires_clean_context:
                    clean[name] = rule.clean_context
        untrusted = frozenset(s.name for s in config.servers if s.trust != TRUSTED)
        return cls(Budgets(config.budgets, priced, config.session), clean, untrusted)

    @property
    def active(self) -> bool:
        """Whether any call's decision reads the view's context (else the gate reads none)."""
        return bool(self.budgets.budgets or self.clean)

    # ------------------------------------------------------------------ deciding
    def check(self, tool: OfferedTool, request: ToolRequest, view: RunView, capability: Capability) -> Ruling | None:
        """A guard's refusal or question for this request; None when both let it through."""
        accepted = _accepted(view, request.step_id)
        refusal = self._budget(tool, request, view, accepted, capability)
        if refusal is not None:
            return refusal
        return self._clean(tool, request, view, accepted, capability)

    def granted(self, view: RunView, step_id: str) -> Ruling | None:
        """The guard's grant this step was approved under, as it was asked (its hash matches)."""
        latest = next((a for a in reversed(view.approvals) if a.step_id == step_id), None)
        if latest is None or latest.status != APPROVED or latest.kind not in GUARD_KINDS:
            return None
        presentation = _parse(latest.presentation_json)
        reason = presentation.get("reason", "") if isinstance(presentation, dict) else ""
        return Ruling(REQUIRE_APPROVAL, str(reason), latest.kind, _parse(latest.capability_json), presentation)

    def _budget(
        self, tool: OfferedTool, request: ToolRequest, view: RunView, accepted: set[str], capability: Capability
    ) -> Ruling | None:
        budgets = self.budgets
        if not budgets.covers(tool.name):
            return None
        charge = budgets.charge(tool.name, request.args)
        if charge is None:
            budget = budgets.of_tool(tool.name)[0]
            return Ruling(DENY, REASON_UNPRICED_BUDGET.format(budget=budget.name, name=tool.name), UNRESOLVED_KIND)
        if isinstance(charge, Unresolved):
            return Ruling(DENY, REASON_UNRESOLVED.format(field=charge.field, why=charge.why), UNRESOLVED_KIND)
        covering = budgets.covering(tool.name, charge)
        if not covering:  # a currency no budget of the tool counts: declared, not usable, never free
            field_name = budgets.priced[tool.name].currency_field or ""
            reason = REASON_UNCOVERED_CURRENCY.format(field=field_name, currency=charge.currency, name=tool.name)
            return Ruling(DENY, reason, UNRESOLVED_KIND)
        if OVER_BUDGET_KIND in accepted:
            return None
        context = view.context.get("budgets") if isinstance(view.context, Mapping) else None
        for budget in covering:
            entry = context.get(budget.name) if isinstance(context, Mapping) else None
            used = exact(canonical.Number(entry.get("used", ""))) if isinstance(entry, Mapping) else None
            if used is None or not isinstance(entry, Mapping):
                return Ruling(DENY, REASON_NO_SPENDING.format(budget=budget.name), UNREAD_KIND)
            if used + charge.amount <= budget.limit:
                continue
            if budget.over_budget == REQUIRE_APPROVAL:
                excess = show(used + charge.amount - budget.limit)
                cap = {
                    **capability(tool, request.args),
                    "budget": budget.name,
                    "limit": show(budget.limit),
                    "used": show(used),
                    "amount": show(charge.amount),
                    "exceeds_by": excess,
                }
                reason = REASON_OVER_BUDGET_ASK.format(budget=budget.name, excess=excess)
                question = QUESTION_OVER_BUDGET.format(
                    remote=tool.remote, server=tool.server, budget=budget.name, excess=excess
                )
                return Ruling(
                    REQUIRE_APPROVAL, reason, OVER_BUDGET_KIND, cap, {"question": question, **cap, "reason": reason}
                )
            return Ruling(
                DENY, over_budget_reason(budget, used, charge.amount, entry.get("frees_at")), OVER_BUDGET_KIND
            )
        return None

    def _clean(
        self, tool: OfferedTool, request: ToolRequest, view: RunView, accepted: set[str], capability: Capability
    ) -> Ruling | None:
        outcome = self.clean.get(tool.name)
        if outcome is None or CLEAN_CONTEXT_KIND in accepted:
            return None
        source = view.context.get("untrusted") if isinstance(view.context, Mapping) else None
        if not isinstance(source, Mapping):
            return None
        server = str(source.get("server", ""))
        what = untrusted_what(str(source.get("tool", "")), str(source.get("via", "")))
        reason = REASON_CLEAN_CONTEXT.format(name=tool.name, server=server, what=what)
        if outcome == DENY:
            return Ruling(DENY, reason, CLEAN_CONTEXT_KIND)
        cap = {**capability(tool, request.args), "untrusted": dict(source)}
        question = QUESTION_CLEAN_CONTEXT.format(
            remote=tool.remote, server=tool.server, source_server=server, what=what
        )
        return Ruling(
            REQUIRE_APPROVAL, reason, CLEAN_CONTEXT_KIND, cap, {"question": question, **cap, "reason": reason}
        )


def over_budget_reason(budget: Budget, used: Decimal, amount: Decimal, frees_at: Any) -> str:
    remaining = budget.limit - used  # 100 - 100.00 is 0.00: the places the amounts were written with
    if remaining < 0:  # an approval let the budget be exceeded
        remaining = Decimal(0)
    per = PER_WINDOW.format(window=format_go(budget.window)) if budget.window is not None else ""
    if budget.window is None:
        frees = FREES_LIFETIME
    elif isinstance(frees_at, str) and frees_at:
        frees = FREES_AT.format(at=frees_at)
    else:
        frees = FREES_NEVER
    return REASON_OVER_BUDGET.format(
        budget=budget.name,
        remaining=show(remaining),
        limit=show(budget.limit),
        per=per,
        amount=show(amount),
        frees=frees,
    )


def budget_status_lines(budgets: Budgets, store: Store, tool: str, now_ns: int) -> list[str]:
    """The status tool's words for each budget covering ``tool``: what remains in its window now."""
    lines = []
    for budget, spending in budgets.remaining(store, tool, now_ns):
        remaining = budget.limit - spending.used
        per = PER_WINDOW.format(window=format_go(budget.window)) if budget.window is not None else ""
        shown = show(remaining if remaining >= 0 else Decimal(0))
        lines.append(status_budget_line(budget.name, shown, show(budget.limit), per))
    return lines


def _accepted(view: RunView, step_id: str) -> set[str]:
    return {a.kind for a in view.approvals if a.step_id == step_id and a.status == APPROVED and a.kind in GUARD_KINDS}


def _parse(text: str) -> Any:
    try:
        return canonical.parse_strict(text or "{}")
    except canonical.JSONBoundaryError:
        return {}
