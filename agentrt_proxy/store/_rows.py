"""The runtime's rows as the store reads and writes them (runtime-core §1.3), and the reads of
one row or one run's rows that a transaction and the store share."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass, fields
from typing import Any, TypeVar

from agentrt_proxy.store._errors import NotFound
from agentrt_proxy.text.operator_text import MSG_RUN_NOT_FOUND, MSG_STEP_NOT_FOUND


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


def columns(cls: type) -> str:
    """The row's columns in the dataclass's order, for SELECT and RETURNING."""
    return ", ".join(f.name for f in fields(cls))


RUN_COLS, STEP_COLS, APPROVAL_COLS, EVENT_COLS = (columns(c) for c in (Run, Step, Approval, Event))
RUN_SETTABLE = frozenset(f.name for f in fields(Run)) - {"id"}
STEP_SETTABLE = frozenset(f.name for f in fields(Step)) - {"id", "run_id", "idx"}
APPROVAL_SETTABLE = frozenset({"status", "decided_at", "decided_by", "note"})

T = TypeVar("T")


def row(cls: type[T], found: Sequence[Any] | None) -> T | None:
    return None if found is None else cls(*found)


def read_run(c: sqlite3.Connection, run_id: str) -> Run:
    run = row(Run, c.execute(f"SELECT {RUN_COLS} FROM runs WHERE id = ?", (run_id,)).fetchone())
    if run is None:
        raise NotFound(MSG_RUN_NOT_FOUND.format(run_id=run_id))
    return run


def read_steps(c: sqlite3.Connection, run_id: str) -> list[Step]:
    rows = c.execute(f"SELECT {STEP_COLS} FROM steps WHERE run_id = ? ORDER BY idx", (run_id,)).fetchall()
    return [Step(*r) for r in rows]


def read_step(c: sqlite3.Connection, step_id: str) -> Step:
    step = row(Step, c.execute(f"SELECT {STEP_COLS} FROM steps WHERE id = ?", (step_id,)).fetchone())
    if step is None:
        raise NotFound(MSG_STEP_NOT_FOUND.format(step_id=step_id))
    return step


def read_approval(c: sqlite3.Connection, approval_id: str) -> Approval | None:
    return row(Approval, c.execute(f"SELECT {APPROVAL_COLS} FROM approvals WHERE id = ?", (approval_id,)).fetchone())


def read_latest_approval(c: sqlite3.Connection, step_id: str, run_id: str) -> Approval | None:
    # Insertion order, never timestamp text (trimmed fractions do not sort as text).
    return row(Approval, c.execute(
        f"SELECT {APPROVAL_COLS} FROM approvals WHERE run_id = ? AND step_id = ? ORDER BY rowid DESC LIMIT 1",
        (run_id, step_id),
    ).fetchone())
