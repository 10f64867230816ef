"""The database file: its schema, its migrations, and the checks made before it is trusted.

The runtime's six migrations are the Go ``agentrt`` store's, column for column, so the
original operator tools read a file this program wrote. The proxy's own index lives
beside them under migrations of its own (``proxy_schema_migrations``). ``Store``'s openers
call into this module, on a connection of their own before anyone else uses it.
"""

from __future__ import annotations

import errno
import os
import sqlite3
import stat
from collections.abc import Callable
from dataclasses import dataclass

from agentrt_proxy.store._chain import chain_hash
from agentrt_proxy.store._errors import (
    InsecureMode,
    SchemaVersionError,
    StoreError,
    StoreReadOnly,
    SymlinkRefused,
    UnsafeSchema,
)
from agentrt_proxy.text.record_text import (
    MSG_INDEX_NEWER,
    MSG_INSECURE,
    MSG_NOT_REGULAR,
    MSG_NOT_WRITABLE,
    MSG_SCHEMA_NEWER,
    MSG_SCHEMA_OLDER,
    MSG_SIDECAR_OWNER,
    MSG_SYMLINK,
    MSG_UNSAFE,
)

# The runtime's migrations, verbatim in meaning: forward-only, never edited.
_MIGRATION_1 = """
CREATE TABLE runs (
    id TEXT PRIMARY KEY,
    goal TEXT NOT NULL,
    status TEXT NOT NULL,
    reason TEXT NOT NULL DEFAULT '',
    reason_detail TEXT NOT NULL DEFAULT '',
    limits_json TEXT NOT NULL,
    step_count INTEGER NOT NULL DEFAULT 0,
    created_at TEXT NOT NULL,
    started_at TEXT NOT NULL DEFAULT '',
    finished_at TEXT NOT NULL DEFAULT '',
    result_json TEXT NOT NULL DEFAULT ''
);
CREATE TABLE steps (
    id TEXT PRIMARY KEY,
    run_id TEXT NOT NULL REFERENCES runs(id),
    idx INTEGER NOT NULL,
    status TEXT NOT NULL,
    decision_json TEXT NOT NULL DEFAULT '',
    policy_json TEXT NOT NULL DEFAULT '',
    observation_json TEXT NOT NULL DEFAULT '',
    observation_hash TEXT NOT NULL DEFAULT '',
    started_at TEXT NOT NULL,
    finished_at TEXT NOT NULL DEFAULT '',
    UNIQUE(run_id, idx)
);
CREATE TABLE events (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    run_id TEXT NOT NULL REFERENCES runs(id),
    step_id TEXT NOT NULL DEFAULT '',
    at TEXT NOT NULL,
    type TEXT NOT NULL,
    payload_json TEXT NOT NULL
);
CREATE INDEX events_run ON events(run_id, seq);
"""

_MIGRATION_2 = """
CREATE TABLE approvals (
    id TEXT PRIMARY KEY,
    run_id TEXT NOT NULL REFERENCES runs(id),
    step_id TEXT NOT NULL,
    kind TEXT NOT NULL,
    capability_json TEXT NOT NULL,
    presentation_json TEXT NOT NULL,
    request_json TEXT NOT NULL,
    hash TEXT NOT NULL,
    status TEXT NOT NULL,
    created_at TEXT NOT NULL,
    decided_at TEXT NOT NULL DEFAULT '',
    decided_by TEXT NOT NULL DEFAULT '',
    note TEXT NOT NULL DEFAULT ''
);
CREATE INDEX approvals_run ON approvals(run_id, created_at);
"""

