"""Calls answered as MCP tasks (docs/decisions/0020): an approval the host polls for.

A call that waits on an operator no longer has to end in PENDING_APPROVAL and a second call by
the model. A host that declared the tasks extension (2026-07-28) gets a task once the hold has
passed undecided; a 2025-11-25 host that sent ``params.task`` gets one at once. Either way the
task is a row (``store/_tasks.py``) committed before its id is returned, and the proxy that owns
it *drives* it: it puts the recorded request through the very path a plain call takes
(``CallRules.handle``) and, where that path would answer PENDING_APPROVAL, waits for the
operator instead; once the approval is decided it decides again, so the approved request runs
once, exactly as a re-call would run it, and the task ends with that answer (the tool's result,
REJECTED, EXPIRED, DUPLICATE...). Every rule across calls therefore holds for tasks and plain
calls alike: a task and a plain call for the same request are the same request.

Ownership is a lease per task, renewed every tick while the owner lives; a proxy of the same
session takes over a task whose lease ran out and drives it the same way (so an approved task of
a dead proxy executes once, and one whose upstream call the crash cut off ends UNKNOWN_OUTCOME:
the takeover rules say so, and an unknown outcome is never run again by a task).

``tasks/cancel`` before an approval is granted withdraws the request: the approval is rejected
in the host's name, the run ends, nothing executes, and a later ``approve`` is refused. After
that it changes nothing: the request executes or has executed, and its outcome is recorded.

This module drives tasks: ``TaskBook`` is the owner's loop (leases, takeovers, the sweep) and
makes the tasks; ``TaskDriver`` runs one task's request to its end. What the host asks of its
tasks (``tasks/*``) and is told of them is answered by ``_task_requests``. Every wait between two
looks (the owner's tick, a driver's poll) is the injected ``Ticker``'s (``_ticker``): real time in
the product, ticks a test gives by hand in process.
"""

from __future__ import annotations

import contextlib
import os
import secrets
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import anyio
import anyio.abc

from agentrt_proxy import canonical
from agentrt_proxy.canonical.encoder import Raw
from agentrt_proxy.gate import INTERRUPTED_SIDE_EFFECT, Clock
from agentrt_proxy.gate import approvals as gate_approvals
from agentrt_proxy.mcp import CallContext, JsonRpcError, jsonrpc, tasks_wire
from agentrt_proxy.proxy import _answers as answers
from agentrt_proxy.proxy._calls import WhenPending
from agentrt_proxy.proxy._guarded import UntrustedSource
from agentrt_proxy.proxy._host_link import HostLink
from agentrt_proxy.proxy._rules import past_expiry
from agentrt_proxy.proxy._task_requests import Send, TaskNews, TaskRequests, encoded, task_state
from agentrt_proxy.proxy._ticker import REAL_TICKER, Ticker
from agentrt_proxy.store import (
    APPROVAL_PENDING,
    ERA_2025,
    ERA_EXTENSION,
    TASK_CANCELLED,
    TASK_COMPLETED,
    TASK_FAILED,
    Approval,
    NotPending,
    Store,
    StoreError,
    TaskRow,
    new_task_id,
)
from agentrt_proxy.text import model_text, record_text
from agentrt_proxy.upstream import LoadedTool

TICK_SECONDS = 0.5  # how often the owner renews its leases, takes over orphans and looks for news
SWEEP_EVERY_NS = 60 * 1_000_000_000  # an expired result may linger this long past its TTL

# An approval rejected in the host's name (``decided_by``) -> why its task was withdrawn.
_WITHDRAWALS = {record_text.WITHDRAWN_BY_HOST: model_text.TASK_WITHDRAWN_BY_HOST,
                record_text.WITHDRAWN_BY_TTL: model_text.TASK_WITHDRAWN_TTL}

Call = Callable[[LoadedTool, "str | None", CallContext, WhenPending], Awaitable[dict[str, Any]]]


