"""The compare-and-set primitives of one open write transaction.

Every status-changing write looks its move up in the state table (``_states.py``) before its
SQL runs: an illegal one raises ``IllegalTransition`` having written nothing. A lost CAS (the
row was not in an expected state: someone else moved it) raises ``RunStateError``, which rolls
the whole transaction back. The gate composes its transitions from these and never sees SQL.

Three writes wait for the transaction's next statement (``flush``): the run row ``insert_run``
makes, with the step claimed on it folded in; the step row ``claim_step`` makes, with the
``update_step`` calls on it folded in; and the events appended since the last statement (one
``executemany``). The call path begins a run, claims, decides and starts its step in one
unit: two INSERTs where there were two INSERTs and three UPDATEs. Every other statement of
the transaction, its COMMIT and its unit's RELEASE write them first, so nothing read or
committed misses them; a CAS on a held row checks what the UPDATE's WHERE would
(docs/decisions/0026).
"""

from __future__ import annotations

import functools
import sqlite3
from collections.abc import Mapping, Sequence
from dataclasses import fields
from typing import Any

from agentrt_proxy.canonical.encoder import go_json
from agentrt_proxy.store._chain import chain_hash, head_for_append
from agentrt_proxy.store._errors import RunStateError
from agentrt_proxy.store._rows import (
    APPROVAL_COLS,
    APPROVAL_SETTABLE,
    RUN_COLS,
    RUN_SETTABLE,
    STEP_SETTABLE,
    Approval,
    Event,
    Run,
    Step,
    read_approval,
    read_latest_approval,
    read_run,
    read_step,
    read_steps,
)
from agentrt_proxy.store._sqlite_errors import mapped
from agentrt_proxy.store._states import (
    APPROVAL,
    DECIDING,
    NEW,
    RUN,
    RUNNING,
    STEP,
    born_illegal,
    illegal_move,
    transition_error,
)
from agentrt_proxy.text.operator_text import ERR_NOT_SETTABLE
from agentrt_proxy.text.record_text import EXPECTED_RUNNING_LEASED, MSG_RUN_STATE


