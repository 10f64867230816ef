"""Opening a connection: the URI, the per-connection settings, the switch to WAL, and the
file's identity (runtime-core §1.1).

``Store`` opens every connection through ``store._store._connect`` (this module's ``connect``,
looked up there at each open), so a test or the bench can patch that one name to watch every
connection the store makes.
"""

from __future__ import annotations

import os
import sqlite3
import time
import urllib.parse

from agentrt_proxy.store._sqlite_errors import is_busy

BUSY_TIMEOUT_MS = 5000  # how long a statement waits for another connection's lock
WAL_SWITCH_RETRY_S = 5.0  # how long a first switch to WAL is retried while another opener makes it

FileIdentity = tuple[int, int]  # (st_dev, st_ino) of the file a connection has open


def uri(path: str, readonly: bool, create: bool = True) -> str:
    quoted = urllib.parse.quote(os.path.abspath(path))
    if readonly:
        return f"file:{quoted}?mode=ro"
    return f"file:{quoted}" + ("" if create else "?mode=rw")


def connect(path: str, readonly: bool, create: bool = True) -> sqlite3.Connection:
    conn = sqlite3.connect(uri(path, readonly, create), uri=True, timeout=BUSY_TIMEOUT_MS / 1000,
                           isolation_level=None, check_same_thread=False)
    conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
    conn.execute("PRAGMA foreign_keys = ON")
    conn.execute("PRAGMA trusted_schema = OFF")
    if hasattr(conn, "setconfig") and hasattr(sqlite3, "SQLITE_DBCONFIG_DEFENSIVE"):
        conn.setconfig(sqlite3.SQLITE_DBCONFIG_DEFENSIVE, True)
    if not readonly:
        conn.execute("PRAGMA synchronous = FULL")
    return conn


def switch_to_wal(conn: sqlite3.Connection) -> None:
    # SQLite answers BUSY to a concurrent first switch without waiting: retry for a while.
    deadline = time.monotonic() + WAL_SWITCH_RETRY_S
    while True:
        try:
            conn.execute("PRAGMA journal_mode = WAL")
            return
        except sqlite3.OperationalError as err:
            if not is_busy(err) or time.monotonic() >= deadline:
                raise
            time.sleep(0.005)


def file_identity(path: str) -> FileIdentity | None:
    """The file now at ``path``, or None when there is none."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return None
    return st.st_dev, st.st_ino