class _Ended(Exception):
    """The task ended while its driver waited (cancelled, expired), or the driver must stop."""


def error_object(err: JsonRpcError) -> dict[str, Any]:
    """A JSON-RPC error as a failed task records it ("code" first: ``task_requests`` reads it so)."""
    error: dict[str, Any] = {"code": err.code, "message": err.message}
    if err.data is not None:
        error["data"] = err.data
    return error


class TaskDriver:
    """One task's request put through the gate, to its end: where a plain call would answer
    PENDING_APPROVAL it waits for the operator, and the answer it comes to ends the task."""

    def __init__(self, store: Store, tools: Mapping[str, LoadedTool], call: Call, news: TaskNews, *, session: str,
                 wall: Clock, clock: Clock, shutting_down: anyio.Event, tick: float, poll: float,
                 ticker: Ticker = REAL_TICKER) -> None:
        self.store = store
        self.tools = tools
        self._call = call
        self.news = news
        self.session = session
        self.wall = wall  # task times: the wall clock, like the runs' leases
        self.clock = clock  # an approval's expiry: the proxy's clock, as the rules judge it
        self.shutting_down = shutting_down
        self.tick = tick
        self.poll = poll  # between two looks at the approval a task waits on (the hold's pace)
        self.ticker = ticker  # what paces both waits (real time but in tests)

    async def drive(self, row: TaskRow) -> None:
        """Put the recorded request through the gate; wait where it waits; record its answer."""
        try:
            tool = self.tools.get(row.tool)
            if tool is None:
                unknown = JsonRpcError(jsonrpc.INVALID_PARAMS, f"unknown tool: {row.tool}")
                await self.finish(row, TASK_FAILED, error_object(unknown))
                return
            ctx = CallContext(request_id=f"task:{row.id}", progress_token=None, meta={}, protocol_version="",
                              _done=True)  # no host waits on it: no hold, no progress
            # Shielded: a request approved and executing is never cut short by the proxy's stop;
            # the waits end by themselves when it stops (``_await_decision``).
            with anyio.CancelScope(shield=True):
                try:
                    result = await self._call_until_answered(tool, row, ctx)
                    why = await self._withdrawn_why(row.id)
                except JsonRpcError as err:
                    await self.finish(row, TASK_FAILED, error_object(err), message=model_text.task_ended(err.message))
                    return
                except _Ended:
                    return
                if why is not None:
                    # The host's cancel rejected the approval and this driver decided again
                    # (REJECTED) before that cancel ended the task: it ends cancelled all the same.
                    await self.finish(row, TASK_CANCELLED, answers.prose(model_text.withdrawn(why)), message=why)
                    return
                if not row.run_id:
                    await self._name_its_run(row)
                failed = row.era == ERA_2025 and result.get("isError") is True  # 2025-11-25: isError fails a task
                status = TASK_FAILED if failed else TASK_COMPLETED
                await self.finish(row, status, result, message=_ended_message(result))
        except StoreError:
            pass  # not recorded: the lease runs out and a proxy drives it again (the gate's rules hold)

    async def _call_until_answered(self, tool: LoadedTool, row: TaskRow, ctx: CallContext) -> dict[str, Any]:
        """The gate's answer to the recorded request; IN_PROGRESS (another caller executes the
        same request right now) is no answer for a task: it asks again a tick later, and then
        hears that request's outcome (DUPLICATE) once it is recorded."""
        while True:
            result = await self._call(tool, row.arguments, ctx, lambda a: self._await_decision(row.id, a))
            meta = result.get("_meta")
            if not (isinstance(meta, dict) and meta.get(answers.OUTCOME_META_KEY) == model_text.IN_PROGRESS):
                return result
            if self.shutting_down.is_set():
                raise _Ended
            current = await self._row(row.id)
            if current.terminal:
                raise _Ended
            await self.ticker.pause(self.tick, self.shutting_down)

    async def _name_its_run(self, row: TaskRow) -> None:
        """A 2025-11-25 task whose request needed no approval never named its run: name the run the
        request made after the task was created (the operator's ``runs`` and ``show`` find it). Only
        a help to the operator: when the database refuses, the task ends all the same."""
        def name() -> None:
            now = self.store.tasks.get(row.id)
            if now is None or now.run_id or now.terminal:
                return
            made = [c for c in self.store.index.for_key(self.session, row.request_key, row.created_at)
                    if c.created_at >= row.created_at]
            if made:
                self.store.tasks.bind(row.id, made[0].run_id, "", now.status_message, self.wall.now_ns())

        with contextlib.suppress(StoreError):
            await anyio.to_thread.run_sync(name)

    async def _await_decision(self, task_id: str, approval: Approval) -> dict[str, Any] | None:
        """Where a plain call would answer PENDING_APPROVAL: wait for the operator. None once the
        approval is decided (decide again); an answer for a question a task does not wait on."""
        if approval.kind == INTERRUPTED_SIDE_EFFECT:
            # An unknown outcome: whether it runs again is the operator's, never a task's.
            return answers.prose(answers.pending_text(approval))
        row = await self._row(task_id)
        if row.approval_id != approval.id:
            message = model_text.task_waiting(approval.id)
            await anyio.to_thread.run_sync(self.store.tasks.bind, task_id, approval.run_id, approval.id, message,
                                           self.wall.now_ns())
        while True:
            if self.shutting_down.is_set():
                raise _Ended  # the task stays working; the next proxy takes it over
            row = await self._row(task_id)
            if row.terminal:
                raise _Ended  # cancelled meanwhile
            if row.past_ttl(self.wall.now_ns()):
                if await self.withdraw(row, approval, record_text.WITHDRAWN_BY_TTL, record_text.NOTE_WITHDRAWN_TTL,
                                        model_text.TASK_WITHDRAWN_TTL):
                    raise _Ended
                return None  # decided just now: decide again
            current = await anyio.to_thread.run_sync(self.store.get_approval, approval.id)
            if current.status != APPROVAL_PENDING or past_expiry(current, self.clock.now_ns()):
                return None
            await self.ticker.pause(self.poll, self.shutting_down)

    async def _withdrawn_why(self, task_id: str) -> str | None:
        """Why the task's approval was withdrawn in the host's name (its cancel, its TTL), if it was."""
        row = await self._row(task_id)
        if not row.approval_id:
            return None
        approval = await anyio.to_thread.run_sync(self.store.get_approval, row.approval_id)
        if approval.status == APPROVAL_PENDING:
            return None
        return _WITHDRAWALS.get(approval.decided_by)

    async def _row(self, task_id: str) -> TaskRow:
        row = await anyio.to_thread.run_sync(self.store.tasks.get, task_id)
        if row is None:
            raise _Ended
        return row

    async def withdraw(self, row: TaskRow, approval: Approval, by: str, note: str, why: str) -> bool:
        """Reject ``approval`` in the host's name and cancel the task; False when an operator
        decided first (then the decision stands)."""
        def withdraw() -> bool:
            try:
                gate_approvals.reject_shown(self.store, approval.run_id, approval.id, approval.hash, by, note)
            except NotPending:
                return False
            except StoreError as err:
                if self.store.get_approval(approval.id).status == APPROVAL_PENDING:
                    raise err
                return False
            return True

        if not await anyio.to_thread.run_sync(withdraw):
            return False
        await self.finish(row, TASK_CANCELLED, answers.prose(model_text.withdrawn(why)), message=why)
        return True

    async def finish(self, row: TaskRow, status: str, answer: Mapping[str, Any], message: str = "") -> None:
        text = encoded(answer)
        done = await anyio.to_thread.run_sync(self.store.tasks.finish, row.id, status,
                                              message or model_text.TASK_DONE, text, self.wall.now_ns())
        if done:
            await self.news.tell(only=row.id)


