"""The rest of the state the chain explains (`verify`: SECURITY.md): ``steps``, ``tool_specs``,
``budget_holds``, the runs' leases and ``proxy_tasks``, each row held against the chain's events,
beside ``_replay.py``'s runs, approvals and call index.

Pure, as ``_replay.py`` is: events in (``RowReplay.feed``, in seq order), rows in, ``Mismatch``es
out. What the chain carries decides what can be checked:

- a step's row: step.started (its run, index, start; step.tool_started's time once its tool
  starts), step.policy (its tool spec's hash),
  step.tool_started, and the events that end it (step.tool_finished, step.failed,
  step.interrupted, with the observation's hash where they carry it). A step the chain shows
  executing must be ``executing``; one it shows ended must not be in flight. A step.policy
  after an end (an interrupted step asked about again) opens it again.
- a tool spec: its hash is the SHA-256 of its canonical JSON, so its text is checked against its
  own key; every hash a step.policy names must have its row.
- a budget reservation: ``budget.reserved`` (session, budget, currency, amount, time),
  ``budget.carried`` (a fresh run taking an earlier one's reservations over) and
  ``budget.settled`` (spent or released, and when), written with the row (``holds.py``). A chain
  from before those events explains no reservation: its rows are counted as not verified.
- a lease: a run the chain shows ended or waiting for an approval holds none (both are cleared in
  the transaction that ends or pauses it); a lease's expiry is a time.
- a task: its run and approval are the chain's, the approval of that run. A task's creation is
  not an event, so a task row deleted, or added before it names a run, is not found.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator, Mapping
from typing import Any, NamedTuple

from agentrt_proxy.canonical import JSONBoundaryError, canonical_json
from agentrt_proxy.canonical.durations import parse_time
from agentrt_proxy.store._replay import Mismatch, Replay, _clip, _differ
from agentrt_proxy.store._rows import Event
from agentrt_proxy.store._states import (
    EXECUTING,
    HOLD_RELEASED,
    HOLD_RESERVED,
    HOLD_SPENT,
    IN_FLIGHT,
    TERMINAL,
    WAITING,
)
from agentrt_proxy.store.holds import CARRIED_EVENT, RELEASED_EVENT, RESERVED_EVENT, SETTLED_EVENT
from agentrt_proxy.text.record_text import (
    STATE_A_TIME,
    STATE_HOLD_RESERVED,
    STATE_LEASE_HELD,
    STATE_NO_RUN,
    STATE_SPEC_HASH,
    STATE_SPEC_NAMED,
    STATE_STEP_ENDED,
    STATE_STEP_EXECUTING,
    STATE_STEP_STARTED,
    STATE_TASK_APPROVAL,
)

_OPEN, _EXECUTING, _ENDED = "open", "executing", "ended"


class StepFacts:
    __slots__ = ("hash", "index", "phase", "run_id", "seen", "seq", "spec_hash", "started_at")

    def __init__(self, ev: Event, index: object) -> None:
        self.run_id, self.started_at, self.seq = ev.run_id, ev.at, ev.seq
        self.index = index if isinstance(index, int) and not isinstance(index, bool) else -1
        self.phase = _OPEN
        self.spec_hash: str | None = None  # the last step.policy's
        self.hash: str | None = None  # the observation's, from the event that ended the step
        self.seen = False


class HoldFacts:
    __slots__ = ("amount", "at", "currency", "seen", "seq", "session", "settled_at", "state")

    def __init__(self, seq: int, payload: Mapping[str, Any]) -> None:
        self.seq = seq
        self.session, self.currency, self.amount = (_text(payload.get(k)) for k in ("session", "currency", "amount"))
        self.at = _int(payload.get("at"))
        self.state, self.settled_at = HOLD_RESERVED, 0
        self.seen = False


class StepRow(NamedTuple):
    id: str
    run_id: str
    idx: int
    status: str
    observation_hash: str
    started_at: str
    spec_hash: str


class HoldRow(NamedTuple):
    session: str
    budget: str
    currency: str
    run_id: str
    amount: str
    at: int
    state: str
    settled_at: int


class RowReplay:
    """The chain's events fed in seq order; then each of these tables' rows checked."""

    def __init__(self) -> None:
        self.steps: dict[str, StepFacts] = {}
        self.holds: dict[tuple[str, str], HoldFacts] = {}  # (run id, budget)
        self.specs_named: dict[str, int] = {}  # spec hash -> the first step.policy's seq
        self.specs_seen: set[str] = set()
        self.holds_chained = False  # the chain records reservations (a writer since the chained reservations)
        self.unverified_holds = 0

    # ------------------------------------------------------------------- events
    def feed(self, ev: Event) -> None:
        if not (ev.type.startswith("step.") or ev.type.startswith("budget.")):
            return
        payload = _payload(ev.payload_json)
        if ev.type == "step.started":
            self.steps.setdefault(ev.step_id, StepFacts(ev, payload.get("index")))
            return
        if ev.type in (RESERVED_EVENT, CARRIED_EVENT, SETTLED_EVENT, RELEASED_EVENT):
            self._hold_event(ev, payload)
            return
        step = self.steps.get(ev.step_id)
        if step is None:
            return
        if ev.type == "step.policy":
            step.phase, step.hash = _OPEN, None
            spec_hash = _text(payload.get("spec_hash"))
            step.spec_hash = spec_hash
            if spec_hash:
                self.specs_named.setdefault(spec_hash, ev.seq)
        elif ev.type == "step.tool_started":
            step.phase, step.hash = _EXECUTING, None
            step.started_at = ev.at  # the row's start is stamped again as its tool starts
        elif ev.type == "step.tool_finished" and payload.get("late") is not True:
            step.phase = _ENDED
            step.hash = _text(payload.get("content_hash")) or None  # a failure's is on step.failed
        elif ev.type == "step.failed":
            step.phase, step.hash = _ENDED, _text(payload.get("content_hash")) or None
        elif ev.type == "step.interrupted":
            step.phase, step.hash = _ENDED, None

    def _hold_event(self, ev: Event, payload: Mapping[str, Any]) -> None:
        self.holds_chained = True
        if ev.type == RESERVED_EVENT:
            key = (ev.run_id, _text(payload.get("budget")))
            held = self.holds.get(key)
            if held is None or held.state == HOLD_RELEASED:  # new, or a released one reserved again
                self.holds[key] = HoldFacts(ev.seq, payload)
        elif ev.type == CARRIED_EVENT:
            source = _text(payload.get("from_run"))
            for run_id, budget in [k for k, h in self.holds.items() if k[0] == source and h.state == HOLD_RESERVED]:
                self.holds[(ev.run_id, budget)] = self.holds.pop((run_id, budget))
        elif ev.type == RELEASED_EVENT:  # the operator's release: reserved and spent rows alike
            for (run_id, _), hold in self.holds.items():
                if run_id == ev.run_id and hold.state in (HOLD_RESERVED, HOLD_SPENT):
                    hold.state, hold.settled_at = HOLD_RELEASED, _int(payload.get("settled_at"))
        else:
            for (run_id, _), hold in self.holds.items():
                if run_id == ev.run_id and hold.state == HOLD_RESERVED:
                    hold.state, hold.settled_at = _text(payload.get("state")), _int(payload.get("settled_at"))

    # --------------------------------------------------------------------- rows
    def check_step(self, row: StepRow) -> list[Mismatch]:
        facts = self.steps.get(row.id)
        if facts is None:
            return [Mismatch("steps", row.id, "", "row", STATE_NO_RUN)]
        facts.seen = True
        pairs: list[tuple[str, object, object]] = [
            ("run_id", row.run_id, facts.run_id),
            ("idx", row.idx, facts.index),
            ("started_at", row.started_at, facts.started_at),
        ]
        if facts.spec_hash is not None:
            pairs.append(("spec_hash", row.spec_hash, facts.spec_hash))
        if facts.hash is not None:
            pairs.append(("observation_hash", row.observation_hash, facts.hash))
        out = _differ("steps", row.id, pairs)
        if facts.phase == _EXECUTING and row.status != EXECUTING:
            out.append(Mismatch("steps", row.id, "status", _clip(row.status), STATE_STEP_EXECUTING))
        elif facts.phase == _ENDED and row.status in IN_FLIGHT:
            out.append(Mismatch("steps", row.id, "status", _clip(row.status), STATE_STEP_ENDED))
        return out

    def check_spec(self, spec_hash: str, spec_json: str) -> list[Mismatch]:
        self.specs_seen.add(spec_hash)
        try:
            own = hashlib.sha256(canonical_json(spec_json)).hexdigest()
        except JSONBoundaryError:
            own = ""
        if own == spec_hash:
            return []
        return [
            Mismatch(
                "tool_specs",
                spec_hash,
                "spec_json",
                STATE_SPEC_HASH.format(hash=own[:16] or "-"),
                STATE_SPEC_HASH.format(hash=spec_hash[:16]),
            )
        ]

    def check_hold(self, row: HoldRow) -> list[Mismatch]:
        key = f"{row.run_id} {row.budget}"
        facts = self.holds.get((row.run_id, row.budget))
        if facts is None:
            if not self.holds_chained:
                self.unverified_holds += 1  # written before reservations were events
                return []
            return [Mismatch("budget_holds", key, "", "row", STATE_NO_RUN)]
        facts.seen = True
        return _differ(
            "budget_holds",
            key,
            (
                ("session", row.session, facts.session),
                ("currency", row.currency, facts.currency),
                ("amount", row.amount, facts.amount),
                ("at", row.at, facts.at),
                ("state", row.state, facts.state),
                ("settled_at", row.settled_at, facts.settled_at),
            ),
        )

    def check_lease(self, run_id: str, owner: str, expires_at: str, runs: Replay) -> list[Mismatch]:
        facts = runs.runs.get(run_id)
        if facts is None:
            return []  # the runs check names the row already
        if (owner or expires_at) and (facts.status in TERMINAL or facts.status == WAITING):
            return [Mismatch("runs", run_id, "lease_owner", _clip(owner), STATE_LEASE_HELD.format(status=facts.status))]
        if expires_at:
            try:
                parse_time(expires_at)
            except ValueError:
                return [Mismatch("runs", run_id, "lease_expires_at", _clip(expires_at), STATE_A_TIME)]
        return []

    def check_task(self, task_id: str, run_id: str, approval_id: str, runs: Replay) -> list[Mismatch]:
        if run_id and run_id not in runs.runs:
            return [Mismatch("proxy_tasks", task_id, "run_id", _clip(run_id), STATE_NO_RUN)]
        if approval_id:
            approval = runs.approvals.get(approval_id)
            if approval is None or approval.run_id != run_id:
                return [Mismatch("proxy_tasks", task_id, "approval_id", _clip(approval_id), STATE_TASK_APPROVAL)]
        return []

    def missing(self) -> Iterator[Mismatch]:
        """What the chain names that no row holds (after every row was checked)."""
        for step_id, step in self.steps.items():
            if not step.seen:
                yield Mismatch("steps", step_id, "", "", STATE_STEP_STARTED.format(seq=step.seq))
        for spec_hash, seq in self.specs_named.items():
            if spec_hash not in self.specs_seen:
                yield Mismatch("tool_specs", spec_hash, "", "", STATE_SPEC_NAMED.format(seq=seq))
        for (run_id, budget), hold in self.holds.items():
            if not hold.seen:
                yield Mismatch(
                    "budget_holds",
                    f"{run_id} {budget}",
                    "",
                    "",
                    STATE_HOLD_RESERVED.format(seq=hold.seq, amount=hold.amount),
                )


def _payload(text: str) -> Mapping[str, Any]:
    try:
        value = json.loads(text)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _text(value: object) -> str:
    return value if isinstance(value, str) else ""


def _int(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0
