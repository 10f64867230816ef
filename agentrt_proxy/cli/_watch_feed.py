"""What ``watch`` sees change: new waiting approvals and decisions, read by polling.

The database is opened read-only once and asked for its chain head every poll; only when the
head moved are the new events read. Every change that matters to the operator is an event
(``approval.requested``, ``approval.decided``, ``run.finished``), so the head is the one cheap
question that says whether anything happened.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from agentrt_proxy.canonical import durations
from agentrt_proxy.canonical.encoder import go_json
from agentrt_proxy.cli import _operator_views as views
from agentrt_proxy.store import Approval, Event, NotFound, Store, events_after, pending_approvals
from agentrt_proxy.text import escaping

POLL_SECONDS = 0.1  # well inside the half second the operator is promised
SUMMARY_BYTES = 80
RECENT = 20


# what an inbox change is (InboxChange.kind): not an approval's status
CHANGE_WAITING = "waiting"
CHANGE_DECIDED = "decided"


@dataclass(frozen=True)
class InboxChange:
    """One thing the operator is told: an approval now waits, or one was decided."""

    kind: str  # CHANGE_WAITING or CHANGE_DECIDED
    approval: Approval


@dataclass
class Feed:
    store: Store
    after_seq: int = 0
    seen: set[str] = field(default_factory=set)
    recent: list[Event] = field(default_factory=list)  # the last run.finished / approval.decided
    started: bool = False

    def poll(self) -> list[InboxChange]:
        """The changes since the last poll; the first poll reports every approval waiting now."""
        if not self.started:
            self.started = True
            self.after_seq = self.store.chain_head()[0]
            out = [InboxChange(CHANGE_WAITING, a) for a in pending_approvals(self.store)]
            self.seen.update(c.approval.id for c in out)
            return out
        if self.store.chain_head()[0] <= self.after_seq:
            return []
        changes: list[InboxChange] = []
        while True:
            page = events_after(self.store, self.after_seq)
            for ev in page:
                changes += self._changes_of(ev)
                self.after_seq = ev.seq
            if len(page) < 500:
                return changes

    def _changes_of(self, ev: Event) -> list[InboxChange]:
        if ev.type in ("approval.decided", "run.finished"):
            self.recent = [*self.recent, ev][-RECENT:]
        if ev.type not in ("approval.requested", "approval.decided"):
            return []
        payload = views.loads(ev.payload_json)
        approval_id = payload.get("approval_id") if isinstance(payload, dict) else None
        if not isinstance(approval_id, str):
            return []
        try:
            approval = self.store.get_approval(approval_id)
        except NotFound:
            return []
        if ev.type == "approval.requested":
            if approval_id in self.seen:
                return []
            self.seen.add(approval_id)
            return [InboxChange(CHANGE_WAITING, approval)]
        return [InboxChange(CHANGE_DECIDED, approval)]

    def waiting(self) -> list[Approval]:
        return pending_approvals(self.store)


def summary(approval: Approval, limit: int = SUMMARY_BYTES) -> str:
    """The arguments in short: each field's name and the start of its value, bounded."""
    request = views.loads(approval.request_json)
    args = request.get("args") if isinstance(request, dict) else None
    if not isinstance(args, dict):
        return ""
    parts = []
    for key, value in args.items():
        shown = value if isinstance(value, str) else go_json(value)
        parts.append(f"{key}={escaping.clean(str(shown), 24)}")
    return escaping.clean(" ".join(parts), limit)


def waited(approval: Approval, now_ns: int | None = None) -> str:
    """How long it has waited, in whole seconds or minutes (a screen's cell, not a record)."""
    try:
        since = durations.parse_time(approval.created_at)
    except (ValueError, TypeError):
        return "?"
    seconds = max(0, ((now_ns if now_ns is not None else time.time_ns()) - since) // 1_000_000_000)
    if seconds < 120:
        return f"{seconds}s"
    if seconds < 7200:
        return f"{seconds // 60}m"
    return f"{seconds // 3600}h"


def change_json(change: InboxChange, database: str) -> dict[str, Any]:
    """One JSON line of ``watch -json``: the approval's fields a script needs to act on it."""
    a = change.approval
    out: dict[str, Any] = {
        "event": change.kind,
        "approval_id": a.id,
        "run_id": a.run_id,
        "kind": a.kind,
        "tool": views.approval_tool(a),
        "status": a.status,
        "summary": summary(a),
        "created_at": a.created_at,
        "hash": a.hash,
        "database": database,
    }
    if a.expires_at:
        out["expires_at"] = a.expires_at
    if change.kind == CHANGE_DECIDED:
        out.update({"decided_at": a.decided_at, "decided_by": a.decided_by, "note": a.note})
    return out
