"""The proxy's index of its calls, from a call's point of view: a port of the original
``proxy/index_test.go`` (proxy-and-mcp-module §5.3).

The situations another process or a crash leaves behind (a row claimed whose run never
began, a run begun by another process, a call abandoned after the policy allowed it) are
built with the store's index API and a gate of the test's own on the same database; then
the call goes through the in-process proxy of ``tests/harness.py``.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from agentrt_proxy import canonical
from agentrt_proxy.gate import ALLOWED, Decision, Gate, Session, proxy_limits
from agentrt_proxy.store import OUTCOME_NONE, ClaimLost, Store
from tests.harness import DEFAULT_RULES, Harness, draw_run_ids, proxy_harness, text_of

pytestmark = pytest.mark.anyio

PAY_BOB = '{"to":"bob","amount":25}'


def key_of(tool: str, args_text: str) -> str:
    key = canonical.request_key(tool, args_text)
    assert key is not None
    return key


@contextmanager
def another_process(h: Harness) -> Iterator[tuple[Store, Gate]]:
    """A store and a gate of their own on the proxy's database, as a second proxy has."""
    store = Store.open(str(h.config.database))
    runtime = h.proxy.runtime
    gate = Gate(store, runtime.policy, [t.spec for t in runtime.opened.tools], clock=h.clock,
                reconcile=runtime.policy.reconcile, lease_owner="agentrt-proxy:test")
    try:
        yield store, gate
    finally:
        store.close()


def claim(h: Harness, store: Store, tool: str, args_text: str, run_id: str, prev: int | None = None) -> Any:
    side_effect = h.proxy.runtime.tools[tool].side_effect
    return store.index.claim("test", key_of(tool, args_text), tool, side_effect, run_id, prev,
                             h.clock.now_ns())


def begin(h: Harness, gate: Gate, run_id: str, tool: str) -> Session:
    return gate.begin(run_id, f"call {tool}", proxy_limits(h.config.approval_ttl, h.config.grant_ttl))


def pending_run(h: Harness, text: str) -> str:
    match = re.search(r"\(approval ([0-9a-f]+)\)", text)
    assert match, text
    return next(a.run_id for a in h.approvals() if a.id == match.group(1))


def settled(h: Harness) -> bool:
    return all(r.status in ("COMPLETED", "FAILED", "CANCELLED", "WAITING_FOR_APPROVAL") for r in h.runs())


# TestIndex_RowWithoutARunIsBegunUnderItsID
async def test_a_row_without_a_run_is_begun_under_its_id(tmp_path: Path) -> None:
    async with proxy_harness(tmp_path) as h:
        await h.client.list_tools()  # the database is open
        with another_process(h) as (store, _):
            claim(h, store, "bank_pay", PAY_BOB, "test.never-begun")
            result = await h.raw_call("bank_pay", PAY_BOB)
            assert text_of(result).startswith("PENDING_APPROVAL:")
            assert pending_run(h, text_of(result)) == "test.never-begun"
            assert [r.id for r in h.runs()] == ["test.never-begun"]
            row = store.index.by_run("test.never-begun")
            assert row is not None and row.open == 1
            key = key_of("bank_pay", PAY_BOB)
            assert [r.run_id for r in store.index.for_key("test", key, 0)] == ["test.never-begun"]
        assert h.payments() == 0


# TestIndex_OneCallBeginsARow
async def test_one_call_begins_a_row(tmp_path: Path) -> None:
    async with proxy_harness(tmp_path) as h:
        await h.client.list_tools()
        with another_process(h) as (store, gate):
            row = claim(h, store, "bank_pay", PAY_BOB, "test.first")
            session = begin(h, gate, "test.first", "bank_pay")
            try:
                with pytest.raises(Exception):  # noqa: B017 - the run exists: a second Begin fails
                    begin(h, gate, "test.first", "bank_pay")
                with another_process(h) as (_, other_gate), pytest.raises(Exception):  # noqa: B017
                    begin(h, other_gate, "test.first", "bank_pay")
                result = await h.raw_call("bank_pay", PAY_BOB)
                assert text_of(result).startswith("IN_PROGRESS:"), text_of(result)
                assert len(h.runs()) == 1
                with pytest.raises(ClaimLost):  # a claim from a stale read: the open row is not None
                    claim(h, store, "bank_pay", PAY_BOB, "test.second", None)
                with pytest.raises(ClaimLost):
                    claim(h, store, "bank_pay", PAY_BOB, "test.third", row.id + 1000)
                assert len(h.runs()) == 1
            finally:
                session.close()
        assert h.payments() == 0


