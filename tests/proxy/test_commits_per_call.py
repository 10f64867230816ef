"""How many durable commits each kind of call makes (docs/decisions/0005-fewer-commits-per-call.md),
that a nested write which fails rolls the whole transaction back, and what a crash right after
an allowed call's first commit leaves behind."""

from __future__ import annotations

import contextlib
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from agentrt_proxy.canonical.encoder import go_json
from agentrt_proxy.store import Store, StoreError
from agentrt_proxy.store import _store as store_mod
from tests.harness import REPO, is_error, proxy_harness, text_of
from tests.task_ticks import ManualTicker

PAY_BOB = {"to": "bob", "amount": 25}
PAY_ALLOWED = {"balance": {"side_effect": "read_only", "timeout": "10s"},
               "pay": {"side_effect": "remote_mutation", "timeout": "10s", "outcome": "allow"},
               "refund": {"side_effect": "destructive", "timeout": "10s"}}


class CommitLog:
    """Every write transaction any store connection commits (as bench/count_commits.py counts):
    a BEGIN … COMMIT holding at least one write, or a write statement in autocommit mode."""

    def __init__(self) -> None:
        self.commits: list[list[str]] = []
        self.threads: list[int] = []  # the thread that made each commit, in step with ``commits``

    def count(self) -> int:
        return len(self.commits)

    def watch(self, conn: sqlite3.Connection) -> None:
        state: dict[str, Any] = {"tx": False, "writes": [], "unit": 0}

        def trace(statement: str) -> None:
            head = statement.lstrip().upper()
            if head.startswith("BEGIN"):
                state["tx"], state["writes"] = True, []
            elif head.startswith(("COMMIT", "END")):
                if state["writes"]:
                    self._made(state["writes"])
                state["tx"], state["writes"] = False, []
            elif head.startswith("SAVEPOINT"):  # a unit of a group commit (docs/decisions/0023)
                state["unit"] = len(state["writes"])
            elif head.startswith("ROLLBACK TO"):  # that unit undone alone
                del state["writes"][state["unit"]:]
            elif head.startswith("ROLLBACK"):
                state["tx"], state["writes"] = False, []
            elif head.startswith(("INSERT", "UPDATE", "DELETE", "REPLACE")):
                if state["tx"]:
                    state["writes"].append(head.split("(")[0][:40])
                else:
                    self._made([head[:40] + " (autocommit)"])

        conn.set_trace_callback(trace)

    def _made(self, writes: list[str]) -> None:
        self.commits.append(writes)
        self.threads.append(threading.get_ident())

    def made_on(self, thread: int, since: int) -> list[list[str]]:
        """The commits from the ``since``-th on that ``thread`` made."""
        return [c for c, t in zip(self.commits[since:], self.threads[since:], strict=True) if t == thread]


@pytest.fixture
def commit_log(monkeypatch: pytest.MonkeyPatch) -> Iterator[CommitLog]:
    log = CommitLog()
    original = store_mod._connect

    def connect(path: str, readonly: bool, create: bool = True) -> sqlite3.Connection:
        conn = original(path, readonly, create)
        log.watch(conn)
        return conn

    monkeypatch.setattr(store_mod, "_connect", connect)
    yield log


def recording(commits: list[list[str]]) -> list[list[str]]:
    """The commits that record calls (each appends events): not a lease's renewal, which a
    machine slow enough to take 10 s over a test would add."""
    return [c for c in commits if any(w.startswith("INSERT INTO EVENTS") for w in c)]


async def commits_of(log: CommitLog, call: Any) -> tuple[Any, int]:
    before = log.count()
    result = await call
    return result, log.count() - before


# ------------------------------------------------------------------------- commits per call


@pytest.mark.anyio
async def test_an_allowed_read_and_an_allowed_payment_each_commit_twice_and_a_duplicate_never(
        tmp_path: Path, commit_log: CommitLog) -> None:
    async with proxy_harness(tmp_path, rules=PAY_ALLOWED) as h:
        read, n_read = await commits_of(commit_log, h.call("bank_balance", {"account": "A-1"}))
        assert text_of(read) == "account A-1 holds 120.00 EUR"
        assert n_read == 2
        pay, n_pay = await commits_of(commit_log, h.call("bank_pay", PAY_BOB))
        assert text_of(pay) == "paid 25.00 to bob"
        assert n_pay == 2
        again, n_again = await commits_of(commit_log, h.call("bank_pay", PAY_BOB))
        assert text_of(again).startswith("DUPLICATE:")
        assert n_again == 0
        assert h.payments() == 1
        assert [r.status for r in h.runs()] == ["COMPLETED", "COMPLETED"]


