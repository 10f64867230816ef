"""Side-effect classes, DefaultPolicy, the proxy's policy, and the approval hash's inputs."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from agentrt_proxy import canonical
from agentrt_proxy.gate import (
    Attempt,
    ProxyPolicy,
    RunView,
    SideEffectPolicy,
    ToolRequest,
    approval_hash,
    default_policy,
)
from agentrt_proxy.store import Run
from agentrt_proxy.upstream import ToolSpec
from tests.gate_fixtures import SCHEMA, offered

SPEC = ToolSpec("bank_pay", "pay someone", SCHEMA, "remote_mutation", 5_000_000_000, True)
ARGS = canonical.parse_strict('{"to":"bob","amount":25}')
RUN = Run("s.1", "g", "RUNNING", "", "", "{}", 1, "t", "t", "", "", 0, 0, 0, 0, 0, 0, "", "")
VIEW = RunView(RUN, [], [])


def request(spec: ToolSpec = SPEC, args: Any = ARGS) -> ToolRequest:
    return ToolRequest("s.1", "step1", spec, args)


def test_the_default_policy_allows_reads_and_local_changes_asks_for_remote_and_denies_destruction() -> None:
    assert default_policy() == {"read_only": "allow", "local_mutation": "allow",
                                "remote_mutation": "require_approval", "destructive": "deny"}
    d = SideEffectPolicy().evaluate(request(), VIEW)
    assert (d.outcome, d.kind, d.reason) == ("require_approval", "remote_mutation",
                                             "side effect remote_mutation is require_approval by policy")
    assert d.capability == {"args": ARGS, "tool": "bank_pay"} == d.presentation


def test_a_class_missing_from_the_map_is_denied() -> None:
    d = SideEffectPolicy({}).evaluate(request(), VIEW)
    assert (d.outcome, d.reason) == ("deny", 'no policy for side effect "remote_mutation"')


def test_the_operators_rule_outcome_overrides_the_class() -> None:
    d = ProxyPolicy({}, offered(outcome="allow"), "p").evaluate(request(), VIEW)
    assert (d.outcome, d.reason) == ("allow", "tool bank_pay is allow by the operator's rule")


def test_a_tool_not_offered_is_denied() -> None:
    d = ProxyPolicy({}, {}, "p").evaluate(request(), VIEW)
    assert (d.outcome, d.reason) == ("deny", 'tool "bank_pay" is not offered')


def test_an_ordinary_approval_binds_server_tool_name_class_args_and_fixed_values() -> None:
    d = ProxyPolicy({}, offered({"currency": "EUR"}), "p").evaluate(request(), VIEW)
    assert d.kind == "remote_mutation"
    assert d.capability == {"server": "bank", "tool": "pay", "name": "bank_pay", "side_effect": "remote_mutation",
                            "args": ARGS, "fixed": {"currency": "EUR"}}
    assert d.presentation["question"] == "May the model call pay on server bank with these arguments?"
    assert d.presentation["reason"] == d.reason and "notice" not in d.presentation


def test_a_rerun_asks_an_interruption_approval_whatever_the_policy_short_of_deny() -> None:
    policy = ProxyPolicy({"remote_mutation": "allow"}, offered(), "p")
    attempt = Attempt("s.0", "step0", "2026-10-01T09:00:01.5Z", "timed_out")
    policy.mark_rerun("s.1", attempt)
    d = policy.evaluate(request(), VIEW)
    assert d.kind == "interrupted_side_effect" and d.reason == "interrupted while executing; outcome unknown"
    assert d.capability["interrupted"] == attempt.tree()
    assert d.presentation["question"] == "Run pay on server bank again with these arguments?"
    assert "started at 2026-10-01T09:00:01.5Z in run s.0" in d.presentation["notice"]


def test_deny_beats_a_rerun() -> None:
    policy = ProxyPolicy({"remote_mutation": "deny"}, offered(), "p")
    policy.mark_rerun("s.1", Attempt("s.0", "step0", "t", "no_answer"))
    assert policy.evaluate(request(), VIEW).outcome == "deny"


def test_the_policy_reports_the_configurations_identity() -> None:
    assert ProxyPolicy({}, {}, "agentrt-proxy/sha256:abc").policy_id() == "agentrt-proxy/sha256:abc"


# --------------------------------------------------------------------------- the approval hash

BASE = dict(kind="remote_mutation", capability={"a": "1"}, presentation={"q": "x"}, request=request().tree())


def _hash(**changes: Any) -> str:
    return approval_hash(**{**BASE, **changes})


@pytest.mark.parametrize("change", [
    {"kind": "destructive"},
    {"capability": {"a": "2"}},
    {"presentation": {"q": "y"}},
    {"request": ToolRequest("s.2", "step1", SPEC, ARGS).tree()},
    {"request": ToolRequest("s.1", "step2", SPEC, ARGS).tree()},
    {"request": request(replace(SPEC, name="bank_pay2")).tree()},
    {"request": request(replace(SPEC, description="pay")).tree()},
    {"request": request(replace(SPEC, input_schema=canonical.parse_strict('{"type":"object"}'))).tree()},
    {"request": request(replace(SPEC, side_effect="destructive")).tree()},
    {"request": request(replace(SPEC, timeout=6_000_000_000)).tree()},
    {"request": request(replace(SPEC, terminal=False)).tree()},
    {"request": request(args=canonical.parse_strict('{"to":"bob","amount":25.0}')).tree()},
], ids=["kind", "capability", "presentation", "run_id", "step_id", "name", "description", "input_schema",
        "side_effect", "timeout", "terminal", "args"])
def test_each_hashed_input_changes_the_approval_hash(change: dict[str, Any]) -> None:
    assert _hash(**change) != _hash()


def test_key_order_and_whitespace_do_not_change_the_approval_hash() -> None:
    same = request(args=canonical.parse_strict('{ "amount": 25, "to": "bob" }')).tree()
    assert _hash(request=same) == _hash()


@pytest.mark.parametrize(
    ("classes", "guards", "simply_allowed"),
    [
        # the default policy: reads and local changes run, remote ones ask, destruction is refused
        ({}, None, {"bank_balance", "bank_note"}),
        ({"remote_mutation": "allow"}, None, {"bank_balance", "bank_note", "bank_pay"}),
        ({"read_only": "require_approval"}, None, {"bank_note"}),
        # a budget or the clean-context rule over an allowed tool can ask or refuse: not simply allowed
        ({"remote_mutation": "allow"}, "budget", {"bank_balance", "bank_note"}),
        ({}, "clean", {"bank_balance"}),
    ],
)
def test_a_tool_is_simply_allowed_only_when_nothing_can_answer_it_in_the_proxys_prose(
    classes: dict[str, str], guards: str | None, simply_allowed: set[str]
) -> None:
    from decimal import Decimal

    from agentrt_proxy.config import Budget
    from agentrt_proxy.gate.budgets import Budgets, Priced
    from agentrt_proxy.gate.guards import Guards

    active = None
    if guards == "budget":
        active = Guards(Budgets([Budget("daily", ("bank_pay",), Decimal(10))], {"bank_pay": Priced("amount")}, "s"))
    elif guards == "clean":
        active = Guards(Budgets([], {}, "s"), {"bank_note": "require_approval"})
    policy = ProxyPolicy(classes, offered(), "p", active)
    assert {name for name in offered() if policy.simply_allows(name)} == simply_allowed
    assert not policy.simply_allows("not_offered")
