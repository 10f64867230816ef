"""The tools serving withholds reach the console's Tools page through the database, over the real
programs: ``serve`` as a host runs it (the SDK's ``ClientSession`` over its pipes) in front of
``fixtures/changing_server.py``, whose ``flip`` tool changes ``weather`` and sends
``notifications/tools/list_changed``; ``console`` as the operator runs it, fetched over plain HTTP.

A changed tool is one withheld row the moment serving withholds it, and the page lists it; reverted,
the row is cleared (kept) and the page lists it apart, under what came back to its pin. A tool
changed before ``serve`` starts is recorded by the start-up check, and cleared by the next start
that finds it pinned again. Each test counts rows: in the database, and in the page's tables.
"""

from __future__ import annotations

import html
import re
import sqlite3
from pathlib import Path

import anyio
import pytest

from tests.console_fixtures import console, request, signed_in
from tests.harness import is_error, text_of
from tests.program.test_changed_tools import changing_config, host, names

pytestmark = [pytest.mark.program, pytest.mark.anyio, pytest.mark.timeout(180)]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def withheld_rows(db: Path) -> list[tuple[str, str, str, str, str]]:
    """(server, tool, reason, state, detail) of every row, oldest first."""
    if not db.exists():
        return []
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        if not conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'proxy_withheld_tools'").fetchone():
            return []  # serve is still creating the file
        return conn.execute(
            "SELECT server, tool, reason, state, detail FROM proxy_withheld_tools ORDER BY id"
        ).fetchall()
    finally:
        conn.close()


async def rows_become(db: Path, states: list[str]) -> list[tuple[str, str, str, str, str]]:
    """The rows once their states are ``states`` (serving writes them just after it tells the host)."""
    with anyio.fail_after(30):
        while [row[3] for row in withheld_rows(db)] != states:
            await anyio.sleep(0.05)
    return withheld_rows(db)


def section_rows(body: str, section: str) -> list[list[str]]:
    """The cells of each body row of the page's ``section`` table (empty when it says there is none)."""
    found = re.search(rf'<section class="{section}">(.*?)</section>', body, re.S)
    assert found, body
    bodies = re.findall(r"<tbody>(.*?)</tbody>", found.group(1), re.S)
    trs = re.findall(r"<tr>(.*?)</tr>", bodies[0], re.S) if bodies else []
    return [[html.unescape(cell) for cell in re.findall(r"<td>(.*?)</td>", tr, re.S)] for tr in trs]


def tools_page(program_argv: list[str], program_env: dict[str, str], config: Path) -> str:
    with console(program_argv, program_env, config) as c:
        cookie, _ = signed_in(c)
        answer = request(c, "GET", "/tools", headers={"Cookie": cookie})
    assert answer.status == 200, answer.body
    return answer.body


async def test_a_tool_changed_while_serving_is_a_withheld_row_the_console_lists_and_reverted_it_is_cleared(
    tmp_path: Path, program_argv: list[str], program_env: dict[str, str]
) -> None:
    config = changing_config(tmp_path)
    db = tmp_path / "proxy.db"
    async with host(program_argv, program_env, config) as (session, _):
        assert text_of(await session.call_tool("wx_flip", {"variant": "enum"})) == "flipped"
        [(server, tool, reason, _, detail)] = await rows_become(db, ["withheld"])
        assert (server, tool, reason) == ("wx", "weather", "changed-since-pin")
        assert "inputSchema/properties/unit/enum" in detail and "inputSchema sha256 pinned" in detail
        assert await names(session) == ["gate_status", "wx_flip"]  # withheld indeed
        assert is_error(await session.call_tool("wx_weather", {"city": "Oslo"}))

        page = await anyio.to_thread.run_sync(tools_page, program_argv, program_env, config)
        [shown] = section_rows(page, "withheld")
        assert shown[:3] == ["wx", "weather", "changed-since-pin"] and "unit/enum" in shown[3]
        assert section_rows(page, "cleared") == []

        assert text_of(await session.call_tool("wx_flip", {"variant": "pinned"})) == "flipped"
        await rows_become(db, ["cleared"])  # the one row, cleared and kept: no second row
        assert await names(session) == ["gate_status", "wx_flip", "wx_weather"]

        page = await anyio.to_thread.run_sync(tools_page, program_argv, program_env, config)
    assert section_rows(page, "withheld") == []
    [back] = section_rows(page, "cleared")
    assert back[:3] == ["wx", "weather", "changed-since-pin"]


async def test_a_tool_changed_before_serve_starts_is_recorded_at_start_up_and_cleared_by_a_start_that_finds_it_pinned(
    tmp_path: Path, program_argv: list[str], program_env: dict[str, str]
) -> None:
    config = changing_config(tmp_path)
    db = tmp_path / "proxy.db"
    (tmp_path / "variant").write_text("hint")  # readOnlyHint flipped since the pin
    async with host(program_argv, program_env, config) as (session, _):
        [(_, tool, reason, _, detail)] = await rows_become(db, ["withheld"])
        assert await names(session) == ["gate_status", "wx_flip"]
    assert (tool, reason) == ("weather", "changed-since-pin") and "annotations/readOnlyHint" in detail

    (tmp_path / "variant").write_text("pinned")
    async with host(program_argv, program_env, config) as (session, _):
        await rows_become(db, ["cleared"])
        assert await names(session) == ["gate_status", "wx_flip", "wx_weather"]
    assert len(withheld_rows(db)) == 1
