"""The reads behind the operator's inbox (``watch``) and the audit export: every pending
approval across runs, and the events of the whole chain from a sequence number on.

Both run on any open store, read-only included: ``watch`` polls them and never writes unless
the operator decides, ``export`` pages through them.
"""

from __future__ import annotations

from agentrt_proxy.store._rows import APPROVAL_COLS, EVENT_COLS, Approval, Event
from agentrt_proxy.store._store import Store

PAGE = 500


def pending_approvals(store: Store, limit: int = PAGE) -> list[Approval]:
    """Every pending approval, oldest first (insertion order, never time text)."""
    with store.read() as c:
        rows = c.execute(
            f"SELECT {APPROVAL_COLS} FROM approvals WHERE status = 'pending' ORDER BY rowid LIMIT ?", (limit,)
        ).fetchall()
    return [Approval(*r) for r in rows]


def events_after(store: Store, after_seq: int, limit: int = PAGE) -> list[Event]:
    """The chain's events with seq > ``after_seq``, in seq order, at most ``limit``."""
    with store.read() as c:
        rows = c.execute(
            f"SELECT {EVENT_COLS} FROM events WHERE seq > ? ORDER BY seq LIMIT ?", (after_seq, max(0, limit))
        ).fetchall()
    return [Event(*r) for r in rows]
