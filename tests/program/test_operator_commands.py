"""The operator's commands run as the operator runs them: runs, show, approve, reject, verify in processes of their own.

Black-box: each test runs the real program, on the source tree and again on the .pyz.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from tests.conftest import current_target, run_program, target_argv, target_env
from tests.operator_fixtures import TOOL, Waiting, _tamper, approval_row, one_clear_line, run_row, running_run


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


@pytest.mark.program
def test_verify_an_intact_chain_exits_zero(waiting: Waiting) -> None:
    done = run_program(["verify", "-db", str(waiting.db)])
    assert done.returncode == 0, done.stderr
    head, intact, last, state = done.stdout.splitlines()
    assert head.startswith("head: seq ") and intact.startswith("intact: ") and last.startswith("last checked: seq ")
    seq = int(head.split()[2])
    assert intact == f"intact: {seq} event(s), seq 1 to {seq}"
    assert state == ("state: 1 run(s), 1 approval(s), 0 call(s): every row agrees with the chain, as do 1 step(s), "
                     "1 tool spec(s), 0 budget reservation(s) and 0 task(s)")


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
def test_deleting_the_newest_events_is_caught_against_a_kept_head_and_by_the_rows_they_explained(
        waiting: Waiting) -> None:
    first = run_program(["verify", "-db", str(waiting.db)]).stdout.splitlines()[0].split()
    kept = f"{first[2]}:{first[3]}"
    assert f"kept head: seq {first[2]} matches" in run_program(
        ["verify", "-db", str(waiting.db), "-head", kept]).stdout.splitlines()
    _tamper(waiting.db, "DELETE FROM events WHERE seq >= ?", int(first[2]) - 1)
    cut = run_program(["verify", "-db", str(waiting.db)])
    # The cut chain still verifies as a chain; the approval and run rows it explained no longer agree.
    assert cut.returncode == 1 and cut.stdout.splitlines()[1].startswith("intact: ")
    assert f"  approvals {waiting.approval_id}: no event in the chain explains this row" in cut.stdout.splitlines()
    done = run_program(["verify", "-db", str(waiting.db), "-head", kept])
    assert done.returncode == 1
    missing = f"kept head: seq {first[2]} is not in the database"
    assert any(line.startswith(missing) for line in done.stdout.splitlines())


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
