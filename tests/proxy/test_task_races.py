"""Races of a task's driver (proxy/_tasks.py) with the host's ``tasks/cancel`` (_task_requests.py), made certain.

In the real program the window is a few milliseconds: the cancel rejects the approval in the
host's name, then ends the task. A driver that sees the rejection in between decides again and
hears REJECTED. Here the cancel's ending is held back for three of the driver's ticks, so the
driver always sees it first; the task must end ``cancelled`` all the same. The proxy runs in
process (tests/harness.py); the task book is driven directly, as the host session does.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest

from agentrt_proxy.proxy import _tasks as proxy_tasks
from agentrt_proxy.store import ERA_2025, TASK_CANCELLED
from tests.harness import proxy_harness

pytestmark = pytest.mark.anyio


async def bound_task(book: proxy_tasks.TaskBook, tool: Any, arguments: str) -> str:
    """A 2025-11-25 task of ``arguments`` once its driver waits on the approval."""
    created = await book.create_2025(tool, arguments)
    task_id = str(created["task"]["taskId"])
    with anyio.fail_after(15):
        while not (await anyio.to_thread.run_sync(book.store.tasks.get, task_id)).approval_id:  # type: ignore[union-attr]
            await anyio.sleep(0.05)
    return task_id


async def test_a_cancel_whose_rejection_the_driver_sees_first_still_ends_the_task_cancelled(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with proxy_harness(tmp_path) as h:
        book = h.proxy.runtime.tasks
        task_id = await bound_task(book, h.proxy.runtime.tools["bank_pay"], '{"to":"nina","amount":12}')
        finish = book.driver.finish

        async def late_cancel(row: Any, status: str, answer: Any, message: str = "") -> None:
            if status == TASK_CANCELLED and message == proxy_tasks.model_text.TASK_WITHDRAWN_BY_HOST:
                await anyio.sleep(3 * book.tick)  # the driver's ticks go by: it sees the rejection
            await finish(row, status, answer, message)

        monkeypatch.setattr(book.driver, "finish", late_cancel)
        cancelled = await book.request(ERA_2025, "tasks/cancel", {"taskId": task_id})
        assert cancelled["status"] == "cancelled", cancelled
        row = await anyio.to_thread.run_sync(book.store.tasks.get, task_id)
        assert row is not None and row.status == "cancelled" and "WITHDRAWN" in row.result, row
        [approval] = h.approvals()
        assert approval.status == "rejected" and approval.decided_by == "host:tasks/cancel"
        assert h.payments() == 0


async def test_a_status_task_whose_answer_is_slow_is_never_driven_by_the_owners_tick(tmp_path: Path) -> None:
    """The status tool's task is born complete: while its answer is being read, the owner's tick
    (which drives every working task of its owner) must leave it alone, or it ends "unknown tool"."""
    async with proxy_harness(tmp_path) as h:
        book = h.proxy.runtime.tasks

        async def slow_status() -> dict[str, Any]:
            await anyio.sleep(4 * book.tick)  # several ticks go by while the task is working
            return proxy_tasks.answers.prose("GATE_STATUS: nothing waits.")

        created = await book.create_2025(None, "{}", slow_status)
        row = await anyio.to_thread.run_sync(book.store.tasks.get, created["task"]["taskId"])
        assert row is not None and row.status == "completed", row
        assert "GATE_STATUS" in row.result and "unknown tool" not in row.result
