"""Waiting for an event a test cannot await directly (a row appearing, a process writing a line, a
file made, a request logged): poll the condition and go on the moment it holds.

The patience only bounds a wait that would otherwise hang, so a slow machine passes as a fast one
does: it is never a timing assertion (speed is measured in ``bench/``). A sleep of a fixed length
stays only where time passing is the behaviour under test (a lease, a window, a slow server) or
where a test shows that something does NOT happen."""

from __future__ import annotations

import contextlib
import sqlite3
import time
from collections.abc import Callable
from pathlib import Path

import anyio

PATIENCE_S = 30.0
POLL_S = 0.01


def _timed_out(what: str, timeout: float) -> AssertionError:
    return AssertionError(f"timed out after {timeout:g} s waiting for {what}")


async def until(what: str, holds: Callable[[], object], timeout: float = PATIENCE_S) -> None:
    """Return as soon as ``holds()`` is true; fail naming ``what`` after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not holds():
        if time.monotonic() > deadline:
            raise _timed_out(what, timeout)
        await anyio.sleep(POLL_S)


def until_sync(what: str, holds: Callable[[], object], timeout: float = PATIENCE_S) -> None:
    """``until`` for a test (or a fixture's thread) that has no event loop."""
    deadline = time.monotonic() + timeout
    while not holds():
        if time.monotonic() > deadline:
            raise _timed_out(what, timeout)
        time.sleep(POLL_S)


def has_schema(database: Path) -> bool:
    """The file exists and serve's migrations are committed (its events table is there)."""
    if not database.exists():
        return False
    try:
        with contextlib.closing(sqlite3.connect(f"file:{database}?mode=ro", uri=True)) as db:
            return db.execute("SELECT 1 FROM sqlite_master WHERE name = 'events'").fetchone() is not None
    except sqlite3.Error:
        return False


def until_served(database: Path | str, timeout: float = PATIENCE_S) -> None:
    """Until serve has made its database: it answers ``initialize`` before it opens the store, and
    the operator's commands refuse a database that does not exist or was never migrated."""
    path = Path(database)
    until_sync(f"serve to create {path}", lambda: has_schema(path), timeout)
