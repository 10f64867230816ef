"""The state the chain explains, replayed from its events, and each state row held against it
(`verify`'s state check: docs/operator.md, "Checking the record").

The state tables are not chained (runtime-core §8.2): an edit to ``runs``, ``approvals`` or
``proxy_calls`` breaks no link, yet a forged ``approvals.status`` executes and a deleted
``proxy_calls`` row lets an executed call run again. So ``verify`` replays the events, in seq
order, into one small record per run and per approval (``Replay.feed``), then holds every row
against them (``check_run``, ``check_approval``, ``check_calls``, ``missing``). A row the chain
does not explain, or that says other than the chain, is a ``Mismatch``.

Pure: events and rows in, mismatches out; ``_state_check.py`` does the reading. Memory is one
record per run and per approval, never per event. An event type this module does not know (a
newer writer's audit record) explains nothing and contradicts nothing.

What the chain carries decides what can be checked:
- a run's status, reason, detail, finish time and step count: run.created, approval.requested
  (the pause), approval.stands (nothing sent: waiting again), run.resumed, run.finished,
  step.started;
- an approval's row: approval.requested (run, step, kind, hash, capability, presentation, time)
  and approval.decided (status, by, note, time);
- a ``proxy_calls`` row: run.created's ``call`` record (``call_record``: written since this
  check exists). A run begun before it has no record: its row is checked only for an outcome
  its run's events allow, and counted as not fully verified.
"""

from __future__ import annotations

import hashlib
import json
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from agentrt_proxy.store._index import ProxyCall
from agentrt_proxy.store._rows import Approval, Event
from agentrt_proxy.store._states import (
    APPROVAL_PENDING,
    EXPIRED,
    OUTCOME_KNOWN,
    OUTCOME_NONE,
    OUTCOME_UNKNOWN,
    OUTCOME_UNSEEN,
    RUNNING,
    TERMINAL,
    WAITING,
)
from agentrt_proxy.text.record_text import (
    STATE_APPROVAL_REQUESTED,
    STATE_AT_SEQ,
    STATE_CALL_BEGUN,
    STATE_NO_RUN,
    STATE_OUTCOME_KNOWN,
    STATE_OUTCOME_OPEN_RUN,
    STATE_OUTCOME_SENT,
    STATE_OUTCOME_SUCCEEDED,
    STATE_OUTCOME_UNKNOWN,
    STATE_REQUEST_HASH,
    STATE_ROW_FIELD,
    STATE_ROW_MISSING,
    STATE_ROW_UNEXPLAINED,
    STATE_RUN_CREATED,
)

INTERRUPTED_SIDE_EFFECT = "interrupted_side_effect"  # the kind of a re-run's approval (runtime-core §3.1)
NOT_SENT = "not_sent"  # the failure of a request that never reached its server (gate/attempts.py)
APPROVAL_STANDS = "approval.stands"  # a granted request that reached no server waits again (gate/_transitions.py)
MAX_KEPT = 100  # mismatches kept for the report; the rest are counted


def call_record(row: ProxyCall) -> dict[str, Any]:
    """What run.created records of the index row its run is begun for (keys in Go's order)."""
    return {
        "claimed_at": row.created_at,
        "id": row.id,
        "request_key": row.request_key,
        "session": row.session,
        "side_effect": row.side_effect,
        "tool": row.tool,
    }


class IndexedCall(NamedTuple):
    id: int
    session: str
    request_key: str
    tool: str
    side_effect: str
    claimed_at: int


@dataclass(frozen=True)
class Mismatch:
    """A row against the chain: its table, its key, the column (empty: the row itself), what
    the table holds and what the chain says."""

    table: str
    key: str
    column: str
    found: str
    expected: str

    def text(self) -> str:
        if self.column:
            return STATE_ROW_FIELD.format(
                table=self.table, key_or_run_id=self.key, column=self.column, found=self.found, expected=self.expected
            )
        if self.found:
            return STATE_ROW_UNEXPLAINED.format(table=self.table, key_or_run_id=self.key)
        return STATE_ROW_MISSING.format(table=self.table, key_or_run_id=self.key, expected=self.expected)


class RunFacts:
    """One run as its events leave it."""

    __slots__ = (
        "asked_interrupted",
        "attempted",
        "call",
        "call_seen",
        "created_seq",
        "detail",
        "finished_any",
        "finished_at",
        "reason",
        "seen",
        "status",
        "steps",
        "succeeded",
        "tool_started",
    )

    def __init__(self, created_seq: int, call: IndexedCall | None) -> None:
        self.created_seq = created_seq
        self.call = call
        self.status = RUNNING
        self.reason = self.detail = self.finished_at = ""
        self.steps = 0
        self.tool_started = False  # a step.tool_started: a tool began
        self.finished_any = False  # a step.tool_finished, late or not: an outcome came back
        self.succeeded = False  # a step.tool_finished with a result, written before the run ended
        self.attempted = False  # one with the error of a request that was sent (its failure recorded)
        self.asked_interrupted = False  # an interruption approval: an earlier attempt's outcome is unknown
        self.seen = self.call_seen = False