_MIGRATION_3 = """
CREATE TABLE model_calls (
    id TEXT PRIMARY KEY,
    run_id TEXT NOT NULL REFERENCES runs(id),
    step_id TEXT NOT NULL DEFAULT '',
    attempt INTEGER NOT NULL DEFAULT 0,
    status TEXT NOT NULL,
    model TEXT NOT NULL DEFAULT '',
    input_tokens INTEGER NOT NULL DEFAULT 0,
    output_tokens INTEGER NOT NULL DEFAULT 0,
    cached_input_tokens INTEGER NOT NULL DEFAULT 0,
    cost_micros INTEGER NOT NULL DEFAULT 0,
    latency_ms INTEGER NOT NULL DEFAULT 0,
    error TEXT NOT NULL DEFAULT '',
    dispatched_at TEXT NOT NULL,
    completed_at TEXT NOT NULL DEFAULT ''
);
CREATE INDEX model_calls_run ON model_calls(run_id, dispatched_at);
ALTER TABLE runs ADD COLUMN model_calls INTEGER NOT NULL DEFAULT 0;
ALTER TABLE runs ADD COLUMN input_tokens INTEGER NOT NULL DEFAULT 0;
ALTER TABLE runs ADD COLUMN output_tokens INTEGER NOT NULL DEFAULT 0;
ALTER TABLE runs ADD COLUMN cached_input_tokens INTEGER NOT NULL DEFAULT 0;
ALTER TABLE runs ADD COLUMN estimated_cost_micros INTEGER NOT NULL DEFAULT 0;
"""

_MIGRATION_4 = """
ALTER TABLE runs ADD COLUMN active_ms INTEGER NOT NULL DEFAULT 0;
ALTER TABLE approvals ADD COLUMN expires_at TEXT NOT NULL DEFAULT '';
"""

_MIGRATION_5 = """
ALTER TABLE runs ADD COLUMN lease_owner TEXT NOT NULL DEFAULT '';
ALTER TABLE runs ADD COLUMN lease_expires_at TEXT NOT NULL DEFAULT '';
"""

_MIGRATION_6 = """
CREATE TABLE tool_specs (
    hash TEXT PRIMARY KEY,
    spec_json TEXT NOT NULL
);
ALTER TABLE steps ADD COLUMN spec_hash TEXT NOT NULL DEFAULT '';
ALTER TABLE steps ADD COLUMN policy_id TEXT NOT NULL DEFAULT '';
ALTER TABLE events ADD COLUMN hash TEXT NOT NULL DEFAULT '';
"""

RUNTIME_VERSION = 6
PRE_LEASE_OWNER = "agentrt:pre-lease-version"
DEFAULT_LEASE_TTL_NS = 30_000_000_000  # DefaultLeaseTTL (runtime-core §5.1): also a gate's lease_ttl by default

_PROXY_MIGRATION_1 = """
CREATE TABLE proxy_calls (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    session TEXT NOT NULL,
    request_key TEXT NOT NULL,
    tool TEXT NOT NULL,
    side_effect TEXT NOT NULL,
    run_id TEXT NOT NULL UNIQUE,
    created_at INTEGER NOT NULL,
    open INTEGER NOT NULL DEFAULT 1,
    closed_at INTEGER NOT NULL DEFAULT 0,
    settled_at INTEGER NOT NULL DEFAULT 0
);
CREATE UNIQUE INDEX proxy_calls_open ON proxy_calls(session, request_key) WHERE open = 1;
CREATE INDEX proxy_calls_key ON proxy_calls(session, request_key, id);
CREATE INDEX proxy_calls_unsettled ON proxy_calls(session, settled_at, id);
"""

_PROXY_MIGRATION_2 = """
ALTER TABLE proxy_calls ADD COLUMN outcome INTEGER NOT NULL DEFAULT 0;
CREATE INDEX proxy_calls_outcome ON proxy_calls(session, request_key, outcome, id);
"""

# Budget reservations (docs/decisions/0017): one row per (run, budget) a call spends from,
# written in the transaction that claims the call. ``amount`` is the exact decimal's text;
# ``at`` the proxy clock's Unix ns when reserved (a rolling window counts from it). The state
# moves are in _states.py (HOLD): reserved -> spent (the result is recorded) or released (a
# known failure, a rejection). ``run_id`` moves only when a fresh run takes over the question
# about an unknown outcome (the reservation goes with it, never doubled).
_PROXY_MIGRATION_3 = """
CREATE TABLE budget_holds (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    session TEXT NOT NULL,
    budget TEXT NOT NULL,
    currency TEXT NOT NULL DEFAULT '',
    run_id TEXT NOT NULL,
    amount TEXT NOT NULL,
    at INTEGER NOT NULL,
    state TEXT NOT NULL DEFAULT 'reserved',
    settled_at INTEGER NOT NULL DEFAULT 0,
    UNIQUE(run_id, budget)
);
CREATE INDEX budget_holds_window ON budget_holds(session, budget, at);
"""

