"""The operator's subcommands: runs, show, approve, reject, verify.

Databases are built through the store and the gate (a run waiting on an approval is one
the gate paused), never by writing rows by hand; only the tampering tests reach past the
store with sqlite3, as an attacker or a careless edit would.
"""

from __future__ import annotations

import io
import json
import os
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from agentrt_proxy import canonical
from agentrt_proxy.cli import main
from agentrt_proxy.cli import operator as op
from agentrt_proxy.gate import Decision, Gate, OfferedTool, ProxyPolicy, approve_shown, proxy_limits
from agentrt_proxy.store import Store, new_id
from agentrt_proxy.upstream import ToolSpec
from tests.conftest import current_target, run_program, target_argv, target_env

DAY_NS = 86_400_000_000_000
TOOL = "fs_write_file"
ARGS = '{"path":"notes/a.txt","content":"hello\\u001b[2J world"}'


@dataclass
class Waiting:
    db: Path
    run_id: str
    approval_id: str


def _gate(store: Store, outcome: str | None = "require_approval") -> Gate:
    tool = OfferedTool(TOOL, "fs", "write_file", "local_mutation", outcome, {"root": "/home/me/notes"})
    policy = ProxyPolicy({}, {TOOL: tool}, "agentrt-proxy/sha256:test")
    spec = ToolSpec(TOOL, "Write a file", canonical.parse_strict('{"type":"object"}'), "local_mutation",
                    10_000_000_000)
    return Gate(store, policy, [spec])


def pause_run(db: Path, goal: str = "write the notes", args: str = ARGS) -> tuple[str, str]:
    """One run the gate paused on an approval: (run id, approval id)."""
    store = Store.open(str(db))
    try:
        session = _gate(store).begin(new_id(), goal, proxy_limits(DAY_NS, DAY_NS))
        session.step()
        verdict = session.propose(Decision("tool_call", tool=TOOL, args=args))
        assert verdict.approval is not None, verdict
        return session.run_id, verdict.approval.id
    finally:
        store.close()


def running_run(db: Path, goal: str = "a newer run") -> str:
    """A run the policy allowed, left running (its tool never called)."""
    store = Store.open(str(db))
    try:
        session = _gate(store, outcome="allow").begin(new_id(), goal, proxy_limits(DAY_NS, DAY_NS))
        session.step()
        session.propose(Decision("tool_call", tool=TOOL, args='{"path":"b.txt","content":""}'))
        return session.run_id
    finally:
        store.close()


@pytest.fixture
def waiting(tmp_path: Path) -> Waiting:
    db = tmp_path / "proxy.db"
    run_id, approval_id = pause_run(db)
    return Waiting(db, run_id, approval_id)


def approval_row(db: Path, approval_id: str) -> dict[str, Any]:
    conn = sqlite3.connect(db)
    conn.row_factory = sqlite3.Row
    try:
        return dict(conn.execute("SELECT * FROM approvals WHERE id = ?", (approval_id,)).fetchone())
    finally:
        conn.close()


def run_row(db: Path, run_id: str) -> dict[str, Any]:
    conn = sqlite3.connect(db)
    conn.row_factory = sqlite3.Row
    try:
        return dict(conn.execute("SELECT * FROM runs WHERE id = ?", (run_id,)).fetchone())
    finally:
        conn.close()


def one_clear_line(stderr: str) -> str:
    assert "Traceback" not in stderr
    lines = stderr.splitlines()
    assert len(lines) == 1, stderr
    assert lines[0].startswith("agentrt-proxy: ")
    return lines[0]


# --------------------------------------------------------------------------- runs and show


@pytest.mark.program
def test_runs_lists_the_waiting_run_first_with_its_approval_id(waiting: Waiting) -> None:
    newer = running_run(waiting.db)
    done = run_program(["runs", "-db", str(waiting.db)])
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].split() == ["RUN", "STATUS", "REASON", "STEPS", "CREATED", "APPROVAL", "GOAL"]
    assert lines[1].startswith(waiting.run_id) and waiting.approval_id in lines[1]
    assert "WAITING_FOR_APPROVAL" in lines[1]
    assert lines[2].startswith(newer)