@pytest.mark.anyio
async def test_a_known_tool_error_commits_twice_with_its_closing_decision(tmp_path: Path,
                                                                          commit_log: CommitLog) -> None:
    async with proxy_harness(tmp_path, rules=PAY_ALLOWED) as h:
        declined, n = await commits_of(commit_log, h.call("bank_pay", {"to": "jo", "amount": 1, "mode": "error"}))
        assert is_error(declined) and "card declined for jo" in text_of(declined)
        assert n == 2
        run = h.runs()[0]
        assert run.status == "FAILED"
        assert h.events(run.id) == [
            "run.created", "run.started", "step.started", "step.decided", "step.policy", "step.tool_started",
            "step.tool_finished", "step.failed", "step.started", "step.decided", "run.finished"]


@pytest.mark.anyio
async def test_a_pending_and_a_denied_call_each_commit_once(tmp_path: Path, commit_log: CommitLog) -> None:
    async with proxy_harness(tmp_path) as h:
        pending, n_pending = await commits_of(commit_log, h.call("bank_pay", PAY_BOB))
        assert text_of(pending).startswith("PENDING_APPROVAL:")
        assert n_pending == 1
        denied, n_denied = await commits_of(commit_log, h.call("bank_refund", {"payment": "p-1"}))
        assert text_of(denied).startswith("DENIED:")
        assert n_denied == 1
        invalid, n_invalid = await commits_of(commit_log, h.call("bank_balance", {"acount": "A-1"}))
        assert text_of(invalid).startswith("INVALID:")
        assert n_invalid == 1
        assert h.payments() == 0


@pytest.mark.anyio
async def test_payments_in_flight_together_share_commits_each_pays_once_and_the_chain_verifies(
        tmp_path: Path, commit_log: CommitLog) -> None:
    # Eight at once (docs/decisions/0023): the writes of the calls ready in one turn of the loop
    # commit together, yet each call's start and outcome are committed before it goes on. The
    # eight arrive in one read, as from a host that pipelines them; the task owner ticks only
    # by hand, so no worker thread of the proxy's own takes the database meanwhile; and the bank
    # holds every answer until all eight are paid, so the starts are counted apart. A decision
    # that finds the store busy all the same (docs/decisions/0006; here the supervisor's record
    # of its first listing check, written on a worker thread, can meet the first calls) is made
    # on a worker thread and commits alone, by design, as it did once under a loaded CI run: the
    # claim that the calls read together decide together is about the commits the loop makes.
    loop_thread = threading.get_ident()
    ticker = ManualTicker()
    async with proxy_harness(tmp_path, rules=PAY_ALLOWED, ticker=ticker) as h:
        await ticker.resting()  # the owner's first tick (its sweep) is over
        before = commit_log.count()
        calls = [("bank_pay", go_json({"to": f"p{n}", "amount": 1, "mode": "block"})) for n in range(8)]
        async with anyio.create_task_group() as tg:
            results: list[dict[str, Any]] = []

            async def burst() -> None:
                results.extend(await h.raw_burst(calls))

            tg.start_soon(burst)
            with anyio.fail_after(30):
                while h.payments() < 8:
                    await anyio.sleep(0.01)
            starts = recording(commit_log.commits[before:])
            starts_on_loop = recording(commit_log.made_on(loop_thread, before))
            (h.directory / "ledger.release").write_text("")
        commits = recording(commit_log.commits[before:])
        shapes = [len(c) for c in commits]
        # Alone, each start would be a commit of its own, and each outcome another.
        assert len(starts_on_loop) <= 2, shapes  # read together, they decide together
        assert len(starts) < 8 and len(commits) < 16, shapes
        assert [text_of(r) for r in results] == [f"paid 1.00 to p{n}" for n in range(8)]
        assert h.payments() == 8
        assert [r.status for r in h.runs()] == ["COMPLETED"] * 8
        store = h.store()
        try:
            report = store.verify()
        finally:
            store.close()
        assert report.brk is None and report.state is not None and report.state.total == 0