# Calls answered as MCP tasks (docs/decisions/0020): one row per task, committed before the host
# is told its id. ``id`` is unguessable (128 random bits) and is not the run id; ``arguments`` is
# the recorded request's arguments text exactly as the host sent it (NULL: none), so whichever
# proxy owns the task can put the same request through the gate again. ``run_id`` and
# ``approval_id`` are bound once the gate names them. ``result`` is the answer's JSON text (a
# CallToolResult, or a JSON-RPC error for ``failed``); emptied when the task expires. Times are
# the wall clock's Unix ns; ``owner`` drives it while ``lease_until`` is ahead.
_PROXY_MIGRATION_4 = """
CREATE TABLE proxy_tasks (
    id TEXT PRIMARY KEY,
    session TEXT NOT NULL,
    era TEXT NOT NULL,
    tool TEXT NOT NULL,
    request_key TEXT NOT NULL,
    arguments TEXT,
    run_id TEXT NOT NULL DEFAULT '',
    approval_id TEXT NOT NULL DEFAULT '',
    status TEXT NOT NULL,
    status_message TEXT NOT NULL DEFAULT '',
    result TEXT NOT NULL DEFAULT '',
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    ttl_ms INTEGER NOT NULL,
    owner TEXT NOT NULL DEFAULT '',
    lease_until INTEGER NOT NULL DEFAULT 0,
    expired INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX proxy_tasks_session ON proxy_tasks(session, status, created_at);
CREATE INDEX proxy_tasks_run ON proxy_tasks(run_id);
CREATE INDEX proxy_tasks_approval ON proxy_tasks(approval_id)
"""

# The pinned tools serving withholds (store/_withheld.py): one row per stretch of time a tool was
# withheld: changed since its pin, gone from the server's listing, or refused by a load check, seen
# at start-up, after a restart or after the server's tools/list_changed. ``reason`` is a name from
# upstream/withholding (the layer that decides it); ``detail`` what changed (the fields, the hashes
# pinned and seen). Times are the wall clock's Unix ns. A row moves withheld -> cleared once the
# tool matches its pin again (states.WITHHOLDING) and is kept as history; at most one row per
# (server, tool) is withheld. No promise rests on it (serving decides from the live listing and
# the pin, never from this table), so it is not held to the event chain: docs/console.md.
_PROXY_MIGRATION_5 = """
CREATE TABLE proxy_withheld_tools (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    server TEXT NOT NULL,
    tool TEXT NOT NULL,
    reason TEXT NOT NULL,
    detail TEXT NOT NULL DEFAULT '',
    session TEXT NOT NULL DEFAULT '',
    state TEXT NOT NULL DEFAULT 'withheld',
    first_seen INTEGER NOT NULL,
    last_seen INTEGER NOT NULL,
    cleared_at INTEGER NOT NULL DEFAULT 0
);
CREATE UNIQUE INDEX proxy_withheld_now ON proxy_withheld_tools(server, tool) WHERE state = 'withheld';
CREATE INDEX proxy_withheld_cleared ON proxy_withheld_tools(state, cleared_at)
"""

# Not a migration: a small partial index so "which other requests to this tool are
# unresolved" reads only unresolved rows instead of the session's whole history. Being
# outside the numbered migrations, a file the Go proxy migrated gains it on our next
# writer open, and the Go proxy ignores it (docs/decisions/0002-table-layout.md).
_PROXY_EXTRA_INDEXES = """
CREATE INDEX IF NOT EXISTS proxy_calls_unresolved
    ON proxy_calls(session, tool, id) WHERE outcome IN (0, 3);
"""