class ApprovalFacts:
    """One approval as its events leave it (capability and presentation kept as digests)."""

    __slots__ = (
        "capability",
        "created_at",
        "decided_at",
        "decided_by",
        "hash",
        "kind",
        "note",
        "presentation",
        "run_id",
        "seen",
        "seq",
        "status",
        "step_id",
    )

    def __init__(self, ev: Event, payload: Mapping[str, Any]) -> None:
        self.seq = ev.seq
        self.run_id, self.step_id, self.created_at = ev.run_id, ev.step_id, ev.at
        self.kind = _text(payload.get("kind"))
        self.hash = _text(payload.get("hash"))
        self.capability = _digest(payload.get("capability", {}))
        self.presentation = _digest(payload.get("presentation", {}))
        self.status = APPROVAL_PENDING
        self.decided_at = self.decided_by = self.note = ""
        self.seen = False


class Replay:
    """The chain's events fed in seq order; then each table's rows checked against them."""

    def __init__(self, approval_hash: Callable[[Approval], str] | None = None) -> None:
        self.runs: dict[str, RunFacts] = {}
        self.approvals: dict[str, ApprovalFacts] = {}
        self._approval_hash = approval_hash  # what a row's own fields hash to (the gate's rule), if given
        self.unverified_calls = 0  # rows whose run was begun before run.created named its call
        self.unbegun_calls = 0  # rows whose run never began (a claim with nothing after it)

    # ----------------------------------------------------------------- the events
    def feed(self, ev: Event) -> None:
        handler = _HANDLERS.get(ev.type)
        if handler is None:
            return  # an event type this check does not know: it explains nothing
        if ev.type in _NO_PAYLOAD:
            handler(self, ev, {})
            return
        payload = _payload(ev.payload_json)
        if payload is not None:
            handler(self, ev, payload)

    def _created(self, ev: Event, payload: Mapping[str, Any]) -> None:
        if ev.run_id not in self.runs:  # the runs table's primary key allows one
            self.runs[ev.run_id] = RunFacts(ev.seq, _call_facts(payload.get("call")))

    def _run(self, ev: Event) -> RunFacts | None:
        return self.runs.get(ev.run_id)

    def _resumed(self, ev: Event, _payload: Mapping[str, Any]) -> None:
        run = self._run(ev)
        if run is not None:
            run.status = RUNNING

    def _finished(self, ev: Event, payload: Mapping[str, Any]) -> None:
        run = self._run(ev)
        if run is not None:
            # The few statuses and reasons recur in every run: one string each, not one per run.
            run.status, run.reason = sys.intern(_text(payload.get("status"))), sys.intern(_text(payload.get("reason")))
            run.detail = _text(payload.get("detail"))
            run.finished_at = ev.at

    def _step_started(self, ev: Event, _payload: Mapping[str, Any]) -> None:
        run = self._run(ev)
        if run is not None:
            run.steps += 1

    def _tool_started(self, ev: Event, _payload: Mapping[str, Any]) -> None:
        run = self._run(ev)
        if run is not None:
            run.tool_started = True

    def _tool_finished(self, ev: Event, payload: Mapping[str, Any]) -> None:
        run = self._run(ev)
        if run is None:
            return
        run.finished_any = True
        if payload.get("late") is True:
            return  # an answer after the run ended: the attempt was settled without it
        if "error" not in payload:
            run.succeeded = True
        elif isinstance(payload.get("failure"), str) and payload["failure"] != NOT_SENT:
            run.attempted = True  # an error from a request that was sent: known or unknown, never none

    def _requested(self, ev: Event, payload: Mapping[str, Any]) -> None:
        approval_id = _text(payload.get("approval_id"))
        if approval_id not in self.approvals:
            self.approvals[approval_id] = ApprovalFacts(ev, payload)
        run = self._run(ev)
        if run is not None:
            run.status = WAITING  # a pause moves the run to WAITING in the same transaction
            if payload.get("kind") == INTERRUPTED_SIDE_EFFECT:
                run.asked_interrupted = True

    def _stands(self, ev: Event, _payload: Mapping[str, Any]) -> None:
        run = self._run(ev)
        if run is not None:
            run.status = WAITING  # nothing was sent: the run waits for its grant's collection again

    def _decided(self, ev: Event, payload: Mapping[str, Any]) -> None:
        a = self.approvals.get(_text(payload.get("approval_id")))
        if a is None:
            return
        status = _text(payload.get("status"))
        if status == EXPIRED:
            # A pending approval's expiry stamps the time and the note; a grant's keeps its decision's.
            if a.status == APPROVAL_PENDING:
                a.decided_at, a.note = ev.at, EXPIRED
        else:
            a.decided_at, a.decided_by, a.note = ev.at, _text(payload.get("by")), _text(payload.get("note"))
        a.status = status

    # ----------------------------------------------------------------- the rows
    def check_run(
        self, run_id: str, status: str, reason: str, detail: str, step_count: int, finished_at: str
    ) -> list[Mismatch]:
        facts = self.runs.get(run_id)
        if facts is None:
            return [Mismatch("runs", run_id, "", "row", STATE_NO_RUN)]
        facts.seen = True
        out = _differ("runs", run_id, (("status", status, facts.status), ("step_count", step_count, facts.steps)))
        if facts.status in TERMINAL:
            out += _differ(
                "runs",
                run_id,
                (
                    ("reason", reason, facts.reason),
                    ("reason_detail", detail, facts.detail),
                    ("finished_at", finished_at, facts.finished_at),
                ),
            )
        return out

    def check_approval(self, row: Approval) -> list[Mismatch]:
        facts = self.approvals.get(row.id)
        if facts is None:
            return [Mismatch("approvals", row.id, "", "row", STATE_NO_RUN)]
        facts.seen = True
        out = _differ(
            "approvals",
            row.id,
            (
                ("status", row.status, facts.status),
                ("hash", row.hash, facts.hash),
                ("run_id", row.run_id, facts.run_id),
                ("step_id", row.step_id, facts.step_id),
                ("kind", row.kind, facts.kind),
                ("created_at", row.created_at, facts.created_at),
                ("decided_at", row.decided_at, facts.decided_at),
                ("decided_by", row.decided_by, facts.decided_by),
                ("note", row.note, facts.note),
            ),
        )
        for column, text, digest in (
            ("capability_json", row.capability_json, facts.capability),
            ("presentation_json", row.presentation_json, facts.presentation),
        ):
            if _digest(_parsed(text or "{}")) != digest:
                out.append(
                    Mismatch("approvals", row.id, column, _clip(text), STATE_APPROVAL_REQUESTED.format(seq=facts.seq))
                )
        if self._approval_hash is not None:
            own = self._approval_hash(row)
            if own != facts.hash:
                # The request the operator approves is bound by the hash: its text changed.
                found = STATE_REQUEST_HASH.format(hash=own[:16] or "-")
                said = STATE_REQUEST_HASH.format(hash=facts.hash[:16]) + " " + STATE_AT_SEQ.format(seq=facts.seq)
                out.append(Mismatch("approvals", row.id, "request_json", found, said))
        return out

    def check_calls(self, rows: Sequence[ProxyCall]) -> list[Mismatch]:
        """One request's rows (one session and request key), in id order: only the newest
        is open; each older one was closed by the claim of the next (the same instant)."""
        out: list[Mismatch] = []
        for i, row in enumerate(rows):
            key = f"{row.id} (run {row.run_id})"
            newer = rows[i + 1] if i + 1 < len(rows) else None
            out += _differ("proxy_calls", key, (("open", row.open, 1 if newer is None else 0),))
            if newer is not None and self._recorded(newer.run_id) is not None:
                out += _differ("proxy_calls", key, (("closed_at", row.closed_at, newer.created_at),))
            out += self._check_call(row, key)
        return out

    def _recorded(self, run_id: str) -> IndexedCall | None:
        facts = self.runs.get(run_id)
        return facts.call if facts is not None else None

    def _check_call(self, row: ProxyCall, key: str) -> list[Mismatch]:
        facts = self.runs.get(row.run_id)
        if facts is None:
            if row.outcome in (OUTCOME_UNSEEN, OUTCOME_NONE):
                self.unbegun_calls += 1  # claimed, its run never begun: it says nothing ran
                return []
            return [Mismatch("proxy_calls", key, "outcome", str(row.outcome), STATE_NO_RUN)]
        out: list[Mismatch] = []
        call = facts.call
        if call is None:
            self.unverified_calls += 1
        else:
            facts.call_seen = True
            out += _differ(
                "proxy_calls",
                key,
                (
                    ("id", row.id, call.id),
                    ("session", row.session, call.session),
                    ("request_key", row.request_key, call.request_key),
                    ("tool", row.tool, call.tool),
                    ("side_effect", row.side_effect, call.side_effect),
                    ("created_at", row.created_at, call.claimed_at),
                ),
            )
        expected = _outcome_contradiction(row.outcome, facts)
        if expected:
            out.append(Mismatch("proxy_calls", key, "outcome", str(row.outcome), expected))
        return out

    def missing(self) -> Iterable[Mismatch]:
        """What the chain names that no row holds (after every row was checked)."""
        for run_id, run in self.runs.items():
            if not run.seen:
                yield Mismatch("runs", run_id, "", "", STATE_RUN_CREATED.format(seq=run.created_seq))
            if run.call is not None and not run.call_seen:
                yield Mismatch(
                    "proxy_calls",
                    f"{run.call.id} (run {run_id})",
                    "",
                    "",
                    STATE_CALL_BEGUN.format(seq=run.created_seq, tool=run.call.tool),
                )
        for approval_id, a in self.approvals.items():
            if not a.seen:
                yield Mismatch("approvals", approval_id, "", "", STATE_APPROVAL_REQUESTED.format(seq=a.seq))


