"""Budgets held against someone trying (issue 22, items 1, 2 and 4), through the real program.

Each attack is a host (the SDK client) driving ``serve`` over pipes, with the operator's real
commands; the effects are counted in the fake bank's ledger (every payment it was asked to make,
with its amount) and in ``budget_holds`` read from the database opened read-only. The ledger
never pays past a budget's limit, except where the operator's own ``budget release`` says a
payment that happened did not (the release test, which counts that release as the operator's).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from decimal import Decimal
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.conftest import run_program
from tests.harness import is_error, text_of
from tests.program.test_serve_process import Host, World, prefix, proxy, world

pytestmark = [pytest.mark.program, pytest.mark.anyio, pytest.mark.timeout(300)]

PRICED = {"outcome": "allow", "amount_field": "amount"}
TIMEOUT_PRICED = {**PRICED, "timeout": "300ms"}
BUDGET = [{"name": "daily", "tools": ["bank_pay"], "limit": 100, "window": "24h"}]
LIMIT = Decimal(100)


@asynccontextmanager
async def one_proxy(
    tmp_path: Path, argv: list[str], env: dict[str, str], pay: dict[str, Any], budgets: list[dict[str, Any]]
) -> AsyncIterator[tuple[World, Host]]:
    """A world whose ``bank_pay`` rule is ``pay``, under ``budgets``, and one proxy serving it."""
    async with world(tmp_path, argv, env, pay=pay, budgets=budgets) as w, proxy(w) as host:
        yield w, host


def ledger_total(w: World) -> Decimal:
    """What the bank was asked to pay, summed exactly from its ledger's lines."""
    if not w.ledger.exists():
        return Decimal(0)
    return sum(
        (Decimal(str(json.loads(line, parse_float=Decimal)["amount"])) for line in w.ledger.read_text().splitlines()),
        Decimal(0),
    )


def holds(w: World) -> dict[str, Decimal]:
    """Every budget row by state, summed exactly (released rows included)."""
    with w.store() as store:
        rows = store.holds.every()
    out: dict[str, Decimal] = {}
    for row in rows:
        out[row.state] = out.get(row.state, Decimal(0)) + Decimal(row.amount)
    return out


async def unknown_sixty(w: World, host: Host) -> Any:
    """A payment of 60 the bank takes and never answers in time: its outcome is unknown."""
    answer = await host.call("bank_pay", {"to": "kim", "amount": 60, "mode": "block"})
    assert text_of(answer).startswith("UNKNOWN_OUTCOME"), text_of(answer)
    assert holds(w) == {"reserved": Decimal(60)}
    [approval] = w.pending()
    return approval


async def sixty_kept_and_the_next_sixty_refused(w: World, host: Host) -> None:
    assert holds(w) == {"spent": Decimal(60)}
    second = await host.call("bank_pay", {"to": "lee", "amount": 60})
    assert prefix(second) == "OVER_BUDGET", text_of(second)
    assert w.payments() == 1 and ledger_total(w) == Decimal(60) <= LIMIT


async def test_rejecting_the_run_again_question_after_an_unknown_payment_keeps_its_60_spent(
    tmp_path: Path, program_argv: list[str], program_env: dict[str, str]
) -> None:
    async with one_proxy(tmp_path, program_argv, program_env, TIMEOUT_PRICED, BUDGET) as (w, host):
        approval = await unknown_sixty(w, host)
        w.release()
        await w.reject(approval, "the bank says it went through")  # the README's own demo
        await sixty_kept_and_the_next_sixty_refused(w, host)


async def test_an_unrecorded_payment_of_60_stays_spent_and_the_next_60_is_refused(
    tmp_path: Path, program_argv: list[str], program_env: dict[str, str]
) -> None:
    async with one_proxy(tmp_path, program_argv, program_env, PRICED, BUDGET) as (w, host):
        deep = await host.call("bank_pay", {"to": "max", "amount": 60, "mode": "deep"})
        assert prefix(deep) == "UNRECORDED", text_of(deep)
        await sixty_kept_and_the_next_sixty_refused(w, host)