PROXY_VERSION = 5
_PROXY_MIGRATIONS = (
    (1, _PROXY_MIGRATION_1),
    (2, _PROXY_MIGRATION_2),
    (3, _PROXY_MIGRATION_3),
    (4, _PROXY_MIGRATION_4),
    (5, _PROXY_MIGRATION_5),
)
assert len(_PROXY_MIGRATIONS) == PROXY_VERSION


def _backfill_chain(conn: sqlite3.Connection) -> None:
    prev = ""
    rows = conn.execute("SELECT seq, run_id, step_id, at, type, payload_json FROM events ORDER BY seq")
    for seq, run_id, step_id, at, type_, payload in rows.fetchall():
        prev = chain_hash(prev, seq, run_id, step_id, at, type_, payload)
        conn.execute("UPDATE events SET hash = ? WHERE seq = ?", (prev, seq))


def _exec_script(conn: sqlite3.Connection, script: str) -> None:
    # executescript() would COMMIT the open transaction; run statement by statement.
    for stmt in script.split(";"):
        if stmt.strip():
            conn.execute(stmt)


@dataclass(frozen=True)
class _Migration:
    version: int
    script: str
    after: Callable[[sqlite3.Connection, str], None] | None = None


def _lease_pre_version(conn: sqlite3.Connection, wall_expiry: str) -> None:
    # A run written before leases existed may still be executing in an old process:
    # give it one default lease from now before anyone may take it over.
    conn.execute(
        "UPDATE runs SET lease_owner = ?, lease_expires_at = ? WHERE status = 'RUNNING'",
        (PRE_LEASE_OWNER, wall_expiry),
    )


_RUNTIME_MIGRATIONS = (
    _Migration(1, _MIGRATION_1),
    _Migration(2, _MIGRATION_2),
    _Migration(3, _MIGRATION_3),
    _Migration(4, _MIGRATION_4),
    _Migration(5, _MIGRATION_5, _lease_pre_version),
    _Migration(6, _MIGRATION_6, lambda conn, _w: _backfill_chain(conn)),
)
assert len(_RUNTIME_MIGRATIONS) == RUNTIME_VERSION


def _table_exists(conn: sqlite3.Connection, name: str) -> bool:
    row = conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (name,)).fetchone()
    return row is not None


def runtime_version(conn: sqlite3.Connection) -> int:
    if not _table_exists(conn, "schema_migrations"):
        return 0
    row = conn.execute("SELECT MAX(version) FROM schema_migrations").fetchone()
    return int(row[0] or 0)


def proxy_version(conn: sqlite3.Connection) -> int:
    if not _table_exists(conn, "proxy_schema_migrations"):
        return 0
    row = conn.execute("SELECT MAX(version) FROM proxy_schema_migrations").fetchone()
    return int(row[0] or 0)


def refuse_unsafe_schema(conn: sqlite3.Connection) -> None:
    row = conn.execute(
        "SELECT type, name FROM sqlite_master WHERE type IN ('trigger', 'view') LIMIT 1"
    ).fetchone()
    if row is not None:
        raise UnsafeSchema(MSG_UNSAFE.format(kind=row[0], name=row[1]))


def check_versions(conn: sqlite3.Connection, *, exact: bool) -> None:
    """A newer file is always refused; a read-only opener also refuses an older one."""
    found = runtime_version(conn)
    if found > RUNTIME_VERSION:
        raise SchemaVersionError(MSG_SCHEMA_NEWER.format(found=found, known=RUNTIME_VERSION))
    if exact and found != RUNTIME_VERSION:
        raise SchemaVersionError(MSG_SCHEMA_OLDER.format(found=found, known=RUNTIME_VERSION))
    pfound = proxy_version(conn)
    if pfound > PROXY_VERSION:
        raise SchemaVersionError(MSG_INDEX_NEWER.format(found=pfound, known=PROXY_VERSION))


