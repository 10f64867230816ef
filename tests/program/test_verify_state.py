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
    assert done.stdout.splitlines()[-1] == "state: 4 run(s), 3 approval(s), 4 call(s): every row agrees with the chain"


@pytest.mark.parametrize(("sql", "finding"), [
    ("UPDATE approvals SET status = 'approved' WHERE note = 'not lee'",
     r'approvals \w+: status is "approved"; the chain says "rejected"'),
    ("DELETE FROM proxy_calls",
     r"proxy_calls \d+ \(run [\w.]+\): no row; the chain says the proxy began this run for a call of bank_pay"),
    ("UPDATE runs SET status = 'RUNNING' WHERE reason = 'goal_completed'",
     r'runs [\w.]+: status is "RUNNING"; the chain says "COMPLETED"'),
], ids=["approval forged", "call index deleted", "run status set"])
def test_verify_exits_one_naming_the_row_an_edit_by_sql_changed(
        honest: Path, tmp_path: Path, sql: str, finding: str) -> None:
    done = run_program(["verify", "-db", str(forged(honest, tmp_path, sql))])
    assert done.returncode == 1, done.stdout + done.stderr
    assert done.stdout.splitlines()[1].startswith("intact: ")  # the chain alone would have said intact
    assert re.search(r"^  " + finding, done.stdout, re.MULTILINE), done.stdout
    assert done.stderr == ""
