"""The database refusing writes while a call runs (issue 14, item 1): the outcome is kept and
recorded once the store takes writes again, within the run's lease; past it the host hears
UNAVAILABLE saying whether the call executed, and the run is left for the next call to take
over and put before an operator. Effects are counted in the fake bank's ledger.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.conftest import run_program
from tests.harness import DEFAULT_RULES, Harness, is_error, proxy_harness, text_of
from tests.waiting import until

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(120)]

PAY: dict[str, Any] = {**DEFAULT_RULES, "pay": {"side_effect": "remote_mutation", "timeout": "20s", "outcome": "allow"}}
BLOCKED_PAYMENT = {"to": "kim", "amount": 7, "mode": "block"}
PAST_THE_BUSY_TIMEOUT = 6.5  # the store waits 5 s for a lock (store/_connection.BUSY_TIMEOUT_MS)


@contextmanager
def write_lock(h: Harness) -> Iterator[None]:
    """Another process's writer: holds the database's write lock until the block ends."""
    other = sqlite3.connect(str(h.directory / "runs.db"), isolation_level=None, timeout=10)
    try:
        other.execute("BEGIN IMMEDIATE")
        yield
        other.execute("ROLLBACK")
    finally:
        other.close()


async def pay_through_a_lock(h: Harness, seconds: float) -> Any:
    """Start a blocked payment, take the write lock once it has reached the bank, let the bank
    answer, keep the lock ``seconds``: the payment's answer."""
    box: dict[str, Any] = {}

    async def pay() -> None:
        box["result"] = await h.call("bank_pay", BLOCKED_PAYMENT)

    async with anyio.create_task_group() as tg:
        tg.start_soon(pay)
        await until("the payment at the bank", lambda: h.payments() > 0, 10)
        with write_lock(h):
            (h.directory / "ledger.release").write_text("")
            await anyio.sleep(seconds)
    return box["result"]


async def test_an_outcome_the_locked_database_refused_is_recorded_once_the_lock_is_gone(tmp_path: Path) -> None:
    async with proxy_harness(tmp_path, rules=PAY) as h:
        result = await pay_through_a_lock(h, PAST_THE_BUSY_TIMEOUT)
        assert text_of(result) == "paid 7.00 to kim" and not is_error(result)
        assert h.payments() == 1
        again = await h.call("bank_pay", BLOCKED_PAYMENT)  # recorded: the duplicate rule answers
        assert text_of(again).startswith("DUPLICATE: "), text_of(again)
        assert h.payments() == 1


async def test_an_outcome_refused_past_the_lease_is_unavailable_and_the_next_call_asks_an_operator(
    tmp_path: Path,
) -> None:
    async with proxy_harness(tmp_path, rules=PAY, lease_ttl="3s") as h:
        result = await pay_through_a_lock(h, PAST_THE_BUSY_TIMEOUT)
        text = text_of(result)
        assert text.startswith("UNAVAILABLE: the server answered, and its result could not be recorded"), text
        assert is_error(result) and h.payments() == 1
        assert any("could not be recorded" in line for line in h.stderr), h.stderr
        with anyio.fail_after(20):  # the run's lease runs out: then it is taken over, never IN_PROGRESS for ever
            while True:
                again = await h.call("bank_pay", BLOCKED_PAYMENT)
                if not text_of(again).startswith("IN_PROGRESS"):
                    break
                await anyio.sleep(0.5)
        assert text_of(again).startswith(("INTERRUPTED: ", "UNKNOWN_OUTCOME: ")), text_of(again)
        waiting = [a for a in h.pending() if a.kind == "interrupted_side_effect"]
        assert len(waiting) == 1, h.approvals()
        assert h.payments() == 1  # nothing ran again without the operator


def late_outcomes(h: Harness) -> list[tuple[str, dict[str, Any]]]:
    """Every ``step.late_outcome`` of the database: (run id, payload)."""
    store = h.store()
    try:
        with store.read() as conn:
            rows = conn.execute("SELECT run_id, payload_json FROM events WHERE type = 'step.late_outcome'").fetchall()
    finally:
        store.close()
    return [(run_id, json.loads(payload)) for run_id, payload in rows]


async def test_an_outcome_refused_past_the_lease_is_kept_recorded_late_and_never_called_unknown(
    tmp_path: Path,
) -> None:
    async with proxy_harness(tmp_path, rules=PAY, lease_ttl="3s") as h:
        result = await pay_through_a_lock(h, PAST_THE_BUSY_TIMEOUT)
        assert text_of(result).startswith("UNAVAILABLE: the server answered, and its result could not be recorded")
        (refused,) = [line for line in h.stderr if "could not be recorded" in line]
        assert "a call to bank_pay executed (its server answered)" in refused, refused
        # The lock is gone: what the proxy kept is recorded on the run, late, changing no row.
        await until("a late outcome recorded", lambda: late_outcomes(h), 20)
        [(run_id, payload)] = late_outcomes(h)
        assert payload["observation"]["kind"] == "tool_result" and payload["not_recorded"] is True
        # The proxy says so after the commit, on its own task: the row can be seen before the line.
        said = f"run {run_id}: the outcome of the call to bank_pay is recorded now"
        await until("the late outcome reported", lambda: any(said in line for line in h.stderr), 20)
        store = h.store()
        try:
            assert store.get_run(run_id).status == "RUNNING"  # the step is still the lease's: a take-over settles it
        finally:
            store.close()
        with anyio.fail_after(20):
            while True:
                again = await h.call("bank_pay", BLOCKED_PAYMENT)
                if not text_of(again).startswith("IN_PROGRESS"):
                    break
                await anyio.sleep(0.5)
        cut_off = f"run {run_id}: a call to bank_pay was cut off"
        await until("the take-over reported", lambda: any(cut_off in line for line in h.stderr), 20)
        taken = [line for line in h.stderr if cut_off in line]
        assert len(taken) == 1 and "its server had answered" in taken[0] and "it executed" in taken[0], h.stderr
        assert not any(f"run {run_id}" in line and "its outcome is unknown" in line for line in h.stderr), h.stderr
        waiting = [a for a in h.pending() if a.kind == "interrupted_side_effect"]
        assert len(waiting) == 1 and h.payments() == 1  # nothing ran again without the operator
        shown = run_program(
            ["approve", "-db", str(h.config.database), waiting[0].run_id, "-approval", waiting[0].id, "-by", "tester"],
            input="n\n",
            timeout=30,
        )
        assert "the database refused to record it until the run's lease ran out (recorded late)" in shown.stdout, (
            shown.stdout,
            shown.stderr,
        )
