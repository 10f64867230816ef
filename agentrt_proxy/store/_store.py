"""The store: an open database and what the rest of the program asks of it.

Every state change is a compare-and-set inside one IMMEDIATE transaction together with its
events (``with store.write() as tx: ...``, ``_tx.py``); the gate composes transitions from the
``Tx`` primitives and never sees SQL. The SQL itself is written by the store's modules: this
one (reads), ``_tx.py`` (the compare-and-sets and events), ``_index.py`` (the proxy's call
index, reached as ``store.index`` over the same connection), ``_chain.py`` (walking the event
chain), ``_leases.py`` (renewals), ``_schema.py`` (migrations and the checks before a file is
trusted). Every entry point maps ``sqlite3`` errors to the store's (``_sqlite_errors.py``).
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager

from agentrt_proxy.canonical import durations
from agentrt_proxy.canonical.clock import WALL
from agentrt_proxy.store._connection import BUSY_TIMEOUT_MS, connect, switch_to_wal
from agentrt_proxy.store._errors import NotFound, WouldBlock
from agentrt_proxy.store._group_commit import Group
from agentrt_proxy.store._index import CallIndex
from agentrt_proxy.store._leases import LeaseConnection
from agentrt_proxy.store._replay import Replay
from agentrt_proxy.store._replay_rows import RowReplay
from agentrt_proxy.store._rows import (
    APPROVAL_COLS,
    EVENT_COLS,
    RUN_COLS,
    Approval,
    Event,
    Run,
    RunSummary,
    Step,
    read_approval,
    read_latest_approval,
    read_run,
    read_steps,
)
from agentrt_proxy.store._schema import (
    DEFAULT_LEASE_TTL_NS,
    check_modes,
    check_versions,
    check_writable,
    create_exclusive,
    migrate,
    refuse_symlink,
    refuse_unsafe_schema,
)
from agentrt_proxy.store._sqlite_errors import map_sqlite_errors, mapped
from agentrt_proxy.store._state_check import check_state
from agentrt_proxy.store._tasks import Tasks
from agentrt_proxy.store._transactions import Database
from agentrt_proxy.store._tx import Tx
from agentrt_proxy.store._verify import VerifyReport, read_event_hash, read_head, verify_chain
from agentrt_proxy.store._withheld import WithheldTools
from agentrt_proxy.store.holds import Holds
from agentrt_proxy.text.record_text import MSG_APPROVAL_NOT_FOUND, MSG_MISSING

# ``_connect``, ``WouldBlock`` and ``BUSY_TIMEOUT_MS`` are reached through this module by
# tests/proxy/ and bench/: every connection the store opens is made by calling ``_connect``
# here at that moment, so patching this one name watches them all.
__all__ = ["BUSY_TIMEOUT_MS", "MAX_PAGE", "Store", "WouldBlock", "_connect"]

MAX_PAGE = 1000  # the most rows one page read answers (runtime-core §1.12)
# The serving writer's page cache (SQLite's default is 2,000 KiB). A call touches the right edge
# of each table it appends to (ids are led by their time, decision 0008) and a few interior
# pages; its request key's leaf is random, and in a large database rarely cached either way.
# Half the default keeps all of that and 1 MiB of the proxy's memory (bench/start_and_size.py).
SERVING_CACHE_KIB = 1024

_connect = connect


def _connect_existing(path: str, readonly: bool) -> sqlite3.Connection:
    """A connection to a database that must already be this build's: never created or migrated."""
    conn = _connect(path, readonly=readonly, create=False)
    try:
        refuse_unsafe_schema(conn)
        check_versions(conn, exact=True)
    except BaseException:
        conn.close()
        raise
    return conn


