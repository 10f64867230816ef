"""Lease renewals, on a connection of their own (runtime-core §5.1): a renewal is never queued
behind the store's other work, nor behind a transaction another thread holds open."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable

from agentrt_proxy.store._sqlite_errors import map_sqlite_errors


class LeaseConnection:
    def __init__(self, open_connection: Callable[[], sqlite3.Connection]) -> None:
        self._open = open_connection  # called at the first renewal: most stores never renew
        self._conn: sqlite3.Connection | None = None
        self._lock = threading.Lock()

    def renew(self, run_id: str, owner: str, expires_at: str) -> bool:
        """Push the lease's expiry to ``expires_at`` while ``owner`` holds it (one autocommit
        UPDATE); False when it no longer does."""
        with self._lock, map_sqlite_errors():
            if self._conn is None:
                self._conn = self._open()
            cur = self._conn.execute(
                "UPDATE runs SET lease_expires_at = ? WHERE id = ? AND lease_owner = ?", (expires_at, run_id, owner)
            )
            return cur.rowcount == 1

    def close(self) -> None:
        with self._lock, map_sqlite_errors():
            if self._conn is not None:
                self._conn.close()
                self._conn = None
