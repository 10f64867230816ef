"""The SQLite store: the only module that writes SQL.

Every state change is a compare-and-set inside one IMMEDIATE transaction together with
its events (``with store.write() as tx: ...``); the gate composes transitions from the
``Tx`` primitives below and never sees SQL. Events are hash-chained as they are
appended (runtime-core §8). The proxy's call index lives in ``store_index.py`` and is
reached through the same connection (``store.index``).
"""

from __future__ import annotations

import functools
import os
import secrets
import sqlite3
import threading
import time
import urllib.parse
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, fields
from typing import Any

from agentrt_proxy.canonical import durations
from agentrt_proxy.canonical.encoder import go_json
from agentrt_proxy.store.schema import (
    DEFAULT_LEASE_TTL_NS,
    MSG_MISSING,
    InsecureMode,
    NotFound,
    SchemaVersionError,
    StoreError,
    SymlinkRefused,
    UnsafeSchema,
    chain_hash,
    check_modes,
    check_versions,
    create_exclusive,
    migrate,
    refuse_symlink,
    refuse_unsafe_schema,
)
from agentrt_proxy.text.record_text import (
    ERR_TX_FAILED,
    MSG_FIRST_GAP,
    MSG_HASH_MISMATCH,
    MSG_RUN_LEASED,
    MSG_RUN_STATE,
    MSG_SEQ_GAP,
)

__all__ = [
    "Approval",
    "ApprovalChanged",
    "ApprovalExpired",
    "ApprovalHashError",
    "ChainBreak",
    "Event",
    "InsecureMode",
    "LeaseLost",
    "NotFound",
    "NotPending",
    "Run",
    "RunLeased",
    "RunStateError",
    "RunSummary",
    "SchemaVersionError",
    "Step",
    "Store",
    "StoreError",
    "SymlinkRefused",
    "Tx",
    "UnsafeSchema",
    "VerifyReport",
    "WouldBlock",
    "new_id",
    "new_run_id",
]


MAX_PAGE = 1000
BUSY_TIMEOUT_MS = 5000  # how long a statement waits for another connection's lock
SQLITE_BUSY = 5  # the result code (sqlite3.SQLITE_BUSY from Python 3.11)


class RunStateError(StoreError):
    """The run (or step) was not in the state the change expected: someone else moved it."""


class RunLeased(RunStateError):
    def __init__(self, run_id: str, owner: str, expires_at: str) -> None:
        super().__init__(MSG_RUN_LEASED.format(run_id=run_id, owner=owner, until=expires_at))
        self.run_id, self.owner, self.expires_at = run_id, owner, expires_at


class LeaseLost(StoreError):
    pass


class NotPending(StoreError):
    pass


class WouldBlock(BaseException):
    """A write transaction begun under ``Store.nowait()`` found another connection holding
    the database's write lock: nothing was written; do the work again where it may wait.
    A BaseException, so no handler that turns a store failure into an answer catches it."""


class ApprovalExpired(NotPending):
    def __init__(self, message: str, approval_id: str = "") -> None:
        super().__init__(message)
        self.approval_id = approval_id


class ApprovalChanged(StoreError):
    pass


class ApprovalHashError(StoreError):
    pass


def new_id(ms: int | None = None) -> str:
    """32 lowercase hex characters, the runtime's id form: 12 of the milliseconds since the
    Unix epoch (``ms``, else now), then 20 random (80 bits). The time first makes new rows
    land at the right edge of every index keyed by id (docs/decisions/0008); the random part
    alone keeps ids unguessable and apart."""
    if ms is None:
        ms = time.time_ns() // 1_000_000
    return f"{ms % (1 << 48):012x}{secrets.token_hex(10)}"


def new_run_id(session: str, ms: int | None = None) -> str:
    """A proxy run's id, ``<session>.<16 lowercase hex>``: 10 of the milliseconds since the
    Unix epoch modulo 2**40 (``ms``, else now), then 6 random (24 bits). Two calls can draw
    the same id in the same millisecond: the claim of the second is then a lost race and it
    draws again (``store_index.RunIdTaken``)."""
    if ms is None:
        ms = time.time_ns() // 1_000_000
    return f"{session}.{ms % (1 << 40):010x}{secrets.token_hex(3)}"


# --------------------------------------------------------------------------- rows


