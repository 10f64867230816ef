"""What the host hears of its tasks (docs/decisions/0020): the answers to its ``tasks/*`` requests
(get, result, list, cancel, update) and the status notifications, 2025-11-25's and the tasks
extension's (``subscriptions/listen``).

Everything here reads the task's row (``store/_tasks.py``), which the proxy driving the task
writes (``tasks.TaskBook``): any proxy of the session answers for any of its tasks, whichever
drives it. The one write is a cancel's: before an approval is granted it withdraws the request,
through the driver's ``withdraw`` (the approval rejected in the host's name, the task ended).
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import anyio

from agentrt_proxy import canonical
from agentrt_proxy.canonical.encoder import Raw
from agentrt_proxy.gate import Clock
from agentrt_proxy.mcp import JsonRpcError, jsonrpc, tasks_wire
from agentrt_proxy.proxy import _answers as answers
from agentrt_proxy.proxy._guarded import UntrustedSource
from agentrt_proxy.proxy._host_link import HostLink
from agentrt_proxy.proxy._ticker import REAL_TICKER, Ticker
from agentrt_proxy.store import APPROVAL_PENDING, ERA_2025, TASK_FAILED, Approval, Store, StoreError, TaskRow
from agentrt_proxy.text import model_text, record_text
from agentrt_proxy.upstream import LoadedTool

POLL_INTERVAL_MS = 1000  # what a host is asked to poll at: an operator decides in seconds, not ms
PAGE_SIZE = 50  # tasks/list
CANCEL_GRACE_SECONDS = 1.0  # how long a cancel waits for a new task's request to reach its approval

Send = Callable[[str, dict[str, Any]], Awaitable[None]]
# The driver's: reject the approval in the host's name (by, note) and end the task (why); False
# when an operator decided first.
Withdraw = Callable[[TaskRow, Approval, str, str, str], Awaitable[bool]]


def task_state(row: TaskRow) -> tasks_wire.TaskState:
    """The row as the wire tells it (``tasks_wire``), with the pace the host is asked to poll at."""
    return tasks_wire.TaskState(
        row.id, row.status, row.status_message, row.created_at, row.updated_at, row.ttl_ms, POLL_INTERVAL_MS,
        row.result or None,
    )  # fmt: skip


def encoded(result: Mapping[str, Any]) -> str:
    """An answer as a task's row records it: the wire's bytes, as text."""
    return jsonrpc.encode(result).decode("utf-8")


class TaskNews:
    """What the host has heard of each task it knows, and the news it is told when that changes."""

    def __init__(self, store: Store, tools: Mapping[str, LoadedTool], host: HostLink) -> None:
        self.store = store
        self.tools = tools
        self.host = host
        self.untrusted: UntrustedSource | None = None  # the runtime's: what has tainted this process
        self._told: dict[str, tuple[str, str]] = {}  # task id -> (status, message) the host last heard
        self._watchers: dict[str, set[Send]] = {}  # task id -> subscriptions/listen streams

    def heard(self, row: TaskRow, *, again: bool = False) -> None:
        """The host heard of ``row`` as it is (``again``: even if it had heard of it before)."""
        if again:
            self._told[row.id] = (row.status, row.status_message)
        else:
            self._told.setdefault(row.id, (row.status, row.status_message))

    def passed_on(self, row: TaskRow) -> TaskRow:
        """``row``, whose recorded answer is about to reach the host: one marked as an untrusted
        server's (its result, its error, a DUPLICATE quoting it) taints this process, as it did
        the one that drove it."""
        if self.untrusted is not None and row.result and '"gate/untrusted"' in row.result:
            tool = self.tools.get(row.tool)
            if tool is not None and answers.is_marked_untrusted(canonical.parse_strict(row.result)):
                self.untrusted.returned(tool.server, tool.name, row.run_id)
        return row

    def listen(self, task_ids: list[str], send: Send) -> list[str]:
        """A ``subscriptions/listen`` for ``task_ids``: each one of this session is agreed."""
        for task_id in task_ids:
            self._watchers.setdefault(task_id, set()).add(send)
        return list(task_ids)

    def unlisten(self, send: Send) -> None:
        for task_id in list(self._watchers):
            self._watchers[task_id].discard(send)
            if not self._watchers[task_id]:
                del self._watchers[task_id]

    async def tell(self, only: str | None = None) -> None:
        """Tell the host of each task it knows whose status changed: 2025-11-25's status
        notification (the session drops it for any other era) and the extension's, to listeners."""
        ids = [only] if only is not None else list({*self._told, *self._watchers})
        for task_id in ids:
            try:
                row = await anyio.to_thread.run_sync(self.store.tasks.get, task_id)
            except StoreError:
                return
            if row is None:
                continue
            now = (row.status, row.status_message)
            if self._told.get(task_id) == now:
                continue
            self._told[task_id] = now
            if row.terminal and task_id not in self._watchers:
                del self._told[task_id]  # told its end: nothing more will change
            if row.era == ERA_2025:
                await self.host.notify(tasks_wire.STATUS_NOTIFICATION_2025, tasks_wire.task_2025(task_state(row)))
            for send in list(self._watchers.get(task_id, ())):
                state = tasks_wire.task_extension(task_state(self.passed_on(row)))
                await send(tasks_wire.STATUS_NOTIFICATION_EXTENSION, state)


