"""The operator's verify says what the state check found: agreement, or each finding by table,
key and column, with exit 1; -json carries it; a forged value never reaches the terminal raw."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from agentrt_proxy.cli import main
from agentrt_proxy.text import cli_text
from tests.operator_fixtures import Waiting, pause_run


def edit(db: Path, sql: str, *args: object) -> None:
    conn = sqlite3.connect(db)
    try:
        conn.execute(sql, args)
        conn.commit()
    finally:
        conn.close()


def test_an_honest_database_says_every_row_agrees_and_exits_zero(
        waiting: Waiting, capsys: pytest.CaptureFixture[str]) -> None:
    assert main.main(["verify", "-db", str(waiting.db)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[-1] == cli_text.STATE_AGREES.format(runs=1, approvals=1, calls=0, steps=1, specs=1, holds=0, tasks=0)


def test_an_approval_forged_to_approved_exits_one_naming_table_key_and_mismatch(
        waiting: Waiting, capsys: pytest.CaptureFixture[str]) -> None:
    edit(waiting.db, "UPDATE approvals SET status = 'approved' WHERE id = ?", waiting.approval_id)
    assert main.main(["verify", "-db", str(waiting.db)]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out[1].startswith("intact: ")  # the chain is intact: only the state says otherwise
    assert out[-2:] == [
        cli_text.STATE_DISAGREES.format(count=1),
        f'  approvals {waiting.approval_id}: status is "approved"; the chain says "pending"',
    ]


def test_the_json_report_is_not_intact_and_carries_each_finding(
        waiting: Waiting, capsys: pytest.CaptureFixture[str]) -> None:
    edit(waiting.db, "UPDATE runs SET status = 'RUNNING' WHERE id = ?", waiting.run_id)
    assert main.main(["verify", "-db", str(waiting.db), "-json"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert report["intact"] is False and "break" not in report
    state = report["state"]
    assert (state["checked"], state["agrees"], state["findings"]) == (True, False, 1)
    (finding,) = state["mismatches"]
    assert {k: finding[k] for k in ("table", "key", "column", "found", "expected")} == {
        "table": "runs", "key": waiting.run_id, "column": "status", "found": '"RUNNING"',
        "expected": '"WAITING_FOR_APPROVAL"'}


def test_a_forged_value_is_printed_made_safe(waiting: Waiting, capsys: pytest.CaptureFixture[str]) -> None:
    edit(waiting.db, "UPDATE approvals SET note = ? WHERE id = ?", "ok\x1b[2J\x07\nby me", waiting.approval_id)
    assert main.main(["verify", "-db", str(waiting.db)]) == 1
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\x07" not in out
    assert [line for line in out.splitlines() if "approvals" in line and "note" in line]


def test_past_twenty_findings_the_rest_are_counted(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "many.db"
    for n in range(25):
        pause_run(db, goal=f"run {n}")
    edit(db, "UPDATE approvals SET status = 'approved'")
    assert main.main(["verify", "-db", str(db)]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out[-1] == cli_text.STATE_MORE.format(count=5)
    assert cli_text.STATE_DISAGREES.format(count=25) in out


def test_a_part_of_the_chain_says_the_state_was_not_checked(
        waiting: Waiting, capsys: pytest.CaptureFixture[str]) -> None:
    edit(waiting.db, "UPDATE runs SET status = 'RUNNING' WHERE id = ?", waiting.run_id)
    assert main.main(["verify", "-db", str(waiting.db), "-from", "2"]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == cli_text.STATE_SKIPPED_RANGE


def test_a_broken_chain_says_the_state_was_not_checked(waiting: Waiting, capsys: pytest.CaptureFixture[str]) -> None:
    edit(waiting.db, "UPDATE events SET payload_json = ? WHERE seq = 2", '{"forged":1}')
    assert main.main(["verify", "-db", str(waiting.db)]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out[1].startswith("broken at seq 2") and out[-1] == cli_text.STATE_SKIPPED_BROKEN