class Tx:
    """One open IMMEDIATE transaction (made by ``Database.write``)."""

    def __init__(self, conn: sqlite3.Connection, stored_specs: frozenset[str] | set[str] = frozenset(),
                 head: tuple[int, str] | None = None) -> None:
        self._c = conn
        # The chain head: read once, advanced by append (runtime-core §8.2); or given, by the
        # group transaction this one is a unit of, as its units before left it.
        self._head = head
        self.specs_written: set[str] = set()  # tool_specs hashes this transaction wrote (or found there)
        self._stored_specs = stored_specs  # hashes an earlier committed transaction of this database wrote
        self._run: dict[str, Any] | None = None  # the run row insert_run made, not yet inserted
        self._step: dict[str, Any] | None = None  # the step row claim_step made, not yet inserted
        self._events: list[tuple[Any, ...]] = []  # events appended since the last statement

    # reads inside the transaction -------------------------------------------------
    @mapped
    def run(self, run_id: str) -> Run:
        self._flush()
        return read_run(self._c, run_id)

    @mapped
    def steps(self, run_id: str) -> list[Step]:
        self._flush()
        return read_steps(self._c, run_id)

    @mapped
    def step(self, step_id: str) -> Step:
        self._flush()
        return read_step(self._c, step_id)

    @mapped
    def approval(self, approval_id: str) -> Approval | None:
        self._flush()
        return read_approval(self._c, approval_id)

    @mapped
    def latest_approval(self, step_id: str, run_id: str) -> Approval | None:
        self._flush()
        return read_latest_approval(self._c, step_id, run_id)

    # runs -----------------------------------------------------------------------------
    @mapped
    def insert_run(self, run_id: str, goal: str, limits_json: str, now: str, owner: str, expires: str) -> None:
        """A RUNNING run under ``owner``'s lease (held until the next statement, with the step
        claimed on it meanwhile)."""
        self._flush()
        self._run = {"id": run_id, "goal": goal, "status": RUNNING, "limits_json": limits_json, "created_at": now,
                     "started_at": now, "lease_owner": owner, "lease_expires_at": expires, "step_count": 0}

    @mapped
    def update_run(self, run_id: str, *, expect: str | Sequence[str], owner: str | None = None,
                   **values: Any) -> None:
        """CAS on the run's status (and lease owner when given)."""
        self._update_run(run_id, expect, owner, values, "")

    @mapped
    def update_run_returning(self, run_id: str, *, expect: str | Sequence[str], owner: str | None = None,
                             **values: Any) -> Run:
        """``update_run``, answering the row as the update left it (the same statement)."""
        rows = self._update_run(run_id, expect, owner, values, f" RETURNING {RUN_COLS}")
        return Run(*rows[0])

    @mapped
    def update_run_adding_active_ms(self, run_id: str, ms: int, *, expect: str, owner: str, **values: Any) -> Run:
        """``update_run_returning`` that also adds ``ms`` to the run's active time: what
        ``add_active_ms`` and the update would write, as one CAS (the same WHERE)."""
        rows = self._update_run(run_id, expect, owner, values, f" RETURNING {RUN_COLS}", add_ms=ms)
        return Run(*rows[0])

    def _update_run(self, run_id: str, expect: str | Sequence[str], owner: str | None, values: Mapping[str, Any],
                    returning: str, add_ms: int | None = None) -> list[Any]:
        statuses = _as_tuple(expect)
        illegal = illegal_move(RUN, statuses, values.get("status"))
        if illegal is not None:
            raise transition_error(run_id, "run", illegal)
        sets, args = _assignments(values, RUN_SETTABLE)
        if add_ms is not None:
            sets, args = f"active_ms = active_ms + ?, {sets}", [add_ms, *args]
        self._flush()
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

    @mapped
    def add_active_ms(self, run_id: str, ms: int, owner: str) -> bool:
        """CAS: add ``ms`` to a RUNNING run's active time under this lease owner; False
        (nothing written) when the run is not RUNNING under that owner."""
        self._flush()
        cur = self._c.execute(
            "UPDATE runs SET active_ms = active_ms + ? WHERE id = ? AND status = 'RUNNING' AND lease_owner = ?",
            (ms, run_id, owner),
        )
        return cur.rowcount == 1

    @mapped
    def claim_step(self, run_id: str, idx: int, owner: str, step_id: str, now: str) -> None:
        """Claim the run's next step index under this owner's lease and insert the step (held
        until the next statement, with the updates made to it meanwhile)."""
        held = self._run
        if held is not None and held["id"] == run_id and self._step is None:  # the UPDATE's CAS, on the held row
            if held["status"] != RUNNING or held["step_count"] != idx or held["lease_owner"] != owner:
                raise RunStateError(MSG_RUN_STATE.format(run_id=run_id, expected=EXPECTED_RUNNING_LEASED))
            held["step_count"] = idx + 1
        else:
            self._flush()
            cur = self._c.execute(
                "UPDATE runs SET step_count = ? WHERE id = ? AND status = 'RUNNING' AND step_count = ? "
                "AND lease_owner = ?",
                (idx + 1, run_id, idx, owner),
            )
            if cur.rowcount != 1:
                raise RunStateError(MSG_RUN_STATE.format(run_id=run_id, expected=EXPECTED_RUNNING_LEASED))
        self._step = {"id": step_id, "run_id": run_id, "idx": idx, "status": DECIDING, "started_at": now}

    # steps ----------------------------------------------------------------------------
    @mapped
    def update_step(self, step_id: str, *, expect: str | Sequence[str], **values: Any) -> None:
        statuses = _as_tuple(expect)
        illegal = illegal_move(STEP, statuses, values.get("status"))
        if illegal is not None:
            raise transition_error(self._run_of("steps", step_id), f"step {step_id}", illegal)
        sets, args = _assignments(values, STEP_SETTABLE)
        held = self._step
        if held is not None and held["id"] == step_id:  # the CAS the UPDATE would make, on the held row
            if held["status"] not in statuses:
                raise RunStateError(MSG_RUN_STATE.format(run_id=f"step {step_id}", expected=" or ".join(statuses)))
            held.update(values)
            return
        self._flush()
        cur = self._c.execute(
            f"UPDATE steps SET {sets} WHERE id = ? AND status IN ({','.join('?' * len(statuses))})",
            [*args, step_id, *statuses],
        )
        if cur.rowcount != 1:
            raise RunStateError(MSG_RUN_STATE.format(run_id=f"step {step_id}", expected=" or ".join(statuses)))

    @mapped
    def put_spec(self, spec_hash: str, spec_json: str) -> None:
        # A hash this transaction or a committed one already inserted (or ignored) is there
        # (tool_specs rows are never deleted): the same no-op again.
        if spec_hash in self.specs_written or spec_hash in self._stored_specs:
            return
        self._flush()
        self._c.execute("INSERT OR IGNORE INTO tool_specs (hash, spec_json) VALUES (?, ?)", (spec_hash, spec_json))
        self.specs_written.add(spec_hash)

    # approvals ------------------------------------------------------------------------
    @mapped
    def insert_approval(self, a: Approval) -> None:
        if born_illegal(APPROVAL, a.status):
            raise transition_error(a.run_id, f"approval {a.id}", (NEW, a.status))
        self._flush()
        self._c.execute(
            f"INSERT INTO approvals ({APPROVAL_COLS}) VALUES ({','.join('?' * len(fields(Approval)))})",
            [getattr(a, f.name) for f in fields(Approval)],
        )

    @mapped
    def update_approval(self, approval_id: str, *, expect: str, expect_hash: str | None = None,
                        **values: Any) -> bool:
        """Conditional decision write; False when someone decided it first."""
        illegal = illegal_move(APPROVAL, (expect,), values.get("status"))
        if illegal is not None:
            raise transition_error(self._run_of("approvals", approval_id), f"approval {approval_id}", illegal)
        sets, args = _assignments(values, APPROVAL_SETTABLE)
        where, wargs = "id = ? AND status = ?", [approval_id, expect]
        if expect_hash is not None:
            where += " AND hash = ?"
            wargs.append(expect_hash)
        self._flush()
        cur = self._c.execute(f"UPDATE approvals SET {sets} WHERE {where}", [*args, *wargs])
        return cur.rowcount == 1

    # events ---------------------------------------------------------------------------
    @mapped
    def append(self, run_id: str, step_id: str, at: str, type_: str, payload: Mapping[str, Any] | None) -> Event:
        """Append one event with the next seq across all runs and its chain hash (runtime-core §8.2)."""
        if self._head is None:  # the first append: nothing of the chain is held yet
            self._head = head_for_append(self._c)
        seq = self._head[0] + 1
        # Payloads are Go maps: top-level keys sorted; nested structs keep their order.
        text = go_json(dict(sorted(payload.items()))) if payload else "{}"
        h = chain_hash(self._head[1], seq, run_id, step_id, at, type_, text)
        self._events.append((seq, run_id, step_id, at, type_, text, h))
        self._head = (seq, h)
        return Event(seq, run_id, step_id, at, type_, text, h)

    @property
    def head(self) -> tuple[int, str] | None:
        """The chain head as this transaction leaves it, if it read or advanced it."""
        return self._head

    # the proxy's index and the lease release write through the same transaction
    @property
    def conn(self) -> sqlite3.Connection:
        self._flush()  # what it runs sees everything this transaction wrote
        return self._c

    def _flush(self) -> None:
        """Write the held rows and events, in the order their keys need: the run, its step, the
        events (the module's docstring says why they wait)."""
        run = self._run
        if run is not None:
            self._run = None
            self._c.execute(_insert("runs", tuple(run)), tuple(run.values()))
        step = self._step  # after its run's row: steps.run_id references it
        if step is not None:
            self._step = None
            self._c.execute(_insert("steps", tuple(step)), tuple(step.values()))
        events = self._events
        if events:
            self._events = []
            if len(events) == 1:
                self._c.execute(_INSERT_EVENT, events[0])
            else:
                self._c.executemany(_INSERT_EVENT, events)

    flush = mapped(_flush)

    def _run_of(self, table: str, row_id: str) -> str:
        """The run a step's or an approval's row belongs to, for an illegal move's message
        (read only then: the check itself is a table lookup)."""
        self._flush()
        found = self._c.execute(f"SELECT run_id FROM {table} WHERE id = ?", (row_id,)).fetchone()
        return str(found[0]) if found else "?"


_INSERT_EVENT = "INSERT INTO events (seq, run_id, step_id, at, type, payload_json, hash) VALUES (?, ?, ?, ?, ?, ?, ?)"


@functools.lru_cache(maxsize=32)
def _insert(table: str, columns: tuple[str, ...]) -> str:
    # A held row's columns: those its insert set and those the updates folded into it set.
    return f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))})"


def _as_tuple(v: str | Sequence[str]) -> tuple[str, ...]:
    return (v,) if isinstance(v, str) else tuple(v)


def _assignments(values: Mapping[str, Any], allowed: frozenset[str]) -> tuple[str, list[Any]]:
    return _set_clause(tuple(values), allowed), list(values.values())


@functools.lru_cache(maxsize=128)
def _set_clause(columns: tuple[str, ...], allowed: frozenset[str]) -> str:
    # The same few column sets recur on every call: checked and joined once each.
    bad = set(columns) - allowed
    if bad:
        raise ValueError(ERR_NOT_SETTABLE.format(columns=sorted(bad)))
    return ", ".join(f"{k} = ?" for k in columns)