# TestIndex_ALateBeginLeavesNoRunBehind
async def test_a_late_begin_leaves_no_run_behind(tmp_path: Path) -> None:
    async with proxy_harness(tmp_path) as h:
        await h.client.list_tools()
        with another_process(h) as (store, gate):
            claim(h, store, "bank_pay", PAY_BOB, "test.stalled")
            first = await h.raw_call("bank_pay", PAY_BOB)
            assert text_of(first).startswith("PENDING_APPROVAL:")
            assert pending_run(h, text_of(first)) == "test.stalled"
            with pytest.raises(Exception):  # noqa: B017 - the stalled process's Begin comes too late
                begin(h, gate, "test.stalled", "bank_pay")
            again = await h.raw_call("bank_pay", PAY_BOB)
            assert text_of(again).startswith("PENDING_APPROVAL:")
            assert pending_run(h, text_of(again)) == "test.stalled"
        assert len(h.runs()) == 1
        assert len(h.approvals()) == 1
        assert settled(h)
        assert h.payments() == 0


# TestIndex_RowWithoutARunIsSettledWhenFound
async def test_a_row_without_a_run_is_settled_when_found(tmp_path: Path) -> None:
    async with proxy_harness(tmp_path) as h:
        await h.client.list_tools()
        with another_process(h) as (store, _):
            claim(h, store, "bank_pay", PAY_BOB, "test.empty")
            other = await h.raw_call("bank_pay", '{"to":"carol","amount":3}')
            assert text_of(other).startswith("PENDING_APPROVAL:")
            row = store.index.by_run("test.empty")
            assert row is not None
            assert row.outcome == OUTCOME_NONE
            assert row.settled_at != 0
            assert "test.empty" not in [r.run_id for r in store.index.unsettled("test")]

            own = await h.raw_call("bank_pay", PAY_BOB)
            assert text_of(own).startswith("PENDING_APPROVAL:")
            assert pending_run(h, text_of(own)) == "test.empty"
            row = store.index.by_run("test.empty")
            assert row is not None
            assert (row.settled_at, row.outcome) == (0, 0)
            assert "test.empty" in [r.run_id for r in store.index.unsettled("test")]
        assert len(h.runs()) == 2
        assert h.payments() == 0


# TestProxy_AbandonedCallIsEndedAndRunFresh
async def test_an_abandoned_call_is_ended_and_run_fresh(tmp_path: Path) -> None:
    args = '{"account":"A-1"}'
    async with proxy_harness(tmp_path) as h:
        await h.client.list_tools()
        with another_process(h) as (store, gate):
            claim(h, store, "bank_balance", args, "test.abandoned")
            session = begin(h, gate, "test.abandoned", "bank_balance")
            assert session.step() is not None
            verdict = session.propose(Decision(kind="tool_call", tool="bank_balance", args=args, origin="model"))
            assert verdict.outcome == ALLOWED
            session.close()  # the lease released, the tool never called
        result = await h.raw_call("bank_balance", args)
        assert text_of(result) == "account A-1 holds 120.00 EUR"
        runs = h.runs()
        assert len(runs) == 2
        old = next(r for r in runs if r.id == "test.abandoned")
        assert old.status == "FAILED"
        store = h.store()
        try:
            messages = [s.decision_json for s in store.steps_of(old.id)]
        finally:
            store.close()
        assert any("taken over after an interruption" in m for m in messages), messages
        assert next(r for r in runs if r.id != "test.abandoned").status == "COMPLETED"
        assert settled(h)



async def test_a_call_that_draws_a_taken_run_id_draws_another_and_runs_once(tmp_path: Path) -> None:
    rules = {**DEFAULT_RULES, "pay": {**DEFAULT_RULES["pay"], "outcome": "allow"}}
    async with proxy_harness(tmp_path, rules=rules) as h:
        await h.client.list_tools()
        taken, fresh = "test.0000000001aaaaaa", "test.0000000002bbbbbb"
        drawn = draw_run_ids(h, [taken, taken, fresh])
        first = await h.raw_call("bank_pay", PAY_BOB)
        second = await h.raw_call("bank_pay", '{"to":"carol","amount":30}')
        assert text_of(first) == "paid 25.00 to bob", text_of(first)
        assert text_of(second) == "paid 30.00 to carol", text_of(second)
        assert drawn == [taken, taken, fresh]
        assert sorted((r.id, r.status) for r in h.runs()) == [(taken, "COMPLETED"), (fresh, "COMPLETED")]
        assert h.payments() == 2
        assert settled(h)
        assert not [line for line in h.stderr if "error:" in line], h.stderr  # a lost race logs nothing


async def test_a_call_that_draws_the_id_of_a_run_outside_the_index_draws_another(tmp_path: Path) -> None:
    async with proxy_harness(tmp_path) as h:
        await h.client.list_tools()
        taken, fresh = "test.0000000001aaaaaa", "test.0000000002bbbbbb"
        with another_process(h) as (_, gate):
            begin(h, gate, taken, "bank_balance").close()  # a run with no row in the index
        drawn = draw_run_ids(h, [taken, fresh])
        result = await h.raw_call("bank_balance", '{"account":"A-1"}')
        assert text_of(result) == "account A-1 holds 120.00 EUR"
        assert drawn == [taken, fresh]
        assert sorted(r.id for r in h.runs()) == [taken, fresh]
        store = h.store()
        try:
            assert store.index.by_run(taken) is None
            row = store.index.by_run(fresh)
            assert row is not None and row.tool == "bank_balance"
        finally:
            store.close()
