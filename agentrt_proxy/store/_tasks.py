"""Calls answered as MCP tasks (``proxy_tasks``, docs/decisions/0020): the rows and their moves.

A task is committed before its id reaches the host, so a ``tasks/get`` to any proxy on the
database finds it. Every status change is a compare-and-set from ``working`` that looks its move
up in the state table (``states.TASK``) before its SQL runs: of the host's ``tasks/cancel`` and
the owner's recorded answer, exactly one ends a task. The owner holds a lease on its working
tasks, renewed while it lives; a proxy of the same session takes over one whose lease ran out,
as it takes over a run.
"""

from __future__ import annotations

import secrets
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from agentrt_proxy.store._sqlite_errors import mapped
from agentrt_proxy.store._states import (
    NEW,
    TASK,
    TASK_TERMINAL,
    TASK_WORKING,
    check_move,
)
from agentrt_proxy.store._transactions import Database

# The era a task was asked for in, which decides its wire form and how an isError result ends it.
ERA_EXTENSION = "extension"  # 2026-07-28: io.modelcontextprotocol/tasks
ERA_2025 = "2025-11-25"  # the handshake era's experimental tasks/*


@dataclass(frozen=True)
class TaskRow:
    id: str
    session: str
    era: str
    tool: str
    request_key: str
    arguments: str | None
    run_id: str
    approval_id: str
    status: str
    status_message: str
    result: str
    created_at: int
    updated_at: int
    ttl_ms: int
    owner: str
    lease_until: int
    expired: bool

    @property
    def terminal(self) -> bool:
        return self.status in TASK_TERMINAL

    def past_ttl(self, now_ns: int) -> bool:
        return now_ns >= self.created_at + self.ttl_ms * 1_000_000


_COLS = (
    "id, session, era, tool, request_key, arguments, run_id, approval_id, status, status_message, result, "
    "created_at, updated_at, ttl_ms, owner, lease_until, expired"
)


def new_task_id() -> str:
    """128 random bits, hex: unguessable, and nothing of the run, the time or the request."""
    return secrets.token_hex(16)


def _row(values: tuple[object, ...]) -> TaskRow:
    return TaskRow(*values[:-1], bool(values[-1]))  # type: ignore[arg-type, call-arg]


def _check(task_id: str, expect: str, new: str) -> None:
    check_move(TASK, task_id, "task", expect, new)


