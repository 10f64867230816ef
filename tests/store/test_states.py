"""The state machine as one table (``store/_states.py``): every allowed move, walked through the
real ``Tx`` and ``CallIndex`` on a database, ends in its state; a sample of moves the table does
not hold raises ``IllegalTransition`` naming the run and both states, having written nothing."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from agentrt_proxy.errors import AgentrtError, IllegalTransition
from agentrt_proxy.store import Approval, Store, Tx, holds
from agentrt_proxy.store import _states as states
from agentrt_proxy.store._states import APPROVAL, CALL, HOLD, MOVES, NEW, RUN, STEP, TASK, WITHHOLDING

RUN_ID, STEP_ID, APPROVAL_ID = "s.run", "step-1", "approval-1"


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    s = Store.open(str(tmp_path / "states.db"))
    yield s
    s.close()


def approval(status: str) -> Approval:
    return Approval(APPROVAL_ID, RUN_ID, STEP_ID, "remote_mutation", "{}", "{}", "{}", "h", status, "t0", "", "", "",
                    "")


def put_run(store: Store, status: str = states.RUNNING, *, owner: str = "me") -> None:
    with store.write() as tx:
        tx.insert_run(RUN_ID, "goal", "{}", "t0", owner, "2999-01-01T00:00:00Z")
        tx.conn.execute("UPDATE runs SET status = ? WHERE id = ?", (status, RUN_ID))


def put_step(store: Store, status: str) -> None:
    put_run(store)
    with store.write() as tx:
        tx.claim_step(RUN_ID, 0, "me", STEP_ID, "t0")
        tx.conn.execute("UPDATE steps SET status = ? WHERE id = ?", (status, STEP_ID))


def put_approval(store: Store, status: str) -> None:
    put_step(store, states.AWAITING)
    with store.write() as tx:
        tx.insert_approval(approval(states.APPROVAL_PENDING))
        tx.conn.execute("UPDATE approvals SET status = ? WHERE id = ?", (status, APPROVAL_ID))


def put_call(store: Store, outcome: int) -> int:
    row = store.index.claim("test", "key", "bank_pay", "remote_mutation", RUN_ID, None, 1)
    with store.write() as tx:
        tx.conn.execute("UPDATE proxy_calls SET outcome = ?, settled_at = ? WHERE id = ?",
                        (outcome, 0 if outcome == states.OUTCOME_UNSEEN else 2, row.id))
    return row.id


def put_task(store: Store) -> str:
    row = store.tasks.create(session="test", era="extension", tool="bank_pay", request_key="key", arguments="{}",
                             run_id=RUN_ID, approval_id="", message="", now_ns=1, ttl_ms=1000, owner="me",
                             lease_until=2)
    return row.id


def status_of(store: Store, what: str) -> Any:
    if what == TASK:
        row = store._conn.execute("SELECT status FROM proxy_tasks WHERE run_id = ?", (RUN_ID,)).fetchone()
        return None if row is None else row[0]
    if what == WITHHOLDING:
        row = store._conn.execute("SELECT state FROM proxy_withheld_tools ORDER BY id DESC").fetchone()
        return None if row is None else row[0]
    table, column, key = {RUN: ("runs", "status", RUN_ID), STEP: ("steps", "status", STEP_ID),
                          APPROVAL: ("approvals", "status", APPROVAL_ID),
                          CALL: ("proxy_calls", "outcome", RUN_ID),
                          HOLD: ("budget_holds", "state", RUN_ID)}[what]
    where = "run_id" if what in (CALL, HOLD) else "id"
    row = store._conn.execute(f"SELECT {column} FROM {table} WHERE {where} = ?", (key,)).fetchone()
    return None if row is None else row[0]


def move(store: Store, what: str, before: Any, after: Any) -> None:
    """Put a row of ``what`` in ``before`` (unless NEW), then make the move the way the program does."""
    if what == RUN:
        if before == NEW:
            put_run(store)
            return
        put_run(store, before)
        with store.write() as tx:
            tx.update_run(RUN_ID, expect=before, status=after)
    elif what == STEP:
        if before == NEW:
            put_step(store, states.DECIDING)  # claim_step inserts it deciding
            return
        put_step(store, before)
        with store.write() as tx:
            tx.update_step(STEP_ID, expect=before, status=after)
    elif what == APPROVAL:
        if before == NEW:
            put_step(store, states.AWAITING)
            with store.write() as tx:
                tx.insert_approval(approval(after))
            return
        put_approval(store, before)
        with store.write() as tx:
            assert tx.update_approval(APPROVAL_ID, expect=before, status=after)
    elif what == TASK:
        task_id = put_task(store)
        if before != NEW and after == states.TASK_WORKING:
            assert store.tasks.bind(task_id, RUN_ID, APPROVAL_ID, "waiting", 3)
        elif before != NEW:
            assert store.tasks.finish(task_id, after, "ended", "{}", 3)
    elif what == WITHHOLDING:  # one check finds it withheld; a second again, or back on its pin
        store.withheld.observe("wx", ["weather"], {"weather": ("changed-since-pin", "d")}, session="s", now_ns=1)
        if before != NEW:
            found = {"weather": ("changed-since-pin", "d")} if after == states.TOOL_WITHHELD else {}
            store.withheld.observe("wx", ["weather"], found, session="s", now_ns=2)
    elif what == HOLD:
        put_run(store)  # a reservation is an event of its run (verify holds the row to it)
        with store.write() as tx:
            holds.reserve(tx, "test", RUN_ID, [("daily", "", "10.00")], 1)
            if before == states.HOLD_RELEASED:  # released, then reserved again by a second collection
                assert holds.settle(tx, RUN_ID, before, 2) == 1
                holds.reserve(tx, "test", RUN_ID, [("daily", "", "10.00")], 3)
            elif before != NEW:
                assert holds.settle(tx, RUN_ID, after, 2) == 1
    else:
        put_run(store)
        if before == NEW:
            put_call(store, states.OUTCOME_UNSEEN)
            return
        row_id = put_call(store, before)
        if after == states.OUTCOME_UNSEEN:
            store.index.unsettle(RUN_ID)
        else:
            assert store.index.settle(row_id, after, 3)


@pytest.mark.parametrize(("what", "before", "after"), [m[:3] for m in MOVES],
                         ids=[f"{m[0]}:{m[1]}->{m[2]}" for m in MOVES])
def test_every_allowed_move_leaves_the_row_in_its_new_state(store: Store, what: str, before: Any, after: Any) -> None:
    move(store, what, before, after)
    assert status_of(store, what) == after


def test_the_table_knows_every_state_the_store_writes() -> None:
    assert states.states_of(RUN) == {states.RUNNING, states.WAITING, states.COMPLETED, states.FAILED,
                                     states.CANCELLED, states.RUN_INTERRUPTED}
    assert states.states_of(STEP) == {states.DECIDING, states.AWAITING, states.EXECUTING, states.DONE,
                                      states.STEP_FAILED, states.STEP_INTERRUPTED}
    assert states.states_of(APPROVAL) == {states.APPROVAL_PENDING, states.APPROVED, states.REJECTED,
                                          states.EXPIRED}
    assert states.states_of(CALL) == {states.OUTCOME_UNSEEN, states.OUTCOME_NONE, states.OUTCOME_KNOWN,
                                      states.OUTCOME_UNKNOWN}
    assert states.states_of(TASK) == {states.TASK_WORKING, states.TASK_COMPLETED, states.TASK_FAILED,
                                      states.TASK_CANCELLED}
    assert all(not states.ALLOWED[RUN][s] for s in states.TERMINAL)  # a finished run never moves
    assert all(not states.ALLOWED[TASK][s] for s in states.TASK_TERMINAL)  # nor does an ended task


class Writes:
    """Every INSERT or UPDATE statement the store's connection runs."""

    def __init__(self, store: Store) -> None:
        self.seen: list[str] = []
        store._conn.set_trace_callback(self._trace)

    def _trace(self, statement: str) -> None:
        if statement.lstrip().upper().startswith(("INSERT", "UPDATE", "DELETE")):
            self.seen.append(statement)


