"""Spending budgets through the proxy in-process (issue 16, docs/decisions/0017), counted in the
fake bank's ledger: a budget of 100.00 over 24 h, exact decimal amounts, unresolved amounts
refused, the window freed by an injected clock, an unknown outcome's reservation kept until an
operator decides, and a payment waiting on an approval checked again when it is collected.
"""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from agentrt_proxy.store import Store
from agentrt_proxy.text import model_text
from tests.harness import DEFAULT_RULES, Harness, is_error, proxy_harness, text_of

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(120)]

PRICED_PAY: dict[str, Any] = {
    **DEFAULT_RULES,
    "pay": {"side_effect": "remote_mutation", "timeout": "10s", "outcome": "allow", "amount_field": "amount"},
    "refund": {"side_effect": "remote_mutation", "timeout": "10s", "outcome": "allow", "amount_field": "/amount"},
}
DAILY = [{"name": "daily", "tools": ["bank_pay", "bank_refund"], "limit": 100, "window": "24h"}]


def pay(to: str, amount: str, extra: str = "") -> str:
    return '{"to":"' + to + '","amount":' + amount + extra + "}"


def spent(h: Harness) -> dict[str, Decimal]:
    """The budget rows by state, summed exactly."""
    store = Store.open(str(h.config.database))
    try:
        rows = store._db.conn.execute("SELECT state, amount FROM budget_holds").fetchall()
    finally:
        store.close()
    out: dict[str, Decimal] = {}
    for state, amount in rows:
        out[state] = out.get(state, Decimal(0)) + Decimal(amount)
    return out


async def test_a_budget_of_100_lets_60_and_40_through_and_refuses_a_cent_more_until_the_window_frees(
    tmp_path: Path,
) -> None:
    async with proxy_harness(tmp_path, rules=PRICED_PAY, budgets=DAILY) as h:
        assert not is_error(await h.raw_call("bank_pay", pay("ann", "60.00")))
        assert not is_error(await h.raw_call("bank_pay", pay("bob", "40.00")))
        refused = await h.raw_call("bank_pay", pay("cy", "0.01"))
        assert h.payments() == 2
        text = text_of(refused)
        assert refused["isError"] is True and text.startswith(model_text.OVER_BUDGET + ":")
        assert refused["_meta"] == {"gate/outcome": "OVER_BUDGET"}
        assert 'budget "daily" has 0.00 left of 100 per 24h0m0s' in text
        assert "enough frees up at" in text
        h.clock.advance(24 * 3600 + 1)
        assert not is_error(await h.raw_call("bank_pay", pay("cy", "0.01")))
        assert h.payments() == 3
        assert spent(h) == {"spent": Decimal("100.01")}


async def test_an_amount_written_as_a_string_or_missing_is_refused_as_unresolved_and_pays_nothing(
    tmp_path: Path,
) -> None:
    async with proxy_harness(tmp_path, rules=PRICED_PAY, budgets=DAILY) as h:
        as_string = await h.raw_call("bank_pay", pay("ann", '"12"'))
        assert is_error(as_string)  # the pinned schema wants a number: refused before it is priced
        # refund's schema lets any property through: the budget's own refusal answers
        string_amount = await h.raw_call("bank_refund", '{"payment":"p1","amount":"12"}')
        missing = await h.raw_call("bank_refund", '{"payment":"p1"}')
        negative = await h.raw_call("bank_refund", '{"payment":"p1","amount":-1}')
        for result, why in ((string_amount, "not a JSON number"), (missing, "absent"), (negative, "negative")):
            assert text_of(result).startswith(model_text.DENIED + ":"), text_of(result)
            assert f'the field "/amount" is {why}' in text_of(result)
        assert h.payments() == 0
        assert spent(h) == {}
        started = [e for run in h.runs() for e in h.events(run.id) if e == "step.tool_started"]
        assert started == []