@dataclass
class Run:
    id: str
    goal: str
    status: str
    reason: str
    reason_detail: str
    limits_json: str
    step_count: int
    created_at: str
    started_at: str
    finished_at: str
    result_json: str
    model_calls: int
    input_tokens: int
    output_tokens: int
    cached_input_tokens: int
    estimated_cost_micros: int
    active_ms: int
    lease_owner: str
    lease_expires_at: str


@dataclass
class Step:
    id: str
    run_id: str
    idx: int
    status: str
    decision_json: str
    policy_json: str
    observation_json: str
    observation_hash: str
    started_at: str
    finished_at: str
    spec_hash: str
    policy_id: str


@dataclass
class Approval:
    id: str
    run_id: str
    step_id: str
    kind: str
    capability_json: str
    presentation_json: str
    request_json: str
    hash: str
    status: str
    created_at: str
    decided_at: str
    decided_by: str
    note: str
    expires_at: str


@dataclass
class Event:
    seq: int
    run_id: str
    step_id: str
    at: str
    type: str
    payload_json: str
    hash: str


@dataclass
class RunSummary:
    run: Run
    pending_approval_id: str


@dataclass
class ChainBreak:
    seq: int
    expected: str
    found: str
    detail: str


@dataclass
class VerifyReport:
    head_seq: int
    head_hash: str
    from_seq: int
    to_seq: int
    checked: int
    hash: str
    brk: ChainBreak | None
    to_reached: bool
    kept_head_found: bool | None = None
    kept_head_matches: bool | None = None

    @property
    def intact(self) -> bool:
        return (
            self.brk is None
            and self.to_reached
            and self.kept_head_matches is not False
        )


def _cols(cls: type) -> str:
    return ", ".join(f.name for f in fields(cls))


def _row(cls: type, row: Sequence[Any] | None) -> Any:
    return None if row is None else cls(*row)


_RUN_COLS, _STEP_COLS, _APPROVAL_COLS, _EVENT_COLS = (_cols(c) for c in (Run, Step, Approval, Event))
_RUN_SETTABLE = frozenset(f.name for f in fields(Run)) - {"id"}
_STEP_SETTABLE = frozenset(f.name for f in fields(Step)) - {"id", "run_id", "idx"}
_APPROVAL_SETTABLE = frozenset({"status", "decided_at", "decided_by", "note"})


def _assignments(values: Mapping[str, Any], allowed: frozenset[str]) -> tuple[str, list[Any]]:
    return _set_clause(tuple(values), allowed), list(values.values())


@functools.lru_cache(maxsize=128)
def _set_clause(columns: tuple[str, ...], allowed: frozenset[str]) -> str:
    # The same few column sets recur on every call: checked and joined once each.
    bad = set(columns) - allowed
    if bad:
        raise ValueError(f"not a settable column: {sorted(bad)}")
    return ", ".join(f"{k} = ?" for k in columns)


def _as_tuple(v: str | Sequence[str]) -> tuple[str, ...]:
    return (v,) if isinstance(v, str) else tuple(v)


# --------------------------------------------------------------------------- transaction


