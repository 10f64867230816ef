"""Budgets across real proxy processes (issue 16, docs/decisions/0017): two proxies on one
session racing against one budget, and an unknown outcome's reservation kept until the real
``approve`` or ``reject`` command decides it (``reject`` keeps it spent; ``budget release``
frees it). Effects are counted in the fake bank's ledger; the reservations are read from the
database opened read-only.
"""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.conftest import run_program
from tests.harness import is_error, text_of
from tests.program.test_serve_process import ALLOW_PAY, Host, World, proxy, world

pytestmark = [pytest.mark.program, pytest.mark.anyio, pytest.mark.timeout(120)]

PRICED = {**ALLOW_PAY, "amount_field": "amount"}
BUDGET = [{"name": "daily", "tools": ["bank_pay"], "limit": 100, "window": "24h"}]


def holds(w: World) -> dict[str, Decimal]:
    """The budget's rows by state, summed exactly."""
    with w.store() as store:
        rows = store.holds.live("laptop", "daily", 0)  # reserved and spent: what the budget counts
    out: dict[str, Decimal] = {}
    for row in rows:
        out[row.state] = out.get(row.state, Decimal(0)) + Decimal(row.amount)
    return out


async def test_two_proxies_racing_50_payments_of_10_against_100_pay_exactly_10(
    tmp_path: Path, program_argv: list[str], program_env: dict[str, str]
) -> None:
    async with (
        world(tmp_path, program_argv, program_env, pay=PRICED, budgets=BUDGET) as w,
        proxy(w, "a") as a,
        proxy(w, "b") as b,
    ):
        answers: list[Any] = []

        async def pay(host: Host, i: int) -> None:
            answers.append(await host.call("bank_pay", {"to": f"p{i}", "amount": 10.00}))

        async with anyio.create_task_group() as tg:
            for i in range(50):
                tg.start_soon(pay, a if i % 2 else b, i)
        paid = [r for r in answers if not is_error(r)]
        refused = [r for r in answers if text_of(r).startswith("OVER_BUDGET:")]
        assert w.payments() == 10
        assert len(paid) == 10 and len(refused) == 40, sorted({text_of(r)[:40] for r in answers})
        assert holds(w) == {"spent": Decimal(100)}


async def _unknown_fifty(w: World, host: Host) -> Any:
    answer = await host.call("bank_pay", {"to": "kim", "amount": 50.00, "mode": "block"})
    assert text_of(answer).startswith("UNKNOWN_OUTCOME"), text_of(answer)
    assert w.payments() == 1
    assert holds(w) == {"reserved": Decimal(50)}
    [approval] = w.pending()
    return approval


TIMEOUT_PRICED = {**PRICED, "timeout": "300ms"}


async def test_an_unknown_outcome_of_50_stays_spent_until_approve_re_runs_it_once(
    tmp_path: Path, program_argv: list[str], program_env: dict[str, str]
) -> None:
    async with (
        world(tmp_path, program_argv, program_env, pay=TIMEOUT_PRICED, budgets=BUDGET) as w,
        proxy(w) as host,
    ):
        approval = await _unknown_fifty(w, host)
        shown = run_program(["show", "-db", w.db, approval.run_id], timeout=30)
        assert "budget daily: 0 spent, 50.0 reserved" in shown.stdout, shown.stdout
        shown_json = json.loads(run_program(["show", "-db", w.db, approval.run_id, "-json"], timeout=30).stdout)
        assert shown_json["budgets"] == [{"budget": "daily", "spent": "0", "reserved": "50.0"}]
        w.release()
        await w.approve(approval)
        again = await host.call("bank_pay", {"to": "kim", "amount": 50.00, "mode": "block"})
        assert not is_error(again), text_of(again)
        assert w.payments() == 2
        assert holds(w) == {"spent": Decimal(50)}
        listed = run_program(["runs", "-db", w.db], timeout=30)
        assert "budget daily: 50.0 spent, 0 reserved" in listed.stdout, listed.stdout
        listed_json = json.loads(run_program(["runs", "-db", w.db, "-json"], timeout=30).stdout)
        assert listed_json["budgets"] == [{"budget": "daily", "spent": "50.0", "reserved": "0"}]


async def test_an_unknown_outcome_of_50_is_kept_by_reject_and_released_by_budget_release(
    tmp_path: Path, program_argv: list[str], program_env: dict[str, str]
) -> None:
    async with (
        world(tmp_path, program_argv, program_env, pay=TIMEOUT_PRICED, budgets=BUDGET) as w,
        proxy(w) as host,
    ):
        approval = await _unknown_fifty(w, host)
        await w.reject(approval, "not again")
        assert holds(w) == {"spent": Decimal(50)}  # it may have been paid (it was: the ledger holds it)
        w.release()
        released = run_program(
            ["budget", "release", "-db", w.db, approval.run_id, "-by", "tester", "-note", "refunded"], timeout=30
        )
        assert released.returncode == 0, released.stderr
        assert holds(w) == {}  # released rows count for nothing
        full = await host.call("bank_pay", {"to": "lee", "amount": 100})
        assert not is_error(full), text_of(full)
        assert holds(w) == {"spent": Decimal(100)}