class Store:
    """An open database. Use ``Store.open`` (writer: creates and migrates),
    ``Store.open_existing`` (writer: neither) or ``Store.open_readonly`` (never creates,
    migrates or writes)."""

    def __init__(self, path: str, conn: sqlite3.Connection, readonly: bool) -> None:
        self.path = path
        self.readonly = readonly
        self._db = Database(path, conn, readonly)
        self._leases = LeaseConnection(lambda: _connect(self.path, readonly=False))
        self.index = CallIndex(self._db)
        self.holds = Holds(self._db)
        self.tasks = Tasks(self._db)
        self.withheld = WithheldTools(self._db)  # the pinned tools serving withholds (_withheld.py)

    # opening ------------------------------------------------------------------------
    @classmethod
    def open(cls, path: str) -> Store:
        with map_sqlite_errors():
            refuse_symlink(path)
            create_exclusive(path)
            refuse_symlink(path)
            check_modes(path, writer=True)
            check_writable(path)
            conn = _connect(path, readonly=False)
            try:
                switch_to_wal(conn)
                refuse_unsafe_schema(conn)
                wall = WALL.now_ns()
                migrate(conn, durations.format_time(wall), wall, durations.format_time(wall + DEFAULT_LEASE_TTL_NS))
                check_modes(path, writer=True)  # SQLite just made the -wal/-shm sidecars
                conn.execute(f"PRAGMA cache_size = -{SERVING_CACHE_KIB}")
                # Each unit of a group commit is a savepoint, whose before-images of the pages
                # it changes go to a statement journal; past 64 KiB SQLite spills that to a temp
                # file, which cost ~36 pwrite calls a call at 8 in flight. Nothing in it is
                # needed after a crash (the WAL is the record), so it stays in memory.
                conn.execute("PRAGMA temp_store = MEMORY")
            except BaseException:
                conn.close()
                raise
            return cls(path, conn, readonly=False)

    @classmethod
    def open_existing(cls, path: str) -> Store:
        """A writer on a database that must already exist and be at this build's version:
        it neither creates nor migrates (the operator's decisions use it)."""
        readonly = cls.open_readonly(path)  # the same refusals: symlink, modes, schema, version
        readonly.close()
        with map_sqlite_errors():
            check_modes(path, writer=True)
            return cls(path, _connect_existing(path, readonly=False), readonly=False)

    @classmethod
    def open_readonly(cls, path: str) -> Store:
        with map_sqlite_errors():
            refuse_symlink(path)
            if not os.path.exists(path):
                raise NotFound(MSG_MISSING.format(path=path))
            check_modes(path, writer=False)
            return cls(path, _connect_existing(path, readonly=True), readonly=True)

    def close(self) -> None:
        self._db.close()
        self._leases.close()

    # transactions -------------------------------------------------------------------
    def write(self) -> AbstractContextManager[Tx]:
        """One IMMEDIATE transaction (re-entrant on the thread that holds it): see
        ``Database.write``."""
        return self._db.write()

    def nowait(self) -> AbstractContextManager[bool]:
        """Writes on the event loop's thread that never wait: see ``Database.nowait``."""
        return self._db.nowait()

    def read(self) -> AbstractContextManager[sqlite3.Connection]:
        """A consistent snapshot for several reads."""
        return self._db.read()

    # group commit (_group_commit.py) -------------------------------------------------
    @contextmanager
    def call_in_flight(self) -> Iterator[None]:
        """Around one call: while more than one is in flight, the loop's write units are
        deferred into a shared COMMIT (``nowait``)."""
        group = self._db.group
        group.in_flight += 1
        try:
            yield
        finally:
            group.in_flight -= 1

    def joined(self) -> tuple[Group, ...]:
        """The groups the last ``nowait()`` block's writes joined; ``durable`` waits for them."""
        return self._db.group.joined()

    async def durable(self, groups: tuple[Group, ...]) -> None:
        """Returns once every group in ``groups`` is committed (at once when there is none)."""
        if groups:
            await self._db.group.durable(groups)

    def open_tx(self) -> Tx | None:
        """The write transaction this thread has open, else None."""
        return self._db.open_tx()

    @property
    def commits(self) -> int:
        """Write transactions committed through ``write()`` (tests and the bench count them)."""
        return self._db.commits

    @property
    def _conn(self) -> sqlite3.Connection:
        # The store's own connection, for tests that look at it (query plans, pragmas).
        return self._db.conn

    # leases -------------------------------------------------------------------------
    def renew_lease(self, run_id: str, owner: str, expires_at: str) -> bool:
        return self._leases.renew(run_id, owner, expires_at)

    @mapped
    def release_lease(self, run_id: str, owner: str) -> None:
        with self.write() as tx:
            tx.conn.execute(
                "UPDATE runs SET lease_owner = '', lease_expires_at = '' WHERE id = ? AND lease_owner = ?",
                (run_id, owner),
            )

    # reads --------------------------------------------------------------------------
    @mapped
    def get_run(self, run_id: str) -> Run:
        with self._db.lock:
            return read_run(self._db.conn, run_id)

    @mapped
    def steps_of(self, run_id: str) -> list[Step]:
        with self._db.lock:
            return read_steps(self._db.conn, run_id)

    @mapped
    def approvals_of(self, run_id: str) -> list[Approval]:
        with self._db.lock:
            rows = self._db.conn.execute(
                f"SELECT {APPROVAL_COLS} FROM approvals WHERE run_id = ? ORDER BY rowid", (run_id,)
            ).fetchall()
        return [Approval(*r) for r in rows]

    @mapped
    def get_approval(self, approval_id: str) -> Approval:
        with self._db.lock:
            a = read_approval(self._db.conn, approval_id)
        if a is None:
            raise NotFound(MSG_APPROVAL_NOT_FOUND.format(id=approval_id))
        return a

    @mapped
    def latest_approval(self, run_id: str, step_id: str) -> Approval | None:
        with self._db.lock:
            return read_latest_approval(self._db.conn, step_id, run_id)

    @mapped
    def list_runs(self, limit: int = 50, offset: int = 0) -> list[RunSummary]:
        """Newest first (insertion order), each with its single pending approval id."""
        limit = max(0, min(limit, MAX_PAGE))
        with self.read() as c:
            rows = c.execute(
                f"SELECT {RUN_COLS} FROM runs ORDER BY rowid DESC LIMIT ? OFFSET ?", (limit, offset)
            ).fetchall()
            out = []
            for r in rows:
                run = Run(*r)
                pending = c.execute(
                    "SELECT id FROM approvals WHERE run_id = ? AND status = 'pending' ORDER BY rowid DESC LIMIT 1",
                    (run.id,),
                ).fetchone()
                out.append(RunSummary(run, pending[0] if pending else ""))
        return out

    @mapped
    def count_runs(self) -> int:
        with self._db.lock:
            return int(self._db.conn.execute("SELECT COUNT(*) FROM runs").fetchone()[0])

    @mapped
    def events_of(self, run_id: str, after_seq: int = 0, limit: int = 200) -> list[Event]:
        limit = max(0, min(limit, MAX_PAGE))
        with self._db.lock:
            rows = self._db.conn.execute(
                f"SELECT {EVENT_COLS} FROM events WHERE run_id = ? AND seq > ? ORDER BY seq LIMIT ?",
                (run_id, after_seq, limit),
            ).fetchall()
        return [Event(*r) for r in rows]

    @mapped
    def tool_spec(self, spec_hash: str) -> str | None:
        with self._db.lock:
            row = self._db.conn.execute("SELECT spec_json FROM tool_specs WHERE hash = ?", (spec_hash,)).fetchone()
        return row[0] if row else None

    # the chain ----------------------------------------------------------------------
    @mapped
    def chain_head(self) -> tuple[int, str]:
        return read_head(self._db)

    @mapped
    def event_hash(self, seq: int) -> str | None:
        return read_event_hash(self._db, seq)

    @mapped
    def verify(self, from_seq: int = 0, to_seq: int = 0, head: tuple[int, str] | None = None, *,
               state: bool = True, approval_hash: Callable[[Approval], str] | None = None) -> VerifyReport:
        """Walk the chain from..to (defaults: first event to the head) and stop at the first
        break (runtime-core §8.3). A kept ``head`` (seq, hash) must be reached and must still match.

        With ``state`` and a walk of the whole chain that found it intact, every row of runs,
        approvals and proxy_calls is then held against what the events explain (``_replay.py``),
        in the same read snapshot as the walk; ``approval_hash`` (the gate's rule) also holds
        each approval's own fields to its recorded hash."""
        if not state:
            return verify_chain(self._db, from_seq, to_seq, head)
        replay, rows = Replay(approval_hash), RowReplay()

        def observe(ev: Event) -> None:
            replay.feed(ev)
            rows.feed(ev)

        with self._db.read() as conn:
            report = verify_chain(self._db, from_seq, to_seq, head, observe=observe)
            if report.brk is not None:
                report.state_skipped = "broken"  # the replay stopped at the break
            elif from_seq > 1 or (to_seq and to_seq < report.head_seq):
                report.state_skipped = "range"  # the tables are the whole chain's
            else:
                report.state = check_state(conn, replay, rows)
        return report
