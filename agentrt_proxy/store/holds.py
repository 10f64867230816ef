"""Budget reservations (``budget_holds``, docs/decisions/0017): the operations only.

Every write takes the caller's open transaction (``Tx``): a reservation is made in the one
that claims the call, and settled in the one that records its outcome or its rejection, so
two proxies on one database never count the same room twice. Each state change looks its
move up in the state table (``states.HOLD``) before its SQL runs. Reads answer rows; the
sums are the gate's (exact decimals, never SQL's floats).

Every write is also an event of its run in the same transaction (``budget.reserved`` per row,
``budget.carried``, ``budget.settled``): the rows are state, which anyone who can write the file
can change (a deleted reservation refills its budget), and ``verify`` holds each row to these
events (``_replay_rows.py``).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable
from dataclasses import dataclass

from agentrt_proxy.canonical.durations import format_time
from agentrt_proxy.store._sqlite_errors import mapped
from agentrt_proxy.store._states import (
    HOLD,
    HOLD_RELEASED,
    HOLD_RESERVED,
    HOLD_SPENT,
    NEW,
    check_move,
)
from agentrt_proxy.store._transactions import Database
from agentrt_proxy.store._tx import Tx

LIVE = (HOLD_RESERVED, HOLD_SPENT)  # what a budget counts: reserved or spent, never released
RESERVED_EVENT, CARRIED_EVENT, SETTLED_EVENT = "budget.reserved", "budget.carried", "budget.settled"
RELEASED_EVENT = "budget.released"  # the operator's ``budget release`` (gate/budget_release.py)


@dataclass(frozen=True)
class Hold:
    budget: str
    currency: str
    run_id: str
    amount: str  # the exact decimal's text
    at: int  # Unix ns
    state: str


_COLS = "budget, currency, run_id, amount, at, state"


def _check(run_id: str, expect: str, new: str) -> None:
    check_move(HOLD, run_id, "budget hold", expect, new)


def reserve(tx: Tx, session: str, run_id: str, entries: Iterable[tuple[str, str, str]], at: int) -> None:
    """Reserve (budget, currency, amount) for ``run_id``; a budget the run holds already is kept.
    One it released (its granted request reached no server, and the grant stands) is reserved
    again, at ``at``: the identical call collects the grant once more."""
    _check(run_id, NEW, HOLD_RESERVED)
    for budget, currency, amount in entries:
        inserted = tx.conn.execute(
            "INSERT OR IGNORE INTO budget_holds (session, budget, currency, run_id, amount, at) "
            "VALUES (?, ?, ?, ?, ?, ?)",
            (session, budget, currency, run_id, amount, at),
        )
        reserved = inserted.rowcount == 1
        if not reserved:
            _check(run_id, HOLD_RELEASED, HOLD_RESERVED)
            reserved = (
                tx.conn.execute(
                    "UPDATE budget_holds SET state = ?, currency = ?, amount = ?, at = ?, settled_at = 0 "
                    "WHERE run_id = ? AND budget = ? AND state = ?",
                    (HOLD_RESERVED, currency, amount, at, run_id, budget, HOLD_RELEASED),
                ).rowcount
                == 1
            )
        if reserved:  # a new row, or a released one reserved again: either is an event of the run
            payload = {"session": session, "budget": budget, "currency": currency, "amount": amount, "at": at}
            tx.append(run_id, "", format_time(at), RESERVED_EVENT, payload)


def has_holds(tx: Tx, run_id: str) -> bool:
    """Whether ``run_id`` holds a reservation (reserved or spent; a released one is held no more)."""
    return (
        tx.conn.execute(
            "SELECT 1 FROM budget_holds WHERE run_id = ? AND state != ? LIMIT 1", (run_id, HOLD_RELEASED)
        ).fetchone()
        is not None
    )


def carry(tx: Tx, from_run: str, to_run: str, at: int) -> int:
    """A fresh run asks again about ``from_run``'s unknown outcome: its reservations go with it."""
    cur = tx.conn.execute(
        "UPDATE budget_holds SET run_id = ? WHERE run_id = ? AND state = ?", (to_run, from_run, HOLD_RESERVED)
    )
    if cur.rowcount:
        tx.append(to_run, "", format_time(at), CARRIED_EVENT, {"from_run": from_run})
    return cur.rowcount


def settle(tx: Tx, run_id: str, state: str, at: int) -> int:
    """Move ``run_id``'s reserved rows to ``state`` (spent or released); the rows moved."""
    _check(run_id, HOLD_RESERVED, state)
    cur = tx.conn.execute(
        "UPDATE budget_holds SET state = ?, settled_at = ? WHERE run_id = ? AND state = ?",
        (state, at, run_id, HOLD_RESERVED),
    )
    if cur.rowcount:
        tx.append(run_id, "", format_time(at), SETTLED_EVENT, {"state": state, "settled_at": at})
    return cur.rowcount


def release_live(tx: Tx, run_id: str, at: int) -> list[Hold]:
    """The operator's release: every reserved or spent row of ``run_id`` moves to released;
    the rows as they were before (the caller records them in the chain); none on a file older
    than budgets."""
    if not _has_table(tx.conn):
        return []
    rows = [
        Hold(*row)
        for row in tx.conn.execute(
            f"SELECT {_COLS} FROM budget_holds WHERE run_id = ? AND state IN (?, ?) ORDER BY budget", (run_id, *LIVE)
        ).fetchall()
    ]
    for state in sorted({row.state for row in rows}):
        _check(run_id, state, HOLD_RELEASED)
    tx.conn.execute(
        "UPDATE budget_holds SET state = ?, settled_at = ? WHERE run_id = ? AND state IN (?, ?)",
        (HOLD_RELEASED, at, run_id, *LIVE),
    )
    return rows


def release(tx: Tx, run_id: str, at: int, state: str = HOLD_RELEASED) -> int:
    """A rejection's settlement (released, or spent when the question was whether a call that
    may have executed runs again); on a file older than budgets (an operator's writer does not
    migrate) there is nothing to settle."""
    if not _has_table(tx.conn):
        return 0
    return settle(tx, run_id, state, at)


class Holds:
    """The reads, over the store's connection (a writer's reads inside its open transaction
    see that transaction's rows)."""

    def __init__(self, db: Database) -> None:
        self._db = db

    def _rows(self, sql: str, args: tuple[object, ...]) -> list[Hold]:
        with self._db.lock:
            if not _has_table(self._db.conn):
                return []  # a file older than budgets, opened read-only
            return [Hold(*row) for row in self._db.conn.execute(sql, args).fetchall()]

    @mapped
    def live(self, session: str, budget: str, since: int) -> list[Hold]:
        """The budget's reserved and spent rows at or after ``since``, oldest first."""
        return self._rows(
            f"SELECT {_COLS} FROM budget_holds WHERE session = ? AND budget = ? AND at >= ? "
            "AND state IN (?, ?) ORDER BY at, id",
            (session, budget, since, *LIVE),
        )

    @mapped
    def every(self) -> list[Hold]:
        """Every row, oldest first (the operator's ``runs``: what each budget spent and holds)."""
        return self._rows(f"SELECT {_COLS} FROM budget_holds ORDER BY at, id", ())

    @mapped
    def of_run(self, run_id: str) -> list[Hold]:
        return self._rows(f"SELECT {_COLS} FROM budget_holds WHERE run_id = ? ORDER BY budget", (run_id,))


def _has_table(conn: sqlite3.Connection) -> bool:
    row = conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'budget_holds'").fetchone()
    return row is not None
