"""Ids: the runtime's 32-hex ids and the proxy's run ids lead with their creation time, so
new rows land at the end of the indexes keyed by them (docs/decisions/0008); the rest is
random, and the lease owner is random only."""

from __future__ import annotations

import itertools
import re
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from agentrt_proxy.gate import Gate, ProxyPolicy
from agentrt_proxy.store import Store, new_id, new_run_id
from tests.gate_fixtures import FakeClock, make_gate

HEX32 = re.compile(r"[0-9a-f]{32}")
RUN_ID = re.compile(r"test\.[0-9a-f]{16}")


def now_ms() -> int:
    return time.time_ns() // 1_000_000


def test_an_id_is_32_lowercase_hex_led_by_the_milliseconds_it_was_made_in() -> None:
    before = now_ms()
    made = new_id()
    after = now_ms()
    assert HEX32.fullmatch(made), made
    assert before <= int(made[:12], 16) <= after


def test_a_run_id_is_the_session_and_16_lowercase_hex_led_by_its_milliseconds() -> None:
    before = now_ms()
    made = new_run_id("test")
    after = now_ms()
    assert RUN_ID.fullmatch(made), made
    assert before % 2**40 <= int(made[5:15], 16) <= after % 2**40


@pytest.mark.parametrize("make", [new_id, lambda: new_run_id("test")], ids=["id", "run id"])
def test_ids_made_in_later_milliseconds_sort_later(make: Callable[[], str]) -> None:
    by_ms: dict[int, list[str]] = {}
    while len(by_ms) < 4:  # ids from at least four milliseconds, several in each
        before, made, after = now_ms(), make(), now_ms()
        if before == after:  # made in a known millisecond
            by_ms.setdefault(before, []).append(made)
    groups = [by_ms[ms] for ms in sorted(by_ms)]
    for earlier, later in itertools.pairwise(groups):
        assert max(earlier) < min(later), (earlier, later)


def test_the_time_prefix_is_zero_padded_so_text_order_is_time_order() -> None:
    times = [0, 1, 0xFFF, 0x1000, 0xFFFFFFFF, 0x100000000, 1_760_000_000_000]
    assert [new_id(ms)[:12] for ms in times] == [f"{ms:012x}" for ms in times]
    assert sorted(times, key=new_id) == times
    assert sorted(times, key=lambda ms: new_run_id("s", ms)) == times
    assert new_run_id("s", 2**40 + 5)[2:12] == "0000000005"  # ms modulo 2**40: 34 years before it wraps


def test_ids_made_in_the_same_millisecond_differ() -> None:
    assert len({new_id(1_760_000_000_000) for _ in range(10_000)}) == 10_000
    run_ids = {new_run_id("test", 1_760_000_000_000) for _ in range(100)}
    assert len(run_ids) == 100  # 24 random bits: a collision among 100 has odds ~3e-4 (and is retried)


def test_two_gates_made_in_the_same_millisecond_have_different_owners(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = Store.open(str(tmp_path / "gate.db"))
    try:
        frozen = time.time_ns()
        monkeypatch.setattr(time, "time_ns", lambda: frozen)  # the wall clock, everywhere
        first, second = make_gate(store, FakeClock()), make_gate(store, FakeClock())
        policy = ProxyPolicy({}, {}, "agentrt-proxy/sha256:test")
        unnamed = [Gate(store, policy, [], clock=FakeClock()) for _ in range(2)]
        monkeypatch.undo()
    finally:
        store.close()
    prefix = new_id(frozen // 1_000_000)[:12]
    owners = [first.owner, second.owner]
    assert all(re.fullmatch(r"agentrt-proxy:test/[0-9a-f]{12}", owner) for owner in owners), owners
    assert owners[0] != owners[1]
    assert all(not owner.endswith(prefix) for owner in owners)  # random bits, never the time
    assert all(HEX32.fullmatch(g.owner) and not g.owner.startswith(prefix) for g in unnamed)
    assert unnamed[0].owner != unnamed[1].owner