def _outcome_contradiction(outcome: int, run: RunFacts) -> str:
    """What the chain says against a row's cached outcome; empty when its run's events allow it.

    The exact outcome depends on the tool's configuration (read-only, known answers), which the
    chain does not hold; what any configuration would contradict is checked: a settled row
    belongs to a finished run; known needs an outcome that came back; unknown a tool that began
    or an interruption asked about; none neither a result nor the error of a request that was
    sent (a chain from before step.tool_finished recorded its failure cannot tell the latter)."""
    if outcome == OUTCOME_UNSEEN:
        return ""
    if run.status not in TERMINAL:
        return STATE_OUTCOME_OPEN_RUN.format(status=run.status)
    if outcome == OUTCOME_KNOWN and not run.finished_any:
        return STATE_OUTCOME_KNOWN
    if outcome == OUTCOME_UNKNOWN and not (run.tool_started or run.asked_interrupted):
        return STATE_OUTCOME_UNKNOWN
    if outcome == OUTCOME_NONE and (run.succeeded or run.attempted):
        return STATE_OUTCOME_SUCCEEDED if run.succeeded else STATE_OUTCOME_SENT
    if outcome not in (OUTCOME_NONE, OUTCOME_KNOWN, OUTCOME_UNKNOWN):
        return STATE_OUTCOME_OPEN_RUN.format(status=run.status)
    return ""


