"""The event hash chain: each event's link, appending, and walking it (runtime-core §8).

Only reads and hashing live here; ``Tx.append`` writes the events.
"""

from __future__ import annotations

import hashlib
import sqlite3
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from agentrt_proxy.store.rows import EVENT_COLS, Event
from agentrt_proxy.text.record_text import MSG_FIRST_GAP, MSG_HASH_MISMATCH, MSG_SEQ_GAP

if TYPE_CHECKING:  # state_check.py imports this module
    from agentrt_proxy.store.state_check import StateReport


class Database(Protocol):
    """What the chain's reads need of ``transactions.Database`` (named here, not imported:
    that module imports ``tx.py``, which imports this one)."""

    @property
    def lock(self) -> AbstractContextManager[Any]: ...

    @property
    def conn(self) -> sqlite3.Connection: ...

VERIFY_PAGE = 128  # events read per statement while walking the chain


def chain_hash(prev: str, seq: int, run_id: str, step_id: str, at: str, type_: str, payload: str) -> str:
    """The event's link: SHA-256 over seven netstrings of the stored strings (runtime-core §8.1)."""
    buf = []
    for part in (prev, str(seq), run_id, step_id, at, type_, payload):
        b = part.encode("utf-8")
        buf.append(b"%d:%b," % (len(b), b))
    return hashlib.sha256(b"".join(buf)).hexdigest()  # one update: 21 cost more than the hashing


def head_for_append(c: sqlite3.Connection) -> tuple[int, str]:
    """The highest seq ever given (AUTOINCREMENT's counter, or the last event's if higher)
    and the last event's hash, in one statement (read once per transaction, runtime-core §8.2)."""
    row = c.execute(
        "SELECT (SELECT seq FROM sqlite_sequence WHERE name = 'events'), last.seq, last.hash "
        "FROM (SELECT 1) LEFT JOIN (SELECT seq, hash FROM events ORDER BY seq DESC LIMIT 1) AS last"
    ).fetchone()
    counter, last_seq, last_hash = row
    seq = max(int(counter) if counter is not None else 0, int(last_seq) if last_seq is not None else 0)
    return seq, (last_hash if last_seq is not None else "")


@dataclass
class ChainBreak:
    seq: int
    expected: str
    found: str
    detail: str


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


def check_link(ev: Event, prev_seq: int, prev_hash: str, first: bool) -> ChainBreak | None:
    if ev.seq != prev_seq + 1:
        detail = MSG_FIRST_GAP.format(seq=ev.seq) if first and prev_seq == 0 else MSG_SEQ_GAP.format(
            seq=ev.seq, prev=prev_seq)
        return ChainBreak(ev.seq, str(prev_seq + 1), str(ev.seq), detail)
    expected = chain_hash(prev_hash, ev.seq, ev.run_id, ev.step_id, ev.at, ev.type, ev.payload_json)
    if expected != ev.hash:
        return ChainBreak(ev.seq, expected, ev.hash, MSG_HASH_MISMATCH)
    return None