class Tx:
    """One open IMMEDIATE transaction. Every write is compare-and-set; a lost CAS raises
    RunStateError, which rolls the whole transaction back."""

    def __init__(self, conn: sqlite3.Connection, stored_specs: frozenset[str] | set[str] = frozenset()) -> None:
        self._c = conn
        self._head: tuple[int, str] | None = None  # the chain head, read once and advanced by append (§8.2)
        self._specs: set[str] = set()  # tool_specs hashes this transaction already wrote
        self._stored_specs = stored_specs  # hashes an earlier committed transaction of this store wrote

    # reads inside the transaction -------------------------------------------------
    def run(self, run_id: str) -> Run:
        return _read_run(self._c, run_id)

    def steps(self, run_id: str) -> list[Step]:
        return _read_steps(self._c, run_id)

    def step(self, step_id: str) -> Step:
        return _read_step(self._c, step_id)

    def approval(self, approval_id: str) -> Approval | None:
        return _row(Approval, self._c.execute(
            f"SELECT {_APPROVAL_COLS} FROM approvals WHERE id = ?", (approval_id,)).fetchone())

    def latest_approval(self, step_id: str, run_id: str) -> Approval | None:
        return _latest_approval(self._c, step_id, run_id)

    # runs -----------------------------------------------------------------------------
    def insert_run(self, run_id: str, goal: str, limits_json: str, now: str, owner: str, expires: str) -> None:
        self._c.execute(
            "INSERT INTO runs (id, goal, status, limits_json, created_at, started_at, lease_owner, "
            "lease_expires_at) VALUES (?, ?, 'RUNNING', ?, ?, ?, ?, ?)",
            (run_id, goal, limits_json, now, now, owner, expires),
        )

    def update_run(self, run_id: str, *, expect: str | Sequence[str], owner: str | None = None,
                   **values: Any) -> None:
        """CAS on the run's status (and lease owner when given)."""
        self._update_run(run_id, expect, owner, values, "")

    def update_run_returning(self, run_id: str, *, expect: str | Sequence[str], owner: str | None = None,
                             **values: Any) -> Run:
        """``update_run``, answering the row as the update left it (the same statement)."""
        rows = self._update_run(run_id, expect, owner, values, f" RETURNING {_RUN_COLS}")
        return Run(*rows[0])

    def _update_run(self, run_id: str, expect: str | Sequence[str], owner: str | None, values: Mapping[str, Any],
                    returning: str) -> list[Any]:
        sets, args = _assignments(values, _RUN_SETTABLE)
        statuses = _as_tuple(expect)
        where = f"id = ? AND status IN ({','.join('?' * len(statuses))})"
        args += [run_id, *statuses]
        if owner is not None:
            where += " AND lease_owner = ?"
            args.append(owner)
        cur = self._c.execute(f"UPDATE runs SET {sets} WHERE {where}{returning}", args)
        rows = cur.fetchall() if returning else []
        if (len(rows) if returning else cur.rowcount) != 1:
            raise RunStateError(MSG_RUN_STATE.format(run_id=run_id, expected=" or ".join(statuses)))
        return rows

    def add_active_ms(self, run_id: str, ms: int, owner: str) -> bool:
        """CAS: add ``ms`` to a RUNNING run's active time under this lease owner; False
        (nothing written) when the run is not RUNNING under that owner."""
        cur = self._c.execute(
            "UPDATE runs SET active_ms = active_ms + ? WHERE id = ? AND status = 'RUNNING' AND lease_owner = ?",
            (ms, run_id, owner),
        )
        return cur.rowcount == 1

    def claim_step(self, run_id: str, idx: int, owner: str, step_id: str, now: str) -> None:
        """Claim the run's next step index under this owner's lease and insert the step."""
        cur = self._c.execute(
            "UPDATE runs SET step_count = ? WHERE id = ? AND status = 'RUNNING' AND step_count = ? "
            "AND lease_owner = ?",
            (idx + 1, run_id, idx, owner),
        )
        if cur.rowcount != 1:
            raise RunStateError(MSG_RUN_STATE.format(run_id=run_id, expected="RUNNING under this lease"))
        self._c.execute(
            "INSERT INTO steps (id, run_id, idx, status, started_at) VALUES (?, ?, ?, 'deciding', ?)",
            (step_id, run_id, idx, now),
        )

    # steps ----------------------------------------------------------------------------
    def update_step(self, step_id: str, *, expect: str | Sequence[str], **values: Any) -> None:
        sets, args = _assignments(values, _STEP_SETTABLE)
        statuses = _as_tuple(expect)
        cur = self._c.execute(
            f"UPDATE steps SET {sets} WHERE id = ? AND status IN ({','.join('?' * len(statuses))})",
            [*args, step_id, *statuses],
        )
        if cur.rowcount != 1:
            raise RunStateError(MSG_RUN_STATE.format(run_id=f"step {step_id}", expected=" or ".join(statuses)))

    def put_spec(self, spec_hash: str, spec_json: str) -> None:
        # A hash this transaction or a committed one already inserted (or ignored) is there
        # (tool_specs rows are never deleted): the same no-op again.
        if spec_hash in self._specs or spec_hash in self._stored_specs:
            return
        self._c.execute("INSERT OR IGNORE INTO tool_specs (hash, spec_json) VALUES (?, ?)", (spec_hash, spec_json))
        self._specs.add(spec_hash)

    # approvals ------------------------------------------------------------------------
    def insert_approval(self, a: Approval) -> None:
        self._c.execute(
            f"INSERT INTO approvals ({_APPROVAL_COLS}) VALUES ({','.join('?' * len(fields(Approval)))})",
            [getattr(a, f.name) for f in fields(Approval)],
        )

    def update_approval(self, approval_id: str, *, expect: str, expect_hash: str | None = None,
                        **values: Any) -> bool:
        """Conditional decision write; False when someone decided it first."""
        sets, args = _assignments(values, _APPROVAL_SETTABLE)
        where, wargs = "id = ? AND status = ?", [approval_id, expect]
        if expect_hash is not None:
            where += " AND hash = ?"
            wargs.append(expect_hash)
        cur = self._c.execute(f"UPDATE approvals SET {sets} WHERE {where}", [*args, *wargs])
        return cur.rowcount == 1

    # events ---------------------------------------------------------------------------
    def append(self, run_id: str, step_id: str, at: str, type_: str, payload: Mapping[str, Any] | None) -> Event:
        """Append one event with the next seq across all runs and its chain hash (§8.2)."""
        if self._head is None:
            self._head = _chain_head_for_append(self._c)
        seq = self._head[0] + 1
        # Payloads are Go maps: top-level keys sorted; nested structs keep their order.
        text = go_json(dict(sorted(payload.items()))) if payload else "{}"
        h = chain_hash(self._head[1], seq, run_id, step_id, at, type_, text)
        self._c.execute(
            "INSERT INTO events (seq, run_id, step_id, at, type, payload_json, hash) VALUES (?, ?, ?, ?, ?, ?, ?)",
            (seq, run_id, step_id, at, type_, text, h),
        )
        self._head = (seq, h)
        return Event(seq, run_id, step_id, at, type_, text, h)

    # the proxy's index uses the same transaction machinery
    @property
    def conn(self) -> sqlite3.Connection:
        return self._c


