"""Walking the event chain (runtime-core §8.3): the report, the head, and the walk from one
seq to another that stops at the first break. Each link is checked by ``chain.check_link``;
the state rows are held to the walked chain by ``state_check`` (its report rides on this one).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from agentrt_proxy.store._chain import VERIFY_PAGE, ChainBreak, check_link
from agentrt_proxy.store._rows import EVENT_COLS, Event
from agentrt_proxy.store._state_check import StateReport
from agentrt_proxy.store._transactions import Database


@dataclass
class VerifyReport:
    head_seq: int
    head_hash: str
    from_seq: int
    to_seq: int
    checked: int
    hash: str
    brk: ChainBreak | None
    to_reached: bool
    kept_head_found: bool | None = None
    kept_head_matches: bool | None = None
    state: StateReport | None = None  # the state rows held against the chain, when they were
    state_skipped: str = ""  # why they were not: "range" (not the whole chain) or "broken"

    @property
    def intact(self) -> bool:
        return (
            self.brk is None
            and self.to_reached
            and self.kept_head_matches is not False
            and (self.state is None or self.state.agrees)
        )


def read_head(db: Database) -> tuple[int, str]:
    """The last event's (seq, hash); (0, "") for none."""
    with db.lock:
        row = db.conn.execute("SELECT seq, hash FROM events ORDER BY seq DESC LIMIT 1").fetchone()
    return (int(row[0]), row[1]) if row else (0, "")


def read_event_hash(db: Database, seq: int) -> str | None:
    with db.lock:
        row = db.conn.execute("SELECT hash FROM events WHERE seq = ?", (seq,)).fetchone()
    return row[0] if row else None


def verify_chain(db: Database, from_seq: int = 0, to_seq: int = 0, kept: tuple[int, str] | None = None,
                 observe: Callable[[Event], None] | None = None) -> VerifyReport:
    """Walk the chain from..to (defaults: first event to the head) and stop at the first
    break (runtime-core §8.3). A ``kept`` head (seq, hash) must be reached and must still match.
    ``observe`` is handed each event whose link verified, in seq order."""
    head_seq, head_hash = read_head(db)
    last = to_seq or head_seq
    report = VerifyReport(head_seq, head_hash, from_seq, last, 0, "", None, True)
    prev_seq, prev_hash = _start(db, from_seq)
    cursor = max(from_seq, 1) - 1
    while cursor < last and report.brk is None:
        with db.lock:
            rows = db.conn.execute(
                f"SELECT {EVENT_COLS} FROM events WHERE seq > ? AND seq <= ? ORDER BY seq LIMIT {VERIFY_PAGE}",
                (cursor, last),
            ).fetchall()
        if not rows:
            break
        for r in rows:
            ev = Event(*r)
            report.brk = check_link(ev, prev_seq, prev_hash, first=(report.checked == 0 and from_seq <= 1))
            if report.brk is not None:
                break
            report.checked += 1
            if observe is not None:
                observe(ev)
            report.hash, prev_seq, prev_hash = ev.hash, ev.seq, ev.hash
            report.to_seq, cursor = ev.seq, ev.seq
    report.to_reached = report.brk is not None or not to_seq or prev_seq >= to_seq
    if kept is not None:
        found = read_event_hash(db, kept[0])
        report.kept_head_found = found is not None and kept[0] <= max(report.to_seq, 0)
        report.kept_head_matches = report.kept_head_found and found == kept[1]
    return report


def _start(db: Database, from_seq: int) -> tuple[int, str]:
    # A range not starting at 1 trusts the stored hash of the event before it.
    if from_seq <= 1:
        return 0, ""
    with db.lock:
        row = db.conn.execute(
            "SELECT seq, hash FROM events WHERE seq < ? ORDER BY seq DESC LIMIT 1", (from_seq,)
        ).fetchone()
    return (int(row[0]), row[1]) if row else (0, "")
