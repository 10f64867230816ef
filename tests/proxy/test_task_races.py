"""Races of a task's driver (proxy/_tasks.py) with the host's ``tasks/cancel`` (_task_requests.py), made certain.

In the real program the window is a few milliseconds: the cancel rejects the approval in the
host's name, then ends the task. A driver that sees the rejection in between decides again and
hears REJECTED. Here the cancel's ending is held back while the driver's ticks go by, until the
driver has ended the task itself; the task must end ``cancelled`` all the same. The proxy runs in
process (tests/harness.py) with its tasks' pace given by hand (tests/task_ticks.py): each test
says which ticks go by and asserts on the rows they leave, not on time passing.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest

from agentrt_proxy.proxy import _tasks as proxy_tasks
from agentrt_proxy.store import ERA_2025, TASK_CANCELLED
from tests.harness import proxy_harness
from tests.task_ticks import ManualTicker

pytestmark = pytest.mark.anyio


async def bound_task(book: proxy_tasks.TaskBook, ticker: ManualTicker, tool: Any, arguments: str) -> str:
    """A 2025-11-25 task of ``arguments`` once its driver waits on the approval."""
    created = await book.create_2025(tool, arguments)
    task_id = str(created["task"]["taskId"])

    async def bound() -> bool:
        row = await anyio.to_thread.run_sync(book.store.tasks.get, task_id)
        return row is not None and bool(row.approval_id)

    await ticker.until(bound)
    return task_id


async def test_a_cancel_whose_rejection_the_driver_sees_first_still_ends_the_task_cancelled(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ticker = ManualTicker()
    async with proxy_harness(tmp_path, ticker=ticker) as h:
        book = h.proxy.runtime.tasks
        task_id = await bound_task(book, ticker, h.proxy.runtime.tools["bank_pay"], '{"to":"nina","amount":12}')
        finish = book.driver.finish
        ended_by: list[str] = []  # who called finish, in order: the cancel, then the driver
        driver_ended = anyio.Event()

        async def late_cancel(row: Any, status: str, answer: Any, message: str = "") -> None:
            if not ended_by and status == TASK_CANCELLED and message == proxy_tasks.model_text.TASK_WITHDRAWN_BY_HOST:
                ended_by.append("cancel")
                # The cancel's own ending held back: the driver's ticks go by until it has seen
                # the rejection, decided again and ended the task itself.
                await ticker.until(lambda: _is_set(driver_ended))
                await finish(row, status, answer, message)
                return
            ended_by.append("driver")
            await finish(row, status, answer, message)
            driver_ended.set()

        monkeypatch.setattr(book.driver, "finish", late_cancel)
        cancelled = await book.request(ERA_2025, "tasks/cancel", {"taskId": task_id})
        assert cancelled["status"] == "cancelled", cancelled
        assert ended_by == ["cancel", "driver"]  # the race happened: the driver decided again first
        row = await anyio.to_thread.run_sync(book.store.tasks.get, task_id)
        assert row is not None and row.status == "cancelled" and "WITHDRAWN" in row.result, row
        [approval] = h.approvals()
        assert approval.status == "rejected" and approval.decided_by == "host:tasks/cancel"
        assert h.payments() == 0


async def _is_set(event: anyio.Event) -> bool:
    return event.is_set()


async def test_a_status_task_whose_answer_is_slow_is_never_driven_by_the_owners_tick(tmp_path: Path) -> None:
    """The status tool's task is born complete: while its answer is being read, the owner's tick
    (which drives every working task of its owner) must leave it alone, or it ends "unknown tool"."""
    ticker = ManualTicker()
    async with proxy_harness(tmp_path, ticker=ticker) as h:
        book = h.proxy.runtime.tasks
        seen_working: list[bool] = []

        async def slow_status() -> dict[str, Any]:
            for _ in range(4):  # four of the owner's ticks go by while the task is working
                await ticker.tick()
                row = await anyio.to_thread.run_sync(book.store.tasks.working, book.session)
                seen_working.append(bool(row))
            return proxy_tasks.answers.prose("GATE_STATUS: nothing waits.")

        created = await book.create_2025(None, "{}", slow_status)
        row = await anyio.to_thread.run_sync(book.store.tasks.get, created["task"]["taskId"])
        assert seen_working == [True] * 4  # each tick saw the task working, and left it alone
        assert row is not None and row.status == "completed", row
        assert "GATE_STATUS" in row.result and "unknown tool" not in row.result
