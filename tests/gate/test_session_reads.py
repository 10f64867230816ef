"""What a session reads: inside the transaction that began its run it reads nothing back, and
what it uses instead is what a read would have found (the run row as begun, and as its first
step's claim left it; no steps but the open one; no approvals); and the statements an allowed
call costs, reads and the state table's checks included (the checks are no SQL)."""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from agentrt_proxy.gate import _session as gate_mod
from agentrt_proxy.store import Tx
from agentrt_proxy.store import _store as store_mod
from tests.harness import is_error, proxy_harness, text_of
from tests.task_ticks import ManualTicker

RULES = {"balance": {"side_effect": "read_only", "timeout": "10s"},
         "pay": {"side_effect": "remote_mutation", "timeout": "10s", "outcome": "allow"},
         "refund": {"side_effect": "destructive", "timeout": "10s"}}


@pytest.mark.anyio
async def test_a_run_begun_in_the_open_transaction_is_known_as_a_read_would_find_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    original = gate_mod.Session._known_run
    checked: list[str] = []

    def known_run(self: gate_mod.Session, tx: Tx | None) -> Any:
        run = original(self, tx)
        if run is not None:
            assert tx is not None
            assert tx.run(self.run_id) == run
            steps = [s.id for s in tx.steps(self.run_id)]
            assert steps == ([self.current.id] if self.current is not None else [])
            n = tx.conn.execute("SELECT COUNT(*) FROM approvals WHERE run_id = ?", (self.run_id,)).fetchone()[0]
            assert n == 0
            checked.append(self.run_id)
        return run

    monkeypatch.setattr(gate_mod.Session, "_known_run", known_run)
    async with proxy_harness(tmp_path, rules=RULES) as h:
        assert text_of(await h.call("bank_balance", {"account": "A-1"})) == "account A-1 holds 120.00 EUR"
        assert text_of(await h.call("bank_pay", {"to": "bob", "amount": 25})) == "paid 25.00 to bob"
        assert is_error(await h.call("bank_pay", {"to": "jo", "amount": 1, "mode": "error"}))
        assert is_error(await h.call("bank_refund", {"payment": "p-1"}))
        assert text_of(await h.call("bank_balance", {"acount": "A-1"})).startswith("INVALID:")
    # step, propose, the policy's view and the start of each allowed call; step and propose of the others
    assert len(checked) >= 4 * 3 + 2 * 2


@pytest.mark.anyio
async def test_an_allowed_read_costs_twenty_six_statements_and_an_allowed_payment_three_more(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    statements: list[str] = []
    original = store_mod._connect

    def connect(path: str, readonly: bool, create: bool = True) -> sqlite3.Connection:
        conn = original(path, readonly, create)
        conn.set_trace_callback(lambda s: statements.append(re.sub(r"\s+", " ", s)))
        return conn

    monkeypatch.setattr(store_mod, "_connect", connect)

    # The task owner's loop reads its table every tick: a read landing inside a measured call
    # holds the process's lock, the call's write falls back to a worker thread (no busy_timeout
    # pair), and the count says two fewer. Its ticks are given by hand, and none is given: only the
    # call's own statements count.
    ticker = ManualTicker()
    async with proxy_harness(tmp_path, rules=RULES, ticker=ticker) as h:
        await ticker.resting()  # the owner's first look is done; no second one comes
        await h.call("bank_balance", {"account": "A-0"})
        del statements[:]
        assert text_of(await h.call("bank_balance", {"account": "A-1"})) == "account A-1 holds 120.00 EUR"
        read = len(statements)
        del statements[:]
        assert text_of(await h.call("bank_pay", {"to": "bob", "amount": 25})) == "paid 25.00 to bob"
        pay = len(statements)
    # 50 and 53 before the gate passed what it knows, 33 and 36 before each tool spec was
    # stored once per store rather than once per run, 30 and 33 before the step row's two
    # updates and the run's step count were folded into their INSERTs, 27 and 30 before the
    # run's active time was added in the UPDATE that completes it (2 COMMIT, 4 PRAGMA
    # busy_timeout, 2 BEGIN included)
    assert (read, pay) == (READ_STATEMENTS, READ_STATEMENTS + 3)


READ_STATEMENTS = 26