async def test_1e2_spends_exactly_100_and_0_1_plus_0_2_is_exactly_0_3(tmp_path: Path) -> None:
    budgets = [{"name": "daily", "tools": ["bank_pay"], "limit": 100.3, "window": "24h"}]
    async with proxy_harness(tmp_path, rules=PRICED_PAY, budgets=budgets) as h:
        assert not is_error(await h.raw_call("bank_pay", pay("ann", "1e2")))
        assert not is_error(await h.raw_call("bank_pay", pay("bob", "0.1")))
        assert not is_error(await h.raw_call("bank_pay", pay("cy", "0.2")))
        assert spent(h) == {"spent": Decimal("100.3")}
        refused = await h.raw_call("bank_pay", pay("dee", "0.000001"))
        assert text_of(refused).startswith(model_text.OVER_BUDGET + ":")
        assert "has 0.0 left of 100.3" in text_of(refused)
        assert h.payments() == 3


async def test_a_budget_over_an_unpriced_tool_refuses_every_call_and_says_so_loudly(tmp_path: Path) -> None:
    rules = {**PRICED_PAY, "pay": {"side_effect": "remote_mutation", "timeout": "10s", "outcome": "allow"}}
    async with proxy_harness(tmp_path, rules=rules, budgets=DAILY) as h:
        refused = await h.raw_call("bank_pay", pay("ann", "1"))
        assert text_of(refused).startswith(model_text.DENIED + ":")
        assert "declares no amount field" in text_of(refused)
        assert h.payments() == 0
        loud = [line for line in h.stderr if "bank_pay" in line and '"amount_field"' in line]
        assert len(loud) == 1, h.stderr


async def test_a_known_failure_releases_its_reservation(tmp_path: Path) -> None:
    async with proxy_harness(tmp_path, rules=PRICED_PAY, budgets=DAILY) as h:
        declined = await h.raw_call("bank_pay", pay("ann", "90", ',"mode":"error"'))
        assert is_error(declined)
        assert spent(h) == {"released": Decimal(90)}
        assert not is_error(await h.raw_call("bank_pay", pay("bob", "100")))  # the 90 is free again
        assert spent(h) == {"released": Decimal(90), "spent": Decimal(100)}


async def test_a_payment_waiting_on_an_approval_reserves_nothing_and_is_checked_again_when_collected(
    tmp_path: Path,
) -> None:
    rules = {**PRICED_PAY, "pay": {"side_effect": "remote_mutation", "timeout": "10s", "amount_field": "amount"}}
    async with proxy_harness(tmp_path, rules=rules, budgets=DAILY) as h:
        first = await h.raw_call("bank_pay", pay("ann", "70"))
        second = await h.raw_call("bank_pay", pay("bob", "70"))
        assert text_of(first).startswith("PENDING_APPROVAL") and text_of(second).startswith("PENDING_APPROVAL")
        assert spent(h) == {}
        for approval in h.pending():
            h.approve(approval.id)
        assert not is_error(await h.raw_call("bank_pay", pay("ann", "70")))
        again = await h.raw_call("bank_pay", pay("bob", "70"))
        assert text_of(again).startswith(model_text.OVER_BUDGET + ":"), text_of(again)
        assert h.payments() == 1
        assert spent(h) == {"spent": Decimal(70)}


async def test_over_budget_may_ask_the_operator_naming_the_budget_and_the_excess(tmp_path: Path) -> None:
    budgets = [{**DAILY[0], "over_budget": "require_approval"}]
    async with proxy_harness(tmp_path, rules=PRICED_PAY, budgets=budgets) as h:
        assert not is_error(await h.raw_call("bank_pay", pay("ann", "80")))
        asked = await h.raw_call("bank_pay", pay("bob", "30"))
        assert text_of(asked).startswith("PENDING_APPROVAL")
        (approval,) = h.pending()
        presentation = json.loads(approval.presentation_json)
        assert approval.kind == "over_budget"
        assert presentation["budget"] == "daily" and presentation["exceeds_by"] == "10"
        assert "exceeds budget daily by 10" in presentation["question"]
        h.approve(approval.id)
        assert not is_error(await h.raw_call("bank_pay", pay("bob", "30")))
        assert h.payments() == 2
        assert spent(h) == {"spent": Decimal(110)}


