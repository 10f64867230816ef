"""The withheld-tool rows (``store/_withheld.py``): one check of a server per transaction; a tool
withheld has one open row whose first sighting stays and whose last moves; a tool back on its pin
has its row cleared and kept; a check that finds everything on its pin commits nothing. Each test
counts rows on a real database, read by a second connection as the console reads it."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from agentrt_proxy.store import Store
from agentrt_proxy.store import _states as states
from agentrt_proxy.store._withheld import DETAIL_CHARS, KEPT_CLEARED

CHANGED = ("changed-since-pin", "the input schema changed since the pin; differs in inputSchema/properties/unit/enum")
GONE = ("removed-upstream", "the server no longer offers it")


@pytest.fixture
def path(tmp_path: Path) -> str:
    return str(tmp_path / "withheld.db")


@pytest.fixture
def store(path: str) -> Iterator[Store]:
    s = Store.open(path)
    yield s
    s.close()


def rows(path: str) -> list[tuple[object, ...]]:
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return conn.execute(
            "SELECT server, tool, reason, state, first_seen, last_seen, cleared_at "
            "FROM proxy_withheld_tools ORDER BY id"
        ).fetchall()
    finally:
        conn.close()


def test_a_withheld_tool_is_one_committed_row_seen_by_another_connection(store: Store, path: str) -> None:
    assert store.withheld.observe("wx", ["weather", "flip"], {"weather": CHANGED}, session="laptop", now_ns=5) == (1, 0)
    assert rows(path) == [("wx", "weather", "changed-since-pin", states.TOOL_WITHHELD, 5, 5, 0)]
    reader = Store.open_readonly(path)
    try:
        [now] = reader.withheld.now()
    finally:
        reader.close()
    assert (now.server, now.tool, now.reason, now.detail, now.session) == ("wx", "weather", *CHANGED, "laptop")


def test_seen_again_the_row_keeps_its_first_sighting_and_takes_the_latest_reason(store: Store, path: str) -> None:
    store.withheld.observe("wx", ["weather"], {"weather": CHANGED}, session="laptop", now_ns=5)
    assert store.withheld.observe("wx", ["weather"], {"weather": GONE}, session="desk", now_ns=9) == (0, 0)
    assert rows(path) == [("wx", "weather", "removed-upstream", states.TOOL_WITHHELD, 5, 9, 0)]
    assert store.withheld.now()[0].session == "desk"


def test_a_tool_back_on_its_pin_is_cleared_and_kept_and_a_new_withholding_is_a_new_row(store: Store, path: str) -> None:
    store.withheld.observe("wx", ["weather"], {"weather": CHANGED}, session="laptop", now_ns=5)
    assert store.withheld.observe("wx", ["weather"], {}, session="laptop", now_ns=7) == (0, 1)
    assert rows(path) == [("wx", "weather", "changed-since-pin", states.TOOL_CLEARED, 5, 5, 7)]
    assert store.withheld.now() == [] and [w.tool for w in store.withheld.cleared()] == ["weather"]
    store.withheld.observe("wx", ["weather"], {"weather": GONE}, session="laptop", now_ns=8)
    assert [r[3] for r in rows(path)] == [states.TOOL_CLEARED, states.TOOL_WITHHELD]


def test_a_check_clears_only_its_own_server_and_the_tools_it_checked(store: Store, path: str) -> None:
    store.withheld.observe("wx", ["weather", "radar"], {"weather": CHANGED, "radar": GONE}, session="s", now_ns=1)
    store.withheld.observe("bank", ["pay"], {"pay": CHANGED}, session="s", now_ns=1)
    store.withheld.observe("wx", ["radar"], {}, session="s", now_ns=2)  # a check that did not look at weather
    assert [(r[0], r[1], r[3]) for r in rows(path)] == [
        ("wx", "radar", states.TOOL_CLEARED),
        ("wx", "weather", states.TOOL_WITHHELD),
        ("bank", "pay", states.TOOL_WITHHELD),
    ]


def test_a_check_that_finds_everything_on_its_pin_commits_nothing(store: Store) -> None:
    before = store.commits
    assert store.withheld.observe("wx", ["weather", "flip"], {}, session="s", now_ns=1) == (0, 0)
    assert store.commits == before


def test_a_long_detail_is_cut_and_old_cleared_rows_are_dropped_beyond_the_history_kept(store: Store, path: str) -> None:
    store.withheld.observe("wx", ["t"], {"t": ("changed-since-pin", "x" * (DETAIL_CHARS * 2))}, session="s", now_ns=1)
    assert len(store.withheld.now()[0].detail) == DETAIL_CHARS
    with store.write() as tx:  # history as if KEPT_CLEARED withholdings had come and gone
        tx.conn.executemany(
            "INSERT INTO proxy_withheld_tools (server, tool, reason, state, first_seen, last_seen, cleared_at) "
            "VALUES ('old', ?, 'removed-upstream', ?, 1, 1, ?)",
            [(f"t{i}", states.TOOL_CLEARED, 10 + i) for i in range(KEPT_CLEARED)],
        )
    store.withheld.observe("wx", ["t"], {}, session="s", now_ns=10_000)
    kept = [r for r in rows(path) if r[3] == states.TOOL_CLEARED]
    assert len(kept) == KEPT_CLEARED and ("wx", "t") in {(r[0], r[1]) for r in kept}
    assert ("old", "t0") not in {(r[0], r[1]) for r in kept}  # the oldest cleared row went


def test_a_database_older_than_the_table_reads_as_withholding_nothing(path: str) -> None:
    Store.open(path).close()
    conn = sqlite3.connect(path)
    conn.execute("DROP TABLE proxy_withheld_tools")
    conn.execute("DELETE FROM proxy_schema_migrations WHERE version = 5")
    conn.commit()
    conn.close()
    old = Store.open_readonly(path)
    try:
        assert old.withheld.now() == [] and old.withheld.cleared() == []
    finally:
        old.close()
    migrated = Store.open(path)  # a writer migrates it
    try:
        migrated.withheld.observe("wx", ["weather"], {"weather": CHANGED}, session="s", now_ns=1)
    finally:
        migrated.close()
    assert len(rows(path)) == 1
