"""The proxy's index of its calls (``proxy_calls``, proxy-and-mcp-module §2.4).

Only the operations; the rules that read them live in ``proxy/``. Every statement is served by
one of the table's indexes: the call path never scans the table. Times are Unix nanoseconds; 0
means unset. A row's ``outcome`` is a state of the state table (``_states.py``): ``settle`` looks
its move up there before it writes.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass, fields

from agentrt_proxy.store._errors import ClaimLost, RunIdTaken
from agentrt_proxy.store._sqlite_errors import mapped
from agentrt_proxy.store._states import (
    CALL,
    OUTCOME_KNOWN,
    OUTCOME_NONE,
    OUTCOME_UNKNOWN,
    OUTCOME_UNSEEN,
    illegal_move,
    transition_error,
)
from agentrt_proxy.store._transactions import Database
from agentrt_proxy.text.operator_text import MSG_CLAIM_LOST
from agentrt_proxy.text.record_text import MSG_RUN_ID_TAKEN

# The two statements below whose moves are fixed (settle_empty: unseen -> none; unsettle: any
# settled outcome -> unseen) are held to the state table once, when the module loads: a table
# that stopped allowing either fails the import, not a write on the call path.
_SETTLED = (OUTCOME_NONE, OUTCOME_KNOWN, OUTCOME_UNKNOWN)
for _expect, _new in (((OUTCOME_UNSEEN,), OUTCOME_NONE), (_SETTLED, OUTCOME_UNSEEN)):
    _illegal = illegal_move(CALL, _expect, _new)
    if _illegal is not None:
        raise transition_error("?", "proxy_calls (store/_index.py)", _illegal)


@dataclass
class ProxyCall:
    id: int
    session: str
    request_key: str
    tool: str
    side_effect: str
    run_id: str
    created_at: int
    open: int
    closed_at: int
    settled_at: int
    outcome: int


_COLS = ", ".join(f.name for f in fields(ProxyCall))


class CallIndex:
    def __init__(self, db: Database) -> None:
        self._db = db

    def _rows(self, sql: str, args: tuple[object, ...]) -> list[ProxyCall]:
        with self._db.lock:
            return [ProxyCall(*r) for r in self._db.conn.execute(sql, args).fetchall()]

    @mapped
    def claim(
        self, session: str, key: str, tool: str, side_effect: str, run_id: str, prev: int | None, now: int
    ) -> ProxyCall:
        """Close ``prev`` (the key's open row the caller read) and open a row for ``run_id``,
        in one write transaction. Raises ClaimLost when the open row is no longer ``prev``."""
        with self._db.write() as tx:
            c = tx.conn
            row = c.execute(
                "SELECT id FROM proxy_calls WHERE session = ? AND request_key = ? AND open = 1", (session, key)
            ).fetchone()
            current = row[0] if row else None
            if current != prev:
                raise ClaimLost(MSG_CLAIM_LOST.format(current=current, prev=prev))
            if prev is not None:
                c.execute("UPDATE proxy_calls SET open = 0, closed_at = ? WHERE id = ?", (now, prev))
            try:
                cur = c.execute(
                    "INSERT INTO proxy_calls (session, request_key, tool, side_effect, run_id, created_at) "
                    "VALUES (?, ?, ?, ?, ?, ?)",
                    (session, key, tool, side_effect, run_id, now),
                )
            except sqlite3.IntegrityError:
                # The one constraint the check above leaves open is run_id's UNIQUE; a
                # failed statement undoes only itself, so the transaction can read on.
                if c.execute("SELECT 1 FROM proxy_calls WHERE run_id = ?", (run_id,)).fetchone():
                    raise RunIdTaken(MSG_RUN_ID_TAKEN.format(run_id=run_id)) from None
                raise
            new_id = cur.lastrowid
        return ProxyCall(int(new_id or 0), session, key, tool, side_effect, run_id, now, 1, 0, 0, OUTCOME_UNSEEN)

    @mapped
    def for_key(self, session: str, key: str, since: int) -> list[ProxyCall]:
        """The key's open row and rows closed at or after ``since``, newest first."""
        return self._rows(
            f"SELECT {_COLS} FROM proxy_calls WHERE session = ? AND request_key = ? "
            "AND (open = 1 OR closed_at >= ?) ORDER BY id DESC",
            (session, key, since),
        )

    @mapped
    def unsettled(self, session: str) -> list[ProxyCall]:
        return self._rows(
            f"SELECT {_COLS} FROM proxy_calls WHERE session = ? AND settled_at = 0 ORDER BY id", (session,)
        )

    @mapped
    def attempts(self, session: str, key: str) -> list[ProxyCall]:
        """Rows of the key whose run got as far as an attempt (outcome other than none)."""
        return self._rows(
            f"SELECT {_COLS} FROM proxy_calls WHERE session = ? AND request_key = ? AND outcome != 1 ORDER BY id DESC",
            (session, key),
        )

    @mapped
    def unknown_for_tool(self, session: str, tool: str, except_key: str) -> list[ProxyCall]:
        """For every other key of the tool, its newest row with an attempt, kept when that
        row is unseen or unknown; oldest first. Candidates come from the partial index of
        unresolved rows; the 'newest' test probes (session, request_key, id)."""
        return self._rows(
            f"SELECT {_COLS} FROM proxy_calls AS p INDEXED BY proxy_calls_unresolved "
            "WHERE p.session = ? AND p.tool = ? AND p.outcome IN (0, 3) AND p.request_key != ? "
            "AND NOT EXISTS (SELECT 1 FROM proxy_calls AS q WHERE q.session = p.session "
            "AND q.request_key = p.request_key AND q.id > p.id AND q.outcome != 1) ORDER BY p.id",
            (session, tool, except_key),
        )

    @mapped
    def recent(self, session: str, since: int, limit: int) -> list[ProxyCall]:
        return self._rows(
            f"SELECT {_COLS} FROM proxy_calls WHERE session = ? AND (settled_at = 0 OR settled_at >= ?) "
            "ORDER BY id DESC LIMIT ?",
            (session, since, limit),
        )

    @mapped
    def settle(self, row_id: int, outcome: int, now: int) -> bool:
        """Record what an unseen row's run came to; False when it was settled already."""
        illegal = illegal_move(CALL, (OUTCOME_UNSEEN,), outcome)
        if illegal is not None:
            found = self.by_id(row_id)
            raise transition_error(found.run_id if found else "?", f"call {row_id}", illegal)
        with self._db.write() as tx:
            cur = tx.conn.execute(
                "UPDATE proxy_calls SET outcome = ?, settled_at = CASE WHEN settled_at = 0 THEN ? "
                "ELSE settled_at END WHERE id = ? AND outcome = ?",
                (outcome, now, row_id, OUTCOME_UNSEEN),
            )
            return cur.rowcount == 1

    @mapped
    def settle_empty(self, row_id: int, now: int) -> bool:
        """Settle a row whose run never began, only if it still has not: check and write
        are one statement (the one read of the runtime's tables). Unseen → none."""
        with self._db.write() as tx:
            cur = tx.conn.execute(
                "UPDATE proxy_calls SET settled_at = ?, outcome = ? WHERE id = ? AND settled_at = 0 "
                "AND outcome = ? AND NOT EXISTS (SELECT 1 FROM runs WHERE runs.id = proxy_calls.run_id)",
                (now, OUTCOME_NONE, row_id, OUTCOME_UNSEEN),
            )
            return cur.rowcount == 1

    @mapped
    def unsettle(self, run_id: str) -> None:
        """The run's row back to unseen (its run moved again): none, known or unknown → unseen."""
        with self._db.write() as tx:
            tx.conn.execute(
                "UPDATE proxy_calls SET settled_at = 0, outcome = ? WHERE run_id = ? AND settled_at != 0",
                (OUTCOME_UNSEEN, run_id),
            )

    @mapped
    def by_run(self, run_id: str) -> ProxyCall | None:
        rows = self._rows(f"SELECT {_COLS} FROM proxy_calls WHERE run_id = ?", (run_id,))
        return rows[0] if rows else None

    @mapped
    def by_id(self, row_id: int) -> ProxyCall | None:
        rows = self._rows(f"SELECT {_COLS} FROM proxy_calls WHERE id = ?", (row_id,))
        return rows[0] if rows else None

    @mapped
    def run_ids(self, session: str, limit: int) -> list[str]:
        """The session's newest run ids (recheck's scan)."""
        with self._db.lock:
            rows = self._db.conn.execute(
                "SELECT run_id FROM proxy_calls WHERE session = ? ORDER BY id DESC LIMIT ?", (session, limit)
            ).fetchall()
        return [r[0] for r in rows]
