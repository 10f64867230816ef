"""Group commit on the event loop (store/_group_commit.py, docs/decisions/0023): the write units
of calls in flight share one COMMIT, a failing unit undoes only itself, and nobody resumes
before the COMMIT that holds what it wrote."""

from __future__ import annotations

import itertools
import sqlite3
import threading
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import anyio
import pytest

from agentrt_proxy.store import Store
from agentrt_proxy.store._group_commit import Group, GroupLost

pytestmark = pytest.mark.anyio


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    opened = Store.open(str(tmp_path / "g.db"))
    yield opened
    opened.close()


def specs_on_disk(store: Store) -> set[str]:
    """What another connection sees: only what is committed."""
    conn = sqlite3.connect(f"file:{store.path}?mode=ro", uri=True)
    try:
        return {row[0] for row in conn.execute("SELECT hash FROM tool_specs")}
    finally:
        conn.close()


def unit(store: Store, name: str, fail: bool = False) -> tuple[Group, ...]:
    """One call's write on the loop, as the proxy makes it: under nowait(), then the groups it joined."""
    with store.nowait() as free:
        assert free
        try:
            with store.write() as tx:
                tx.put_spec(name, "{}")
                if fail:
                    raise ValueError(name)
        except ValueError:
            pass
    return store.joined()


def in_flight(store: Store, calls: int) -> ExitStack:
    stack = ExitStack()
    for _ in range(calls):
        stack.enter_context(store.call_in_flight())
    return stack


async def test_two_calls_ready_in_one_turn_share_one_commit_and_both_are_on_disk_after_it(store: Store) -> None:
    before = store.commits
    with in_flight(store, 2):
        first, second = unit(store, "a"), unit(store, "b")
        assert first == second and len(first) == 1  # one group
        assert specs_on_disk(store) == set()  # nothing committed yet
        await store.durable(first)
        await store.durable(second)
    assert store.commits == before + 1
    assert specs_on_disk(store) == {"a", "b"}


async def test_a_failing_unit_is_undone_alone_and_the_other_units_of_its_group_commit(store: Store) -> None:
    before = store.commits
    with in_flight(store, 3):
        kept = unit(store, "a")
        failed = unit(store, "b", fail=True)
        also = unit(store, "c")
        for groups in (kept, failed, also):
            await store.durable(groups)
    assert store.commits == before + 1
    assert specs_on_disk(store) == {"a", "c"}


async def test_a_first_unit_failing_leaves_no_group_open_and_nothing_to_wait_for(store: Store) -> None:
    with in_flight(store, 2):
        failed = unit(store, "b", fail=True)
        await store.durable(failed)
        assert store._db.group.open is None
        kept = unit(store, "a")
        await store.durable(kept)
    assert specs_on_disk(store) == {"a"}


async def test_a_waiter_never_resumes_before_the_commit_that_holds_its_write(store: Store) -> None:
    statements: list[str] = []
    store._conn.set_trace_callback(statements.append)
    seen: dict[str, Any] = {}

    async def call(name: str) -> None:
        groups = unit(store, name)
        await store.durable(groups)
        # The moment it resumes: its write is on disk, and the COMMIT came after its savepoint.
        seen[name] = (name in specs_on_disk(store), list(statements))

    with in_flight(store, 2):
        async with anyio.create_task_group() as tg:
            tg.start_soon(call, "a")
            tg.start_soon(call, "b")
    for name in ("a", "b"):
        on_disk, log = seen[name]
        assert on_disk
        insert = next(i for i, s in enumerate(log) if "INSERT OR IGNORE INTO tool_specs" in s and f"'{name}'" in s)
        assert any(s == "COMMIT" for s in log[insert:])
    assert sum(1 for s in statements if s == "COMMIT") == 1  # both in one


async def test_a_lone_call_commits_at_once_as_it_always_did(store: Store) -> None:
    before = store.commits
    with store.call_in_flight():
        groups = unit(store, "a")
    assert groups == ()
    assert store.commits == before + 1
    assert specs_on_disk(store) == {"a"}


