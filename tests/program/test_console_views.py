"""The console's read-only pages say what ``show``, ``verify`` and ``runs`` say: the same
readers, the same escaping. Each page is fetched over plain HTTP from the real ``console``
child and held to the real command's output on the same database.
"""

from __future__ import annotations

import datetime
import html
import re
import sqlite3
from pathlib import Path

import pytest

from tests.conftest import run_program
from tests.console_fixtures import Running, console, request, signed_in
from tests.operator_fixtures import pause_run, running_run
from tests.program.test_budget_processes import BUDGET, TIMEOUT_PRICED, _unknown_fifty
from tests.program.test_serve_process import proxy, world, write_config

pytestmark = [pytest.mark.program, pytest.mark.timeout(120)]

HOSTILE = '{"to":"<script>alert(1)</script>","memo":"pay \\u202eevil\\u001b[2J","note":"' + "n" * 3000 + '"}'


def pre_text(body: str) -> str:
    found = re.search(r"<pre>(.*?)</pre>", body, re.S)
    assert found, body
    return html.unescape(found.group(1))


def page(c: Running, cookie: str, path: str) -> str:
    answer = request(c, "GET", path, headers={"Cookie": cookie})
    assert answer.status == 200, (path, answer.body)
    return answer.body


def test_a_run_page_is_what_show_prints_and_the_verify_page_what_verify_prints(
    tmp_path: Path, program_argv: list[str], program_env: dict[str, str]
) -> None:
    config = write_config(tmp_path)
    db = tmp_path / "proxy.db"
    run_id, _ = pause_run(db, args=HOSTILE)
    shown = run_program(["show", "-db", str(db), run_id], timeout=30)
    verified = run_program(["verify", "-db", str(db)], timeout=30)
    assert shown.returncode == 0 and verified.returncode == 0
    with console(program_argv, program_env, config) as c:
        cookie, _ = signed_in(c)
        assert pre_text(page(c, cookie, f"/run?id={run_id}")) == shown.stdout.rstrip("\n")
        verify_body = page(c, cookie, "/verify")
    assert pre_text(verify_body) == verified.stdout.rstrip("\n") and ">Intact<" in verify_body


def test_every_argument_is_shown_field_by_field_as_show_escapes_it_and_never_as_html(
    tmp_path: Path, program_argv: list[str], program_env: dict[str, str]
) -> None:
    config = write_config(tmp_path)
    db = tmp_path / "proxy.db"
    run_id, _ = pause_run(db, args=HOSTILE)
    shown = run_program(["show", "-db", str(db), run_id], timeout=30).stdout
    fields = re.findall(r"^  (\S+) \((\d+) bytes\): (.*)$", shown, re.M)
    assert {name for name, _, _ in fields} >= {"to", "memo", "note", "question", "reason"}
    with console(program_argv, program_env, config) as c:
        cookie, _ = signed_in(c)
        body = page(c, cookie, "/")
    for name, size, value in fields:  # the same field, size and escaped value, as a table row
        assert f"<tr><td>{html.escape(name)}</td><td>{size}</td><td>{html.escape(value)}</td></tr>" in body, name
    assert "<script>alert" not in body and "\u202e" not in body and "\x1b" not in body
    assert "\\u{202e}" in body and "\\u001b" in body  # the escapes shown, as show shows them
    assert "bytes omitted]" in body  # the 3000-byte note cut head…tail, as show cuts it


def test_the_runs_filters_pick_waiting_failed_a_tool_and_a_day(
    tmp_path: Path, program_argv: list[str], program_env: dict[str, str]
) -> None:
    config = write_config(tmp_path)
    db = tmp_path / "proxy.db"
    waiting_run, approval = pause_run(db)
    other = running_run(db)
    rejected_run, rejected = pause_run(db, goal="a rejected one")
    done = run_program(["reject", "-db", str(db), rejected_run, "-approval", rejected, "-note", "no"], timeout=30)
    assert done.returncode == 0, done.stderr
    today = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d")
    with console(program_argv, program_env, config) as c:
        cookie, _ = signed_in(c)

        def listed(query: str) -> set[str]:
            body = page(c, cookie, f"/runs?{query}")
            return set(re.findall(r'<a href="/run\?id=([0-9a-z.]+)">', body))

        assert listed("status=all") == {waiting_run, other, rejected_run}
        assert listed("status=waiting") == {waiting_run}
        assert listed("status=failed") == {rejected_run}
        assert listed("status=unknown") == set()
        assert listed("tool=fs_write_file") == {waiting_run, other, rejected_run}
        assert listed("tool=bank_pay") == set()
        assert listed(f"day={today}") == {waiting_run, other, rejected_run}
        assert listed("day=2000-01-01") == set()
        assert "day must be YYYY-MM-DD" in page(c, cookie, "/runs?day=yesterday")
    assert approval


@pytest.mark.anyio
async def test_an_unknown_outcome_is_the_run_again_question_with_its_budget_reserved(
    tmp_path: Path, program_argv: list[str], program_env: dict[str, str]
) -> None:
    async with world(tmp_path, program_argv, program_env, pay=TIMEOUT_PRICED, budgets=BUDGET) as w, proxy(w) as host:
        approval = await _unknown_fifty(w, host)
        with console(program_argv, program_env, w.config) as c:
            cookie, _ = signed_in(c)
            approvals = page(c, cookie, "/")
            budgets = page(c, cookie, "/budgets")
            unknown = page(c, cookie, "/runs?status=unknown")
            tasks = page(c, cookie, "/tasks")
            tools = page(c, cookie, "/tools")
        w.release()
    assert "run again? the earlier call&#x27;s outcome is unknown" in approvals and approval.id in approvals
    assert "<td>daily</td><td>0</td><td>50.0</td><td>100</td><td>86400s</td>" in budgets
    assert approval.run_id in unknown
    assert "No task in this session." in tasks and "session laptop" in tasks
    assert "No tool was refused at the pin." in tools and "-review" in tools
    conn = sqlite3.connect(w.db)
    assert conn.execute("SELECT COUNT(*) FROM approvals WHERE status != 'pending'").fetchone()[0] == 0
    conn.close()


@pytest.mark.anyio
async def test_the_tasks_page_lists_the_task_a_host_follows_with_its_run(
    tmp_path: Path, program_argv: list[str], program_env: dict[str, str]
) -> None:
    from tests.program.task_host import raw_host
    from tests.program.test_tasks_for_the_operator import paid_as_task

    async with world(tmp_path, program_argv, program_env) as w, raw_host(program_argv, w.config, program_env) as host:
        task_id, approval = await paid_as_task(w, host)
        with console(program_argv, program_env, w.config) as c:
            cookie, _ = signed_in(c)
            tasks = page(c, cookie, "/tasks")
    row = re.search(rf"<tr><td>{re.escape(task_id)}</td><td>([^<]*)</td><td>([^<]*)</td><td>([^<]*)</td>", tasks)
    assert row is not None, tasks
    assert row.groups() == ("working", "bank_pay", approval.run_id)
