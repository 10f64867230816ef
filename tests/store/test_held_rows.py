"""The rows a transaction holds back until its next statement (store/_tx.py): the run
``insert_run`` makes, the step ``claim_step`` makes, the updates folded into them, and the
events appended since the last statement. What they commit is what the statements one by one
would have committed; a CAS on a held row refuses what the UPDATE's WHERE would refuse; every
read inside the transaction, and the COMMIT or the unit's RELEASE, sees them written."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from agentrt_proxy.store import Store
from agentrt_proxy.store._errors import NotFound, RunStateError
from agentrt_proxy.store._rows import Approval
from agentrt_proxy.store._tx import Tx

RUN, STEP, OWNER = "s.run-1", "step-1", "owner-1"
AT = "2026-12-03T10:00:00.000000000Z"
LATER = "2026-12-03T10:00:01.000000000Z"
TABLES = ("runs", "steps", "events")


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    opened = Store.open(str(tmp_path / "held.db"))
    yield opened
    opened.close()


def on_disk(store: Store) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of the tables written here, as another connection sees them: what is committed."""
    conn = sqlite3.connect(f"file:{store.path}?mode=ro", uri=True)
    try:
        return {t: conn.execute(f"SELECT * FROM {t} ORDER BY rowid").fetchall() for t in TABLES}
    finally:
        conn.close()


def begin_and_start(tx: Tx, between: Callable[[], object] = lambda: None) -> None:
    """What the call path writes in its first unit for an allowed call, with ``between`` run
    after each write (a read there makes every write go out on its own, unfolded)."""
    writes: list[Callable[[], object]] = [
        lambda: tx.insert_run(RUN, "call up_echo", "{}", AT, OWNER, LATER),
        lambda: tx.append(RUN, "", AT, "run.created", {"goal": "call up_echo"}),
        lambda: tx.append(RUN, "", AT, "run.started", {}),
        lambda: tx.claim_step(RUN, 0, OWNER, STEP, AT),
        lambda: tx.append(RUN, STEP, AT, "step.started", {"index": 0}),
        lambda: tx.update_step(STEP, expect="deciding", decision_json='{"kind":"tool_call"}', spec_hash="h"),
        lambda: tx.append(RUN, STEP, AT, "step.decided", {"kind": "tool_call"}),
        lambda: tx.update_step(STEP, expect=("deciding", "awaiting_approval"), policy_json='{"outcome":"allow"}',
                               policy_id="p", status="executing", started_at=LATER, spec_hash="h"),
        lambda: tx.append(RUN, STEP, LATER, "step.policy", {"outcome": "allow"}),
        lambda: tx.append(RUN, STEP, LATER, "step.tool_started", {"tool": "up_echo"}),
    ]
    for write in writes:
        write()
        between()


def test_a_run_begun_and_its_step_started_in_one_transaction_commit_the_rows_the_statements_one_by_one_would(
    tmp_path: Path,
) -> None:
    folded, unfolded = Store.open(str(tmp_path / "folded.db")), Store.open(str(tmp_path / "unfolded.db"))
    try:
        with folded.write() as tx:
            begin_and_start(tx)
        with unfolded.write() as tx:
            begin_and_start(tx, between=lambda: tx.run(RUN))  # each read writes what is held first
        rows = on_disk(folded)
        assert rows == on_disk(unfolded)
        run = folded.get_run(RUN)
        assert run.step_count == 1 and run.status == "RUNNING"
        (step,) = folded.steps_of(RUN)
        assert (step.status, step.policy_json, step.started_at) == ("executing", '{"outcome":"allow"}', LATER)
        assert [e[4] for e in rows["events"]] == ["run.created", "run.started", "step.started", "step.decided",
                                                  "step.policy", "step.tool_started"]
        assert folded.verify().brk is None  # the chain over the held events is whole
    finally:
        folded.close()
        unfolded.close()


@pytest.mark.parametrize(
    ("claim", "why"),
    [
        (dict(idx=1, owner=OWNER), "an index the run has not reached"),
        (dict(idx=0, owner="another owner"), "another lease owner"),
    ],
)
def test_a_claim_on_a_held_run_refuses_what_the_update_would_and_nothing_is_written(
    store: Store, claim: dict[str, Any], why: str
) -> None:
    with pytest.raises(RunStateError), store.write() as tx:
        tx.insert_run(RUN, "call up_echo", "{}", AT, OWNER, LATER)
        tx.append(RUN, "", AT, "run.created", {})
        tx.claim_step(RUN, claim["idx"], claim["owner"], STEP, AT)
    assert on_disk(store) == {t: [] for t in TABLES}, why


@pytest.mark.parametrize("expect", ["executing", ("done", "failed"), "awaiting_approval"])
def test_an_update_on_a_held_step_in_another_status_is_refused_and_nothing_is_written(
    store: Store, expect: str | tuple[str, ...]
) -> None:
    with pytest.raises(RunStateError), store.write() as tx:
        tx.insert_run(RUN, "call up_echo", "{}", AT, OWNER, LATER)
        tx.claim_step(RUN, 0, OWNER, STEP, AT)
        tx.update_step(STEP, expect=expect, decision_json="{}")
    assert on_disk(store) == {t: [] for t in TABLES}


def test_a_held_steps_later_update_checks_the_status_an_earlier_one_set(store: Store) -> None:
    with pytest.raises(RunStateError), store.write() as tx:
        tx.insert_run(RUN, "call up_echo", "{}", AT, OWNER, LATER)
        tx.claim_step(RUN, 0, OWNER, STEP, AT)
        tx.update_step(STEP, expect="deciding", status="executing", started_at=LATER)
        tx.update_step(STEP, expect="deciding", decision_json="{}")  # deciding no longer
    assert on_disk(store) == {t: [] for t in TABLES}