class TaskRequests:
    """The host's ``tasks/*`` requests, answered from the session's task rows."""

    def __init__(self, store: Store, news: TaskNews, withdraw: Withdraw, *, session: str, wall: Clock,
                 shutting_down: anyio.Event, tick: float, ticker: Ticker = REAL_TICKER) -> None:  # fmt: skip
        self.store = store
        self.news = news
        self.withdraw = withdraw
        self.session = session
        self.wall = wall
        self.shutting_down = shutting_down
        self.tick = tick  # how often a blocking tasks/result looks at its task again
        self.ticker = ticker  # what paces it (real time but in tests)

    async def request(self, era: str, method: str, params: Mapping[str, Any]) -> dict[str, Any] | Raw:
        try:
            if method == "tasks/list":
                return await self._list(params)
            task_id = tasks_wire.task_id_of(params)
            if task_id is None:
                raise JsonRpcError(jsonrpc.INVALID_PARAMS, model_text.TASK_ID_REQUIRED)
            row = await self._known(task_id)
            if method == "tasks/get":
                if era == ERA_2025:
                    return tasks_wire.task_2025(task_state(row))
                return tasks_wire.task_extension(task_state(self.news.passed_on(row)))
            if method == "tasks/result":
                return await self._result(row)
            if method == "tasks/update":
                return {}  # nothing of a task waits on the host: every input is the operator's
            return await self._cancel(era, row)
        except StoreError as err:
            raise JsonRpcError(
                jsonrpc.INTERNAL_ERROR, model_text.unavailable(model_text.STATUS_COULD_NOT_READ)
            ) from err

    async def _known(self, task_id: str) -> TaskRow:
        row = await anyio.to_thread.run_sync(self.store.tasks.get, task_id)
        if row is None or row.session != self.session:
            raise JsonRpcError(jsonrpc.INVALID_PARAMS, model_text.TASK_NOT_FOUND)
        if _expired(row, self.wall.now_ns()):
            raise JsonRpcError(jsonrpc.INVALID_PARAMS, model_text.TASK_EXPIRED)
        self.news.heard(row)
        return row

    async def _result(self, row: TaskRow) -> Raw:
        """2025-11-25's ``tasks/result``: blocks until the task ends, then the call's answer."""
        while not row.terminal:
            await self.ticker.pause(self.tick, self.shutting_down)
            if self.shutting_down.is_set():
                raise JsonRpcError(jsonrpc.INTERNAL_ERROR, model_text.SHUTTING_DOWN)
            row = await self._known(row.id)
        text = self.news.passed_on(row).result or encoded(answers.prose(model_text.withdrawn(row.status_message)))
        # A failed task holds a JSON-RPC error (written by ``tasks.error_object``, "code" first)
        # or, in 2025-11-25, a result with isError, which tasks/result returns as it is.
        error = canonical.parse_strict(text) if row.status == TASK_FAILED and text.startswith('{"code":') else None
        if isinstance(error, dict) and "code" in error and "content" not in error:
            raise JsonRpcError(int(error["code"]), str(error.get("message", "")), error.get("data"))
        return tasks_wire.result_2025(text, row.id)

    async def _cancel(self, era: str, row: TaskRow) -> dict[str, Any]:
        if row.terminal:
            if era == ERA_2025:
                raise JsonRpcError(jsonrpc.INVALID_PARAMS, model_text.task_cannot_cancel_terminal(row.status))
            return {}
        if not row.approval_id and row.era == ERA_2025:
            row = await self._bound_soon(row)
        approval = None
        if row.approval_id:
            approval = await anyio.to_thread.run_sync(self.store.get_approval, row.approval_id)
        if approval is not None and approval.status == APPROVAL_PENDING and await self.withdraw(
                row, approval, record_text.WITHDRAWN_BY_HOST, record_text.NOTE_WITHDRAWN_BY_HOST,
                model_text.TASK_WITHDRAWN_BY_HOST):  # fmt: skip
            cancelled = await self._known(row.id)
            return tasks_wire.task_2025(task_state(cancelled)) if era == ERA_2025 else {}
        if era == ERA_2025:
            raise JsonRpcError(jsonrpc.INVALID_PARAMS, model_text.TASK_CANNOT_CANCEL_STARTED)
        return {}  # the extension's cancel is cooperative: acknowledged, and the request goes on

    async def _bound_soon(self, row: TaskRow) -> TaskRow:
        """A 2025-11-25 task is created before the gate has seen its request: a cancel that
        comes at once gives the gate a moment to say whether it waits on an approval."""
        with anyio.move_on_after(CANCEL_GRACE_SECONDS):
            while not row.approval_id and not row.terminal:
                await anyio.sleep(0.05)
                row = await self._known(row.id)
        return row

    async def _list(self, params: Mapping[str, Any]) -> dict[str, Any]:
        after = _cursor(params.get("cursor"))
        rows = await anyio.to_thread.run_sync(self.store.tasks.page, self.session, after, PAGE_SIZE + 1)
        page = rows[:PAGE_SIZE]
        now = self.wall.now_ns()
        listed: dict[str, Any] = {"tasks": [tasks_wire.task_2025(task_state(r)) for r in page if not _expired(r, now)]}
        if len(rows) > PAGE_SIZE:
            last = page[-1]
            listed["nextCursor"] = base64.urlsafe_b64encode(f"{last.created_at}:{last.id}".encode()).decode()
        return listed


def _expired(row: TaskRow, now_ns: int) -> bool:
    """Whether the host is told the task has expired: swept (its result dropped), or ended and
    past its TTL and not swept yet (the sweep runs once a minute; the answer must not wait on it)."""
    return row.expired or (row.terminal and row.past_ttl(now_ns))


def _cursor(value: object) -> tuple[int, str] | None:
    if value is None:
        return None
    try:
        created, _, task_id = base64.urlsafe_b64decode(str(value).encode()).decode().partition(":")
        return int(created), task_id
    except (ValueError, binascii.Error, UnicodeDecodeError) as err:
        raise JsonRpcError(jsonrpc.INVALID_PARAMS, model_text.TASK_BAD_CURSOR) from err