@pytest.mark.program
def test_runs_json_has_the_runtime_shape_and_pages_with_offset(waiting: Waiting) -> None:
    running_run(waiting.db)
    done = run_program(["runs", "-db", str(waiting.db), "-json", "-limit", "1"])
    assert done.returncode == 0, done.stderr
    page = json.loads(done.stdout)
    assert page["total"] == 2 and page["limit"] == 1 and page["offset"] == 0 and page["truncated"] is True
    text = run_program(["runs", "-db", str(waiting.db), "-limit", "1"]).stdout
    assert text.splitlines()[-1] == "... 1 more run(s); rerun with -offset 1"


def test_runs_says_no_runs_and_escapes_what_a_model_wrote(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "proxy.db"
    Store.open(str(db)).close()
    assert op.runs_command(["-db", str(db)]) == 0
    assert capsys.readouterr().out == "no runs\n"
    pause_run(db, goal="clear the screen \x1b[2J\u202e" + "x" * 200)
    assert op.runs_command(["-db", str(db)]) == 0
    row = capsys.readouterr().out.splitlines()[1]
    assert "\x1b" not in row and "\u202e" not in row
    assert "\\x1b[2J\\u{202e}" in row and row.endswith("…")


@pytest.mark.program
def test_show_prints_the_request_with_its_server_fixed_values_and_reason(waiting: Waiting) -> None:
    done = run_program(["show", "-db", str(waiting.db), waiting.run_id])
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert f"run      {waiting.run_id}" in out
    block = out[out.index(f"APPROVAL WAITING  {waiting.approval_id}"):]
    end = f"----- end of approval {waiting.approval_id} for tool {TOOL} -----"
    block = block[: block.index(end) + len(end)]
    for expected in ('server (4 bytes): "fs"', 'tool (12 bytes): "write_file"', "fixed (", "/home/me/notes",
                     "reason (", "require_approval", 'path (13 bytes): "notes/a.txt"', "question ("):
        assert expected in block, expected
    assert "\x1b" not in out
    assert "STEP  TOOL" in out and "awaiting_approval" in out
    assert "approval.requested" in out and "step.policy" in out


def test_show_json_carries_the_runtime_fields_and_the_events(
        waiting: Waiting, capsys: pytest.CaptureFixture[str]) -> None:
    assert op.show_command(["-db", str(waiting.db), waiting.run_id, "-json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["run"]["pending_approval_id"] == waiting.approval_id
    assert shown["waiting_approval"]["id"] == waiting.approval_id
    assert shown["steps_total"] == 1 and shown["approvals_total"] == 1
    assert shown["steps"][0]["tool"] == TOOL
    assert shown["events"][0]["type"] == "run.created"


def test_show_an_unknown_run_is_one_line(waiting: Waiting, capsys: pytest.CaptureFixture[str]) -> None:
    assert op.show_command(["-db", str(waiting.db), "nope"]) == 1
    assert one_clear_line(capsys.readouterr().err) == "agentrt-proxy: show: no run nope in this database"


# --------------------------------------------------------------------------- approve and reject


@pytest.mark.program
def test_approve_with_the_approval_named_decides_and_prints_the_outcome(waiting: Waiting) -> None:
    done = run_program(["approve", "-db", str(waiting.db), waiting.run_id, "-approval", waiting.approval_id,
                        "-by", "alice"])
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    end = f"----- end of approval {waiting.approval_id} for tool {TOOL} -----"
    assert lines[-4] == end
    assert lines[-3] == f"approval {waiting.approval_id}: approved by alice"
    assert lines[-2] == f"run {waiting.run_id}: WAITING_FOR_APPROVAL"
    assert lines[-1] == "the run stays waiting until the model calls the tool again with the same arguments"
    row = approval_row(waiting.db, waiting.approval_id)
    assert (row["status"], row["decided_by"]) == ("approved", "alice")


@pytest.mark.program
def test_approve_takes_flags_after_the_run_and_the_decider_from_USER(waiting: Waiting) -> None:
    done = run_program(["approve", waiting.run_id, "-yes", "-db", str(waiting.db), "-json"], env={"USER": "bob"})
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["approval"]["status"] == "approved" and out["approval"]["decided_by"] == "bob"
    assert out["approval"]["hash"] == approval_row(waiting.db, waiting.approval_id)["hash"]


@pytest.mark.program
def test_approve_without_consent_and_no_terminal_is_a_usage_error_and_decides_nothing(waiting: Waiting) -> None:
    done = run_program(["approve", "-db", str(waiting.db), waiting.run_id, "-by", "alice"])
    assert done.returncode == 2
    assert "not deciding without consent" in done.stderr
    assert approval_row(waiting.db, waiting.approval_id)["status"] == "pending"


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.mark.parametrize(("answer", "code", "status"), [("y\n", 0, "approved"), ("YES\n", 0, "approved"),
                                                       ("n\n", 1, "pending"), ("", 2, "pending")])
def test_the_prompt_decides_only_on_yes(waiting: Waiting, monkeypatch: pytest.MonkeyPatch,
                                        capsys: pytest.CaptureFixture[str], answer: str, code: int,
                                        status: str) -> None:
    monkeypatch.setattr(sys, "stdin", _Terminal(answer))
    assert main.main(["approve", "-db", str(waiting.db), waiting.run_id, "-by", "alice"]) == code
    err = capsys.readouterr().err
    assert err.startswith(f"Approve approval {waiting.approval_id} of run {waiting.run_id}? [y/N] ")
    if code == 1:
        assert err.endswith("agentrt-proxy: approve: declined at the prompt\n")
    assert approval_row(waiting.db, waiting.approval_id)["status"] == status


def test_a_row_changed_between_print_and_decision_is_refused(
        waiting: Waiting, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    shown = op.write_approval_block

    def print_then_change(store: Store, approval: Any, path: str) -> None:
        shown(store, approval, path)
        # What another writer could do after the operator read the block: the row the
        # decision would bind to is no longer the one printed.
        conn = sqlite3.connect(waiting.db)
        conn.execute("UPDATE approvals SET presentation_json = '{}', hash = ? WHERE id = ?",
                     ("0" * 64, approval.id))
        conn.commit()
        conn.close()

    monkeypatch.setattr(op, "write_approval_block", print_then_change)
    code = op.approve_command(["-db", str(waiting.db), waiting.run_id, "-approval", waiting.approval_id, "-by", "a"])
    assert code == 1
    assert one_clear_line(capsys.readouterr().err) == (
        f"agentrt-proxy: approve: approval {waiting.approval_id} changed after it was shown; run the command "
        "again and read it before deciding")
    assert approval_row(waiting.db, waiting.approval_id)["status"] == "pending"


def test_an_approval_decided_through_the_store_after_the_print_is_already_decided(
        waiting: Waiting, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    shown = op.write_approval_block

    def print_then_decide_elsewhere(store: Store, approval: Any, path: str) -> None:
        shown(store, approval, path)
        other = Store.open(str(waiting.db))
        approve_shown(other, waiting.run_id, approval.id, approval.hash, "someone-else")
        other.close()

    monkeypatch.setattr(op, "write_approval_block", print_then_decide_elsewhere)
    code = op.reject_command(["-db", str(waiting.db), waiting.run_id, "-yes", "-by", "a", "-note", "no"])
    assert code == 1
    assert one_clear_line(capsys.readouterr().err) == (
        f"agentrt-proxy: reject: approval {waiting.approval_id} is already approved")


@pytest.mark.program
def test_two_approvals_at_once_decide_exactly_once(waiting: Waiting) -> None:
    argv = [*target_argv(current_target()), "approve", "-db", str(waiting.db), waiting.run_id,
            "-approval", waiting.approval_id]
    env = target_env(current_target())
    procs = [subprocess.Popen([*argv, "-by", who], env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for who in ("first", "second")]
    results = [(p.wait(timeout=60), *p.communicate()) for p in procs]
    codes = sorted(code for code, _out, _err in results)
    assert codes == [0, 1], results
    loser = next(err for code, _out, err in results if code == 1)
    assert one_clear_line(loser) == f"agentrt-proxy: approve: approval {waiting.approval_id} is already approved"
    winner = next(out for code, out, _err in results if code == 0)
    row = approval_row(waiting.db, waiting.approval_id)
    assert f"approved by {row['decided_by']}" in winner


@pytest.mark.program
def test_reject_records_the_note_and_ends_the_run(waiting: Waiting) -> None:
    done = run_program(["reject", "-db", str(waiting.db), waiting.run_id, "-approval", waiting.approval_id,
                        "-by", "alice", "-note", "not that file"])
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-2:] == [
        f"approval {waiting.approval_id}: rejected by alice",
        f"run {waiting.run_id}: CANCELLED (approval_rejected)",
    ]
    row = approval_row(waiting.db, waiting.approval_id)
    assert (row["status"], row["note"]) == ("rejected", "not that file")
    assert run_row(waiting.db, waiting.run_id)["reason_detail"] == "not that file"


@pytest.mark.parametrize("note", [None, "   "])
def test_reject_needs_a_note(waiting: Waiting, capsys: pytest.CaptureFixture[str], note: str | None) -> None:
    argv = ["reject", "-db", str(waiting.db), waiting.run_id, "-yes", "-by", "a"]
    assert main.main(argv + (["-note", note] if note is not None else [])) == 2
    assert "reject needs -note TEXT" in capsys.readouterr().err


def test_deciding_needs_a_decider(waiting: Waiting, monkeypatch: pytest.MonkeyPatch,
                                  capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.delenv("USER", raising=False)
    assert main.main(["approve", "-db", str(waiting.db), waiting.run_id, "-yes"]) == 2
    assert "-by WHO" in capsys.readouterr().err


def test_clear_lines_for_unknown_decided_and_ambiguous_approvals(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "proxy.db"
    run_id, approval_id = pause_run(db)
    base = ["-db", str(db), "-by", "a", "-yes"]
    assert op.approve_command([*base, run_id, "-approval", "feed"]) == 1
    assert one_clear_line(capsys.readouterr().err).endswith(f"no approval feed in run {run_id}")
    assert op.approve_command([*base, "nope"]) == 1
    assert one_clear_line(capsys.readouterr().err).endswith("no run nope in this database")
    assert op.reject_command([*base, run_id, "-note", "no"]) == 0
    capsys.readouterr()
    assert op.approve_command([*base, run_id, "-approval", approval_id]) == 1
    assert one_clear_line(capsys.readouterr().err).endswith(f"approval {approval_id} is already rejected")
    assert op.approve_command([*base, run_id]) == 1
    assert one_clear_line(capsys.readouterr().err).endswith(f"no pending approval in run {run_id}")


# --------------------------------------------------------------------------- verify


def _tamper(db: Path, sql: str, *args: Any) -> None:
    conn = sqlite3.connect(db)
    conn.execute(sql, args)
    conn.commit()
    conn.close()


@pytest.mark.program
def test_verify_an_intact_chain_exits_zero(waiting: Waiting) -> None:
    done = run_program(["verify", "-db", str(waiting.db)])
    assert done.returncode == 0, done.stderr
    head, intact, last = done.stdout.splitlines()
    assert head.startswith("head: seq ") and intact.startswith("intact: ") and last.startswith("last checked: seq ")
    seq = int(head.split()[2])
    assert intact == f"intact: {seq} event(s), seq 1 to {seq}"


@pytest.mark.program
def test_verify_names_the_seq_of_an_event_edited_behind_the_store(waiting: Waiting) -> None:
    _tamper(waiting.db, "UPDATE events SET payload_json = '{\"index\":7}' WHERE seq = 3")
    done = run_program(["verify", "-db", str(waiting.db), "-json"])
    assert done.returncode == 1
    assert json.loads(done.stdout)["break"]["seq"] == 3
    text = run_program(["verify", "-db", str(waiting.db)])
    assert text.returncode == 1
    assert "broken at seq 3: the stored hash is not the one" in text.stdout
    assert "  expected: " in text.stdout and "  found:    " in text.stdout


@pytest.mark.program
def test_deleting_the_newest_events_is_caught_only_against_a_kept_head(waiting: Waiting) -> None:
    first = run_program(["verify", "-db", str(waiting.db)]).stdout.splitlines()[0].split()
    kept = f"{first[2]}:{first[3]}"
    assert run_program(["verify", "-db", str(waiting.db), "-head", kept]).stdout.splitlines()[-1] == (
        f"kept head: seq {first[2]} matches")
    _tamper(waiting.db, "DELETE FROM events WHERE seq >= ?", int(first[2]) - 1)
    assert run_program(["verify", "-db", str(waiting.db)]).returncode == 0
    done = run_program(["verify", "-db", str(waiting.db), "-head", kept])
    assert done.returncode == 1
    assert done.stdout.splitlines()[-1].startswith(f"kept head: seq {first[2]} is not in the database")


def test_verify_a_kept_head_whose_hash_changed_and_an_unreached_to(
        waiting: Waiting, capsys: pytest.CaptureFixture[str]) -> None:
    assert op.verify_command(["-db", str(waiting.db), "-head", "2:" + "a" * 64]) == 1
    assert "kept head: seq 2 has changed: kept " in capsys.readouterr().out
    assert op.verify_command(["-db", str(waiting.db), "-to", "999"]) == 1
    assert "not reached: -to 999" in capsys.readouterr().out


@pytest.mark.parametrize("argv", [["-from", "-1"], ["-from", "5", "-to", "2"], ["-head", "x"],
                                  ["-head", "3:ZZ"], ["-to", "2", "-head", "5:ab"], ["extra"]])
def test_verify_usage_errors_exit_two_before_opening(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str]) -> None:
    assert main.main(["verify", "-db", str(tmp_path / "absent.db"), *argv]) == 2
    assert "does not exist" not in capsys.readouterr().err


# --------------------------------------------------------------------------- opening the database


@pytest.mark.parametrize("argv", [[], ["-db", "a.db", "-config", "c.json"]])
def test_the_database_comes_from_exactly_one_of_db_and_config(
        argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main.main(["runs", *argv]) == 2
    assert "-db" in capsys.readouterr().err


def test_the_database_can_come_from_the_configuration(waiting: Waiting, capsys: pytest.CaptureFixture[str]) -> None:
    config = waiting.db.parent / "proxy.json"
    config.write_text(json.dumps({
        "database": waiting.db.name, "session": "s",
        "servers": [{"name": "fs", "command": ["x"], "manifest": "m.json",
                     "rules": {"write_file": {"side_effect": "local_mutation"}}}],
    }))
    config.chmod(0o600)
    assert op.runs_command(["-config", str(config)]) == 0
    assert waiting.approval_id in capsys.readouterr().out


@pytest.mark.program
def test_a_missing_database_is_one_line_and_is_not_created(tmp_path: Path) -> None:
    db = tmp_path / "absent.db"
    for command in (["runs"], ["show", "r"], ["verify"], ["approve", "r", "-yes", "-by", "a"]):
        done = run_program([*command, "-db", str(db)])
        assert done.returncode == 1
        assert "does not exist" in one_clear_line(done.stderr) and str(db) in done.stderr
    assert not db.exists()


@pytest.mark.program
@pytest.mark.skipif(os.name != "posix", reason="file modes are POSIX")
def test_a_group_writable_database_is_one_line_naming_the_fix(waiting: Waiting) -> None:
    waiting.db.chmod(0o660)
    done = run_program(["runs", "-db", str(waiting.db)])
    assert done.returncode == 1
    line = one_clear_line(done.stderr)
    assert str(waiting.db) in line and "chmod" in line


@pytest.mark.program
def test_a_symbolic_link_is_refused_in_one_line(waiting: Waiting) -> None:
    link = waiting.db.parent / "link.db"
    link.symlink_to(waiting.db)
    done = run_program(["show", "-db", str(link), waiting.run_id])
    assert done.returncode == 1
    assert "symbolic link" in one_clear_line(done.stderr)


@pytest.mark.program
def test_a_newer_schema_is_refused_in_one_line(waiting: Waiting) -> None:
    _tamper(waiting.db, "INSERT INTO schema_migrations (version, applied_at) VALUES (99, 'later')")
    done = run_program(["verify", "-db", str(waiting.db)])
    assert done.returncode == 1
    line = one_clear_line(done.stderr)
    assert "version 99" in line and "never migrate" in line


@pytest.fixture
def locked(waiting: Waiting) -> Iterator[Waiting]:
    conn = sqlite3.connect(waiting.db, isolation_level=None)
    conn.execute("BEGIN EXCLUSIVE")
    try:
        yield waiting
    finally:
        conn.execute("ROLLBACK")
        conn.close()


@pytest.mark.program
def test_a_locked_database_is_one_line_and_decides_nothing(locked: Waiting) -> None:
    done = run_program(["approve", "-db", str(locked.db), locked.run_id, "-approval", locked.approval_id,
                        "-by", "a", "-json"])
    assert done.returncode == 1
    line = one_clear_line(done.stderr)
    assert "locked" in line and str(locked.db) in line
    assert approval_row(locked.db, locked.approval_id)["status"] == "pending"


@pytest.mark.program
def test_a_configuration_that_cannot_be_read_is_one_line(tmp_path: Path) -> None:
    missing = tmp_path / "missing.json"
    done = run_program(["runs", "-config", str(missing)])
    assert done.returncode == 1
    assert str(missing) in one_clear_line(done.stderr)
