"""One call's progress toward its host: the hold's and the server's merged, strictly increasing,
under the host's own token, in order, and only while the host waits."""

from __future__ import annotations

import itertools
import math
from typing import Any

import anyio
import pytest
from hypothesis import given
from hypothesis import strategies as st

from agentrt_proxy.mcp import CallContext
from agentrt_proxy.proxy._progress import HOLD, UPSTREAM, ProgressMerge, ProgressRelay, ProgressStep
from tests.waiting import until


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def merged(*reports: tuple[str, float, float | None]) -> list[ProgressStep | None]:
    merge = ProgressMerge()
    return [merge.step(source, value, total, None) for source, value, total in reports]


def test_a_server_alone_reaches_the_host_as_it_sent_its_steps() -> None:
    steps = merged(*[(UPSTREAM, float(i), 5.0) for i in range(1, 6)])
    assert steps == [ProgressStep(i, 5, None) for i in range(1, 6)]
    assert all(isinstance(s.progress, int) for s in steps if s)  # 1, not 1.0, on the wire


def test_the_servers_steps_after_a_hold_continue_after_the_holds_last_value() -> None:
    steps = merged((HOLD, 1.0, 60.0), (HOLD, 2.5, 60.0), (UPSTREAM, 1.0, 5.0), (UPSTREAM, 5.0, 5.0))
    assert steps == [
        ProgressStep(1, 60, None),
        ProgressStep(2.5, 60, None),
        ProgressStep(3.5, 7.5, None),
        ProgressStep(7.5, 7.5, None),
    ]


def test_a_server_starting_above_the_hold_keeps_its_own_scale() -> None:
    steps = merged((HOLD, 1.0, 60.0), (UPSTREAM, 40.0, 100.0), (UPSTREAM, 41.0, 100.0))
    assert steps == [ProgressStep(1, 60, None), ProgressStep(40, 100, None), ProgressStep(41, 100, None)]


def test_a_server_repeating_or_going_back_is_sent_the_smallest_increase() -> None:
    steps = merged((UPSTREAM, 3.0, 5.0), (UPSTREAM, 3.0, 5.0), (UPSTREAM, 1.0, 5.0))
    after_three = math.nextafter(3.0, math.inf)
    assert steps == [
        ProgressStep(3, 5, None),
        ProgressStep(after_three, 5, None),
        ProgressStep(math.nextafter(after_three, math.inf), 5, None),
    ]


def test_a_total_below_the_value_sent_is_left_out() -> None:
    assert merged((UPSTREAM, 5.0, 5.0), (UPSTREAM, 5.0, 5.0), (UPSTREAM, 9.0, 4.0)) == [
        ProgressStep(5, 5, None),
        ProgressStep(math.nextafter(5.0, math.inf), None, None),
        ProgressStep(9, None, None),
    ]


def test_a_value_that_is_not_finite_is_dropped_and_a_total_that_is_not_is_left_out() -> None:
    assert merged((UPSTREAM, math.inf, 5.0), (UPSTREAM, math.nan, None), (UPSTREAM, 1.0, math.inf)) == [
        None,
        None,
        ProgressStep(1, None, None),
    ]


def test_the_servers_message_passes_as_it_came() -> None:
    assert ProgressMerge().step(UPSTREAM, 1.0, None, "copying <b>") == ProgressStep(1, None, "copying <b>")


reports = st.lists(
    st.tuples(
        st.sampled_from([HOLD, UPSTREAM]),
        st.floats(min_value=-1e9, max_value=1e9, allow_nan=False),
        st.none() | st.floats(allow_nan=False, allow_infinity=True),
    ),
    max_size=40,
)


@given(reports)
def test_whatever_the_sources_report_the_host_sees_strictly_increasing_values(got: list[Any]) -> None:
    sent = [step for step in merged(*got) if step is not None]
    values = [step.progress for step in sent]
    assert all(a < b for a, b in itertools.pairwise(values))
    assert all(step.total is None or step.total >= step.progress for step in sent)
    assert len(sent) == len(got)  # every finite report reaches the host


class Session:
    """What a CallContext sends through: the host's messages, counted."""

    def __init__(self) -> None:
        self.sent: list[dict[str, Any]] = []
        self.gate = anyio.Event()
        self.gate.set()

    async def send(self, message: Any) -> None:
        await self.gate.wait()
        self.sent.append(message)


def context(token: str | int | None) -> tuple[CallContext, Session]:
    session = Session()
    ctx = CallContext(request_id=7, progress_token=token, meta={}, protocol_version="2025-06-18",
                      _session=session)  # type: ignore[arg-type]  # fmt: skip
    return ctx, session


@pytest.mark.anyio
async def test_the_relay_sends_every_step_under_the_hosts_token_before_the_answer() -> None:
    ctx, session = context("host-token")
    relay = ProgressRelay(ctx)
    session.gate = anyio.Event()  # the host's writer is slow: the steps queue

    async def body() -> str:
        on_progress = relay.upstream()
        assert on_progress is not None
        for i in range(1, 4):
            on_progress(float(i), 3.0, None)  # as the wire's reader calls it: sync, never waiting
        session.gate.set()
        return "answer"

    async with relay.relaying():
        answer = await body()
    assert answer == "answer"
    assert [m["params"] for m in session.sent] == [
        {"progressToken": "host-token", "progress": i, "total": 3} for i in range(1, 4)
    ]
    assert all(m["method"] == "notifications/progress" for m in session.sent)


@pytest.mark.anyio
async def test_a_host_that_asked_for_no_progress_gets_none_and_the_server_is_asked_for_none() -> None:
    ctx, session = context(None)
    relay = ProgressRelay(ctx)

    async def body() -> None:
        assert relay.upstream() is None
        relay.hold(1.0, 10.0, "waiting")

    async with relay.relaying():
        await body()
    assert session.sent == []


@pytest.mark.anyio
async def test_nothing_is_sent_once_the_host_cancelled_or_the_call_answered() -> None:
    ctx, session = context(1)
    relay = ProgressRelay(ctx)
    on_progress = relay.upstream()
    assert on_progress is not None

    async def body() -> None:
        on_progress(1.0, None, None)
        await until("the first step written", lambda: len(session.sent) == 1)
        ctx.cancelled.set()
        on_progress(2.0, None, None)

    async with relay.relaying():
        await body()
    on_progress(3.0, None, None)  # after the answer: dropped
    await anyio.wait_all_tasks_blocked()  # anything still able to send has sent by now
    assert [m["params"]["progress"] for m in session.sent] == [1]


@pytest.mark.anyio
async def test_a_failure_in_the_call_comes_out_as_itself_not_wrapped() -> None:
    ctx, _session = context(1)

    async def body() -> None:
        raise LookupError("the call's own failure")

    with pytest.raises(LookupError, match="the call's own failure"):
        async with ProgressRelay(ctx).relaying():
            await body()