def _update_run(before: str, after: str | None) -> Callable[[Tx], Any]:
    values = {} if after is None else {"status": after}
    return lambda tx: tx.update_run(RUN_ID, expect=before, **values)


# (what the row is put in, the write tried, the from state and to state the error names)
ILLEGAL: list[tuple[str, Callable[[Store], Any], Callable[[Tx], Any], str, str]] = [
    ("a finished run started again", lambda s: put_run(s, states.COMPLETED),
     _update_run(states.COMPLETED, states.RUNNING), "COMPLETED", "RUNNING"),
    ("a cancelled run failed", lambda s: put_run(s, states.CANCELLED),
     _update_run(states.CANCELLED, states.FAILED), "CANCELLED", "FAILED"),
    ("a waiting run completed", lambda s: put_run(s, states.WAITING),
     _update_run(states.WAITING, states.COMPLETED), "WAITING_FOR_APPROVAL", "COMPLETED"),
    ("a run moved to a status no table holds", lambda s: put_run(s),
     _update_run(states.RUNNING, "PAUSED"), "RUNNING", "PAUSED"),
    ("a run's columns written expecting a misspelt status", lambda s: put_run(s),
     _update_run("RUNING", None), "RUNING", "RUNING"),
    ("one of two expected run states may not move there", lambda s: put_run(s),
     lambda tx: tx.update_run_returning(RUN_ID, expect=(states.RUNNING, states.RUN_INTERRUPTED),
                                        status=states.WAITING), "INTERRUPTED", "WAITING_FOR_APPROVAL"),
    ("a done step executed", lambda s: put_step(s, states.DONE),
     lambda tx: tx.update_step(STEP_ID, expect=states.DONE, status=states.EXECUTING), "done", "executing"),
    ("a deciding step resumed from interrupted", lambda s: put_step(s, states.DECIDING),
     lambda tx: tx.update_step(STEP_ID, expect=(states.DECIDING, states.STEP_INTERRUPTED), status=states.EXECUTING),
     "interrupted", "executing"),
    ("an awaiting step put back to deciding", lambda s: put_step(s, states.AWAITING),
     lambda tx: tx.update_step(STEP_ID, expect=states.AWAITING, status=states.DECIDING), "awaiting_approval",
     "deciding"),
    ("a rejected approval approved", lambda s: put_approval(s, states.REJECTED),
     lambda tx: tx.update_approval(APPROVAL_ID, expect=states.REJECTED, status=states.APPROVED), "rejected",
     "approved"),
    ("an approved approval rejected", lambda s: put_approval(s, states.APPROVED),
     lambda tx: tx.update_approval(APPROVAL_ID, expect=states.APPROVED, status=states.REJECTED), "approved",
     "rejected"),
    ("an approval inserted already approved", lambda s: put_step(s, states.AWAITING),
     lambda tx: tx.insert_approval(approval(states.APPROVED)), NEW, "approved"),
]


