"""Every ``sqlite3`` error is mapped at the store's boundary, exactly once: a locked, full,
read-only, corrupt or vanished database raises its kind of ``StoreUnavailable`` (with sqlite's
own message), anything else ``StoreUnavailable`` itself, and no raw ``sqlite3`` exception leaves
``store/``."""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from agentrt_proxy.errors import AgentrtError
from agentrt_proxy.store import (
    Store,
    StoreCorrupt,
    StoreError,
    StoreFull,
    StoreGone,
    StoreLocked,
    StoreReadOnly,
    StoreUnavailable,
)
from agentrt_proxy.store._connection import connect
from agentrt_proxy.store._sqlite_errors import kind_of, map_sqlite_errors

# sqlite's message for each kind, and the result code Python 3.11+ puts beside it
KINDS: list[tuple[str, int, type[StoreUnavailable]]] = [
    ("database is locked", 5, StoreLocked),
    ("database table is locked", 6, StoreLocked),
    ("database or disk is full", 13, StoreFull),
    ("attempt to write a readonly database", 8, StoreReadOnly),
    ("attempt to write a readonly database", 8 | (6 << 8), StoreReadOnly),  # SQLITE_READONLY_DIRECTORY
    ("attempt to write a readonly database", 8 | (4 << 8), StoreGone),  # SQLITE_READONLY_DBMOVED
    ("database disk image is malformed", 11, StoreCorrupt),
    ("file is not a database", 26, StoreCorrupt),
    ("no such table: proxy_calls", 1, StoreUnavailable),
    ("unable to open database file", 14, StoreUnavailable),
]


@pytest.mark.parametrize(("message", "code", "kind"), KINDS, ids=[f"{k[2].__name__}:{k[1]}" for k in KINDS])
def test_an_error_with_a_result_code_is_mapped_by_the_code(message: str, code: int,
                                                           kind: type[StoreUnavailable]) -> None:
    err = sqlite3.OperationalError(message)
    err.sqlite_errorcode = code  # type: ignore[attr-defined]
    assert kind_of(err) is kind


@pytest.mark.parametrize(("message", "kind"), sorted({(m, k) for m, c, k in KINDS if c != 8 | (4 << 8)},
                                                     key=lambda mk: mk[0]))
def test_an_error_without_a_result_code_as_on_python_3_10_is_mapped_by_sqlites_message(
        message: str, kind: type[StoreUnavailable]) -> None:
    assert kind_of(sqlite3.OperationalError(message)) is kind


def test_the_mapped_error_keeps_sqlites_message_and_the_sqlite3_error_as_its_cause() -> None:
    original = sqlite3.OperationalError("database or disk is full")
    with pytest.raises(StoreFull) as raised, map_sqlite_errors():
        raise original
    assert str(raised.value) == "database or disk is full" and raised.value.__cause__ is original
    assert isinstance(raised.value, StoreError) and isinstance(raised.value, AgentrtError)
    assert not isinstance(raised.value, sqlite3.Error)


def test_an_error_already_mapped_passes_an_outer_mapping_unchanged() -> None:
    inner = StoreLocked("database is locked")
    with pytest.raises(StoreLocked) as raised, map_sqlite_errors(), map_sqlite_errors():
        raise inner
    assert raised.value is inner


# ------------------------------------------------------------------------- real databases


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    s = Store.open(str(tmp_path / "runs.db"))
    yield s
    s.close()


def _spec(store: Store, spec_hash: str = "h1", size: int = 2) -> None:
    with store.write() as tx:
        tx.put_spec(spec_hash, "x" * size)


def test_a_database_another_connection_holds_locked_is_store_locked_for_a_write_and_a_claim(
        store: Store, tmp_path: Path) -> None:
    other = sqlite3.connect(str(tmp_path / "runs.db"), isolation_level=None)
    store._conn.execute("PRAGMA busy_timeout = 0")  # the lock is not given up: no need to wait for it
    try:
        other.execute("BEGIN IMMEDIATE")
        with pytest.raises(StoreLocked, match="database is locked"):
            _spec(store)
        with pytest.raises(StoreLocked):
            store.index.claim("s", "k", "bank_pay", "remote_mutation", "s.1", None, 1)
        other.execute("ROLLBACK")
        _spec(store)  # free again: it writes
    finally:
        other.close()
    assert store.tool_spec("h1") == "xx"


def test_a_connection_that_may_not_write_is_store_read_only(store: Store) -> None:
    store._conn.execute("PRAGMA query_only = ON")
    with pytest.raises(StoreReadOnly, match="readonly"):
        _spec(store)
    assert store.tool_spec("h1") is None


def test_a_writer_on_a_read_only_connection_is_store_read_only(tmp_path: Path) -> None:
    path = str(tmp_path / "runs.db")
    Store.open(path).close()
    writer = Store(path, connect(path, readonly=True), readonly=False)
    try:
        with pytest.raises(StoreReadOnly):
            _spec(writer)
    finally:
        writer.close()


