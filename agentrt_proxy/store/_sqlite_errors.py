"""Every ``sqlite3`` error becomes one of the store's errors here, exactly once.

httpcore's ``map_exceptions`` is the model: the store's entry points (``Store``'s, ``Tx``'s,
``CallIndex``'s) run under ``map_sqlite_errors`` (a ``with`` block) or ``@mapped`` (a method),
so no raw ``sqlite3`` exception leaves ``store/``. Inside, the store still sees the raw errors
where it acts on them (a busy first switch to WAL is retried, a busy BEGIN under ``nowait``
becomes ``WouldBlock``, a lost run-id race becomes ``RunIdTaken``); an error that passes
through two mapped layers is mapped by the inner one only, since the outer one sees a store
error, not an ``sqlite3`` one.

The kind comes from the result code (``sqlite_errorcode``, Python 3.11+), else, on 3.10, from
sqlite's message, which is fixed per primary code. The message is sqlite's own.
"""

from __future__ import annotations

import functools
import sqlite3
from collections.abc import Callable
from types import TracebackType
from typing import Literal, ParamSpec, TypeVar

from agentrt_proxy.store._errors import (
    StoreCorrupt,
    StoreFull,
    StoreGone,
    StoreLocked,
    StoreReadOnly,
    StoreUnavailable,
)

# SQLite's primary result codes (sqlite3.SQLITE_* from Python 3.11); an extended code keeps its
# primary code in its low byte.
SQLITE_BUSY = 5
SQLITE_LOCKED = 6
SQLITE_READONLY = 8
SQLITE_CORRUPT = 11
SQLITE_FULL = 13
SQLITE_PERM = 3
SQLITE_NOTADB = 26
SQLITE_READONLY_DBMOVED = SQLITE_READONLY | (4 << 8)

_BY_PRIMARY_CODE: dict[int, type[StoreUnavailable]] = {
    SQLITE_BUSY: StoreLocked,
    SQLITE_LOCKED: StoreLocked,
    SQLITE_FULL: StoreFull,
    SQLITE_READONLY: StoreReadOnly,
    SQLITE_PERM: StoreReadOnly,
    SQLITE_CORRUPT: StoreCorrupt,
    SQLITE_NOTADB: StoreCorrupt,
}

# Python 3.10 has no result code on the exception: sqlite's message for each primary code.
_BY_MESSAGE: tuple[tuple[str, type[StoreUnavailable]], ...] = (
    ("database is locked", StoreLocked),  # SQLITE_BUSY
    ("database table is locked", StoreLocked),  # SQLITE_LOCKED
    ("database schema is locked", StoreLocked),  # SQLITE_LOCKED_SHAREDCACHE
    ("database or disk is full", StoreFull),  # SQLITE_FULL
    ("attempt to write a readonly database", StoreReadOnly),  # SQLITE_READONLY and its kinds
    ("access permission denied", StoreReadOnly),  # SQLITE_PERM
    ("database disk image is malformed", StoreCorrupt),  # SQLITE_CORRUPT
    ("file is not a database", StoreCorrupt),  # SQLITE_NOTADB
)


def kind_of(err: sqlite3.Error) -> type[StoreUnavailable]:
    """Which of the store's errors ``err`` is."""
    code = getattr(err, "sqlite_errorcode", None)
    if isinstance(code, int):
        if code == SQLITE_READONLY_DBMOVED:
            return StoreGone
        return _BY_PRIMARY_CODE.get(code & 0xFF, StoreUnavailable)
    text = str(err)
    for message, kind in _BY_MESSAGE:
        if message in text:
            return kind
    return StoreUnavailable


def store_error(err: sqlite3.Error) -> StoreUnavailable:
    """The store's error for ``err``, with sqlite's message."""
    return kind_of(err)(str(err))


def is_busy(err: sqlite3.Error) -> bool:
    """Another connection holds the lock ``err`` waited for."""
    return kind_of(err) is StoreLocked


class map_sqlite_errors:  # a context manager, named as contextlib's are
    """``with map_sqlite_errors():`` turns an ``sqlite3.Error`` raised in the block into the
    store's error for it (the sqlite3 error is its ``__cause__``); anything else passes."""

    __slots__ = ()

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 _tb: TracebackType | None) -> Literal[False]:
        if isinstance(exc, sqlite3.Error):
            raise store_error(exc) from exc
        return False


P = ParamSpec("P")
R = TypeVar("R")


def mapped(fn: Callable[P, R]) -> Callable[P, R]:
    """``fn`` under the same mapping (a try block, not a ``with``: it costs nothing until an
    error, and the call path runs a few dozen of these per call)."""

    @functools.wraps(fn)
    def under_mapping(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return fn(*args, **kwargs)
        except sqlite3.Error as err:
            raise store_error(err) from err

    return under_mapping
