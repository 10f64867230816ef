"""The hold (proxy-and-mcp-module §2.6.5): a call waiting on an approval waits for an operator
for up to ``hold``, telling the host it waits, before it answers pending."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import anyio

from agentrt_proxy.canonical.durations import SECOND
from agentrt_proxy.gate import Clock
from agentrt_proxy.mcp import CallContext
from agentrt_proxy.proxy._parts import CallSettings
from agentrt_proxy.proxy._progress import ProgressRelay
from agentrt_proxy.proxy._rules import past_expiry
from agentrt_proxy.store import APPROVAL_PENDING, Approval, Store, StoreError
from agentrt_proxy.text import model_text

PROGRESS_EVERY_SECONDS = 1.0


class CallHold:
    def __init__(self, store: Store, clock: Clock, settings: CallSettings, shutting_down: anyio.Event) -> None:
        self.store = store
        self.clock = clock
        self.seconds = settings.hold / SECOND
        self.poll = settings.hold_poll
        self.shutting_down = shutting_down

    def may_hold(self, ctx: CallContext) -> bool:
        return self.seconds > 0 and ctx.live and not self.shutting_down.is_set()

    async def wait(self, approval: Approval, ctx: CallContext, progress: ProgressRelay) -> bool:
        """Wait up to the hold for an operator, telling the host through the call's ``progress``;
        True when the approval was decided (or expired) and the call should decide again,
        False to answer pending now."""
        began = anyio.current_time()
        deadline = began + self.seconds
        last_progress = began
        while True:
            now = anyio.current_time()
            if now >= deadline or not ctx.live or self.shutting_down.is_set():
                return False
            if now - last_progress >= PROGRESS_EVERY_SECONDS:
                last_progress = now
                progress.hold(now - began, self.seconds, model_text.progress_waiting())
            with anyio.move_on_after(min(self.poll, deadline - now)):
                await _first_of(ctx.cancelled.wait, self.shutting_down.wait)
            try:
                current = await anyio.to_thread.run_sync(self.store.get_approval, approval.id)
            except StoreError:
                return False
            if current.status != APPROVAL_PENDING or past_expiry(current, self.clock.now_ns()):
                return True


async def _first_of(*waiters: Callable[[], Any]) -> None:
    async with anyio.create_task_group() as tg:

        async def run(waiter: Callable[[], Any]) -> None:
            await waiter()
            tg.cancel_scope.cancel()

        for waiter in waiters:
            tg.start_soon(run, waiter)
