"""The configuration's budgets, amount fields, trust and clean-context rule (issue 16): strict,
each refusal naming its field, and covered by the policy identity."""

from __future__ import annotations

import copy
import json
import os
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from agentrt_proxy.config import ConfigError, load_config

BASE: dict[str, Any] = {
    "database": "runs.db",
    "session": "s",
    "servers": [
        {
            "name": "bank",
            "command": ["x"],
            "manifest": "m.json",
            "rules": {
                "pay": {"side_effect": "remote_mutation", "amount_field": "/payment/amount"},
                "balance": {"side_effect": "read_only"},
            },
        }
    ],
    "budgets": [{"name": "daily", "tools": ["bank_pay"], "limit": 100, "window": "24h"}],
}


def load(tmp_path: Path, text: str) -> Any:
    path = tmp_path / "proxy.json"
    path.write_text(text)
    os.chmod(path, 0o600)
    return load_config(path)


def changed(change: Any) -> str:
    value = copy.deepcopy(BASE)
    change(value)
    return json.dumps(value)


def pay_rule(value: dict[str, Any]) -> dict[str, Any]:
    rule: dict[str, Any] = value["servers"][0]["rules"]["pay"]
    return rule


def test_a_budget_loads_with_an_exact_limit_its_window_and_the_tools_it_covers(tmp_path: Path) -> None:
    loaded = load(tmp_path, changed(lambda v: v["budgets"][0].update(limit=1e2)).replace("100.0", "1e2"))
    (budget,) = loaded.budgets
    assert budget.limit == Decimal(100) and budget.tools == ("bank_pay",) and budget.window == 24 * 3600 * 10**9
    assert loaded.servers[0].rules["pay"].amount_field == "/payment/amount"
    assert loaded.servers[0].trust == "untrusted"


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda v: v["budgets"][0].update(tools=["bank_wire"]), '"bank_wire" is not a registered tool name'),
        (lambda v: v["budgets"][0].update(limit=-1), "limit -1 is negative"),
        (lambda v: v["budgets"][0].update(limit="100"), "limit must be a JSON number"),
        (lambda v: v["budgets"][0].update(window="a day"), 'budget "daily": window'),
        (lambda v: v["budgets"][0].update(window="0s"), "must be longer than zero"),
        (lambda v: v["budgets"][0].update(over_budget="ask"), 'over_budget "ask" is not deny or require_approval'),
        (lambda v: v["budgets"][0].update(cap=1), 'unknown field "cap" in budgets[0]'),
        (lambda v: v["budgets"][0].update(currency="EUR"), "declares no currency_field"),
        (lambda v: v["budgets"][0].update(currency="EUR "), 'currency "EUR " is not a currency code'),
        (lambda v: v["budgets"][0].update(currency="\u0415UR"), "is not a currency code (ISO 4217"),
        (lambda v: v["budgets"][0].update(currency="E\u200bUR"), 'currency "E\\u200bUR" is not a currency code'),
        (lambda v: v["budgets"][0].update(currency=""), 'budget "daily": currency "" is not a currency code'),
        (lambda v: v["budgets"].append(dict(v["budgets"][0])), 'the name "daily" is used twice'),
        (lambda v: pay_rule(v).update(amount_field="/a/~2b"), "is not a JSON Pointer"),
        (lambda v: pay_rule(v).update(amount_field=""), "amount_field must not be empty"),
        (lambda v: pay_rule(v).update(clean_context="deny"), "clean_context applies only with"),
        (
            lambda v: pay_rule(v).update(requires_clean_context=True, clean_context="ask"),
            'clean_context "ask" is not require_approval or deny',
        ),
        (lambda v: v["servers"][0].update(trust="yes"), 'trust "yes" is not trusted or untrusted'),
    ],
)
def test_a_malformed_budget_field_is_a_configuration_error_naming_the_field(
    tmp_path: Path, change: Any, message: str
) -> None:
    with pytest.raises(ConfigError) as raised:
        load(tmp_path, changed(change))
    assert message in str(raised.value)


@pytest.mark.parametrize(
    "change",
    [
        lambda v: v["budgets"][0].update(limit=99),
        lambda v: v["budgets"][0].update(window="12h"),
        lambda v: v["budgets"][0].update(over_budget="require_approval"),
        lambda v: v["budgets"][0].update(tools=["bank_balance"]),
        lambda v: pay_rule(v).update(amount_field="amount"),
        lambda v: pay_rule(v).update(currency_field="currency"),
        lambda v: pay_rule(v).update(requires_clean_context=True),
        lambda v: v["servers"][0].update(trust="trusted"),
        lambda v: v.pop("budgets"),
    ],
)
def test_the_policy_identity_covers_budgets_amount_fields_trust_and_clean_context(tmp_path: Path, change: Any) -> None:
    before = load(tmp_path, json.dumps(BASE)).policy_id()
    assert load(tmp_path, changed(change)).policy_id() != before


def test_a_budget_currency_in_any_case_is_its_upper_case_iso_code(tmp_path: Path) -> None:
    def lower(v: Any) -> None:
        v["budgets"][0].update(currency="eur")
        pay_rule(v).update(currency_field="currency")

    (budget,) = load(tmp_path, changed(lower)).budgets
    assert budget.currency == "EUR"


def test_a_configuration_without_the_new_fields_keeps_its_policy_identity(tmp_path: Path) -> None:
    plain = copy.deepcopy(BASE)
    plain.pop("budgets")
    pay_rule(plain).pop("amount_field")
    loaded = load(tmp_path, json.dumps(plain))
    assert set(loaded.policy_identity()) == {"policy", "servers"}
    assert loaded.policy_identity()["servers"][0] == {
        "name": "bank",
        "rules": {"balance": {"side_effect": "read_only"}, "pay": {"side_effect": "remote_mutation"}},
    }
