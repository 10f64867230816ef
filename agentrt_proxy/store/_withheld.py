"""The pinned tools serving withholds (``proxy_withheld_tools``): the rows and their moves.

Serving checks a server's listing against its pins at start-up, after every restart and after
every ``notifications/tools/list_changed``; each check is recorded here in one transaction
(``observe``): a tool withheld now has one row in state ``withheld`` (its first and latest
sighting, the reason and detail of the latest), and a tool checked and found on its pin again has
that row moved to ``cleared`` and kept, so the operator's console shows what is withheld now and,
apart, what was withheld and came back. Each move is looked up in the state table
(``states.WITHHOLDING``) before its SQL runs.

The rows are what the operator reads, not what serving decides from: a tool is offered or
withheld by the live check against the pin, whatever this table holds. So nothing here is held
to the event chain (``verify`` does not read it; docs/console.md says why).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from agentrt_proxy.store._sqlite_errors import mapped
from agentrt_proxy.store._states import NEW, TOOL_CLEARED, TOOL_WITHHELD, WITHHOLDING, check_move
from agentrt_proxy.store._transactions import Database

KEPT_CLEARED = 500  # the cleared rows kept as history, newest first; older ones are deleted
DETAIL_CHARS = 2000  # a detail is cut to this many characters (it names fields and hashes)


@dataclass(frozen=True)
class WithheldTool:
    """One stretch of time a pinned tool was withheld (``state``: withheld now, or cleared)."""

    id: int
    server: str
    tool: str
    reason: str
    detail: str
    session: str
    state: str
    first_seen: int  # Unix ns
    last_seen: int
    cleared_at: int  # 0 while withheld


_COLS = "id, server, tool, reason, detail, session, state, first_seen, last_seen, cleared_at"


def _check(server: str, tool: str, expect: str, new: str) -> None:
    check_move(WITHHOLDING, f"{server}/{tool}", "withheld tool", expect, new)


class WithheldTools:
    """The withheld-tool rows of one database, over the store's connection."""

    def __init__(self, db: Database) -> None:
        self._db = db

    @mapped
    def observe(
        self,
        server: str,
        checked: Iterable[str],
        withheld: Mapping[str, tuple[str, str]],
        *,
        session: str,
        now_ns: int,
    ) -> tuple[int, int]:
        """Record one check of ``server``: each tool of ``withheld`` (tool -> (reason, detail)) is
        withheld now; each other tool of ``checked`` matches its pin. Committed when this returns;
        answers (rows newly withheld, rows cleared)."""
        added = cleared = 0
        tools = set(checked)
        if not withheld and not self._any_withheld(server, tools):
            return added, cleared  # a read first: a check that finds every tool on its pin commits nothing
        with self._db.write() as tx:
            conn = tx.conn
            for tool, (reason, detail) in sorted(withheld.items()):
                detail = detail[:DETAIL_CHARS]
                row = conn.execute(
                    "SELECT id FROM proxy_withheld_tools WHERE server = ? AND tool = ? AND state = ?",
                    (server, tool, TOOL_WITHHELD),
                ).fetchone()
                if row is None:
                    _check(server, tool, NEW, TOOL_WITHHELD)
                    conn.execute(
                        "INSERT INTO proxy_withheld_tools (server, tool, reason, detail, session, state, "
                        "first_seen, last_seen) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                        (server, tool, reason, detail, session, TOOL_WITHHELD, now_ns, now_ns),
                    )
                    added += 1
                    continue
                _check(server, tool, TOOL_WITHHELD, TOOL_WITHHELD)
                conn.execute(
                    "UPDATE proxy_withheld_tools SET reason = ?, detail = ?, session = ?, last_seen = ? "
                    "WHERE id = ? AND state = ?",
                    (reason, detail, session, now_ns, row[0], TOOL_WITHHELD),
                )
            for tool in sorted(tools - set(withheld)):
                _check(server, tool, TOOL_WITHHELD, TOOL_CLEARED)
                cleared += conn.execute(
                    "UPDATE proxy_withheld_tools SET state = ?, cleared_at = ?, session = ? "
                    "WHERE server = ? AND tool = ? AND state = ?",
                    (TOOL_CLEARED, now_ns, session, server, tool, TOOL_WITHHELD),
                ).rowcount
            if cleared:
                conn.execute(
                    "DELETE FROM proxy_withheld_tools WHERE state = ? AND id NOT IN "
                    "(SELECT id FROM proxy_withheld_tools WHERE state = ? ORDER BY cleared_at DESC, id DESC LIMIT ?)",
                    (TOOL_CLEARED, TOOL_CLEARED, KEPT_CLEARED),
                )
        return added, cleared

    # ------------------------------------------------------------------------- reads

    def _any_withheld(self, server: str, tools: set[str]) -> bool:
        with self._db.lock:
            return any(
                row.tool in tools and row.server == server
                for row in self._rows(
                    f"SELECT {_COLS} FROM proxy_withheld_tools WHERE server = ? AND state = ?", (server, TOOL_WITHHELD)
                )
            )

    @mapped
    def now(self) -> list[WithheldTool]:
        """Every tool withheld now, by server and tool."""
        return self._rows(
            f"SELECT {_COLS} FROM proxy_withheld_tools WHERE state = ? ORDER BY server, tool", (TOOL_WITHHELD,)
        )

    @mapped
    def cleared(self, limit: int = 100) -> list[WithheldTool]:
        """The tools withheld once and back on their pins, most recently cleared first."""
        return self._rows(
            f"SELECT {_COLS} FROM proxy_withheld_tools WHERE state = ? ORDER BY cleared_at DESC, id DESC LIMIT ?",
            (TOOL_CLEARED, max(0, limit)),
        )

    def _rows(self, sql: str, args: tuple[object, ...]) -> list[WithheldTool]:
        with self._db.lock:
            if not _has_table(self._db.conn):  # a file older than this table: nothing withheld
                return []
            return [WithheldTool(*row) for row in self._db.conn.execute(sql, args).fetchall()]


def _has_table(conn: sqlite3.Connection) -> bool:
    row = conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'proxy_withheld_tools'").fetchone()
    return row is not None