_Handler = Callable[[Replay, Event, Mapping[str, Any]], None]
_HANDLERS: dict[str, _Handler] = {
    "run.created": Replay._created,
    "run.resumed": Replay._resumed,
    "run.finished": Replay._finished,
    "step.started": Replay._step_started,
    "step.tool_started": Replay._tool_started,
    "step.tool_finished": Replay._tool_finished,
    "approval.requested": Replay._requested,
    "approval.decided": Replay._decided,
    APPROVAL_STANDS: Replay._stands,
}
_NO_PAYLOAD = frozenset({"run.resumed", "step.started", "step.tool_started"})  # only that they happened


def _differ(table: str, key: str, pairs: Iterable[tuple[str, object, object]]) -> list[Mismatch]:
    return [
        Mismatch(table, key, column, _clip(found), _clip(expected))
        for column, found, expected in pairs
        if found != expected
    ]


def _clip(value: object, limit: int = 120) -> str:
    """A value as a report line shows it: text quoted (and cut at ``limit``), numbers as digits."""
    if not isinstance(value, str):
        return str(value)
    return json.dumps(value[:limit] + ("…" if len(value) > limit else ""), ensure_ascii=False)


def _payload(text: str) -> Any:
    """An event's payload object; None for anything else (it explains nothing)."""
    try:
        value = json.loads(text)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def _parsed(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return _UNPARSABLE


_UNPARSABLE = object()  # digests as its repr: equal to no JSON value


def _text(value: object) -> str:
    return value if isinstance(value, str) else ""


def _digest(value: object) -> bytes:
    """A JSON value's fingerprint, equal for equal values whatever their spelling."""
    text = json.dumps(value, sort_keys=True, ensure_ascii=False, default=repr)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()


def _call_facts(value: object) -> IndexedCall | None:
    """run.created's ``call`` record; None when there is none (a run begun before it existed,
    or not for a call) or it is not of the form ``call_record`` writes."""
    if not isinstance(value, dict):
        return None
    row_id, claimed_at = value.get("id"), value.get("claimed_at")
    session, key, tool, side_effect = (value.get(k) for k in ("session", "request_key", "tool", "side_effect"))
    if not isinstance(row_id, int) or not isinstance(claimed_at, int):
        return None
    if isinstance(row_id, bool) or isinstance(claimed_at, bool):
        return None
    if not all(isinstance(v, str) for v in (session, key, tool, side_effect)):
        return None
    return IndexedCall(
        row_id, sys.intern(str(session)), str(key), sys.intern(str(tool)), sys.intern(str(side_effect)), claimed_at
    )
