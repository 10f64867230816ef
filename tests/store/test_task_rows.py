"""The task rows (``store/_tasks.py``): created committed, owned by a lease that one proxy holds
and another takes over only once it ran out, ended once, expired after their time to live, and
listed newest first a page at a time. Each test counts rows on a real database."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from agentrt_proxy.store import Store
from agentrt_proxy.store import _states as states

SECOND = 1_000_000_000


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    s = Store.open(str(tmp_path / "tasks.db"))
    yield s
    s.close()


def create(store: Store, *, at: int = 10 * SECOND, owner: str = "a", lease: int = 40 * SECOND,
           ttl_ms: int = 60_000, approval: str = "", run: str = "", session: str = "laptop") -> str:
    return store.tasks.create(session=session, era="extension", tool="bank_pay", request_key="k",
                              arguments='{"to":"nina"}', run_id=run, approval_id=approval, message="waiting",
                              now_ns=at, ttl_ms=ttl_ms, owner=owner, lease_until=lease).id


def test_a_new_task_is_committed_and_seen_by_a_second_connection(store: Store, tmp_path: Path) -> None:
    task_id = create(store)
    other = Store.open_readonly(str(tmp_path / "tasks.db"))
    try:
        row = other.tasks.get(task_id)
    finally:
        other.close()
    assert row is not None and row.status == states.TASK_WORKING and row.arguments == '{"to":"nina"}'


def test_task_ids_are_128_random_bits_and_never_repeat(store: Store) -> None:
    ids = {create(store) for _ in range(200)}
    assert len(ids) == 200 and all(len(i) == 32 and int(i, 16) >= 0 for i in ids)


@pytest.mark.parametrize(
    ("owner", "now", "claimed"),
    [
        ("a", 20 * SECOND, True),  # its own owner renews its claim
        ("b", 20 * SECOND, False),  # another proxy, while the lease runs
        ("b", 40 * SECOND, True),  # another proxy, the moment the lease ran out
        ("b", 90 * SECOND, True),
    ],
)
def test_a_task_is_taken_over_only_by_its_owner_or_after_its_lease(
    store: Store, owner: str, now: int, claimed: bool
) -> None:
    task_id = create(store)
    assert store.tasks.claim(task_id, owner, now + 30 * SECOND, now) is claimed
    row = store.tasks.get(task_id)
    assert row is not None and row.owner == (owner if claimed else "a")


def test_renewing_moves_only_the_owners_working_leases(store: Store) -> None:
    mine, theirs, ended = create(store), create(store, owner="b"), create(store)
    store.tasks.finish(ended, states.TASK_COMPLETED, "done", "{}", 11 * SECOND)
    assert store.tasks.renew("a", 99 * SECOND) == 1
    leases = {i: store.tasks.get(i).lease_until for i in (mine, theirs, ended)}  # type: ignore[union-attr]
    assert leases == {mine: 99 * SECOND, theirs: 40 * SECOND, ended: 0}


def test_a_stopping_proxy_releases_its_tasks_for_another_at_once(store: Store) -> None:
    task_id = create(store)
    store.tasks.release("a")
    assert store.tasks.claim(task_id, "b", 50 * SECOND, 11 * SECOND)


def test_an_ended_task_is_never_claimed_again(store: Store) -> None:
    task_id = create(store)
    store.tasks.finish(task_id, states.TASK_CANCELLED, "withdrawn", "{}", 11 * SECOND)
    assert not store.tasks.claim(task_id, "b", 99 * SECOND, 90 * SECOND)
    assert store.tasks.working("laptop") == []


def test_an_ended_task_past_its_time_to_live_loses_its_result_and_says_expired(store: Store) -> None:
    waiting, ended, young = create(store), create(store), create(store, at=50 * SECOND)
    for task_id in (ended, young):
        store.tasks.finish(task_id, states.TASK_COMPLETED, "done", '{"content":[]}', 55 * SECOND)
    assert store.tasks.forget_results("laptop", 75 * SECOND) == 1  # ended 60 s after its creation at 10 s
    rows = {i: store.tasks.get(i) for i in (waiting, ended, young)}
    assert rows[ended] is not None and rows[ended].expired and rows[ended].result == ""
    assert rows[young] is not None and not rows[young].expired and rows[young].result == '{"content":[]}'
    assert rows[waiting] is not None and not rows[waiting].expired  # a working task is its driver's to end


def test_the_working_task_of_an_approval_is_found_and_an_ended_one_is_not(store: Store) -> None:
    first = create(store, approval="ap-1")
    assert store.tasks.of_approval("laptop", "ap-1").id == first  # type: ignore[union-attr]
    assert store.tasks.of_approval("elsewhere", "ap-1") is None
    store.tasks.finish(first, states.TASK_COMPLETED, "done", "{}", 11 * SECOND)
    assert store.tasks.of_approval("laptop", "ap-1") is None


def test_runs_with_tasks_are_found_by_run_id(store: Store) -> None:
    task_id = create(store, run="laptop.r1")
    assert store.tasks.bind(task_id, "laptop.r1", "ap-9", "waiting on ap-9", 12 * SECOND)
    found = store.tasks.of_runs(["laptop.r1", "laptop.r2"])
    assert list(found) == ["laptop.r1"] and found["laptop.r1"].approval_id == "ap-9"


def test_pages_list_a_sessions_unexpired_tasks_newest_first_without_gaps_or_repeats(store: Store) -> None:
    made = [create(store, at=(i // 3 + 1) * SECOND) for i in range(12)]  # three share each instant
    create(store, session="other")
    seen: list[str] = []
    after = None
    while True:
        page = store.tasks.page("laptop", after, 5)
        if not page:
            break
        seen.extend(row.id for row in page)
        after = (page[-1].created_at, page[-1].id)
    assert sorted(seen) == sorted(made) and len(seen) == 12
    times = [store.tasks.get(i).created_at for i in seen]  # type: ignore[union-attr]
    assert times == sorted(times, reverse=True)


def test_a_database_older_than_tasks_reads_as_having_none(tmp_path: Path) -> None:
    path = str(tmp_path / "old.db")
    Store.open(path).close()
    conn = sqlite3.connect(path)
    conn.execute("DROP TABLE proxy_tasks")
    conn.execute("DROP TABLE proxy_withheld_tools")  # and the migration after tasks'
    conn.execute("DELETE FROM proxy_schema_migrations WHERE version >= 4")
    conn.commit()
    conn.close()
    old = Store.open_readonly(path)
    try:
        assert old.tasks.get("x") is None and old.tasks.working("laptop") == [] and old.tasks.of_runs(["r"]) == {}
    finally:
        old.close()
    migrated = Store.open(path)  # a writer migrates it
    try:
        assert create(migrated)
    finally:
        migrated.close()