def _chain_head_for_append(c: sqlite3.Connection) -> tuple[int, str]:
    """The highest seq ever given (AUTOINCREMENT's counter, or the last event's if higher)
    and the last event's hash, in one statement (read once per transaction, §8.2)."""
    row = c.execute(
        "SELECT (SELECT seq FROM sqlite_sequence WHERE name = 'events'), last.seq, last.hash "
        "FROM (SELECT 1) LEFT JOIN (SELECT seq, hash FROM events ORDER BY seq DESC LIMIT 1) AS last"
    ).fetchone()
    counter, last_seq, last_hash = row
    seq = max(int(counter) if counter is not None else 0, int(last_seq) if last_seq is not None else 0)
    return seq, (last_hash if last_seq is not None else "")


def _read_run(c: sqlite3.Connection, run_id: str) -> Run:
    run = _row(Run, c.execute(f"SELECT {_RUN_COLS} FROM runs WHERE id = ?", (run_id,)).fetchone())
    if run is None:
        raise NotFound(f"agentrt: run {run_id} not found")
    return run


def _read_steps(c: sqlite3.Connection, run_id: str) -> list[Step]:
    rows = c.execute(f"SELECT {_STEP_COLS} FROM steps WHERE run_id = ? ORDER BY idx", (run_id,)).fetchall()
    return [Step(*r) for r in rows]


def _read_step(c: sqlite3.Connection, step_id: str) -> Step:
    step = _row(Step, c.execute(f"SELECT {_STEP_COLS} FROM steps WHERE id = ?", (step_id,)).fetchone())
    if step is None:
        raise NotFound(f"agentrt: step {step_id} not found")
    return step


def _latest_approval(c: sqlite3.Connection, step_id: str, run_id: str) -> Approval | None:
    # Insertion order, never timestamp text (trimmed fractions do not sort as text).
    return _row(Approval, c.execute(
        f"SELECT {_APPROVAL_COLS} FROM approvals WHERE run_id = ? AND step_id = ? ORDER BY rowid DESC LIMIT 1",
        (run_id, step_id),
    ).fetchone())


# --------------------------------------------------------------------------- the store


def _uri(path: str, readonly: bool, create: bool = True) -> str:
    quoted = urllib.parse.quote(os.path.abspath(path))
    if readonly:
        return f"file:{quoted}?mode=ro"
    return f"file:{quoted}" + ("" if create else "?mode=rw")


def _connect(path: str, readonly: bool, create: bool = True) -> sqlite3.Connection:
    conn = sqlite3.connect(_uri(path, readonly, create), uri=True, timeout=BUSY_TIMEOUT_MS / 1000,
                           isolation_level=None, check_same_thread=False)
    conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
    conn.execute("PRAGMA foreign_keys = ON")
    conn.execute("PRAGMA trusted_schema = OFF")
    if hasattr(conn, "setconfig") and hasattr(sqlite3, "SQLITE_DBCONFIG_DEFENSIVE"):
        conn.setconfig(sqlite3.SQLITE_DBCONFIG_DEFENSIVE, True)
    if not readonly:
        conn.execute("PRAGMA synchronous = FULL")
    return conn


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


