"""verify's state check on databases the real proxy wrote: an honest one agrees with its chain,
and each edit made behind the store's back (the issue's three, and the cached outcome the rules
trust) is found, naming the table, the key and the column.

The honest database is built once per module (tests/verify_fixtures.py). Each forgery edits
a copy of it with plain SQL, as anyone who can write the file can.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from agentrt_proxy.gate import Decision, approvals
from agentrt_proxy.store import Store, VerifyReport
from agentrt_proxy.store import _replay as replay
from agentrt_proxy.store import _replay_rows as replay_rows
from agentrt_proxy.store import _store as store
from tests.gate_fixtures import LIMITS, FakeClock, make_gate
from tests.verify_fixtures import build_honest

pytestmark = pytest.mark.timeout(180)


@pytest.fixture(scope="module")
def honest(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("honest")
    return anyio.run(build_honest, directory)


@pytest.fixture
def copy(honest: Path, tmp_path: Path) -> Iterator[Path]:
    """A copy of the honest database to edit (SQLite's backup: the WAL's pages come along)."""
    target = tmp_path / "copy.db"
    with sqlite3.connect(honest) as src, sqlite3.connect(target) as dst:
        src.backup(dst)
    target.chmod(0o600)
    yield target


def verify(path: Path) -> VerifyReport:
    reader = Store.open_readonly(str(path))
    try:
        return reader.verify(approval_hash=approvals.stored_hash)
    finally:
        reader.close()


def edit(path: Path, *statements: str) -> None:
    conn = sqlite3.connect(path)
    try:
        for sql in statements:
            conn.execute(sql)
        conn.commit()
    finally:
        conn.close()


def findings(report: VerifyReport) -> set[tuple[str, str, str]]:
    assert report.state is not None, report.state_skipped
    return {(m.table, m.key, m.column) for m in report.state.mismatches}


def one(path: Path, sql: str) -> Any:
    conn = sqlite3.connect(path)
    try:
        return conn.execute(sql).fetchone()
    finally:
        conn.close()


def test_an_honest_database_of_calls_approvals_rejections_and_an_unknown_outcome_agrees(honest: Path) -> None:
    report = verify(honest)
    assert report.intact and report.state is not None and report.state.agrees, report.state
    assert (report.state.runs, report.state.approvals, report.state.calls) == (5, 3, 5)
    assert report.state.unverified_calls == report.state.unbegun_calls == 0


def test_an_approval_forged_to_approved_is_found_by_table_key_and_column(copy: Path) -> None:
    (rejected,) = one(copy, "SELECT id FROM approvals WHERE note = 'not lee'")
    edit(copy, f"UPDATE approvals SET status = 'approved' WHERE id = '{rejected}'")
    report = verify(copy)
    assert not report.intact and report.brk is None  # the chain itself is untouched
    assert findings(report) == {("approvals", rejected, "status")}
    (m,) = report.state.mismatches  # type: ignore[union-attr]
    assert m.text() == f'approvals {rejected}: status is "approved"; the chain says "rejected"'


def test_deleting_the_call_index_is_found_row_by_row(copy: Path) -> None:
    rows = [f"{i} (run {r})" for i, r in sqlite3.connect(copy).execute("SELECT id, run_id FROM proxy_calls")]
    edit(copy, "DELETE FROM proxy_calls")
    report = verify(copy)
    assert not report.intact
    assert findings(report) == {("proxy_calls", key, "") for key in rows}


def test_a_runs_status_set_by_sql_is_found(copy: Path) -> None:
    (run_id,) = one(copy, "SELECT id FROM runs WHERE reason = 'approval_rejected' ORDER BY rowid LIMIT 1")
    edit(copy, f"UPDATE runs SET status = 'WAITING_FOR_APPROVAL' WHERE id = '{run_id}'")
    assert findings(verify(copy)) == {("runs", run_id, "status")}


def test_an_unknown_outcome_cached_as_nothing_ran_is_found(copy: Path) -> None:
    """The rules trust a settled outcome: none hides the timed-out payment from rule 6."""
    (row_id, run_id) = one(copy, "SELECT id, run_id FROM proxy_calls WHERE outcome = 3")
    edit(copy, f"UPDATE proxy_calls SET outcome = 1 WHERE id = {row_id}")
    assert findings(verify(copy)) == {("proxy_calls", f"{row_id} (run {run_id})", "outcome")}


def test_an_approved_request_rewritten_under_its_hash_is_found(copy: Path) -> None:
    (approval_id,) = one(copy, "SELECT id FROM approvals WHERE status = 'approved'")
    edit(copy, f"UPDATE approvals SET request_json = replace(request_json, '\"kim\"', '\"eve\"') "
               f"WHERE id = '{approval_id}'")
    assert findings(verify(copy)) == {("approvals", approval_id, "request_json")}


def test_a_row_added_for_no_run_is_found(copy: Path) -> None:
    edit(copy, "INSERT INTO runs (id, goal, status, limits_json, created_at) "
               "VALUES ('forged', 'call bank_pay', 'COMPLETED', '{}', '2026-01-01T00:00:00Z')")
    assert findings(verify(copy)) == {("runs", "forged", "")}


def test_a_part_of_the_chain_leaves_the_state_unchecked_and_says_so(copy: Path) -> None:
    edit(copy, "UPDATE runs SET status = 'RUNNING'")
    report = Store.open_readonly(str(copy)).verify(from_seq=2)
    assert report.state is None and report.state_skipped == "range" and report.intact


def test_the_rows_are_held_to_the_chain_of_the_same_moment_while_a_writer_goes_on(
        honest: Path, copy: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A run committed by another process in the middle of the walk is in neither the events
    walked nor the rows read: one snapshot, no false finding."""
    writer = Store.open(str(copy))

    class Interleaved(replay.Replay):
        wrote = False

        def feed(self, ev: Any) -> None:
            if not Interleaved.wrote:
                Interleaved.wrote = True
                gate = make_gate(writer, FakeClock())
                session = gate.begin("meanwhile", "call bank_wipe", LIMITS)
                session.step()
                session.propose(Decision("tool_call", "bank_wipe", "{}", origin="model"))
                session.fail("one call per run: the request was denied")
            super().feed(ev)

    monkeypatch.setattr(store, "Replay", Interleaved)
    try:
        report = verify(copy)
        assert Interleaved.wrote and report.intact and report.state is not None
        assert report.state.runs == 5  # the honest five; the sixth came after the snapshot
        assert verify(copy).state.runs == 6  # type: ignore[union-attr]
    finally:
        writer.close()


def test_a_task_bound_to_an_approval_of_another_run_is_found(copy: Path) -> None:
    (approval_id, run_id) = one(copy, "SELECT id, run_id FROM approvals ORDER BY rowid LIMIT 1")
    (other,) = one(copy, f"SELECT id FROM runs WHERE id != '{run_id}' ORDER BY rowid LIMIT 1")
    edit(
        copy,
        "INSERT INTO proxy_tasks (id, session, era, tool, request_key, run_id, approval_id, status, created_at, "
        f"updated_at, ttl_ms) VALUES ('t1', 'test', 'extension', 'bank_pay', 'k', '{other}', '{approval_id}', "
        "'working', 1, 1, 1000)",
    )
    assert findings(verify(copy)) == {("proxy_tasks", "t1", "approval_id")}


def test_reservations_of_a_chain_from_before_they_were_events_are_counted_not_checked() -> None:
    rows = replay_rows.RowReplay()  # fed a chain with no budget event, as an older writer left it
    hold = replay_rows.HoldRow("test", "daily", "", "run-1", "10", 1, "released", 2)
    assert rows.check_hold(hold) == [] and rows.unverified_holds == 1
    assert list(rows.missing()) == []