# ------------------------------------------------------------------------- nested writes


def _count(store: Store, table: str) -> int:
    with store.read() as conn:
        return int(conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0])


def test_a_nested_write_joins_the_outer_transaction_and_commits_once_with_it(tmp_path: Path) -> None:
    store = Store.open(str(tmp_path / "db"))
    try:
        before = store.commits
        with store.write() as outer:
            outer.put_spec("a", "{}")
            with store.write() as inner:
                assert inner is outer
                inner.put_spec("b", "{}")
            assert store.tool_spec("b") == "{}"  # reads inside see the uncommitted writes
        assert store.commits == before + 1
        assert store.tool_spec("a") == store.tool_spec("b") == "{}"
    finally:
        store.close()


def test_a_nested_write_that_raises_rolls_the_outer_transaction_back_even_when_caught(tmp_path: Path) -> None:
    store = Store.open(str(tmp_path / "db"))
    try:
        specs = _count(store, "tool_specs")
        with pytest.raises(ValueError, match="inner"), store.write() as outer:
            outer.put_spec("a", "{}")
            with store.write() as inner:
                inner.put_spec("b", "{}")
                raise ValueError("inner")
        assert _count(store, "tool_specs") == specs

        with pytest.raises(StoreError) as caught, store.write() as outer:
            outer.put_spec("c", "{}")
            try:
                with store.write():
                    raise ValueError("swallowed")
            except ValueError:
                pass  # the caller carries on: the whole transaction still rolls back
            with pytest.raises(StoreError), store.write():
                pass  # a failed transaction takes no further writes
        assert isinstance(caught.value.__cause__, ValueError)
        assert _count(store, "tool_specs") == specs
        with store.write() as tx:  # the store is usable again
            tx.put_spec("d", "{}")
        assert store.tool_spec("d") == "{}" and store.tool_spec("c") is None
    finally:
        store.close()


def test_go_json_escapes_html_and_line_separators_as_go_does() -> None:
    assert go_json("a<b>&c\u2028d\u2029é\"") == '"a\\u003cb\\u003e\\u0026c\\u2028d\\u2029é\\""'
    assert go_json({"<k>": ["x&y"]}) == '{"\\u003ck\\u003e":["x\\u0026y"]}'
    assert go_json("plain") == '"plain"'


# ------------------------------------------------------------------------- a crash after the first commit


CHILD = """
import sys, anyio
sys.path.insert(0, {repo!r})
from pathlib import Path
from tests.harness import proxy_harness
from tests.proxy.test_commits_per_call import PAY_ALLOWED

async def main():
    async with proxy_harness(Path({dir!r}), rules=PAY_ALLOWED, lease_ttl="3s") as h:
        await h.call("bank_pay", {{"to": "kim", "amount": 9, "mode": "block"}})

anyio.run(main)
"""


def _last_event(db: str) -> tuple[str, str] | None:
    if not os.path.exists(db):
        return None
    try:
        store = Store.open_readonly(db)
    except Exception:
        return None
    try:
        with store.read() as conn:
            row = conn.execute("SELECT run_id, type FROM events ORDER BY seq DESC LIMIT 1").fetchone()
        return (row[0], row[1]) if row else None
    except Exception:
        return None
    finally:
        store.close()