def test_a_column_not_settable_is_refused_on_a_held_step_as_on_a_written_one(store: Store) -> None:
    with pytest.raises(ValueError, match="run_id"), store.write() as tx:
        tx.insert_run(RUN, "call up_echo", "{}", AT, OWNER, LATER)
        tx.claim_step(RUN, 0, OWNER, STEP, AT)
        tx.update_step(STEP, expect="deciding", run_id="another run")
    assert on_disk(store) == {t: [] for t in TABLES}


READS: dict[str, Callable[[Store, Tx], tuple[int, int, int]]] = {
    # each answers (the run's step count, its steps, its new events or the step found) as the transaction sees them
    "the transaction's own reads": lambda s, tx: (tx.run(RUN).step_count, len(tx.steps(RUN)),
                                                   int(tx.step(STEP).id == STEP)),
    "the store's reads on its connection": lambda s, tx: (s.get_run(RUN).step_count, len(s.steps_of(RUN)),
                                                          len(s.events_of(RUN)) - 3),
    "a statement on the transaction's connection": lambda s, tx: tuple(tx.conn.execute(
        "SELECT (SELECT step_count FROM runs), (SELECT COUNT(*) FROM steps), (SELECT COUNT(*) - 3 FROM events)"
    ).fetchone()),
}


@pytest.mark.parametrize("read", list(READS), ids=list(READS))
def test_every_read_inside_the_transaction_sees_the_held_rows(store: Store, read: str) -> None:
    with store.write() as tx:
        tx.insert_run(RUN, "call up_echo", "{}", AT, OWNER, LATER)
        tx.append(RUN, "", AT, "run.created", {})
        tx.append(RUN, "", AT, "run.started", {})
        tx.claim_step(RUN, 0, OWNER, STEP, AT)
        tx.append(RUN, STEP, AT, "step.started", {"index": 0})
        tx.append(RUN, STEP, AT, "step.decided", {})
        assert READS[read](store, tx) == (1, 1, 1)


@pytest.mark.anyio
async def test_a_units_held_rows_are_written_before_its_release_and_a_failed_units_are_not(store: Store) -> None:
    with store.call_in_flight(), store.call_in_flight(), store.nowait() as free:
        assert free
        with store.write() as tx:
            begin_and_start(tx)
        with pytest.raises(RuntimeError), store.write() as tx:
            tx.insert_run("s.run-2", "call up_echo", "{}", AT, OWNER, LATER)
            tx.claim_step("s.run-2", 0, OWNER, "step-2", AT)
            tx.append("s.run-2", "step-2", AT, "step.started", {"index": 0})
            raise RuntimeError("the second call's unit fails")
        groups = store.joined()
    assert len(groups) == 1  # both were units of one group
    await store.durable(groups)
    rows = on_disk(store)
    assert [r[0] for r in rows["runs"]] == [RUN] and [r[0] for r in rows["steps"]] == [STEP]
    assert len(rows["events"]) == 6


APPROVAL = Approval("a-1", RUN, STEP, "tool_call", "{}", "{}", "{}", "h", "pending", AT, "", "", "", LATER)
STATEMENTS: dict[str, Callable[[Tx], object]] = {
    # every way a Tx runs SQL, each on rows it may not find: what counts is what goes out first
    "run": lambda tx: tx.run(RUN),
    "steps": lambda tx: tx.steps(RUN),
    "step": lambda tx: tx.step("another step"),
    "approval": lambda tx: tx.approval("a-1"),
    "latest_approval": lambda tx: tx.latest_approval(STEP, RUN),
    "update_run": lambda tx: tx.update_run(RUN, expect="RUNNING", lease_expires_at=LATER),
    "update_run_returning": lambda tx: tx.update_run_returning(RUN, expect="RUNNING", lease_expires_at=LATER),
    "update_run_adding_active_ms": lambda tx: tx.update_run_adding_active_ms(
        RUN, 1, expect="RUNNING", owner=OWNER, lease_expires_at=LATER),
    "add_active_ms": lambda tx: tx.add_active_ms(RUN, 1, OWNER),
    "claim_step on another run": lambda tx: tx.claim_step("another run", 0, OWNER, "step-9", AT),
    "update_step on another step": lambda tx: tx.update_step("another step", expect="deciding", decision_json="{}"),
    "put_spec": lambda tx: tx.put_spec("a new spec", "{}"),
    "insert_approval": lambda tx: tx.insert_approval(APPROVAL),
    "update_approval": lambda tx: tx.update_approval("a-1", expect="pending", status="approved"),
    "conn": lambda tx: tx.conn.execute("SELECT 1"),
}


@pytest.mark.parametrize("method", list(STATEMENTS), ids=list(STATEMENTS))
def test_every_statement_a_transaction_runs_goes_out_after_what_it_holds(store: Store, method: str) -> None:
    traced: list[str] = []
    with store.write() as tx:
        tx.insert_run(RUN, "call up_echo", "{}", AT, OWNER, LATER)
        tx.claim_step(RUN, 0, OWNER, STEP, AT)
        tx.append(RUN, STEP, AT, "step.started", {"index": 0})
        raw = store._db._conn  # not through Database.conn, which would write what is held
        raw.set_trace_callback(traced.append)
        try:
            STATEMENTS[method](tx)
        except (RunStateError, NotFound):
            pass  # a row not found, a CAS lost: the statement went out all the same
        finally:
            raw.set_trace_callback(None)
    held = [s.split(" (")[0] for s in traced[:3]]
    assert held == ["INSERT INTO runs", "INSERT INTO steps", "INSERT INTO events"], traced
    assert len(traced) > 3  # and then the method's own
