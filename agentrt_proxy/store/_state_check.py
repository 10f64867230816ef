"""Reading the state tables for ``verify``'s state check: every row of ``runs``, ``approvals``
and ``proxy_calls`` held against the chain's replay (``_replay.py``), and every row of ``steps``,
``tool_specs``, ``budget_holds`` and ``proxy_tasks`` and each run's lease (``_replay_rows.py``).

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

from agentrt_proxy.store._chain import VERIFY_PAGE
from agentrt_proxy.store._index import ProxyCall
from agentrt_proxy.store._replay import MAX_KEPT, Mismatch, Replay
from agentrt_proxy.store._replay_rows import HoldRow, RowReplay, StepRow
from agentrt_proxy.store._rows import APPROVAL_COLS, Approval, columns

_CALL_COLS = columns(ProxyCall)


@dataclass
class StateReport:
    """What the state check found: rows read per table, the first ``MAX_KEPT`` mismatches
    and how many there were, and the index rows the chain could not fully explain."""

    runs: int = 0
    approvals: int = 0
    calls: int = 0
    steps: int = 0
    specs: int = 0
    holds: int = 0
    tasks: int = 0
    mismatches: list[Mismatch] = field(default_factory=list)
    total: int = 0
    unverified_calls: int = 0  # their run was begun before run.created named its call
    unbegun_calls: int = 0  # their run never began: a claim that says nothing ran
    unverified_holds: int = 0  # budget reservations of a chain from before they were events

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


def check_state(conn: sqlite3.Connection, replay: Replay, rows: RowReplay | None = None) -> StateReport:
    """Every state row against ``replay`` and ``rows`` (fed the whole chain), then what the
    chain names that no row holds."""
    report = StateReport()
    rows = rows if rows is not None else RowReplay()
    for run_id, status, reason, detail, step_count, finished_at, owner, expires in _pages(
        conn,
        "SELECT id, status, reason, reason_detail, step_count, finished_at, lease_owner, lease_expires_at "
        "FROM runs ORDER BY rowid",
    ):
        report.runs += 1
        report.add(replay.check_run(run_id, status, reason, detail, step_count, finished_at))
        report.add(rows.check_lease(run_id, owner, expires, replay))
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
    _check_rows(conn, rows, replay, report)
    report.add(replay.missing())
    report.add(rows.missing())
    report.unverified_calls, report.unbegun_calls = replay.unverified_calls, replay.unbegun_calls
    report.unverified_holds = rows.unverified_holds
    return report


def _check_rows(conn: sqlite3.Connection, rows: RowReplay, replay: Replay, report: StateReport) -> None:
    for row in _pages(conn, f"SELECT {', '.join(StepRow._fields)} FROM steps ORDER BY rowid"):
        report.steps += 1
        report.add(rows.check_step(StepRow(*row)))
    for spec_hash, spec_json in _pages(conn, "SELECT hash, spec_json FROM tool_specs ORDER BY rowid"):
        report.specs += 1
        report.add(rows.check_spec(spec_hash, spec_json))
    if _has_table(conn, "budget_holds"):
        for row in _pages(conn, f"SELECT {', '.join(HoldRow._fields)} FROM budget_holds ORDER BY id"):
            report.holds += 1
            report.add(rows.check_hold(HoldRow(*row)))
    if _has_table(conn, "proxy_tasks"):
        for task_id, run_id, approval_id in _pages(conn, "SELECT id, run_id, approval_id FROM proxy_tasks"):
            report.tasks += 1
            report.add(rows.check_task(task_id, run_id, approval_id, replay))
