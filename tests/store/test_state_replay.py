"""The replay behind verify's state check, as a pure function: events in, rows held to them.

Each case feeds a short chain (the events the gate and the proxy write, with the payloads they
write) and checks one table's row against it: what the chain explains passes, anything else
is a mismatch naming the table, the key and the column.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from agentrt_proxy.gate import attempts
from agentrt_proxy.store import Approval, Event, ProxyCall
from agentrt_proxy.store import _replay as replay_module
from agentrt_proxy.store._replay import Mismatch, Replay, call_record

AT = "2026-01-01T00:00:0{}Z"


def chain(*events: tuple[str, str, str, dict[str, Any] | None]) -> Replay:
    """A replay fed (run id, step id, type, payload) events, seq 1, 2, … at second 1, 2, …"""
    replay = Replay()
    for seq, (run_id, step_id, type_, payload) in enumerate(events, start=1):
        text = json.dumps(payload, sort_keys=True) if payload is not None else "{}"
        replay.feed(Event(seq, run_id, step_id, AT.format(seq % 10), type_, text, "h"))
    return replay


def row(run_id: str = "r1", *, key: str = "k1", id_: int = 1, open_: int = 1, closed_at: int = 0,
        created_at: int = 100, outcome: int = 0, tool: str = "bank_pay") -> ProxyCall:
    return ProxyCall(id_, "laptop", key, tool, "remote_mutation", run_id, created_at, open_, closed_at,
                     100 if outcome else 0, outcome)


def created(run_id: str = "r1", call: ProxyCall | None = None) -> tuple[str, str, str, dict[str, Any]]:
    payload: dict[str, Any] = {"goal": "call bank_pay", "limits": {}, "tools": []}
    if call is not None:
        payload["call"] = call_record(call)
    return (run_id, "", "run.created", payload)


def finished(run_id: str = "r1", status: str = "COMPLETED", reason: str = "goal_completed",
             detail: str = "", steps: int = 1) -> tuple[str, str, str, dict[str, Any]]:
    return (run_id, "", "run.finished", {"status": status, "reason": reason, "detail": detail, "steps": steps})


def requested(approval_id: str = "a1", kind: str = "side_effect") -> tuple[str, str, str, dict[str, Any]]:
    return ("r1", "s1", "approval.requested", {
        "approval_id": approval_id, "kind": kind, "reason": "", "capability": {"tool": "bank_pay"},
        "presentation": {"summary": "pay kim 7"}, "hash": "abc"})


def decided(status: str, by: str = "me", note: str = "") -> tuple[str, str, str, dict[str, Any]]:
    if status == "expired":
        return ("r1", "", "approval.decided", {"approval_id": "a1", "status": "expired"})
    return ("r1", "", "approval.decided", {"approval_id": "a1", "status": status, "by": by, "note": note})


STARTED = ("r1", "s1", "step.started", {"index": 0})
TOOL_STARTED = ("r1", "s1", "step.tool_started", {"tool": "bank_pay", "args": {}})
PAID = ("r1", "s1", "step.tool_finished", {"tool": "bank_pay", "duration_ms": 3, "summary": "paid",
                                          "content_hash": "c"})
ERRED = ("r1", "s1", "step.tool_finished", {"tool": "bank_pay", "duration_ms": 3, "error": "declined"})  # no failure


def erred(failure: str) -> tuple[str, str, str, dict[str, Any]]:
    return ("r1", "s1", "step.tool_finished", {"tool": "bank_pay", "duration_ms": 3, "error": "x", "failure": failure})


def approval(status: str = "pending", *, decided_at: str = "", by: str = "", note: str = "",
             **changed: str) -> Approval:
    values = dict(id="a1", run_id="r1", step_id="s1", kind="side_effect", capability_json='{"tool":"bank_pay"}',
                  presentation_json='{"summary": "pay kim 7"}', request_json="{}", hash="abc", status=status,
                  created_at=AT.format(3), decided_at=decided_at, decided_by=by, note=note, expires_at="")
    values.update(changed)
    return Approval(**values)


def columns(found: list[Mismatch]) -> list[tuple[str, str, str]]:
    return [(m.table, m.key, m.column) for m in found]


# --------------------------------------------------------------------------- runs

RUN_CASES = [
    # (what the chain holds, the row's status, reason, finished_at, step_count, mismatched columns)
    ("completed", [created(), STARTED, finished()], ("COMPLETED", "goal_completed", AT.format(3), 1), []),
    ("status flipped back", [created(), STARTED, finished()], ("RUNNING", "goal_completed", AT.format(3), 1),
     ["status"]),
    ("finish time moved", [created(), STARTED, finished()], ("COMPLETED", "goal_completed", "2020-01-01T00:00:00Z",
                                                            1), ["finished_at"]),
    ("steps undercounted", [created(), STARTED, finished()], ("COMPLETED", "goal_completed", AT.format(3), 0),
     ["step_count"]),
    ("paused", [created(), STARTED, requested()], ("WAITING_FOR_APPROVAL", "", "", 1), []),
    ("pause forged to running", [created(), STARTED, requested()], ("RUNNING", "", "", 1), ["status"]),
    ("resumed", [created(), STARTED, requested(), ("r1", "", "run.resumed", {"approval_id": "a1"})],
     ("RUNNING", "", "", 1), []),
    ("reason changed", [created(), STARTED, finished(status="CANCELLED", reason="approval_rejected")],
     ("CANCELLED", "operator_cancelled", AT.format(3), 1), ["reason"]),
]


@pytest.mark.parametrize(("events", "row_values", "expected"), [c[1:] for c in RUN_CASES],
                         ids=[c[0] for c in RUN_CASES])
def test_a_runs_row_agrees_only_with_what_its_events_say(
        events: list[Any], row_values: tuple[str, str, str, int], expected: list[str]) -> None:
    status, reason, finished_at, steps = row_values
    replay = chain(*events)
    found = replay.check_run("r1", status, reason, "", steps, finished_at)
    assert [m.column for m in found] == expected
    assert [m for m in replay.missing() if m.table == "runs"] == []  # the row was held


def test_a_run_no_event_created_is_unexplained_and_a_created_run_without_a_row_is_missing() -> None:
    replay = chain(created("r1"))
    forged = replay.check_run("r9", "COMPLETED", "", "", 0, "")
    assert forged[0].text() == "runs r9: no event in the chain explains this row"
    assert [m.text() for m in replay.missing()] == ["runs r1: no row; the chain says the run was created at seq 1"]


def test_a_mismatch_says_table_key_column_found_and_expected() -> None:
    (m,) = chain(created(), STARTED, finished()).check_run("r1", "RUNNING", "goal_completed", "", 1, AT.format(3))
    assert m.text() == 'runs r1: status is "RUNNING"; the chain says "COMPLETED"'


def test_unknown_event_types_explain_nothing_and_contradict_nothing() -> None:
    replay = chain(created(), ("r1", "", "passthrough.resource_read", {"server": "fs", "uri": "x", "bytes": 3}),
                   ("r1", "", "model.completed", None), ("r1", "", "run.finished", None), STARTED,
                   ("r1", "", "some.future_event", {"status": "FAILED"}), finished(steps=1))
    assert replay.check_run("r1", "COMPLETED", "goal_completed", "", 1, AT.format(7)) == []


def test_an_event_with_an_unreadable_payload_explains_nothing() -> None:
    replay = Replay()
    replay.feed(Event(1, "r1", "", AT.format(1), "run.created", "{not json", "h"))
    assert columns(replay.check_run("r1", "RUNNING", "", "", 0, "")) == [("runs", "r1", "")]


# --------------------------------------------------------------------------- approvals

APPROVAL_CASES = [
    ("pending", [], approval(), []),
    ("forged approved", [], approval("approved", decided_at=AT.format(4), by="me"),
     ["status", "decided_at", "decided_by"]),
    ("status only forged", [], approval("approved"), ["status"]),
    ("approved", [decided("approved")], approval("approved", decided_at=AT.format(4), by="me"), []),
    ("rejected shown as approved", [decided("rejected", note="no")],
     approval("approved", decided_at=AT.format(4), by="me", note="no"), ["status"]),
    ("expired while pending", [decided("expired")], approval("expired", decided_at=AT.format(4), note="expired"),
     []),
    ("a grant expired keeps its decision", [decided("approved", note="ok"), ("r1", "", "approval.decided",
                                                                            {"approval_id": "a1",
                                                                             "status": "expired"})],
     approval("expired", decided_at=AT.format(4), by="me", note="ok"), []),
    ("hash replaced", [], approval(hash="abd"), ["hash"]),
    ("capability widened", [], approval(capability_json='{"tool":"bank_pay","any_amount":true}'),
     ["capability_json"]),
    ("presentation respelled, same value", [], approval(presentation_json='{ "summary" : "pay kim 7" }'), []),
    ("moved to another step", [], approval(step_id="s2"), ["step_id"]),
]


@pytest.mark.parametrize(("later", "found_row", "expected"), [c[1:] for c in APPROVAL_CASES],
                         ids=[c[0] for c in APPROVAL_CASES])
def test_an_approvals_row_agrees_only_with_its_request_and_decisions(
        later: list[Any], found_row: Approval, expected: list[str]) -> None:
    replay = chain(created(), STARTED, requested(), *later)
    assert [m.column for m in replay.check_approval(found_row)] == expected


def test_an_approval_whose_request_no_longer_hashes_to_the_recorded_hash_is_found() -> None:
    replay = Replay(approval_hash=lambda a: "abc" if a.request_json == "{}" else "f00d")
    for seq, (run_id, step_id, type_, payload) in enumerate([created(), STARTED, requested()], start=1):
        replay.feed(Event(seq, run_id, step_id, AT.format(seq), type_, json.dumps(payload), "h"))
    assert replay.check_approval(approval()) == []
    (m,) = replay.check_approval(approval(request_json='{"amount":7000}'))
    assert (m.column, m.found) == ("request_json", "a request hashing to f00d…")


def test_an_approval_no_event_requested_is_unexplained_and_a_requested_one_without_a_row_is_missing() -> None:
    replay = chain(created(), STARTED, requested())
    assert columns(replay.check_approval(approval(id="a2"))) == [("approvals", "a2", "")]
    assert columns(list(replay.missing())) == [("runs", "r1", ""), ("approvals", "a1", "")]


# --------------------------------------------------------------------------- proxy_calls

def test_a_call_row_the_chain_records_agrees_and_a_missing_one_is_named() -> None:
    claimed = row()
    replay = chain(created("r1", claimed), STARTED, TOOL_STARTED, PAID, finished())
    assert replay.check_calls([row(outcome=2)]) == []
    replay = chain(created("r1", claimed), STARTED, TOOL_STARTED, PAID, finished())
    replay.check_run("r1", "COMPLETED", "goal_completed", "", 1, AT.format(5))
    (m,) = replay.missing()
    assert m.text() == ("proxy_calls 1 (run r1): no row; the chain says the proxy began this run for a call "
                        "of bank_pay at seq 1")


@pytest.mark.parametrize(("changed", "column"), [
    ({"key": "k2"}, "request_key"), ({"tool": "bank_balance"}, "tool"), ({"id_": 7}, "id"),
    ({"created_at": 5}, "created_at")])
def test_a_call_row_whose_identity_changed_is_found(changed: dict[str, Any], column: str) -> None:
    replay = chain(created("r1", row()), STARTED, finished())
    assert column in [m.column for m in replay.check_calls([row(**changed)])]


OUTCOME_CASES = [
    # (the run's events after step.started, the row's outcome, contradicted?)
    ("paid, known", [TOOL_STARTED, PAID, finished()], 2, False),
    ("paid, forged none", [TOOL_STARTED, PAID, finished()], 1, True),
    ("paid, unseen", [TOOL_STARTED, PAID, finished()], 0, False),
    ("declined, known", [TOOL_STARTED, ERRED, finished(status="FAILED", reason="goal_failed")], 2, False),
    ("an older chain's error, none (it may not have been sent)", [TOOL_STARTED, ERRED, finished(status="FAILED")],
     1, False),
    ("never sent, none", [TOOL_STARTED, erred("not_sent"), finished(status="FAILED")], 1, False),
    ("timed out, forged none", [TOOL_STARTED, erred("timeout"), finished(status="FAILED")], 1, True),
    ("timed out, unknown", [TOOL_STARTED, erred("timeout"), finished(status="FAILED")], 3, False),
    ("declined by the server, forged none", [TOOL_STARTED, erred("error"), finished(status="FAILED")], 1, True),
    ("cancelled while running, forged none", [TOOL_STARTED, erred("cancelled"), finished(status="FAILED")], 1, True),
    ("declined, unknown (no answer)", [TOOL_STARTED, ERRED, finished(status="FAILED")], 3, False),
    ("cut off, unknown", [TOOL_STARTED, ("r1", "s1", "step.interrupted", {"previous_status": "executing"}),
                          finished(status="FAILED")], 3, False),
    ("cut off, forged known", [TOOL_STARTED, ("r1", "s1", "step.interrupted", {"previous_status": "executing"}),
                               finished(status="FAILED")], 2, True),
    ("denied, none", [finished(status="FAILED", reason="goal_failed")], 1, False),
    ("denied, forged unknown", [finished(status="FAILED", reason="goal_failed")], 3, True),
    ("asked about an interruption, unknown", [requested(kind="interrupted_side_effect"), decided("rejected"),
                                              finished(status="CANCELLED", reason="approval_rejected")], 3, False),
    ("still running, settled", [TOOL_STARTED], 2, True),
    ("waiting, settled none", [requested()], 1, True),
    ("late result after a cancel, none", [TOOL_STARTED, finished(status="CANCELLED", reason="operator_cancelled"),
                                          ("r1", "s1", "step.tool_finished", {"tool": "bank_pay", "late": True,
                                                                              "summary": "paid"})], 1, False),
    ("no such outcome", [finished()], 9, True),
]


@pytest.mark.parametrize(("events", "outcome", "contradicted"), [c[1:] for c in OUTCOME_CASES],
                         ids=[c[0] for c in OUTCOME_CASES])
def test_a_call_rows_cached_outcome_must_be_one_its_runs_events_allow(
        events: list[Any], outcome: int, contradicted: bool) -> None:
    replay = chain(created("r1", row()), STARTED, *events)
    found = replay.check_calls([row(outcome=outcome)])
    assert [m.column for m in found] == (["outcome"] if contradicted else [])


def test_of_one_requests_rows_only_the_newest_is_open_and_each_older_closed_when_the_next_was_claimed() -> None:
    first, second = row("r1", id_=1, open_=0, closed_at=200, created_at=100), row("r2", id_=2, created_at=200)
    events = [created("r1", first), finished("r1", steps=0), created("r2", second)]
    assert chain(*events).check_calls([first, second]) == []
    reopened = row("r1", id_=1, open_=1, closed_at=200, created_at=100)
    assert columns(chain(*events).check_calls([reopened, second])) == [("proxy_calls", "1 (run r1)", "open")]
    hidden = row("r1", id_=1, open_=0, closed_at=5, created_at=100)  # closed before the window looked
    assert columns(chain(*events).check_calls([hidden, second])) == [("proxy_calls", "1 (run r1)", "closed_at")]
    shut = row("r2", id_=2, open_=0, created_at=200)
    assert columns(chain(*events).check_calls([first, shut])) == [("proxy_calls", "2 (run r2)", "open")]


def test_the_failure_a_request_never_sent_records_is_the_one_the_replay_knows() -> None:
    assert replay_module.NOT_SENT == attempts.NOT_SENT


def test_a_row_of_a_run_begun_before_the_chain_named_calls_is_counted_not_failed() -> None:
    replay = chain(created("r1"), STARTED, TOOL_STARTED, PAID, finished())
    assert replay.check_calls([row(outcome=2)]) == [] and replay.unverified_calls == 1
    assert [m.column for m in replay.check_calls([row(key="k2", outcome=1)])] == ["outcome"]  # still held


def test_a_row_whose_run_never_began_says_nothing_ran_and_may_say_nothing_else() -> None:
    replay = chain()
    assert replay.check_calls([row("r5", outcome=1)]) == [] and replay.unbegun_calls == 1
    assert [m.column for m in replay.check_calls([row("r6", key="k2", outcome=3)])] == ["outcome"]