def test_a_full_database_is_store_full_and_nothing_of_the_transaction_stays(store: Store) -> None:
    pages = store._conn.execute("PRAGMA page_count").fetchone()[0]
    store._conn.execute(f"PRAGMA max_page_count = {pages}")
    with pytest.raises(StoreFull, match="full"):
        _spec(store, size=64 * 1024)
    assert store.tool_spec("h1") is None
    assert not store._conn.in_transaction


@pytest.mark.parametrize("opener", [Store.open, Store.open_readonly, Store.open_existing],
                         ids=["open", "open_readonly", "open_existing"])
def test_a_file_that_is_not_a_database_is_store_corrupt(tmp_path: Path, opener: Callable[[str], Store]) -> None:
    path = tmp_path / "runs.db"
    path.write_bytes(b"not a database, " * 512)
    path.chmod(0o600)
    with pytest.raises(StoreCorrupt, match="not a database"):
        opener(str(path))


@pytest.mark.parametrize("replace", [False, True], ids=["deleted", "replaced"])
def test_a_database_deleted_or_replaced_while_open_is_store_gone_and_nothing_is_written_to_it(
        store: Store, tmp_path: Path, replace: bool) -> None:
    path = tmp_path / "runs.db"
    path.unlink()
    if replace:
        Store.open(str(path)).close()
    with pytest.raises(StoreGone, match="deleted or replaced"):
        _spec(store)
    assert not store._conn.in_transaction
    if replace:
        with sqlite3.connect(path) as fresh:
            assert fresh.execute("SELECT COUNT(*) FROM tool_specs").fetchone()[0] == 0
        fresh.close()


def test_a_database_without_the_proxys_index_is_store_unavailable_for_the_index(store: Store,
                                                                               tmp_path: Path) -> None:
    other = sqlite3.connect(str(tmp_path / "runs.db"), isolation_level=None)
    other.execute("DROP TABLE proxy_calls")
    other.close()
    with pytest.raises(StoreUnavailable, match="no such table: proxy_calls"):
        store.index.run_ids("s", 10)


# Every public read of the store and of its index, on a store whose connection is gone (sqlite3
# answers ProgrammingError): each raises a store error, none a raw sqlite3 one.
READS: list[tuple[str, Callable[[Store], Any]]] = [
    ("get_run", lambda s: s.get_run("r")),
    ("steps_of", lambda s: s.steps_of("r")),
    ("approvals_of", lambda s: s.approvals_of("r")),
    ("get_approval", lambda s: s.get_approval("a")),
    ("latest_approval", lambda s: s.latest_approval("r", "x")),
    ("list_runs", lambda s: s.list_runs()),
    ("count_runs", lambda s: s.count_runs()),
    ("events_of", lambda s: s.events_of("r")),
    ("tool_spec", lambda s: s.tool_spec("h")),
    ("chain_head", lambda s: s.chain_head()),
    ("event_hash", lambda s: s.event_hash(1)),
    ("verify", lambda s: s.verify()),
    ("write", lambda s: _spec(s)),
    ("read", lambda s: s.read().__enter__()),
    ("release_lease", lambda s: s.release_lease("r", "me")),
    ("index.claim", lambda s: s.index.claim("s", "k", "t", "read_only", "r", None, 1)),
    ("index.for_key", lambda s: s.index.for_key("s", "k", 0)),
    ("index.unsettled", lambda s: s.index.unsettled("s")),
    ("index.attempts", lambda s: s.index.attempts("s", "k")),
    ("index.unknown_for_tool", lambda s: s.index.unknown_for_tool("s", "t", "k")),
    ("index.recent", lambda s: s.index.recent("s", 0, 5)),
    ("index.settle", lambda s: s.index.settle(1, 2, 3)),
    ("index.settle_empty", lambda s: s.index.settle_empty(1, 3)),
    ("index.unsettle", lambda s: s.index.unsettle("r")),
    ("index.by_run", lambda s: s.index.by_run("r")),
    ("index.run_ids", lambda s: s.index.run_ids("s", 5)),
]


@pytest.mark.parametrize("call", [c[1] for c in READS], ids=[c[0] for c in READS])
def test_no_raw_sqlite3_error_leaves_a_public_entry_point(tmp_path: Path, call: Callable[[Store], Any]) -> None:
    store = Store.open(str(tmp_path / "runs.db"))
    store._conn.close()
    with pytest.raises(StoreUnavailable) as raised:
        call(store)
    assert isinstance(raised.value.__cause__, sqlite3.Error)


def test_a_lease_renewal_on_a_store_whose_file_cannot_be_opened_is_store_unavailable(store: Store,
                                                                                     tmp_path: Path) -> None:
    os.rename(tmp_path / "runs.db", tmp_path / "moved.db")
    (tmp_path / "runs.db").mkdir()  # the lease connection opens the path: a directory now
    with pytest.raises(StoreUnavailable):
        store.renew_lease("r", "me", "2999-01-01T00:00:00Z")


def test_a_database_that_cannot_be_created_in_its_directory_is_store_read_only(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = str(tmp_path / "runs.db")

    def refused(name: str, *args: Any) -> int:  # as a directory the user cannot write answers
        raise PermissionError(13, "Permission denied", name)

    monkeypatch.setattr(os, "open", refused)
    with pytest.raises(StoreReadOnly, match="Permission denied"):
        Store.open(path)
