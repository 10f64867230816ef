"""The event hash (runtime-core §8.1) against its definition: SHA-256 over seven netstrings,
each the decimal byte length of the stored UTF-8 text, a colon, the bytes, a comma."""

from __future__ import annotations

import hashlib

import pytest

from agentrt_proxy.store._chain import chain_hash


def netstrings_hash(*parts: str) -> str:
    data = b"".join(str(len(b)).encode() + b":" + b + b"," for b in (part.encode("utf-8") for part in parts))
    return hashlib.sha256(data).hexdigest()


HEAD = "9f" * 32
AT = "2026-12-02T07:00:00.123456789Z"

CASES = [
    # (what it shows, prev, seq, run_id, step_id, at, type, payload)
    ("the first event: an empty previous hash", "", 1, "r-1", "", AT, "run.created", '{"goal":"g"}'),
    ("an ASCII event after another", HEAD, 123456, "r-1", "s-1", AT, "step.policy", '{"outcome":"allow"}'),
    ("an empty payload stored as {}", HEAD, 7, "r-1", "", AT, "run.started", "{}"),
    ("a payload outside ASCII: lengths count bytes", HEAD, 8, "r-1", "s-1", AT, "step.decided", '{"text":"café ✓ 🎉"}'),
    ("a run id outside ASCII", HEAD, 9, "rün", "s-1", AT, "step.started", "{}"),
    ("a step id outside ASCII", HEAD, 10, "r-1", "ßtep", AT, "step.started", "{}"),
    ("a type outside ASCII", HEAD, 11, "r-1", "s-1", AT, "stép", "{}"),
    ("a previous hash outside ASCII (a damaged row)", "é" + HEAD[1:], 12, "r-1", "s-1", AT, "step.started", "{}"),
    ("a time outside ASCII (a damaged row)", HEAD, 13, "r-1", "s-1", AT + "é", "step.started", "{}"),
    ("a part holding the separators", HEAD, 14, "r:1,", "s,1:", AT, "x", '{"a":"1:2,3"}'),
]


@pytest.mark.parametrize(("prev", "seq", "run_id", "step_id", "at", "type_", "payload"),
                         [case[1:] for case in CASES], ids=[case[0] for case in CASES])
def test_an_events_hash_is_sha256_over_seven_netstrings_of_its_stored_bytes(
    prev: str, seq: int, run_id: str, step_id: str, at: str, type_: str, payload: str
) -> None:
    assert chain_hash(prev, seq, run_id, step_id, at, type_, payload) == netstrings_hash(
        prev, str(seq), run_id, step_id, at, type_, payload
    )


def test_moving_a_character_between_two_parts_changes_the_hash() -> None:
    # The lengths are what keep ("ab", "c") apart from ("a", "bc").
    assert chain_hash(HEAD, 1, "ab", "c", AT, "t", "{}") != chain_hash(HEAD, 1, "a", "bc", AT, "t", "{}")