@pytest.mark.parametrize(("put", "write", "before", "after"), [case[1:] for case in ILLEGAL],
                         ids=[case[0] for case in ILLEGAL])
def test_a_move_the_table_does_not_hold_raises_naming_the_run_and_both_states_and_writes_nothing(
        store: Store, put: Callable[[Store], Any], write: Callable[[Tx], Any], before: str, after: str) -> None:
    put(store)
    writes = Writes(store)
    with pytest.raises(IllegalTransition) as raised, store.write() as tx:
        write(tx)
    assert writes.seen == []  # raised before its statement ran
    message = str(raised.value)
    assert RUN_ID in message and f"{before} -> {after}" in message
    assert not isinstance(raised.value, AgentrtError)  # a bug: no handler of the error tree swallows it


@pytest.mark.parametrize(("before", "after"), [(states.OUTCOME_UNSEEN, states.OUTCOME_UNSEEN),
                                               (states.OUTCOME_UNSEEN, 7)])
def test_settling_a_call_outside_the_table_raises_and_writes_nothing(store: Store, before: int, after: int) -> None:
    put_run(store)
    row_id = put_call(store, before)
    writes = Writes(store)
    with pytest.raises(IllegalTransition) as raised:
        store.index.settle(row_id, after, 3)
    assert writes.seen == []
    assert RUN_ID in str(raised.value) and f"call {row_id}" in str(raised.value)
    assert status_of(store, CALL) == before


def test_a_write_that_keeps_a_known_status_is_not_a_move(store: Store) -> None:
    put_run(store)
    with store.write() as tx:
        tx.update_run(RUN_ID, expect=states.RUNNING, lease_expires_at="2000-01-01T00:00:00Z")
    assert status_of(store, RUN) == states.RUNNING


def test_settling_a_settled_call_is_a_lost_compare_and_set_not_an_illegal_move(store: Store) -> None:
    put_run(store)
    row_id = put_call(store, states.OUTCOME_KNOWN)
    assert not store.index.settle(row_id, states.OUTCOME_UNKNOWN, 3)  # settle expects unseen
    assert status_of(store, CALL) == states.OUTCOME_KNOWN


def test_ending_a_task_in_a_status_outside_the_table_raises_and_writes_nothing(store: Store) -> None:
    task_id = put_task(store)
    with pytest.raises(IllegalTransition, match="working"):
        store.tasks.finish(task_id, "input_required", "", "", 3)
    assert status_of(store, TASK) == states.TASK_WORKING


def test_a_task_ends_once_whichever_of_two_enders_comes_first(store: Store) -> None:
    task_id = put_task(store)
    assert store.tasks.finish(task_id, states.TASK_CANCELLED, "withdrawn", "{}", 3)
    assert not store.tasks.finish(task_id, states.TASK_COMPLETED, "paid", "{}", 4)  # the later one loses
    assert status_of(store, TASK) == states.TASK_CANCELLED
