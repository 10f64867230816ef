"""The operator's subcommands: runs, show, approve, reject, verify.

Databases are built through the store and the gate (a run waiting on an approval is one
the gate paused), never by writing rows by hand; only the tampering tests reach past the
store with sqlite3, as an attacker or a careless edit would.
"""

from __future__ import annotations

import json
import sqlite3
import sys
from pathlib import Path
from typing import Any

import pytest

from agentrt_proxy.cli import _deciding as deciding
from agentrt_proxy.cli import _reading as reading
from agentrt_proxy.cli import _verify_chain as verify_chain
from agentrt_proxy.cli import main
from agentrt_proxy.gate import approve_shown
from agentrt_proxy.store import Store
from tests.operator_fixtures import TOOL, Waiting, _Terminal, approval_row, one_clear_line, pause_run

# --------------------------------------------------------------------------- runs and show


def test_runs_says_no_runs_and_escapes_what_a_model_wrote(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "proxy.db"
    Store.open(str(db)).close()
    assert reading.runs_command(["-db", str(db)]) == 0
    assert capsys.readouterr().out == "no runs\n"
    pause_run(db, goal="clear the screen \x1b[2J\u202e" + "x" * 200)
    assert reading.runs_command(["-db", str(db)]) == 0
    row = capsys.readouterr().out.splitlines()[1]
    assert "\x1b" not in row and "\u202e" not in row
    assert "\\x1b[2J\\u{202e}" in row and row.endswith("…")


def test_show_json_carries_the_runtime_fields_and_the_events(
    waiting: Waiting, capsys: pytest.CaptureFixture[str]
) -> None:
    assert reading.show_command(["-db", str(waiting.db), waiting.run_id, "-json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["run"]["pending_approval_id"] == waiting.approval_id
    assert shown["waiting_approval"]["id"] == waiting.approval_id
    assert shown["steps_total"] == 1 and shown["approvals_total"] == 1
    assert shown["steps"][0]["tool"] == TOOL
    assert shown["events"][0]["type"] == "run.created"


def test_show_an_unknown_run_is_one_line(waiting: Waiting, capsys: pytest.CaptureFixture[str]) -> None:
    assert reading.show_command(["-db", str(waiting.db), "nope"]) == 1
    assert one_clear_line(capsys.readouterr().err) == "agentrt-proxy: show: no run nope in this database"


# --------------------------------------------------------------------------- approve and reject


@pytest.mark.parametrize(
    ("answer", "code", "status"),
    [("y\n", 0, "approved"), ("YES\n", 0, "approved"), ("n\n", 1, "pending"), ("", 2, "pending")],
)
def test_the_prompt_decides_only_on_yes(
    waiting: Waiting,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    answer: str,
    code: int,
    status: str,
) -> None:
    monkeypatch.setattr(sys, "stdin", _Terminal(answer))
    assert main.main(["approve", "-db", str(waiting.db), waiting.run_id, "-by", "alice"]) == code
    err = capsys.readouterr().err
    assert err.startswith(f"Approve approval {waiting.approval_id} of run {waiting.run_id}? [y/N] ")
    if code == 1:
        assert err.endswith("agentrt-proxy: approve: declined at the prompt\n")
    assert approval_row(waiting.db, waiting.approval_id)["status"] == status


def test_a_row_changed_between_print_and_decision_is_refused(
    waiting: Waiting, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    shown = deciding.write_approval_block

    def print_then_change(store: Store, approval: Any, path: str) -> None:
        shown(store, approval, path)
        # What another writer could do after the operator read the block: the row the
        # decision would bind to is no longer the one printed.
        conn = sqlite3.connect(waiting.db)
        conn.execute("UPDATE approvals SET presentation_json = '{}', hash = ? WHERE id = ?", ("0" * 64, approval.id))
        conn.commit()
        conn.close()

    monkeypatch.setattr(deciding, "write_approval_block", print_then_change)
    argv = ["-db", str(waiting.db), waiting.run_id, "-approval", waiting.approval_id, "-by", "a"]
    code = deciding.approve_command(argv)
    assert code == 1
    assert one_clear_line(capsys.readouterr().err) == (
        f"agentrt-proxy: approve: approval {waiting.approval_id} changed after it was shown; run the command "
        "again and read it before deciding"
    )
    assert approval_row(waiting.db, waiting.approval_id)["status"] == "pending"


def test_an_approval_decided_through_the_store_after_the_print_is_already_decided(
    waiting: Waiting, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    shown = deciding.write_approval_block

    def print_then_decide_elsewhere(store: Store, approval: Any, path: str) -> None:
        shown(store, approval, path)
        other = Store.open(str(waiting.db))
        approve_shown(other, waiting.run_id, approval.id, approval.hash, "someone-else")
        other.close()

    monkeypatch.setattr(deciding, "write_approval_block", print_then_decide_elsewhere)
    code = deciding.reject_command(["-db", str(waiting.db), waiting.run_id, "-yes", "-by", "a", "-note", "no"])
    assert code == 1
    assert one_clear_line(capsys.readouterr().err) == (
        f"agentrt-proxy: reject: approval {waiting.approval_id} is already approved"
    )


@pytest.mark.parametrize("note", [None, "   "])
def test_reject_needs_a_note(waiting: Waiting, capsys: pytest.CaptureFixture[str], note: str | None) -> None:
    argv = ["reject", "-db", str(waiting.db), waiting.run_id, "-yes", "-by", "a"]
    assert main.main(argv + (["-note", note] if note is not None else [])) == 2
    assert "reject needs -note TEXT" in capsys.readouterr().err


def test_deciding_needs_a_decider(
    waiting: Waiting, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # $USER unset, no account name from the system, no uid: only then is -by demanded.
    monkeypatch.delenv("USER", raising=False)

    def nameless() -> str:
        raise OSError("no account name")

    monkeypatch.setattr("getpass.getuser", nameless)
    monkeypatch.delattr("os.getuid")
    assert main.main(["approve", "-db", str(waiting.db), waiting.run_id, "-yes"]) == 2
    assert "-by WHO" in capsys.readouterr().err


def test_with_user_unset_the_account_name_decides(
    waiting: Waiting, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("USER", raising=False)
    monkeypatch.setattr("getpass.getuser", lambda: "from-the-system")
    assert main.main(["approve", "-db", str(waiting.db), waiting.run_id, "-yes"]) == 0
    assert "approved by from-the-system" in capsys.readouterr().out


def test_clear_lines_for_unknown_decided_and_ambiguous_approvals(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "proxy.db"
    run_id, approval_id = pause_run(db)
    base = ["-db", str(db), "-by", "a", "-yes"]
    assert deciding.approve_command([*base, run_id, "-approval", "feed"]) == 1
    assert one_clear_line(capsys.readouterr().err).endswith(f"no approval feed in run {run_id}")
    assert deciding.approve_command([*base, "nope"]) == 1
    assert one_clear_line(capsys.readouterr().err).endswith("no run nope in this database")
    assert deciding.reject_command([*base, run_id, "-note", "no"]) == 0
    capsys.readouterr()
    assert deciding.approve_command([*base, run_id, "-approval", approval_id]) == 1
    assert one_clear_line(capsys.readouterr().err).endswith(f"approval {approval_id} is already rejected")
    assert deciding.approve_command([*base, run_id]) == 1
    assert one_clear_line(capsys.readouterr().err).endswith(f"no pending approval in run {run_id}")


# --------------------------------------------------------------------------- verify


def test_verify_a_kept_head_whose_hash_changed_and_an_unreached_to(
    waiting: Waiting, capsys: pytest.CaptureFixture[str]
) -> None:
    assert verify_chain.verify_command(["-db", str(waiting.db), "-head", "2:" + "a" * 64]) == 1
    assert "kept head: seq 2 has changed: kept " in capsys.readouterr().out
    assert verify_chain.verify_command(["-db", str(waiting.db), "-to", "999"]) == 1
    assert "not reached: -to 999" in capsys.readouterr().out


@pytest.mark.parametrize(
    "argv",
    [
        ["-from", "-1"],
        ["-from", "5", "-to", "2"],
        ["-head", "x"],
        ["-head", "3:ZZ"],
        ["-to", "2", "-head", "5:ab"],
        ["extra"],
    ],
)
def test_verify_usage_errors_exit_two_before_opening(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str]
) -> None:
    assert main.main(["verify", "-db", str(tmp_path / "absent.db"), *argv]) == 2
    assert "does not exist" not in capsys.readouterr().err


# --------------------------------------------------------------------------- opening the database


@pytest.mark.parametrize("argv", [[], ["-db", "a.db", "-config", "c.json"]])
def test_the_database_comes_from_exactly_one_of_db_and_config(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main.main(["runs", *argv]) == 2
    assert "-db" in capsys.readouterr().err


def test_the_database_can_come_from_the_configuration(waiting: Waiting, capsys: pytest.CaptureFixture[str]) -> None:
    config = waiting.db.parent / "proxy.json"
    config.write_text(
        json.dumps(
            {
                "database": waiting.db.name,
                "session": "s",
                "servers": [
                    {
                        "name": "fs",
                        "command": ["x"],
                        "manifest": "m.json",
                        "rules": {"write_file": {"side_effect": "local_mutation"}},
                    }
                ],
            }
        )
    )
    config.chmod(0o600)
    assert reading.runs_command(["-config", str(config)]) == 0
    assert waiting.approval_id in capsys.readouterr().out