@pytest.mark.anyio
@pytest.mark.timeout(90)
async def test_a_crash_after_an_allowed_calls_first_commit_is_taken_over_as_an_interrupted_side_effect(
        tmp_path: Path) -> None:
    code = textwrap.dedent(CHILD.format(repo=str(REPO), dir=str(tmp_path)))
    child = subprocess.Popen([sys.executable, "-c", code], start_new_session=True,
                             env={**os.environ, "PYTHONPATH": str(REPO)})
    db = str(tmp_path / "runs.db")
    try:
        deadline = time.monotonic() + 60
        while (last := _last_event(db)) is None or last[1] != "step.tool_started":
            assert time.monotonic() < deadline, "the child never started the payment"
            assert child.poll() is None, "the child ended early"
            time.sleep(0.05)
        os.kill(child.pid, signal.SIGKILL)  # the proxy dies with the tool running
        child.wait()
    finally:
        if child.poll() is None:
            os.kill(child.pid, signal.SIGKILL)
            child.wait()
        with contextlib.suppress(ProcessLookupError):
            os.killpg(child.pid, signal.SIGKILL)  # the child's own upstream, left blocked
    run_id = last[0]
    store = Store.open_readonly(db)
    try:
        run = store.get_run(run_id)
        assert run.status == "RUNNING"
        assert [e.type for e in store.events_of(run_id)] == [
            "run.created", "run.started", "step.started", "step.decided", "step.policy", "step.tool_started"]
        assert store.index.by_run(run_id) is not None  # the row was claimed in the same commit
    finally:
        store.close()

    store = Store.open(db)
    try:
        with store.write() as tx:  # the dead process's lease runs out, as if its 3 s had passed
            tx.update_run(run_id, expect="RUNNING", lease_expires_at="2000-01-01T00:00:00Z")
    finally:
        store.close()
    async with proxy_harness(tmp_path, rules=PAY_ALLOWED, lease_ttl="3s", pin_first=False) as h:
        again = await h.call("bank_pay", {"to": "kim", "amount": 9, "mode": "block"})
        assert text_of(again).startswith("INTERRUPTED:"), text_of(again)
        approval = h.pending()[0]
        assert approval.kind == "interrupted_side_effect" and approval.run_id == run_id
        assert h.events(run_id)[-4:] == ["lease.taken_over", "step.interrupted", "step.policy",
                                         "approval.requested"]


# ------------------------------------------------------------- writes on the event loop


def test_a_write_under_nowait_refuses_to_wait_for_another_connections_lock_and_writes_nothing(
        tmp_path: Path) -> None:
    store = Store.open(str(tmp_path / "runs.db"))
    other = sqlite3.connect(str(tmp_path / "runs.db"), isolation_level=None)
    try:
        before = _count(store, "tool_specs")
        other.execute("BEGIN IMMEDIATE")
        started = time.monotonic()
        with store.nowait() as free:
            assert free
            with pytest.raises(store_mod.WouldBlock), store.write() as tx:
                tx.put_spec("h1", "{}")
        assert time.monotonic() - started < 1.0  # not the 5 s busy timeout
        other.execute("ROLLBACK")
        assert _count(store, "tool_specs") == before
        assert store._conn.execute("PRAGMA busy_timeout").fetchone()[0] == store_mod.BUSY_TIMEOUT_MS
        with store.nowait() as free, store.write() as tx:  # free again: it writes
            tx.put_spec("h1", "{}")
        assert _count(store, "tool_specs") == before + 1
    finally:
        other.close()
        store.close()


def test_nowait_holds_nothing_while_another_thread_uses_the_store(tmp_path: Path) -> None:
    import threading

    store = Store.open(str(tmp_path / "runs.db"))
    held, release = threading.Event(), threading.Event()

    def hold() -> None:
        with store.write():
            held.set()
            release.wait(5)

    t = threading.Thread(target=hold)
    t.start()
    try:
        assert held.wait(5)
        with store.nowait() as free:
            assert not free
    finally:
        release.set()
        t.join()
        store.close()


@pytest.mark.anyio
async def test_a_call_while_another_process_holds_the_write_lock_waits_in_a_thread_not_on_the_loop(
        tmp_path: Path, commit_log: CommitLog) -> None:
    import anyio

    async with proxy_harness(tmp_path, rules=PAY_ALLOWED) as h:
        other = sqlite3.connect(str(h.config.database), isolation_level=None, check_same_thread=False)
        try:
            other.execute("BEGIN IMMEDIATE")
            ticks = 0

            async def tick() -> None:
                nonlocal ticks
                while True:
                    await anyio.sleep(0.01)
                    ticks += 1

            async def release() -> None:
                await anyio.sleep(0.5)
                other.execute("ROLLBACK")

            async with anyio.create_task_group() as tg:
                tg.start_soon(tick)
                tg.start_soon(release)
                pay, n = await commits_of(commit_log, h.call("bank_pay", PAY_BOB))
                tg.cancel_scope.cancel()
            assert text_of(pay) == "paid 25.00 to bob"
            assert n == 2
            assert ticks >= 20  # the event loop kept running while the call waited for the lock
            assert h.payments() == 1
        finally:
            other.close()
