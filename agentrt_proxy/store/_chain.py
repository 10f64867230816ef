"""The event hash chain's links (runtime-core §8.1, §8.2): the hash of one event, the head an
append continues from, and the check of one link. Pure but for that one read; ``Tx.append``
writes the events and ``_verify.py`` walks them.
"""

from __future__ import annotations

import hashlib
import sqlite3
from dataclasses import dataclass

from agentrt_proxy.store._rows import Event
from agentrt_proxy.text.record_text import MSG_FIRST_GAP, MSG_HASH_MISMATCH, MSG_SEQ_GAP

VERIFY_PAGE = 128  # events read per statement while walking the chain


def chain_hash(prev: str, seq: int, run_id: str, step_id: str, at: str, type_: str, payload: str) -> str:
    """The event's link: SHA-256 over seven netstrings of the stored strings (runtime-core §8.1)."""
    number = str(seq)
    if payload.isascii() and run_id.isascii() and step_id.isascii() and at.isascii() and type_.isascii() \
            and prev.isascii():
        # Every stored string ASCII (nearly every event): a character is a byte, so the netstrings
        # are written as one str and encoded once (~40 % less than one encoding a part).
        return hashlib.sha256(
            f"{len(prev)}:{prev},{len(number)}:{number},{len(run_id)}:{run_id},{len(step_id)}:{step_id},"
            f"{len(at)}:{at},{len(type_)}:{type_},{len(payload)}:{payload},".encode("ascii")
        ).hexdigest()
    buf = []
    for part in (prev, number, run_id, step_id, at, type_, payload):
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


def check_link(ev: Event, prev_seq: int, prev_hash: str, first: bool) -> ChainBreak | None:
    if ev.seq != prev_seq + 1:
        detail = MSG_FIRST_GAP.format(seq=ev.seq) if first and prev_seq == 0 else MSG_SEQ_GAP.format(
            seq=ev.seq, prev=prev_seq)
        return ChainBreak(ev.seq, str(prev_seq + 1), str(ev.seq), detail)
    expected = chain_hash(prev_hash, ev.seq, ev.run_id, ev.step_id, ev.at, ev.type, ev.payload_json)
    if expected != ev.hash:
        return ChainBreak(ev.seq, expected, ev.hash, MSG_HASH_MISMATCH)
    return None