TIMEOUT_PAY: dict[str, Any] = {
    **PRICED_PAY,
    "pay": {"side_effect": "remote_mutation", "timeout": "300ms", "outcome": "allow", "amount_field": "amount"},
}
FIFTY_BLOCKED = pay("kim", "50.00", ',"mode":"block"')


async def test_an_unknown_outcome_keeps_its_amount_spent_and_an_approved_re_run_spends_it_once(
    tmp_path: Path,
) -> None:
    async with proxy_harness(tmp_path, rules=TIMEOUT_PAY, budgets=DAILY) as h:
        unknown = await h.raw_call("bank_pay", FIFTY_BLOCKED)
        assert text_of(unknown).startswith("UNKNOWN_OUTCOME"), text_of(unknown)
        assert spent(h) == {"reserved": Decimal("50.00")}
        # bank_pay is BLOCKED until an operator decides; another tool of the budget finds 50.00 taken
        refused = await h.raw_call("bank_refund", '{"payment":"p1","amount":60}')
        assert text_of(refused).startswith(model_text.OVER_BUDGET + ":"), text_of(refused)
        (approval,) = h.pending()
        (h.directory / "ledger.release").write_text("")
        h.approve(approval.id)
        assert not is_error(await h.raw_call("bank_pay", FIFTY_BLOCKED))
        assert h.payments() == 2  # the attempt that timed out took effect, and the re-run
        assert spent(h) == {"spent": Decimal("50.00")}


async def test_a_rejected_unknown_outcome_keeps_its_amount_spent_until_the_operator_releases_it(
    tmp_path: Path,
) -> None:
    from agentrt_proxy.gate import budget_release

    async with proxy_harness(tmp_path, rules=TIMEOUT_PAY, budgets=DAILY) as h:
        await h.raw_call("bank_pay", FIFTY_BLOCKED)
        assert spent(h) == {"reserved": Decimal("50.00")}
        (approval,) = h.pending()
        h.reject(approval.id)
        assert spent(h) == {"spent": Decimal("50.00")}  # the payment may have happened: it counts
        (h.directory / "ledger.release").write_text("")
        refused = await h.raw_call("bank_pay", pay("lee", "100"))
        assert text_of(refused).startswith(model_text.OVER_BUDGET + ":"), text_of(refused)
        assert h.payments() == 1
        store = Store.open(str(h.config.database))
        try:
            budget_release.release(store, approval.run_id, "tester", "the bank says it never went through")
        finally:
            store.close()
        assert not is_error(await h.raw_call("bank_pay", pay("lee", "100")))
        assert spent(h) == {"released": Decimal("50.00"), "spent": Decimal(100)}


CLEAN_PAY: dict[str, Any] = {
    **DEFAULT_RULES,
    "pay": {"side_effect": "remote_mutation", "timeout": "10s", "outcome": "allow", "requires_clean_context": True},
}


async def test_after_an_untrusted_read_a_clean_context_payment_waits_for_an_approval_naming_the_read(
    tmp_path: Path,
) -> None:
    async with proxy_harness(tmp_path, rules=CLEAN_PAY) as h:
        read = await h.raw_call("bank_balance", '{"account":"ann"}')
        assert not is_error(read)
        assert read["_meta"]["gate/untrusted"] is True
        (read_run,) = h.runs()
        waits = await h.raw_call("bank_pay", pay("ann", "5"))
        assert text_of(waits).startswith("PENDING_APPROVAL"), text_of(waits)
        assert h.payments() == 0
        (approval,) = h.pending()
        presentation = json.loads(approval.presentation_json)
        assert approval.kind == "clean_context"
        assert presentation["untrusted"] == {"server": "bank", "tool": "bank_balance", "run_id": read_run.id}
        assert "untrusted content from server bank (tool bank_balance)" in presentation["question"]
        policy = [e for e in _events(h, approval.run_id) if e["type"] == "step.policy"]
        assert policy[-1]["payload"]["capability"]["untrusted"]["run_id"] == read_run.id
        h.approve(approval.id)
        assert not is_error(await h.raw_call("bank_pay", pay("ann", "5")))
        assert h.payments() == 1