class TaskBook:
    """This proxy's tasks: the owner's loop that drives the ones it owns, and creating them; the
    host's ``tasks/*`` are answered by ``task_requests.TaskRequests``."""

    def __init__(self, store: Store, tools: Mapping[str, LoadedTool], call: Call, *, session: str, wall: Clock,
                 clock: Clock, ttl_ns: int, lease_ns: int, shutting_down: anyio.Event, host: HostLink,
                 tick: float = TICK_SECONDS, poll: float = TICK_SECONDS, ticker: Ticker = REAL_TICKER) -> None:
        self.store = store
        self.tools = tools
        self.session = session
        self.wall = wall  # task times and leases: the wall clock, like the runs' leases
        self.ttl_ms = max(1, ttl_ns // 1_000_000)
        self.lease_ns = lease_ns
        self.shutting_down = shutting_down
        self.tick = tick
        self.ticker = ticker  # what paces the owner's tick (and the driver's, the blocking result's)
        self.owner = f"agentrt-proxy:{session}:{os.getpid()}:{secrets.token_hex(4)}"
        self.news = TaskNews(store, tools, host)
        self.driver = TaskDriver(store, tools, call, self.news, session=session, wall=wall, clock=clock,
                                 shutting_down=shutting_down, tick=tick, poll=poll, ticker=ticker)
        self.requests = TaskRequests(store, self.news, self.driver.withdraw, session=session, wall=wall,
                                     shutting_down=shutting_down, tick=tick, ticker=ticker)
        self._tg: anyio.abc.TaskGroup | None = None
        self._started = anyio.Event()
        self._driving: set[str] = set()
        self._next_sweep = 0  # when the ended tasks past their TTL are next expired (wall ns)

    @property
    def untrusted(self) -> UntrustedSource | None:
        """The runtime's record of what has tainted this process (a recorded answer passed on)."""
        return self.news.untrusted

    @untrusted.setter
    def untrusted(self, source: UntrustedSource | None) -> None:
        self.news.untrusted = source

    # ------------------------------------------------------------------ the owner's loop

    async def run(self) -> None:
        """For the life of the proxy: renew, take over, drive, tell; at the end, let go."""
        try:
            async with anyio.create_task_group() as tg:
                self._tg = tg
                self._started.set()
                while not self.shutting_down.is_set():
                    await self._tick_once()
                    await self.ticker.pause(self.tick, self.shutting_down)
        finally:
            with anyio.CancelScope(shield=True), contextlib.suppress(StoreError):  # else they run out by themselves
                await anyio.to_thread.run_sync(self.store.tasks.release, self.owner)

    async def _tick_once(self) -> None:
        now = self.wall.now_ns()
        try:
            if self._driving:  # an idle proxy writes nothing: no commit, no fsync, per tick
                await anyio.to_thread.run_sync(self.store.tasks.renew, self.owner, now + self.lease_ns)
            if now >= self._next_sweep:
                self._next_sweep = now + SWEEP_EVERY_NS
                await anyio.to_thread.run_sync(self.store.tasks.forget_results, self.session, now)
            working = await anyio.to_thread.run_sync(self.store.tasks.working, self.session)
        except StoreError:
            return  # the database is locked or gone for now: the next tick tries again
        for row in working:
            if row.id in self._driving or self._tg is None:
                continue
            mine = row.owner == self.owner or row.lease_until <= now
            if mine and await anyio.to_thread.run_sync(self.store.tasks.claim, row.id, self.owner,
                                                       now + self.lease_ns, now):
                self._start(row)
        await self.news.tell()

    def _start(self, row: TaskRow) -> None:
        assert self._tg is not None
        self._driving.add(row.id)
        self._tg.start_soon(self._drive, row)

    async def _drive(self, row: TaskRow) -> None:
        try:
            await self.driver.drive(row)
        finally:
            self._driving.discard(row.id)

    # -------------------------------------------------------------------- creating tasks

    async def create_2025(self, tool: LoadedTool | None, arguments_text: str | None,
                          status_answer: Callable[[], Awaitable[dict[str, Any]]] | None = None) -> dict[str, Any]:
        """A 2025-11-25 ``tools/call`` with ``params.task``: the task at once, driven from here.
        ``status_answer``: the status tool's, which needs no gate (its task is born complete)."""
        await self._started.wait()
        name = tool.name if tool is not None else "(status)"
        key = canonical.request_key(name, arguments_text) or ""
        row = await self._create(ERA_2025, name, key, arguments_text, "", "", model_text.TASK_STARTED)
        if status_answer is None:
            self._start(row)
            return tasks_wire.created_2025(task_state(row))
        try:
            await self.driver.finish(row, TASK_COMPLETED, await status_answer())
        finally:
            self._driving.discard(row.id)  # ended here, or left for a tick to drive (and end) it
        return tasks_wire.created_2025(task_state(row))

    def when_pending_extension(self, tool: LoadedTool, arguments_text: str | None) -> WhenPending:
        """For a host that declared the extension: past the hold, a waiting request becomes a
        task (the one already waiting on the same approval, when there is one)."""

        async def as_task(approval: Approval) -> dict[str, Any]:
            await self._started.wait()
            existing = await anyio.to_thread.run_sync(self.store.tasks.of_approval, self.session, approval.id)
            if existing is not None:
                return tasks_wire.created_extension(task_state(self.news.passed_on(existing)))
            key = canonical.request_key(tool.name, arguments_text) or ""
            row = await self._create(ERA_EXTENSION, tool.name, key, arguments_text, approval.run_id, approval.id,
                                     model_text.task_waiting(approval.id))
            self._start(row)
            return tasks_wire.created_extension(task_state(self.news.passed_on(row)))

        return as_task

    async def _create(self, era: str, tool: str, key: str, arguments_text: str | None, run_id: str,
                      approval_id: str, message: str) -> TaskRow:
        now = self.wall.now_ns()
        # The id is drawn here and held as driven before the row exists: the owner's tick sees
        # every working task of this owner, and must not start a second driver for one this
        # coroutine is still making (a status tool's task, born complete, would end "unknown tool").
        task_id = new_task_id()
        self._driving.add(task_id)
        try:
            row = await anyio.to_thread.run_sync(lambda: self.store.tasks.create(
                session=self.session, era=era, tool=tool, request_key=key, arguments=arguments_text, run_id=run_id,
                approval_id=approval_id, message=message, now_ns=now, ttl_ms=self.ttl_ms, owner=self.owner,
                lease_until=now + self.lease_ns, task_id=task_id))
        except BaseException:
            self._driving.discard(task_id)
            raise
        self.news.heard(row, again=True)
        return row

    # ------------------------------------------------ the host's requests (task_requests)

    async def request(self, era: str, method: str, params: Mapping[str, Any]) -> dict[str, Any] | Raw:
        return await self.requests.request(era, method, params)

    def listen(self, task_ids: list[str], send: Send) -> list[str]:
        return self.news.listen(task_ids, send)

    def unlisten(self, send: Send) -> None:
        self.news.unlisten(send)


def _ended_message(result: Mapping[str, Any]) -> str:
    """A task's status message once it ended with ``result``: the proxy's own answer or an
    error's text, so the host that reads only the message (or the failure) still reads REJECTED
    and the operator's note; for a tool's own result, only that it is recorded (its content
    goes to the host as the result, not twice)."""
    if answers.outcome_of(dict(result)) is None and result.get("isError") is not True:
        return model_text.TASK_DONE
    blocks = result.get("content")
    texts = [b["text"] for b in blocks if isinstance(b, dict) and isinstance(b.get("text"), str)] \
        if isinstance(blocks, list) else []
    return model_text.task_ended(" ".join(texts)) if texts else model_text.TASK_DONE
