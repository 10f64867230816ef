"""The state machine as one table: every state of a run, a step, an approval and a call's
index row, and every move allowed between them (runtime-core §1.5, §1.6, §3.4–3.7;
proxy-and-mcp-module §2.4 for the index's outcome).

h11's ``_state.py`` is the model. The table lives with the compare-and-set, in the store (the
store must not import the gate); the gate re-exports the names it uses. Every status-changing
write of ``Tx`` and ``CallIndex`` looks its move up here BEFORE its SQL runs: a move the table
does not hold is a bug, and raises ``agentrt_proxy.errors.IllegalTransition`` at once, naming
the run and both states, having written nothing. A write that keeps the status (``expect``
without a new status) must still expect states the table knows.

The check is a dictionary lookup per expected state, never SQL.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from agentrt_proxy.errors import IllegalTransition
from agentrt_proxy.mcp.tasks_wire import TASK_CANCELLED, TASK_COMPLETED, TASK_FAILED, TASK_WORKING
from agentrt_proxy.text.operator_text import ERR_ILLEGAL_MOVE

# ----------------------------------------------------------------------------- the states

# what holds a state
RUN, STEP, APPROVAL, CALL = "run", "step", "approval", "call"
HOLD = "hold"  # a budget reservation (budget_holds.state)
TASK = "task"  # a call answered as an MCP task (proxy_tasks.status; docs/decisions/0020)
WITHHOLDING = "withholding"  # a pinned tool serving withholds (proxy_withheld_tools.state)

NEW = "(new)"  # no row yet: the move is the row's insertion

# runs.status
RUNNING = "RUNNING"
WAITING = "WAITING_FOR_APPROVAL"
COMPLETED = "COMPLETED"
FAILED = "FAILED"
CANCELLED = "CANCELLED"
RUN_INTERRUPTED = "INTERRUPTED"  # never written: a crashed run stays RUNNING; accepted like RUNNING
TERMINAL = (COMPLETED, FAILED, CANCELLED)
RESUMABLE = (RUNNING, RUN_INTERRUPTED)

# runs.reason: why a run ended (runs.reason_detail says it in words); proxy/_rules reads some back
END_GOAL_COMPLETED = "goal_completed"  # a complete decision; a terminal tool succeeded
END_GOAL_FAILED = "goal_failed"  # a fail decision
END_APPROVAL_REJECTED = "approval_rejected"
END_APPROVAL_EXPIRED = "approval_expired"  # the pending approval or its grant expired
END_OPERATOR_CANCELLED = "operator_cancelled"
END_POLICY_ABORT = "policy_abort"
END_INTERNAL_ERROR = "internal_error"  # the policy raised
END_LOOP_DETECTED = "loop_detected"
END_LIMIT_STEPS = "limit_steps"
END_REPEATED_TOOL_FAILURES = "repeated_tool_failures"
END_RECONCILE_CONFLICT = "reconcile_conflict"
END_PASSTHROUGH = "passthrough"  # a recorded passthrough read (store/_audit) answered
END_UPSTREAM_ERROR = "upstream_error"  # a recorded passthrough read failed
RUN_REASONS = (
    END_GOAL_COMPLETED, END_GOAL_FAILED, END_APPROVAL_REJECTED, END_APPROVAL_EXPIRED, END_OPERATOR_CANCELLED,
    END_POLICY_ABORT, END_INTERNAL_ERROR, END_LOOP_DETECTED, END_LIMIT_STEPS, END_REPEATED_TOOL_FAILURES,
    END_RECONCILE_CONFLICT, END_PASSTHROUGH, END_UPSTREAM_ERROR,
)

# steps.status
DECIDING = "deciding"
AWAITING = "awaiting_approval"
EXECUTING = "executing"
DONE = "done"
STEP_FAILED = "failed"
STEP_INTERRUPTED = "interrupted"
IN_FLIGHT = (DECIDING, AWAITING, EXECUTING)

# approvals.status
APPROVAL_PENDING = "pending"
APPROVED = "approved"
REJECTED = "rejected"
EXPIRED = "expired"

# proxy_calls.outcome: what the row's run came to (0 until the call settles it)
OUTCOME_UNSEEN = 0
OUTCOME_NONE = 1  # nothing ran
OUTCOME_KNOWN = 2  # the tool ran and its outcome is recorded
OUTCOME_UNKNOWN = 3  # the tool may have taken effect: cut off, timed out, no answer

# budget_holds.state
HOLD_RESERVED = "reserved"
HOLD_SPENT = "spent"
HOLD_RELEASED = "released"

# proxy_tasks.status: the MCP task statuses the proxy uses (never input_required: an operator,
# not the host, gives what an approval needs). They are the wire's words, defined once in
# mcp/tasks_wire (the store is above the wire and imports them).
TASK_TERMINAL = (TASK_COMPLETED, TASK_FAILED, TASK_CANCELLED)

# proxy_withheld_tools.state: a pinned tool serving withholds now, or withheld once and back on its pin
TOOL_WITHHELD = "withheld"
TOOL_CLEARED = "cleared"

# ----------------------------------------------------------------------------- the moves

# (what, from, to, why): one row per allowed move.
MOVES: tuple[tuple[str, str | int, str | int, str], ...] = (
    (RUN, NEW, RUNNING, "Gate.begin"),
    (RUN, RUNNING, RUNNING, "takeover of a run whose lease expired or was never taken"),
    (RUN, RUNNING, WAITING, "require_approval; an interrupted side effect; reconciliation 'waiting'; a granted "
                            "request that reached no server: its approval still stands"),
    (RUN, RUNNING, COMPLETED, "a complete decision; a terminal tool succeeded; reconciliation 'completed'"),
    (RUN, RUNNING, FAILED, "a fail decision; a limit; a loop; abort; a policy error; a reconcile conflict"),
    (RUN, RUNNING, CANCELLED, "the operator's cancel"),
    (RUN, WAITING, RUNNING, "collecting a grant: the tool starts, or the step ends denied or invalid"),
    (RUN, WAITING, WAITING, "the policy asks for a different approval at collection: pause again"),
    (RUN, WAITING, FAILED, "a policy error at collection"),
    (RUN, WAITING, CANCELLED, "reject; the pending approval or the grant expired; the operator's cancel"),
    (RUN, RUN_INTERRUPTED, RUNNING, "takeover"),
    (RUN, RUN_INTERRUPTED, CANCELLED, "the operator's cancel"),
    (STEP, NEW, DECIDING, "Session.step claims the run's next index"),
    (STEP, DECIDING, DONE, "a complete or fail decision (the run ends with it)"),
    (STEP, DECIDING, STEP_FAILED, "an invalid decision; deny; abort; a policy error; the operator's cancel"),
    (STEP, DECIDING, AWAITING, "require_approval"),
    (STEP, DECIDING, EXECUTING, "an allowed request's tool starts"),
    (STEP, DECIDING, STEP_INTERRUPTED, "takeover"),
    (STEP, AWAITING, EXECUTING, "a collected grant's tool starts"),
    (STEP, AWAITING, AWAITING, "the policy asks for a different approval at collection"),
    (STEP, AWAITING, STEP_FAILED, "reject; denied or invalid at collection; a policy error; cancel"),
    (STEP, EXECUTING, DONE, "the tool's result is recorded"),
    (STEP, EXECUTING, STEP_FAILED, "the tool's error, timeout, refused content or cancellation; cancel"),
    (STEP, EXECUTING, STEP_INTERRUPTED, "takeover"),
    (STEP, EXECUTING, AWAITING, "a granted request provably never reached its server (nothing sent): nothing ran, "
                                "so it awaits its grant again, collected by the identical call until it expires"),
    (STEP, STEP_INTERRUPTED, AWAITING, "the interrupted side effect's pause"),
    (APPROVAL, NEW, APPROVAL_PENDING, "a pause"),
    (APPROVAL, APPROVAL_PENDING, APPROVED, "the operator approves the hash shown"),
    (APPROVAL, APPROVAL_PENDING, REJECTED, "the operator rejects the hash shown"),
    (APPROVAL, APPROVAL_PENDING, EXPIRED, "approval_ttl passed before a decision"),
    (APPROVAL, APPROVED, EXPIRED, "grant_ttl passed before the grant was acted on"),
    (CALL, NEW, OUTCOME_UNSEEN, "CallIndex.claim"),
    (CALL, OUTCOME_UNSEEN, OUTCOME_NONE, "settled: nothing ran (or its run never began)"),
    (CALL, OUTCOME_UNSEEN, OUTCOME_KNOWN, "settled: the outcome is recorded"),
    (CALL, OUTCOME_UNSEEN, OUTCOME_UNKNOWN, "settled: the outcome is unknown"),
    (CALL, OUTCOME_NONE, OUTCOME_UNSEEN, "unsettled: its run moved again"),
    (CALL, OUTCOME_KNOWN, OUTCOME_UNSEEN, "unsettled: its run moved again"),
    (CALL, OUTCOME_UNKNOWN, OUTCOME_UNSEEN, "unsettled: its run moved again"),
    (HOLD, NEW, HOLD_RESERVED, "a call allowed under a budget, in the transaction that claims it"),
    (HOLD, HOLD_RESERVED, HOLD_SPENT, "the call's result (or UNRECORDED) is recorded; a rejected re-run question"),
    (HOLD, HOLD_RESERVED, HOLD_RELEASED, "nothing executed: not sent, the server's error, a refusal; the operator"),
    (HOLD, HOLD_SPENT, HOLD_RELEASED, "the operator's budget release, recorded in the chain"),
    (HOLD, HOLD_RELEASED, HOLD_RESERVED, "a grant whose request reached no server (its approval stands) collected "
                                         "again: reserved again"),
    (TASK, NEW, TASK_WORKING, "a call answered as a task: committed before the host hears of it"),
    (TASK, TASK_WORKING, TASK_WORKING, "bound to its run and approval; its owner's lease renewed or taken over"),
    (TASK, TASK_WORKING, TASK_COMPLETED, "the call's answer is recorded (any answer: a result, REJECTED, ...)"),
    (TASK, TASK_WORKING, TASK_FAILED, "the call ended in a JSON-RPC error; 2025-11-25: a result with isError"),
    (TASK, TASK_WORKING, TASK_CANCELLED, "tasks/cancel, or its time to live passed, before an approval was granted"),
    # A check of a server's listing (store/_withheld.py) withholds a pinned tool, finds it withheld
    # again (its reason, detail and last sighting renewed), or finds it back on its pin.
    (WITHHOLDING, NEW, TOOL_WITHHELD, "a check withholds"),
    (WITHHOLDING, TOOL_WITHHELD, TOOL_WITHHELD, "withheld again"),
    (WITHHOLDING, TOOL_WITHHELD, TOOL_CLEARED, "back on pin"),
)

# A state with nowhere to go is still a state (a write may keep it).
_ENDS: tuple[tuple[str, str | int], ...] = (
    (RUN, COMPLETED), (RUN, FAILED), (RUN, CANCELLED),
    (STEP, DONE), (STEP, STEP_FAILED),
    (APPROVAL, REJECTED), (APPROVAL, EXPIRED),
    (TASK, TASK_COMPLETED), (TASK, TASK_FAILED), (TASK, TASK_CANCELLED),
    (WITHHOLDING, TOOL_CLEARED),
)


def _table(moves: Iterable[tuple[str, str | int, str | int, str]],
           ends: Iterable[tuple[str, str | int]]) -> dict[str, dict[str | int, frozenset[str | int]]]:
    table: dict[str, dict[str | int, set[str | int]]] = {}
    for what, state in ends:
        table.setdefault(what, {}).setdefault(state, set())
    for what, before, after, _why in moves:
        table.setdefault(what, {}).setdefault(before, set()).add(after)
    return {what: {state: frozenset(to) for state, to in by_state.items()} for what, by_state in table.items()}


# what → from state → the states it may move to
ALLOWED: Mapping[str, Mapping[str | int, frozenset[str | int]]] = _table(MOVES, _ENDS)


def states_of(what: str) -> frozenset[str | int]:
    """Every state a row of ``what`` can be in (``NEW`` is not one: it is no row)."""
    table = ALLOWED[what]
    return frozenset(s for s in (*table, *(t for targets in table.values() for t in targets)) if s != NEW)


def illegal_move(what: str, expect: Iterable[str | int], new: str | int | None) -> tuple[str | int, str | int] | None:
    """The first (from, to) of a write expecting one of ``expect`` and setting ``new`` (None:
    the status is kept) that the table does not allow; None when every one is allowed."""
    table = ALLOWED[what]
    for state in expect:
        targets = table.get(state) if state != NEW else None
        if targets is None:
            return state, state if new is None else new
        if new is not None and new not in targets:
            return state, new
    return None


def born_illegal(what: str, first: str | int) -> bool:
    """Whether a new row of ``what`` may not start in ``first``."""
    return first not in ALLOWED[what].get(NEW, frozenset())


def transition_error(run_id: str, subject: str, move: tuple[str | int, str | int]) -> IllegalTransition:
    """The bug an illegal ``move`` of ``subject`` ("run", "step <id>", …) in ``run_id`` is."""
    return IllegalTransition(ERR_ILLEGAL_MOVE.format(run_id=run_id, what=subject, from_state=move[0],
                                                     to_state=move[1]))


def check_move(what: str, run_id: str, subject: str, expect: str | int, new: str | int) -> None:
    """Raise the bug a write of ``subject`` from ``expect`` (``NEW``: its insertion) to ``new``
    would be, before its SQL runs; nothing when the table allows the move."""
    if expect == NEW:
        move: tuple[str | int, str | int] | None = (NEW, new) if born_illegal(what, new) else None
    else:
        move = illegal_move(what, (expect,), new)
    if move is not None:
        raise transition_error(run_id, subject, move)