async def test_in_a_fresh_proxy_with_no_untrusted_read_the_same_payment_runs_on_allow(tmp_path: Path) -> None:
    async with proxy_harness(tmp_path, rules=CLEAN_PAY) as h:
        paid = await h.raw_call("bank_pay", pay("ann", "5"))
        assert not is_error(paid) and h.pending() == []
        assert h.payments() == 1


async def test_clean_context_deny_refuses_after_an_untrusted_read_and_a_trusted_server_taints_nothing(
    tmp_path: Path,
) -> None:
    rules = {**CLEAN_PAY, "pay": {**CLEAN_PAY["pay"], "clean_context": "deny"}}
    async with proxy_harness(tmp_path, rules=rules) as h:
        await h.raw_call("bank_balance", '{"account":"ann"}')
        refused = await h.raw_call("bank_pay", pay("ann", "5"))
        assert text_of(refused).startswith("DENIED:") and "untrusted server bank" in text_of(refused)
        assert h.payments() == 0
    trusted = tmp_path / "trusted"
    trusted.mkdir()
    async with proxy_harness(trusted, rules=rules, server_extra={"trust": "trusted"}) as h:
        read = await h.raw_call("bank_balance", '{"account":"ann"}')
        assert "gate/untrusted" not in read.get("_meta", {})
        assert not is_error(await h.raw_call("bank_pay", pay("ann", "5")))
        assert h.payments() == 1


def _events(h: Harness, run_id: str) -> list[dict[str, Any]]:
    store = h.store()
    try:
        events = store.events_of(run_id, 0, 1000)
        return [{"type": e.type, "payload": json.loads(e.payload_json or "null")} for e in events]
    finally:
        store.close()


async def test_the_status_tool_answers_what_remains_of_the_budgets_covering_a_tool(tmp_path: Path) -> None:
    async with proxy_harness(tmp_path, rules=PRICED_PAY, budgets=DAILY) as h:
        await h.raw_call("bank_pay", pay("ann", "60.00"))
        answer = await h.raw_call("gate_status", '{"tool":"bank_pay"}')
        assert answer["isError"] is False
        assert text_of(answer) == 'GATE_STATUS: tool bank_pay: budget "daily" has 40.00 of 100 left per 24h0m0s.'
        none = await h.raw_call("gate_status", '{"tool":"bank_balance"}')
        assert text_of(none) == "GATE_STATUS: no spending budget covers tool bank_balance."


async def test_recheck_rebuilds_budget_decisions_from_the_spending_recorded_with_them(tmp_path: Path) -> None:
    from agentrt_proxy.cli._recheck_engine import recheck_run
    from agentrt_proxy.config import load_config
    from agentrt_proxy.gate import ProxyPolicy
    from tests.harness import write_config

    async with proxy_harness(tmp_path, rules=PRICED_PAY, budgets=DAILY) as h:
        await h.raw_call("bank_pay", pay("ann", "60.00"))
        await h.raw_call("bank_pay", pay("bob", "40.00"))
        refused = await h.raw_call("bank_pay", pay("cy", "0.01"))
        assert text_of(refused).startswith("OVER_BUDGET")
        runs = [run.id for run in sorted(h.runs(), key=lambda r: r.created_at)]

    def recheck(limit: int) -> list[list[str]]:
        other = tmp_path / f"limit{limit}"
        other.mkdir(exist_ok=True)
        config = load_config(write_config(other, rules=PRICED_PAY, budgets=[{**DAILY[0], "limit": limit}]))
        store = Store.open_readonly(str(h.config.database))
        try:
            policy = ProxyPolicy.from_config(config)
            return [[e.result for e in recheck_run(store, run_id, policy).evaluations] for run_id in runs]
        finally:
            store.close()

    assert recheck(100) == [["same"], ["same"], ["same"]]
    # With a limit of 200 the refusal would have paid; a limit of 50 would have refused the 40.00
    assert recheck(200) == [["same"], ["same"], ["different"]]
    assert recheck(50) == [["different"], ["different"], ["same"]]