class Tasks:
    """The task rows of one database, over the store's connection."""

    def __init__(self, db: Database) -> None:
        self._db = db

    @contextmanager
    def _reading(self) -> Iterator[sqlite3.Connection | None]:
        with self._db.lock:
            yield self._db.conn if _has_table(self._db.conn) else None  # a file older than tasks

    # ------------------------------------------------------------------------ writes

    @mapped
    def create(self, *, session: str, era: str, tool: str, request_key: str, arguments: str | None,
               run_id: str, approval_id: str, message: str, now_ns: int, ttl_ms: int, owner: str,
               lease_until: int, task_id: str | None = None) -> TaskRow:
        """A new working task (``task_id``, else a new one), committed when this returns."""
        _check("(new task)", NEW, TASK_WORKING)
        task_id = task_id or new_task_id()
        with self._db.write() as tx:
            tx.conn.execute(
                f"INSERT INTO proxy_tasks ({_COLS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, '', ?, ?, ?, ?, ?, 0)",
                (task_id, session, era, tool, request_key, arguments, run_id, approval_id, TASK_WORKING, message,
                 now_ns, now_ns, ttl_ms, owner, lease_until),
            )
        return self.get(task_id)  # type: ignore[return-value]  # just committed

    def _update_working(self, task_id: str, assignments: str, values: tuple[object, ...],
                        condition: str = "", condition_values: tuple[object, ...] = ()) -> bool:
        """One compare-and-set on a working task: True when it was still working (and ``condition``)."""
        with self._db.write() as tx:
            cur = tx.conn.execute(
                f"UPDATE proxy_tasks SET {assignments} WHERE id = ? AND status = ?{condition}",
                (*values, task_id, TASK_WORKING, *condition_values),
            )
            return cur.rowcount == 1

    @mapped
    def bind(self, task_id: str, run_id: str, approval_id: str, message: str, now_ns: int) -> bool:
        """Name the run and the approval a working task waits on (the status the host sees)."""
        _check(task_id, TASK_WORKING, TASK_WORKING)
        return self._update_working(task_id, "run_id = ?, approval_id = ?, status_message = ?, updated_at = ?",
                                    (run_id, approval_id, message, now_ns))

    @mapped
    def finish(self, task_id: str, status: str, message: str, result: str, now_ns: int) -> bool:
        """End a working task with its answer; False when it had already ended (cancelled)."""
        _check(task_id, TASK_WORKING, status)
        return self._update_working(
            task_id, "status = ?, status_message = ?, result = ?, updated_at = ?, owner = '', lease_until = 0",
            (status, message, result, now_ns))

    @mapped
    def claim(self, task_id: str, owner: str, lease_until: int, now_ns: int) -> bool:
        """Take a working task whose lease ran out (or that ``owner`` holds already)."""
        _check(task_id, TASK_WORKING, TASK_WORKING)
        return self._update_working(task_id, "owner = ?, lease_until = ?", (owner, lease_until),
                                    " AND (owner = ? OR lease_until <= ?)", (owner, now_ns))

    @mapped
    def renew(self, owner: str, lease_until: int) -> int:
        """Renew every working task ``owner`` holds; how many it holds."""
        with self._db.write() as tx:
            if not _has_table(tx.conn):
                return 0
            cur = tx.conn.execute(
                "UPDATE proxy_tasks SET lease_until = ? WHERE owner = ? AND status = ?",
                (lease_until, owner, TASK_WORKING),
            )
            return cur.rowcount

    @mapped
    def release(self, owner: str) -> None:
        """A proxy that stops lets another take its working tasks over at once."""
        with self._db.write() as tx:
            if _has_table(tx.conn):
                tx.conn.execute(
                    "UPDATE proxy_tasks SET owner = '', lease_until = 0 WHERE owner = ? AND status = ?",
                    (owner, TASK_WORKING),
                )

    @mapped
    def forget_results(self, session: str, now_ns: int) -> int:
        """Ended tasks past their time to live are expired: their results are dropped (the run's
        record keeps what happened) and ``tasks/get`` says so."""
        ended = ", ".join("?" for _ in TASK_TERMINAL)  # one SQL parameter per ended status
        where = (f"session = ? AND expired = 0 AND status IN ({ended}) "
                 "AND created_at + ttl_ms * 1000000 <= ?")
        args = (session, *TASK_TERMINAL, now_ns)
        with self._reading() as conn:  # a read first: an idle proxy commits nothing
            due = conn is not None and conn.execute(f"SELECT 1 FROM proxy_tasks WHERE {where} LIMIT 1", args).fetchone()
            if not due:
                return 0
        with self._db.write() as tx:
            return tx.conn.execute(f"UPDATE proxy_tasks SET expired = 1, result = '' WHERE {where}", args).rowcount

    # ------------------------------------------------------------------------- reads

    @mapped
    def get(self, task_id: str) -> TaskRow | None:
        with self._reading() as conn:
            if conn is None:
                return None
            row = conn.execute(f"SELECT {_COLS} FROM proxy_tasks WHERE id = ?", (task_id,)).fetchone()
            return None if row is None else _row(row)

    @mapped
    def of_approval(self, session: str, approval_id: str) -> TaskRow | None:
        """The working task that waits on ``approval_id``, if one does."""
        with self._reading() as conn:
            if conn is None:
                return None
            row = conn.execute(
                f"SELECT {_COLS} FROM proxy_tasks WHERE approval_id = ? AND session = ? AND status = ? "
                "ORDER BY created_at LIMIT 1",
                (approval_id, session, TASK_WORKING),
            ).fetchone()
            return None if row is None else _row(row)

    @mapped
    def working(self, session: str) -> list[TaskRow]:
        """The session's working tasks, oldest first (whose to drive, renew, take over)."""
        with self._reading() as conn:
            if conn is None:
                return []
            rows = conn.execute(
                f"SELECT {_COLS} FROM proxy_tasks WHERE session = ? AND status = ? ORDER BY created_at, id",
                (session, TASK_WORKING),
            ).fetchall()
            return [_row(r) for r in rows]

    @mapped
    def page(self, session: str, after: tuple[int, str] | None, limit: int) -> list[TaskRow]:
        """The session's unexpired tasks, newest first, after the (created_at, id) cursor."""
        with self._reading() as conn:
            if conn is None:
                return []
            if after is None:
                rows = conn.execute(
                    f"SELECT {_COLS} FROM proxy_tasks WHERE session = ? AND expired = 0 "
                    "ORDER BY created_at DESC, id DESC LIMIT ?",
                    (session, limit),
                ).fetchall()
            else:
                rows = conn.execute(
                    f"SELECT {_COLS} FROM proxy_tasks WHERE session = ? AND expired = 0 "
                    "AND (created_at < ? OR (created_at = ? AND id < ?)) ORDER BY created_at DESC, id DESC LIMIT ?",
                    (session, after[0], after[0], after[1], limit),
                ).fetchall()
            return [_row(r) for r in rows]

    @mapped
    def of_runs(self, run_ids: list[str]) -> dict[str, TaskRow]:
        """The task of each run that has one (the operator's ``runs`` and ``show``)."""
        found: dict[str, TaskRow] = {}
        with self._reading() as conn:
            if conn is None or not run_ids:
                return found
            for start in range(0, len(run_ids), 500):
                chunk = run_ids[start:start + 500]
                marks = ", ".join("?" for _ in chunk)
                rows = conn.execute(
                    f"SELECT {_COLS} FROM proxy_tasks WHERE run_id IN ({marks}) ORDER BY created_at", chunk
                ).fetchall()
                for r in rows:
                    task = _row(r)
                    found.setdefault(task.run_id, task)
        return found


def _has_table(conn: sqlite3.Connection) -> bool:
    row = conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'proxy_tasks'").fetchone()
    return row is not None
