"""The operator's read queries: a window of runs, a run's events a page at a time, the payloads
of one kind of event, and the reason an approval was asked for.

The commands that print (``runs``, ``show``, ``approve``, the console, ``watch``) call these and
only format what they return. Each runs on any open store, read-only included, and reads in
pages so a long run never sits in memory whole.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from agentrt_proxy.store._rows import Approval, Event, RunSummary
from agentrt_proxy.store._store import Store

PAGE = 500
APPROVAL_REQUESTED = "approval.requested"  # the event transitions.request_approval appends


def runs_window(store: Store, limit: int, offset: int, page_size: int = PAGE) -> list[RunSummary]:
    """``limit`` runs from ``offset`` (0 = all of them), newest first, read ``page_size`` at a time."""
    out: list[RunSummary] = []
    while limit == 0 or len(out) < limit:
        want = page_size if limit == 0 else min(page_size, limit - len(out))
        page = store.list_runs(want, offset + len(out))
        out += page
        if len(page) < want:
            break
    return out


def run_event_pages(store: Store, run_id: str, page_size: int = PAGE) -> Iterator[list[Event]]:
    """The run's events in seq order, one page at a time (the last page may be empty)."""
    after = 0
    while True:
        page = store.events_of(run_id, after, page_size)
        yield page
        if len(page) < page_size:
            return
        after = page[-1].seq


def event_payloads(store: Store, run_id: str, event_type: str, step_id: str = "") -> Iterator[dict[str, Any]]:
    """The object payloads of the run's events of one type (of one step, when named), in order;
    a payload that is not a JSON object is passed over."""
    for page in run_event_pages(store, run_id):
        for event in page:
            if event.type == event_type and (not step_id or event.step_id == step_id):
                payload = _object(event.payload_json)
                if payload is not None:
                    yield payload


def approval_reason(store: Store, approval: Approval) -> str:
    """The policy's reason, from the approval.requested event that asked; "" when none says."""
    for payload in event_payloads(store, approval.run_id, APPROVAL_REQUESTED):
        if payload.get("approval_id") == approval.id:
            return str(payload.get("reason", ""))
    return ""


def _object(text: str) -> dict[str, Any] | None:
    try:
        value = json.loads(text) if text else None
    except ValueError:
        return None
    return value if isinstance(value, dict) else None
