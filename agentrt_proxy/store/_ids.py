"""Ids: the runtime's 32-hex ids and the proxy's run ids, led by the time they were made."""

from __future__ import annotations

import secrets

from agentrt_proxy.canonical.clock import WALL


def new_id(ms: int | None = None) -> str:
    """32 lowercase hex characters, the runtime's id form: 12 of the milliseconds since the
    Unix epoch (``ms``, else now by the wall clock), then 20 random (80 bits). The time first
    makes new rows land at the right edge of every index keyed by id (docs/decisions/0008);
    the random part alone keeps ids unguessable and apart."""
    if ms is None:
        ms = WALL.now_ns() // 1_000_000
    return f"{ms % (1 << 48):012x}{secrets.token_hex(10)}"


def new_run_id(session: str, ms: int | None = None) -> str:
    """A proxy run's id, ``<session>.<16 lowercase hex>``: 10 of the milliseconds since the
    Unix epoch modulo 2**40 (``ms``, else now by the wall clock), then 6 random (24 bits).
    Two calls can draw the same id in the same millisecond: the claim of the second is then
    a lost race and it draws again (``RunIdTaken``)."""
    if ms is None:
        ms = WALL.now_ns() // 1_000_000
    return f"{session}.{ms % (1 << 40):010x}{secrets.token_hex(3)}"