def release(w: World, run_id: str, *extra: str) -> Any:
    return run_program(["budget", "release", "-db", w.db, run_id, "-by", "tester", *extra], timeout=30)


async def test_budget_release_gives_a_kept_60_back_in_the_chain_and_the_next_60_fits(
    tmp_path: Path, program_argv: list[str], program_env: dict[str, str]
) -> None:
    async with one_proxy(tmp_path, program_argv, program_env, TIMEOUT_PRICED, BUDGET) as (w, host):
        approval = await unknown_sixty(w, host)
        w.release()
        waiting = release(w, approval.run_id, "-note", "too early")  # the question is still open
        assert waiting.returncode == 1 and "only an ended run" in waiting.stderr, waiting.stderr
        await w.reject(approval, "not again")
        unknown = release(w, "run-that-is-not-there", "-note", "x")
        assert unknown.returncode == 1 and "no run" in unknown.stderr, unknown.stderr
        no_note = release(w, approval.run_id)
        assert no_note.returncode == 2 and "-note" in no_note.stderr, no_note.stderr
        assert holds(w) == {"spent": Decimal(60)}  # nothing a refused command did changed it
        done = release(w, approval.run_id, "-note", "the bank refunded it")
        assert done.returncode == 0, done.stderr
        assert "60 released from run" in done.stdout, done.stdout
        again = release(w, approval.run_id, "-note", "twice")
        assert again.returncode == 1 and "released already" in again.stderr, again.stderr
        assert holds(w) == {"released": Decimal(60)}
        paid = await host.call("bank_pay", {"to": "lee", "amount": 60})
        assert not is_error(paid), text_of(paid)
        assert holds(w) == {"released": Decimal(60), "spent": Decimal(60)}
        # Two payments of 60 are in the ledger: the operator's release said the first never
        # happened, and the budget counted what it was told. Nothing else passed the limit.
        assert w.payments() == 2
        [paid_run] = [r for r in w.runs() if r.id != approval.run_id and r.status == "COMPLETED"]
        assert paid_run.id != approval.run_id
    assert w.events(approval.run_id)[-1] == "budget.released"
    verified = run_program(["verify", "-db", w.db], timeout=30)
    assert verified.returncode == 0, verified.stdout + verified.stderr
    exported = tmp_path / "trail.jsonl"
    written = run_program(["export", "-db", w.db, "-o", str(exported)], timeout=30)
    assert written.returncode == 0, written.stderr
    records = [json.loads(line) for line in exported.read_text().splitlines()]
    [event] = [r for r in records if r.get("type") == "budget.released"]
    assert event["run_id"] == approval.run_id, event
    assert "the bank refunded it" in json.dumps(event)
    refunded = release(w, paid_run.id, "-note", "refunded")  # a result's spending, its run ended: it can go back
    assert refunded.returncode == 0, refunded.stderr


CURRENCY_PAY = {**PRICED, "currency_field": "currency"}
EUR_BUDGET = [{"name": "euros", "tools": ["bank_pay"], "limit": 100, "currency": "EUR"}]
# Each looks like EUR to a reader (or names a code) and none is one a EUR budget can leave uncounted.
NOT_EUR = ["EUR ", "\u0415UR", "E\u200bUR", "XXX", "EURO", "", "€"]