def _switch_to_wal(conn: sqlite3.Connection) -> None:
    # SQLite answers BUSY to a concurrent first switch without waiting: retry for 5 s.
    deadline = time.monotonic() + 5.0
    while True:
        try:
            conn.execute("PRAGMA journal_mode = WAL")
            return
        except sqlite3.OperationalError:
            if time.monotonic() >= deadline:
                raise
            time.sleep(0.005)


def wall_ns() -> int:
    return time.time_ns()


class Store:
    """An open database. Use ``Store.open`` (writer: creates and migrates) or
    ``Store.open_readonly`` (never creates, migrates or writes)."""

    def __init__(self, path: str, conn: sqlite3.Connection, readonly: bool) -> None:
        self.path = path
        self.readonly = readonly
        self._conn = conn
        self._lock = threading.RLock()
        self._tx: Tx | None = None  # the open write transaction (only its thread holds _lock meanwhile)
        self._tx_depth = 0
        self._tx_failed: BaseException | None = None
        self.commits = 0  # write transactions committed through write() (tests and the bench count them)
        self._lease_conn: sqlite3.Connection | None = None
        self._lease_lock = threading.Lock()
        self._nowait = False  # set by nowait(): BEGIN IMMEDIATE raises WouldBlock instead of waiting
        self._stored_specs: set[str] = set()  # tool_specs hashes committed through this store
        from agentrt_proxy.store.index import (
            CallIndex,  # lazy: index.py imports this module (fixed when the store is split)
        )

        self.index = CallIndex(self)

    # opening ------------------------------------------------------------------------
    @classmethod
    def open(cls, path: str) -> Store:
        refuse_symlink(path)
        create_exclusive(path)
        refuse_symlink(path)
        check_modes(path, writer=True)
        conn = _connect(path, readonly=False)
        try:
            _switch_to_wal(conn)
            refuse_unsafe_schema(conn)
            wall = wall_ns()
            migrate(conn, durations.format_time(wall), wall, durations.format_time(wall + DEFAULT_LEASE_TTL_NS))
            check_modes(path, writer=True)  # SQLite just made the -wal/-shm sidecars
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
        check_modes(path, writer=True)
        return cls(path, _connect_existing(path, readonly=False), readonly=False)

    @classmethod
    def open_readonly(cls, path: str) -> Store:
        refuse_symlink(path)
        if not os.path.exists(path):
            raise NotFound(MSG_MISSING.format(path=path))
        check_modes(path, writer=False)
        return cls(path, _connect_existing(path, readonly=True), readonly=True)

    def close(self) -> None:
        with self._lock:
            self._conn.close()
        with self._lease_lock:
            if self._lease_conn is not None:
                self._lease_conn.close()
                self._lease_conn = None

    # transactions -------------------------------------------------------------------
    @contextmanager
    def write(self) -> Iterator[Tx]:
        """One IMMEDIATE transaction: everything inside commits together or not at all.

        Re-entrant: a ``write()`` opened by the thread that already holds this store's
        transaction joins it (the same ``Tx``; only the outermost block issues BEGIN
        IMMEDIATE and COMMIT; reads on this store inside it see its uncommitted writes).
        An inner block that raises marks the whole transaction failed and re-raises:
        the outermost block then rolls everything back, even when a caller in between
        caught the inner failure (the outermost block re-raises that failure on exit).
        There are no partial commits and no savepoints."""
        if self.readonly:
            raise StoreError("agentrt: the store was opened read-only")
        with self._lock:  # an RLock: the owning thread re-enters it
            outer = self._tx
            if outer is not None:  # only the owning thread can hold the lock while a transaction is open
                if self._tx_failed is not None:
                    raise StoreError(ERR_TX_FAILED) from self._tx_failed
                self._tx_depth += 1
                try:
                    yield outer
                except BaseException as exc:
                    if self._tx_failed is None:
                        self._tx_failed = exc
                    raise
                finally:
                    self._tx_depth -= 1
                return
            if self._nowait:
                self._begin_nowait()
            else:
                self._conn.execute("BEGIN IMMEDIATE")
            tx = Tx(self._conn, self._stored_specs)
            self._tx, self._tx_depth, self._tx_failed = tx, 1, None
            try:
                yield tx
            except BaseException:
                self._end_tx()
                self._conn.execute("ROLLBACK")
                raise
            failed = self._tx_failed
            self._end_tx()
            if failed is not None:
                self._conn.execute("ROLLBACK")
                raise StoreError(ERR_TX_FAILED) from failed
            try:
                self._conn.execute("COMMIT")
            except BaseException:
                if self._conn.in_transaction:
                    self._conn.execute("ROLLBACK")
                raise
            self.commits += 1
            self._stored_specs |= tx._specs

    @contextmanager
    def nowait(self) -> Iterator[bool]:
        """For work done on the event loop's thread, which must not wait on other threads or
        processes: yields False (holding nothing) when another thread holds this store now;
        otherwise holds the store for the block and yields True, and every write transaction
        begun in the block raises ``WouldBlock`` at its BEGIN, having written nothing, when
        another connection holds the write lock (instead of waiting up to the busy timeout).
        Reads and COMMIT do not wait on other writers in WAL mode."""
        if not self._lock.acquire(blocking=False):
            yield False
            return
        try:
            if self._nowait or self._tx is not None:  # nested, or inside a transaction: as it was
                yield True
                return
            self._nowait = True
            try:
                yield True
            finally:
                self._nowait = False
        finally:
            self._lock.release()

    def _begin_nowait(self) -> None:
        self._conn.execute("PRAGMA busy_timeout = 0")
        try:
            self._conn.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError as err:
            if getattr(err, "sqlite_errorcode", None) == SQLITE_BUSY or "database is locked" in str(err):
                raise WouldBlock from err
            raise
        finally:
            self._conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")

    def open_tx(self) -> Tx | None:
        """The write transaction this thread has open, else None (another thread's open
        transaction holds the lock, so this waits for it to end and answers None)."""
        with self._lock:
            return self._tx

    def _end_tx(self) -> None:
        self._tx, self._tx_depth, self._tx_failed = None, 0, None

    @contextmanager
    def read(self) -> Iterator[sqlite3.Connection]:
        """A consistent snapshot for several reads."""
        with self._lock:
            self._conn.execute("BEGIN")
            try:
                yield self._conn
            finally:
                self._conn.execute("COMMIT")

    # leases (own connection, so renewals are never queued behind other work) --------
    def renew_lease(self, run_id: str, owner: str, expires_at: str) -> bool:
        with self._lease_lock:
            if self._lease_conn is None:
                self._lease_conn = _connect(self.path, readonly=False)
            cur = self._lease_conn.execute(
                "UPDATE runs SET lease_expires_at = ? WHERE id = ? AND lease_owner = ?", (expires_at, run_id, owner)
            )
            return cur.rowcount == 1

    def release_lease(self, run_id: str, owner: str) -> None:
        with self.write() as tx:
            tx.conn.execute(
                "UPDATE runs SET lease_owner = '', lease_expires_at = '' WHERE id = ? AND lease_owner = ?",
                (run_id, owner),
            )

    # reads --------------------------------------------------------------------------
    def get_run(self, run_id: str) -> Run:
        with self._lock:
            return _read_run(self._conn, run_id)

    def steps_of(self, run_id: str) -> list[Step]:
        with self._lock:
            return _read_steps(self._conn, run_id)

    def approvals_of(self, run_id: str) -> list[Approval]:
        with self._lock:
            rows = self._conn.execute(
                f"SELECT {_APPROVAL_COLS} FROM approvals WHERE run_id = ? ORDER BY rowid", (run_id,)
            ).fetchall()
        return [Approval(*r) for r in rows]

    def get_approval(self, approval_id: str) -> Approval:
        with self._lock:
            a = _row(Approval, self._conn.execute(
                f"SELECT {_APPROVAL_COLS} FROM approvals WHERE id = ?", (approval_id,)).fetchone())
        if a is None:
            raise NotFound(f"agentrt: approval {approval_id} not found")
        return a

    def latest_approval(self, run_id: str, step_id: str) -> Approval | None:
        with self._lock:
            return _latest_approval(self._conn, step_id, run_id)

    def list_runs(self, limit: int = 50, offset: int = 0) -> list[RunSummary]:
        """Newest first (insertion order), each with its single pending approval id."""
        limit = max(0, min(limit, MAX_PAGE))
        with self.read() as c:
            rows = c.execute(
                f"SELECT {_RUN_COLS} FROM runs ORDER BY rowid DESC LIMIT ? OFFSET ?", (limit, offset)
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

    def count_runs(self) -> int:
        with self._lock:
            return int(self._conn.execute("SELECT COUNT(*) FROM runs").fetchone()[0])

    def events_of(self, run_id: str, after_seq: int = 0, limit: int = 200) -> list[Event]:
        limit = max(0, min(limit, MAX_PAGE))
        with self._lock:
            rows = self._conn.execute(
                f"SELECT {_EVENT_COLS} FROM events WHERE run_id = ? AND seq > ? ORDER BY seq LIMIT ?",
                (run_id, after_seq, limit),
            ).fetchall()
        return [Event(*r) for r in rows]

    def tool_spec(self, spec_hash: str) -> str | None:
        with self._lock:
            row = self._conn.execute("SELECT spec_json FROM tool_specs WHERE hash = ?", (spec_hash,)).fetchone()
        return row[0] if row else None

    # the chain ----------------------------------------------------------------------
    def chain_head(self) -> tuple[int, str]:
        with self._lock:
            row = self._conn.execute("SELECT seq, hash FROM events ORDER BY seq DESC LIMIT 1").fetchone()
        return (int(row[0]), row[1]) if row else (0, "")

    def event_hash(self, seq: int) -> str | None:
        with self._lock:
            row = self._conn.execute("SELECT hash FROM events WHERE seq = ?", (seq,)).fetchone()
        return row[0] if row else None

    def verify(self, from_seq: int = 0, to_seq: int = 0, head: tuple[int, str] | None = None) -> VerifyReport:
        """Walk the chain from..to (defaults: first event to the head) and stop at the first
        break (§8.3). A kept ``head`` (seq, hash) must be reached and must still match."""
        head_seq, head_hash = self.chain_head()
        last = to_seq or head_seq
        report = VerifyReport(head_seq, head_hash, from_seq, last, 0, "", None, True)
        prev_seq, prev_hash = self._verify_start(from_seq)
        cursor = max(from_seq, 1) - 1
        while cursor < last and report.brk is None:
            with self._lock:
                rows = self._conn.execute(
                    f"SELECT {_EVENT_COLS} FROM events WHERE seq > ? AND seq <= ? ORDER BY seq LIMIT 128",
                    (cursor, last),
                ).fetchall()
            if not rows:
                break
            for r in rows:
                ev = Event(*r)
                report.brk = _check_link(ev, prev_seq, prev_hash, first=(report.checked == 0 and from_seq <= 1))
                if report.brk is not None:
                    break
                report.checked += 1
                report.hash, prev_seq, prev_hash = ev.hash, ev.seq, ev.hash
                report.to_seq, cursor = ev.seq, ev.seq
        report.to_reached = report.brk is not None or not to_seq or prev_seq >= to_seq
        if head is not None:
            found = self.event_hash(head[0])
            report.kept_head_found = found is not None and head[0] <= max(report.to_seq, 0)
            report.kept_head_matches = report.kept_head_found and found == head[1]
        return report

    def _verify_start(self, from_seq: int) -> tuple[int, str]:
        # A range not starting at 1 trusts the stored hash of the event before it.
        if from_seq <= 1:
            return 0, ""
        with self._lock:
            row = self._conn.execute(
                "SELECT seq, hash FROM events WHERE seq < ? ORDER BY seq DESC LIMIT 1", (from_seq,)
            ).fetchone()
        return (int(row[0]), row[1]) if row else (0, "")


def _check_link(ev: Event, prev_seq: int, prev_hash: str, first: bool) -> ChainBreak | None:
    if ev.seq != prev_seq + 1:
        detail = MSG_FIRST_GAP.format(seq=ev.seq) if first and prev_seq == 0 else MSG_SEQ_GAP.format(
            seq=ev.seq, prev=prev_seq)
        return ChainBreak(ev.seq, str(prev_seq + 1), str(ev.seq), detail)
    expected = chain_hash(prev_hash, ev.seq, ev.run_id, ev.step_id, ev.at, ev.type, ev.payload_json)
    if expected != ev.hash:
        return ChainBreak(ev.seq, expected, ev.hash, MSG_HASH_MISMATCH)
    return None
