"""Reading the state tables for ``verify``'s state check: every row of ``runs``, ``approvals``
and ``proxy_calls`` held against the chain's replay (``replay.py``).

Called inside the read snapshot the chain was walked in, after the walk fed every event to the
replay: the rows and the events are one moment's, whatever the proxies write meanwhile. Rows are
read through one cursor per table, a page at a time; the index's rows in (session, request key,
id) order, the order of one of its indexes, so one request's rows arrive together.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from agentrt_proxy.store.chain import VERIFY_PAGE
from agentrt_proxy.store.index import ProxyCall
from agentrt_proxy.store.replay import MAX_KEPT, Mismatch, Replay
from agentrt_proxy.store.rows import APPROVAL_COLS, Approval, columns

_CALL_COLS = columns(ProxyCall)


@dataclass
class StateReport:
    """What the state check found: rows read per table, the first ``MAX_KEPT`` mismatches
    and how many there were, and the index rows the chain could not fully explain."""

    runs: int = 0
    approvals: int = 0
    calls: int = 0
    mismatches: list[Mismatch] = field(default_factory=list)
    total: int = 0
    unverified_calls: int = 0  # their run was begun before run.created named its call
    unbegun_calls: int = 0  # their run never began: a claim that says nothing ran

    @property
    def agrees(self) -> bool:
        return self.total == 0

    def add(self, found: Iterable[Mismatch]) -> None:
        for m in found:
            self.total += 1
            if len(self.mismatches) < MAX_KEPT:
                self.mismatches.append(m)


def _pages(conn: sqlite3.Connection, sql: str) -> Iterator[tuple[Any, ...]]:
    cur = conn.execute(sql)
    while True:
        rows = cur.fetchmany(VERIFY_PAGE)
        if not rows:
            return
        yield from rows


def _has_table(conn: sqlite3.Connection, name: str) -> bool:
    return conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (name,)).fetchone() is not None


def check_state(conn: sqlite3.Connection, replay: Replay) -> StateReport:
    """Every state row against ``replay`` (fed the whole chain), then what the chain names
    that no row holds."""
    report = StateReport()
    for run_id, status, reason, detail, step_count, finished_at in _pages(
        conn, "SELECT id, status, reason, reason_detail, step_count, finished_at FROM runs ORDER BY rowid"
    ):
        report.runs += 1
        report.add(replay.check_run(run_id, status, reason, detail, step_count, finished_at))
    for row in _pages(conn, f"SELECT {APPROVAL_COLS} FROM approvals ORDER BY rowid"):
        report.approvals += 1
        report.add(replay.check_approval(Approval(*row)))
    if _has_table(conn, "proxy_calls"):
        group: list[ProxyCall] = []
        for row in _pages(conn, f"SELECT {_CALL_COLS} FROM proxy_calls ORDER BY session, request_key, id"):
            call = ProxyCall(*row)
            report.calls += 1
            if group and (group[0].session, group[0].request_key) != (call.session, call.request_key):
                report.add(replay.check_calls(group))
                group = []
            group.append(call)
        if group:
            report.add(replay.check_calls(group))
    report.add(replay.missing())
    report.unverified_calls, report.unbegun_calls = replay.unverified_calls, replay.unbegun_calls
    return report