async def test_a_currency_spelled_any_other_way_is_refused_as_unresolved_and_pays_nothing(
    tmp_path: Path, program_argv: list[str], program_env: dict[str, str]
) -> None:
    async with one_proxy(tmp_path, program_argv, program_env, CURRENCY_PAY, EUR_BUDGET) as (w, host):
        lower = await host.call("bank_pay", {"to": "ann", "amount": 60, "currency": "eur"})
        assert not is_error(lower), text_of(lower)  # eur is EUR, and it counts in the EUR budget
        assert holds(w) == {"spent": Decimal(60)}
        upper = await host.call("bank_pay", {"to": "bob", "amount": 60, "currency": "EUR"})
        assert prefix(upper) == "OVER_BUDGET", text_of(upper)
        for spelling in NOT_EUR:
            refused = await host.call("bank_pay", {"to": "cy", "amount": 60, "currency": spelling})
            text = text_of(refused)
            assert prefix(refused) == "DENIED" and "could not be resolved" in text, (spelling, text)
        missing = await host.call("bank_pay", {"to": "cy", "amount": 60})
        assert prefix(missing) == "DENIED" and "is absent" in text_of(missing), text_of(missing)
        assert w.payments() == 1 and ledger_total(w) == Decimal(60) <= LIMIT
        assert holds(w) == {"spent": Decimal(60)}


async def test_a_budget_whose_currency_is_no_code_is_a_configuration_error_naming_the_field(
    tmp_path: Path, program_argv: list[str], program_env: dict[str, str]
) -> None:
    del program_argv, program_env
    from tests.program.test_serve_process import write_config

    for spelling in ("EUR ", "\u0415UR", "E\u200bUR", "EURO", "12"):
        path = write_config(tmp_path, pay=CURRENCY_PAY, budgets=[{**EUR_BUDGET[0], "currency": spelling}])
        checked = run_program(["check", "-config", str(path)], timeout=30)
        assert checked.returncode == 1, (spelling, checked.stdout, checked.stderr)
        assert 'budget "euros": currency' in checked.stderr and "not a currency code" in checked.stderr, checked.stderr


async def both_at_once(a: Host, b: Host, arguments: dict[str, Any]) -> list[Any]:
    """Both hosts send the identical call together; their answers."""
    answers: list[Any] = []

    async def collect(host: Host) -> None:
        answers.append(await host.call("bank_pay", arguments))

    async with anyio.create_task_group() as tg:
        tg.start_soon(collect, a)
        tg.start_soon(collect, b)
    return answers


APPROVED_PAY = {"amount_field": "amount"}  # remote_mutation: every payment waits for an approval
TRIALS = 20


async def test_two_proxies_collecting_one_approved_payment_pay_it_once_and_keep_nothing_reserved(
    tmp_path: Path, program_argv: list[str], program_env: dict[str, str]
) -> None:
    async with (
        world(tmp_path, program_argv, program_env, pay=APPROVED_PAY, budgets=BUDGET) as w,
        proxy(w, "a") as a,
        proxy(w, "b") as b,
    ):
        for trial in range(TRIALS):
            arguments = {"to": f"t{trial}", "amount": 60}
            asked = await a.call("bank_pay", arguments)
            assert prefix(asked) == "PENDING_APPROVAL", text_of(asked)
            [approval] = w.pending()
            await w.approve(approval)
            answers = await both_at_once(a, b, arguments)
            kinds = sorted(prefix(r) if is_error(r) else "paid" for r in answers)
            assert "OVER_BUDGET" not in kinds, (trial, [text_of(r) for r in answers])
            # The approved payment runs exactly once, whichever proxy runs it; the other is told
            # it is in progress or answered as its duplicate, and nothing stays reserved.
            if "paid" not in kinds:
                again = await a.call("bank_pay", arguments)
                kinds.append(prefix(again))
            assert w.payments() == trial + 1, (trial, kinds)
            assert holds(w) == {"spent": Decimal(60)} | ({"released": Decimal(60 * trial)} if trial else {}), (
                trial,
                kinds,
            )
            # Give the trial's 60 back, so every trial races against the same room of 100.
            given = release(w, approval.run_id, "-note", f"trial {trial}")
            assert given.returncode == 0, given.stderr
        assert ledger_total(w) == Decimal(60 * TRIALS)
