"""One open database connection, the lock its users share, and its write transactions.

``Store`` and ``CallIndex`` both work through a ``Database``: reads hold ``lock`` around
``conn``; writes go through ``write()``, one IMMEDIATE transaction whose ``Tx`` holds the
compare-and-set primitives. Every ``sqlite3`` error raised here, or in a block run under
``write()`` or ``read()``, leaves as the store's error for it (``_sqlite_errors.py``).

Group commit (docs/decisions/0023): while several calls are in flight, the write units the
event loop runs under ``nowait()`` share one transaction, each in a savepoint, and one
COMMIT at the start of the loop's next turn (``_group_commit.py``).
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from types import TracebackType
from typing import Literal, cast

from agentrt_proxy.store._connection import BUSY_TIMEOUT_MS, file_identity
from agentrt_proxy.store._errors import StoreError, StoreGone, WouldBlock
from agentrt_proxy.store._group_commit import Group, GroupCommit
from agentrt_proxy.store._sqlite_errors import is_busy, map_sqlite_errors, store_error
from agentrt_proxy.store._tx import Tx
from agentrt_proxy.text.operator_text import ERR_STORE_GONE
from agentrt_proxy.text.record_text import ERR_STORE_READ_ONLY, ERR_TX_FAILED


class Database:
    def __init__(self, path: str, conn: sqlite3.Connection, readonly: bool) -> None:
        self.path = path
        self._conn = conn
        self.readonly = readonly
        self.lock = threading.RLock()  # the owning thread re-enters it (a nested write joins its transaction)
        self.commits = 0  # write transactions committed through write() (tests and the bench count them)
        self._tx: Tx | None = None  # the open write transaction (only its thread holds the lock meanwhile)
        self._tx_thread = 0  # the ident of the thread that opened it (0 while none is open)
        self._tx_failed: BaseException | None = None
        self._nowait = False  # set by nowait(): BEGIN IMMEDIATE raises WouldBlock instead of waiting
        self._stored_specs: set[str] = set()  # tool_specs hashes committed through this database
        self.group = GroupCommit(self)  # the open group of deferred units, when calls are in flight
        # The file this connection opened: a writer refuses to go on once another is at the path.
        self._identity = None if readonly else file_identity(path)

    @property
    def conn(self) -> sqlite3.Connection:
        """The connection. Inside this thread's write transaction, what the ``Tx`` holds back
        is written first, so a read through it sees every write made before."""
        tx = self._tx
        if tx is not None and self._tx_thread == threading.get_ident():
            tx.flush()
        return self._conn

    def close(self) -> None:
        with self.lock, map_sqlite_errors():
            self.group.commit_now()
            self._conn.close()

    # ----------------------------------------------------------------------- writes
    def write(self) -> AbstractContextManager[Tx]:
        """One IMMEDIATE transaction: everything inside commits together or not at all.

        Re-entrant: a ``write()`` opened by the thread that already holds this database's
        transaction joins it (the same ``Tx``; only the outermost block issues BEGIN
        IMMEDIATE and COMMIT; reads on this database inside it see its uncommitted writes).
        An inner block that raises marks the whole transaction failed and re-raises: the
        outermost block then rolls everything back, even when a caller in between caught
        the inner failure (the outermost block re-raises that failure on exit). There are
        no partial commits. While the group commit defers (``_group_commit.py``) the
        outermost block is a unit: a savepoint in the group's transaction, committed with
        the group, or rolled back alone."""
        if self.readonly:
            raise StoreError(ERR_STORE_READ_ONLY)
        # The call path opens ~15 blocks inside each transaction it writes: joining one costs
        # a re-entrant lock, not a generator. Only this thread can have set ``_tx_thread`` to
        # its own ident, so reading it without the lock cannot mistake another's transaction.
        if self._tx_thread == threading.get_ident():
            return _Joined(self)
        return self._write()

    @contextmanager
    def _write(self) -> Iterator[Tx]:
        with map_sqlite_errors(), self.lock:
            outer = self._tx
            if outer is not None:  # only the owning thread can hold the lock while a transaction is open
                with _Joined(self) as joined:
                    yield joined
                return
            if self.group.deferring:
                yield from self._unit()
                return
            self.group.commit_now()  # the open group's units commit first, in their order
            self._refuse_if_gone()
            if self._nowait:
                self._begin_nowait()
            else:
                self._conn.execute("BEGIN IMMEDIATE")
            tx = Tx(self._conn, self._stored_specs)
            self._open_tx(tx)
            try:
                yield tx
                if self._tx_failed is None:
                    tx.flush()
            except BaseException:
                self._end_tx()
                self._rollback()
                raise
            failed = self._tx_failed
            self._end_tx()
            if failed is not None:
                self._rollback()
                raise StoreError(ERR_TX_FAILED) from failed
            try:
                self._conn.execute("COMMIT")
            except BaseException:
                self._rollback()
                raise
            self.commits += 1
            self._stored_specs |= tx.specs_written

    def _unit(self) -> Iterator[Tx]:
        """One deferred unit: a savepoint in the group's transaction (begun by the group's
        first unit). A unit that raises is rolled back to its savepoint alone and re-raises
        as ``write()`` does; the group's other units stay."""
        group = self.group.join()
        self._conn.execute("SAVEPOINT unit")
        # The group holds the write lock from its BEGIN: no other connection has appended an
        # event since its units before this one left the chain's head where it is.
        tx = Tx(self._conn, self._stored_specs, group.head)
        self._open_tx(tx)
        try:
            yield tx
            if self._tx_failed is None:
                tx.flush()
        except BaseException as exc:
            self._end_tx()
            self.group.undo_unit(group, exc)
            raise
        failed = self._tx_failed
        self._end_tx()
        if failed is not None:
            self.group.undo_unit(group, failed)
            raise StoreError(ERR_TX_FAILED) from failed
        try:
            self._conn.execute("RELEASE unit")
        except BaseException as exc:
            self.group.undo_unit(group, exc)
            raise
        group.kept(tx.specs_written, tx.head)

    def begin_group(self) -> None:
        """The group's BEGIN (``GroupCommit.join``): as a transaction of ``write()`` begins it."""
        self._refuse_if_gone()
        self._begin_nowait()

    def unit_open(self) -> bool:
        return self._tx is not None

    def committed(self, group: Group) -> None:
        """After the group's COMMIT: counted, and its specs known to be stored."""
        self.commits += 1
        self._stored_specs |= group.specs

    def _rollback(self) -> None:
        # SQLite may have rolled back already (a full disk, an I/O error): then there is
        # nothing to undo, and a ROLLBACK would raise over the error that ended it.
        if self._conn.in_transaction:
            self._conn.execute("ROLLBACK")

    def _open_tx(self, tx: Tx) -> None:
        self._tx, self._tx_failed, self._tx_thread = tx, None, threading.get_ident()

    def _end_tx(self) -> None:
        self._tx, self._tx_failed, self._tx_thread = None, None, 0

    def _refuse_if_gone(self) -> None:
        # In WAL mode SQLite goes on writing to a database file deleted or replaced under it
        # (its readers see the old file): one stat per transaction refuses that instead.
        if self._identity is not None and file_identity(self.path) != self._identity:
            raise StoreGone(ERR_STORE_GONE.format(path=self.path))

    @contextmanager
    def nowait(self) -> Iterator[bool]:
        """For work done on the event loop's thread, which must not wait on other threads or
        processes: yields False (holding nothing) when another thread holds this database
        now; otherwise holds it for the block and yields True, and every write transaction
        begun in the block raises ``WouldBlock`` at its BEGIN, having written nothing, when
        another connection holds the write lock (instead of waiting up to the busy timeout).
        Reads and COMMIT do not wait on other writers in WAL mode."""
        if not self.lock.acquire(blocking=False):
            yield False
            return
        try:
            if self._nowait or self._tx is not None:  # nested, or inside a transaction: as it was
                yield True
                return
            self._nowait = True
            self.group.open_block()
            try:
                yield True
            finally:
                self._nowait = False
                self.group.close_block()
        finally:
            self.lock.release()

    def _begin_nowait(self) -> None:
        self._conn.execute("PRAGMA busy_timeout = 0")
        try:
            self._conn.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError as err:
            if is_busy(err):
                raise WouldBlock from err
            raise
        finally:
            self._conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")

    def open_tx(self) -> Tx | None:
        """The write transaction this thread has open, else None (another thread's open
        transaction holds the lock, so this waits for it to end and answers None)."""
        with self.lock:
            return self._tx

    # ----------------------------------------------------------------------- reads
    @contextmanager
    def read(self) -> Iterator[sqlite3.Connection]:
        """A consistent snapshot for several reads."""
        with map_sqlite_errors(), self.lock:
            self.group.commit_now()  # a snapshot of what is committed, never of a group's units
            self.conn.execute("BEGIN")
            try:
                yield self.conn
            finally:
                self.conn.execute("COMMIT")


class _Joined:
    """A ``write()`` block inside the transaction its own thread holds open: the same ``Tx``
    (the outermost block alone issues BEGIN and COMMIT). A block that raises marks the whole
    transaction failed, so the outermost one rolls back even if a caller in between caught
    the failure; an ``sqlite3`` error leaves as the store's error for it."""

    __slots__ = ("_db",)

    def __init__(self, db: Database) -> None:
        self._db = db

    def __enter__(self) -> Tx:
        db = self._db
        db.lock.acquire()  # re-entrant: this thread holds it for the transaction
        failed = db._tx_failed
        if failed is not None:
            db.lock.release()
            raise StoreError(ERR_TX_FAILED) from failed
        return cast(Tx, db._tx)  # set: only the thread that opened it joins it

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 _tb: TracebackType | None) -> Literal[False]:
        db = self._db
        try:
            if exc is not None:
                if db._tx_failed is None:
                    db._tx_failed = exc
                if isinstance(exc, sqlite3.Error):
                    raise store_error(exc) from exc
            return False
        finally:
            db.lock.release()
