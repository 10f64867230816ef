"""verify through the real program, on a database the proxy wrote (tests/verify_fixtures.py):
intact and exit 0 as written; after each of the issue's edits by SQL, exit 1 and a line naming
the table, the key and what disagrees."""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path

import anyio
import pytest

from tests.conftest import run_program
from tests.verify_fixtures import build_honest

pytestmark = [pytest.mark.program, pytest.mark.timeout(180)]


@pytest.fixture(scope="module")
def honest(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return anyio.run(build_honest, tmp_path_factory.mktemp("honest"))


def forged(honest: Path, directory: Path, sql: str) -> Path:
    target = directory / "forged.db"
    with sqlite3.connect(honest) as src, sqlite3.connect(target) as dst:
        src.backup(dst)
    target.chmod(0o600)
    conn = sqlite3.connect(target)
    conn.execute(sql)
    conn.commit()
    conn.close()
    return target


def test_verify_of_an_honest_database_exits_zero_saying_every_row_agrees(honest: Path) -> None:
    done = run_program(["verify", "-db", str(honest)])
    assert done.returncode == 0, done.stdout + done.stderr
    last = done.stdout.splitlines()[-1]
    assert last.startswith("state: 5 run(s), 3 approval(s), 5 call(s): every row agrees with the chain"), last


@pytest.mark.parametrize(("sql", "finding"), [
    ("UPDATE approvals SET status = 'approved' WHERE note = 'not lee'",
     r'approvals \w+: status is "approved"; the chain says "rejected"'),
    ("DELETE FROM proxy_calls",
     r"proxy_calls \d+ \(run [\w.]+\): no row; the chain says the proxy began this run for a call of bank_pay"),
    ("UPDATE runs SET status = 'RUNNING' WHERE reason = 'goal_completed'",
     r'runs [\w.]+: status is "RUNNING"; the chain says "COMPLETED"'),
    # issue 22, item 7: every other table that carries a promise
    ("DELETE FROM budget_holds",
     r"budget_holds [\w.]+ daily: no row; the chain says budget.reserved at seq \d+ reserved 4"),
    ("UPDATE budget_holds SET state = 'released'",
     r'budget_holds [\w.]+ daily: state is "released"; the chain says "spent"'),
    ("UPDATE budget_holds SET amount = '0.01'",
     r'budget_holds [\w.]+ daily: amount is "0.01"; the chain says "4"'),
    ("DELETE FROM steps WHERE rowid = (SELECT MAX(rowid) FROM steps)",
     r"steps \w+: no row; the chain says step.started at seq \d+ began this step"),
    ("UPDATE steps SET status = 'deciding' WHERE status = 'done'",
     r'steps \w+: status is "deciding"; the chain says its step ended'),
    ("UPDATE steps SET observation_hash = 'forged' WHERE status = 'done'",
     r'steps \w+: observation_hash is "forged"; the chain says "\w+"'),
    ("DELETE FROM tool_specs",
     r"tool_specs \w+: no row; the chain says step.policy at seq \d+ decided under this tool spec"),
    ("UPDATE tool_specs SET spec_json = replace(spec_json, 'remote_mutation', 'read_only')",
     r"tool_specs \w+: spec_json is a spec hashing to \w+…; the chain says a spec hashing to \w+…"),
    ("UPDATE runs SET lease_owner = 'forged', lease_expires_at = '2999-01-01T00:00:00Z' WHERE status = 'COMPLETED'",
     r'runs [\w.]+: lease_owner is "forged"; the chain says its run is COMPLETED: an ended or waiting run holds no '
     r"lease"),
    ("INSERT INTO proxy_tasks (id, session, era, tool, request_key, run_id, status, created_at, updated_at, ttl_ms) "
     "VALUES ('forged', 'test', '2025-11-25', 'bank_pay', 'k', 'no-such-run', 'completed', 1, 1, 1000)",
     r'proxy_tasks forged: run_id is "no-such-run"; the chain says its run never began'),
], ids=["approval forged", "call index deleted", "run status set", "budget holds deleted", "budget hold released",
        "budget hold amount", "step deleted", "step reopened", "step observation", "tool specs deleted",
        "tool spec rewritten", "lease on an ended run", "task for no run"])
def test_verify_exits_one_naming_the_row_an_edit_by_sql_changed(
        honest: Path, tmp_path: Path, sql: str, finding: str) -> None:
    done = run_program(["verify", "-db", str(forged(honest, tmp_path, sql))])
    assert done.returncode == 1, done.stdout + done.stderr
    assert done.stdout.splitlines()[1].startswith("intact: ")  # the chain alone would have said intact
    assert re.search(r"^  " + finding, done.stdout, re.MULTILINE), done.stdout
    assert done.stderr == ""