def migrate(conn: sqlite3.Connection, now_text: str, now_unix_ns: int, lease_expiry_text: str) -> None:
    """Apply every missing migration, runtime's and proxy's, in one IMMEDIATE transaction."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        check_versions(conn, exact=False)
        conn.execute(
            "CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, applied_at TEXT NOT NULL)"
        )
        have = runtime_version(conn)
        for m in _RUNTIME_MIGRATIONS[have:]:
            _exec_script(conn, m.script)
            if m.after is not None:
                m.after(conn, lease_expiry_text)
            conn.execute("INSERT INTO schema_migrations(version, applied_at) VALUES (?, ?)", (m.version, now_text))
        conn.execute(
            "CREATE TABLE IF NOT EXISTS proxy_schema_migrations "
            "(version INTEGER PRIMARY KEY, applied_at INTEGER NOT NULL)"
        )
        phave = proxy_version(conn)
        for version, script in _PROXY_MIGRATIONS[phave:]:
            _exec_script(conn, script)
            conn.execute(
                "INSERT INTO proxy_schema_migrations(version, applied_at) VALUES (?, ?)", (version, now_unix_ns)
            )
        _exec_script(conn, _PROXY_EXTRA_INDEXES)
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise


# --------------------------------------------------------------------------- file checks


def refuse_symlink(path: str) -> None:
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return
    if stat.S_ISLNK(st.st_mode):
        raise SymlinkRefused(MSG_SYMLINK.format(path=path))


def create_exclusive(path: str) -> None:
    """Create the database file 0600 before SQLite sees it; a concurrent creator is fine."""
    try:
        fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY | getattr(os, "O_NOFOLLOW", 0), 0o600)
    except FileExistsError:
        return
    except PermissionError as err:  # the directory cannot be written: as SQLite's read-only kinds
        raise StoreReadOnly(str(err)) from err
    except OSError as err:  # a read-only file system, say: the path and the cause, not a traceback
        raise StoreReadOnly(MSG_NOT_WRITABLE.format(path=path, cause=_cause(err.errno))) from err
    os.close(fd)


def check_writable(path: str) -> None:
    """Refuse, before SQLite opens it, a database or directory the proxy cannot write: SQLite
    would open the file read-only without a word and fail later, at the first write or at the
    WAL's creation, as "unable to open database file", naming neither the path nor the cause."""
    try:
        fd = os.open(path, os.O_WRONLY | getattr(os, "O_NOFOLLOW", 0))
    except FileNotFoundError:
        return
    except OSError as err:
        raise StoreReadOnly(MSG_NOT_WRITABLE.format(path=path, cause=_cause(err.errno))) from err
    os.close(fd)
    directory = os.path.dirname(os.path.abspath(path))
    if not os.access(directory, os.W_OK | os.X_OK):  # the -wal and -shm files are made there
        read_only = bool(os.statvfs(directory).f_flag & os.ST_RDONLY)
        cause = _cause(errno.EROFS if read_only else errno.EACCES)
        raise StoreReadOnly(MSG_NOT_WRITABLE.format(path=directory, cause=cause))


def _cause(number: int | None) -> str:
    return os.strerror(number).lower() if number else "not writable"


def check_modes(path: str, *, writer: bool) -> None:
    """Refuse group/other-writable files; a writer tightens group/other-readable ones it owns."""
    if os.name != "posix":
        return  # modes do not mean owner/group/other there
    try:
        db = os.stat(path, follow_symlinks=False)
    except FileNotFoundError:
        return
    for name in (path, path + "-wal", path + "-shm"):
        try:
            st = os.stat(name, follow_symlinks=False)
        except FileNotFoundError:
            continue
        if not stat.S_ISREG(st.st_mode):
            raise StoreError(MSG_NOT_REGULAR.format(path=name))
        if name != path and st.st_uid != db.st_uid:
            raise InsecureMode(MSG_SIDECAR_OWNER.format(path=name))
        mode = stat.S_IMODE(st.st_mode)
        if mode & 0o022:
            raise InsecureMode(MSG_INSECURE.format(path=name, mode=mode))
        if writer and mode & 0o077 and st.st_uid == os.geteuid():
            os.chmod(name, 0o600)