async def test_a_write_that_is_not_a_unit_commits_the_open_group_first(store: Store) -> None:
    with in_flight(store, 2):
        groups = unit(store, "a")
        with store.write() as tx:  # on the loop, outside nowait(): an ordinary transaction
            tx.put_spec("z", "{}")
        assert groups[0].ended
        assert specs_on_disk(store) == {"a", "z"}
        await store.durable(groups)


async def test_a_worker_thread_cannot_write_or_read_until_the_groups_commit(store: Store) -> None:
    def store_free_for_a_thread() -> bool:
        # Asked from another thread while the loop does not yield (the group would commit).
        answer: list[bool] = []

        def ask() -> None:
            took = store._db.lock.acquire(blocking=False)  # what write() and read() take first
            if took:
                store._db.lock.release()
            answer.append(took)

        thread = threading.Thread(target=ask)
        thread.start()
        thread.join()
        return answer[0]

    with in_flight(store, 2):
        groups = unit(store, "a")
        assert not store_free_for_a_thread()
        await store.durable(groups)
        assert store_free_for_a_thread()


class FailingCommit:
    """The store's connection, except that COMMIT fails (a disk that will not sync)."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn = conn

    def execute(self, sql: str, *args: Any) -> sqlite3.Cursor:
        if sql == "COMMIT":
            raise sqlite3.OperationalError("disk I/O error")
        return self._conn.execute(sql, *args)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._conn, name)


async def test_a_group_whose_commit_fails_stops_the_process_and_no_waiter_goes_on(store: Store) -> None:
    lost: list[int] = []
    db = store._db
    db.group.on_lost = lambda error, units: lost.append(units)
    real = db.conn
    with in_flight(store, 2):
        first, second = unit(store, "a"), unit(store, "b")
        db._conn = FailingCommit(real)  # type: ignore[assignment]
        try:
            with pytest.raises(GroupLost):
                await store.durable(first)
        finally:
            db._conn = real
        with pytest.raises(GroupLost):
            await store.durable(second)
    assert lost == [2]
    assert specs_on_disk(store) == set()
    assert not real.in_transaction


async def test_a_call_that_writes_nothing_while_a_group_is_open_waits_for_that_groups_commit(store: Store) -> None:
    with in_flight(store, 2):
        writer = unit(store, "a")
        with store.nowait():  # a decision that only reads (a DUPLICATE, say): it read "a"
            pass
        reader = store.joined()
        assert reader == writer
        await store.durable(reader)
        assert specs_on_disk(store) == {"a"}


def event_unit(store: Store, run_id: str, events: int, fail: bool = False) -> None:
    """A unit on the loop that begins a run and appends ``events`` events to it."""
    with store.nowait() as free:
        assert free
        try:
            with store.write() as tx:
                tx.insert_run(run_id, "call up_echo", "{}", "2026-12-03T10:00:00Z", "o", "2026-12-03T10:00:30Z")
                for i in range(events):
                    tx.append(run_id, "", "2026-12-03T10:00:00Z", f"test.{i}", {"i": i})
                if fail:
                    raise ValueError(run_id)
        except ValueError:
            pass


async def test_the_units_of_a_group_read_the_chains_head_once_and_a_failed_units_events_never_lead_it(
    store: Store,
) -> None:
    statements: list[str] = []
    store._conn.set_trace_callback(statements.append)
    with in_flight(store, 3):
        event_unit(store, "r.1", 2)
        event_unit(store, "r.2", 3, fail=True)  # rolled back to its savepoint: its events are gone
        event_unit(store, "r.3", 2)
        groups = store.joined()
        await store.durable(groups)
    store._conn.set_trace_callback(None)
    assert sum("FROM sqlite_sequence" in s for s in statements) == 1  # the first unit's read alone
    reader = sqlite3.connect(f"file:{store.path}?mode=ro", uri=True)
    rows = reader.execute("SELECT seq, run_id FROM events WHERE run_id LIKE 'r.%' ORDER BY seq").fetchall()
    reader.close()
    assert [r[1] for r in rows] == ["r.1", "r.1", "r.3", "r.3"]
    assert [b[0] - a[0] for a, b in itertools.pairwise(rows)] == [1, 1, 1]  # no gap where r.2's were
    report = store.verify()
    assert report.brk is None
