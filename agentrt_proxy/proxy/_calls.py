"""One ``tools/call``: the rules across calls decided, then applied (proxy-and-mcp-module §2.6).

Before starting anything the proxy looks at this session's runs of the same request key and
applies, in order: (1) collect a run waiting on an approval for this request, (2) a run
executing under a live lease answers IN_PROGRESS, (3) take over a run whose caller is gone,
(4) a rejected, cancelled or expired request within the window, (5) the duplicate rule,
(6) an unknown outcome asks an operator; then BLOCKED and the pending cap; (7) otherwise
begin a new run. ``rules.decide`` is that order as a pure function of what was read;
``CallRules`` reads what it asks for (``reading``), writes the settlements it finds, and
applies its action: attach (``attaching``), begin (``begin``), then execute (``execute``) or
hold (``hold``). Reading, deciding and beginning or collecting happen under one lock per
process (docs/decisions/0003); executing and holding happen outside it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import anyio

from agentrt_proxy import canonical
from agentrt_proxy.gate import Limits
from agentrt_proxy.mcp import CallContext
from agentrt_proxy.proxy import _answers as answers
from agentrt_proxy.proxy import _rules as rules
from agentrt_proxy.proxy._actions import (
    Action,
    Answer,
    Answering,
    Applied,
    AskUnknown,
    AwaitApproval,
    Begin,
    Collect,
    DecideAgain,
    Duplicate,
    Effect,
    Execute,
    Expire,
    Pending,
    TakeOver,
)
from agentrt_proxy.proxy._attaching import Attaching
from agentrt_proxy.proxy._begin import Beginning
from agentrt_proxy.proxy._execute import Executing
from agentrt_proxy.proxy._hold import CallHold
from agentrt_proxy.proxy._parts import MAX_DECIDES, CallParts
from agentrt_proxy.proxy._progress import ProgressRelay
from agentrt_proxy.proxy._reading import CallReader
from agentrt_proxy.proxy._settling import Settling
from agentrt_proxy.proxy._view import CallView, ReadApprovals, ReadRows, ReadRun, ReadSteps
from agentrt_proxy.store import (
    Approval,
    StoreError,
    StoreFull,
    StoreLocked,
    StoreReadOnly,
    WouldBlock,
)
from agentrt_proxy.text import model_text, operator_text
from agentrt_proxy.upstream import LoadedTool

WOULD_BLOCK = object()  # _decide_inline: decide again in a worker thread
# Arguments longer than this are decided in a worker thread, never on the event loop: their
# parsing, hashing and recording are pure Python and grow with them (1.5 M array elements
# took 12 s), and the loop must stay free to renew the leases of the calls executing meanwhile.
INLINE_ARGUMENTS_BYTES = 64 * 1024
_READS = (ReadRows, ReadRun, ReadSteps, ReadApprovals)
WhenPending = Callable[[Approval], Awaitable[dict[str, Any] | None]]
_EFFECTS = (Collect, TakeOver, Expire)


class CallRules:
    def __init__(self, parts: CallParts, shutting_down: anyio.Event) -> None:
        self.parts = parts
        self.store = parts.store
        # A free lock is taken without a turn of the loop (a held one still goes to its waiters in order).
        self.lock = anyio.Lock(fast_acquire=True)
        self.facts = parts.tool_facts()
        # What the policy says of each tool, before any re-run: the configuration's, fixed for the
        # life of the process, so read once here (the gate evaluates the policy in full as it decides).
        self.outcomes = {name: parts.policy.decide(parts.policy.tools[name])[0] for name in self.facts}
        self.session_facts = rules.SessionFacts(parts.settings.max_pending, parts.settings.grant_ttl, self.facts)
        self.settling = Settling(parts.store, parts.clock, self.facts, parts.log, parts.guarded)
        self.attaching = Attaching(parts.gate, self.settling, parts.log, parts.guarded)
        self.beginning = Beginning(parts, self.settling)
        self.executing = Executing(parts, self.settling, self.beginning, self.lock)
        self.hold = CallHold(parts.store, parts.clock, parts.settings, shutting_down)

    @property
    def limits(self) -> Limits:
        return self.parts.settings.limits

    # ================================================================= one tools/call

    async def handle(
        self, tool: LoadedTool, arguments_text: str | None, ctx: CallContext, when_pending: WhenPending | None = None
    ) -> dict[str, Any]:
        """The call's answer. ``when_pending``: what a request still waiting on an approval after
        the hold comes to instead of PENDING_APPROVAL (a task, proxy/_tasks.py): its answer, or
        None once the approval was decided, to decide again."""
        # One relay per call: the hold's progress and the server's reach the host under its token.
        progress = ProgressRelay(ctx)
        with self.store.call_in_flight():  # with others in flight, its writes share their COMMITs
            async with progress.relaying():
                return await self._handle(tool, arguments_text, ctx, progress, when_pending)

    async def _handle(
        self, tool: LoadedTool, arguments_text: str | None, ctx: CallContext, progress: ProgressRelay,
        when_pending: WhenPending | None,
    ) -> dict[str, Any]:
        small = arguments_text is None or len(arguments_text) <= INLINE_ARGUMENTS_BYTES
        if small:
            key = canonical.request_key(tool.name, arguments_text)
        else:
            key = await anyio.to_thread.run_sync(canonical.request_key, tool.name, arguments_text)
        held = False
        for _ in range(MAX_DECIDES):
            async with self.lock:
                applied = self._decide_inline(tool, key, arguments_text) if small else WOULD_BLOCK
                joined = self.store.joined() if small else ()
                if applied is WOULD_BLOCK:
                    applied = await anyio.to_thread.run_sync(self._decide_safely, tool, key, arguments_text)
            # What the decision wrote is durable before anything acts on it (the next decision
            # may run meanwhile: it reads what this one wrote, and waits for the same COMMIT).
            await self.store.durable(joined)
            if isinstance(applied, Answer):
                return applied.result
            if isinstance(applied, Execute):
                return await self.executing.execute(tool, self.facts[tool.name], applied, progress)
            if isinstance(applied, Pending):
                if not held and self.hold.may_hold(ctx):
                    held = True
                    if await self.hold.wait(applied.approval, ctx, progress):
                        continue
                if when_pending is not None:
                    instead = await when_pending(applied.approval)
                    if instead is None:
                        continue  # decided meanwhile: decide again
                    return instead
                return answers.prose(answers.pending_text(applied.approval))
            # Retry: the call lost a race; read again.
        return answers.prose(model_text.in_progress())

    def _decide_inline(self, tool: LoadedTool, key: str | None, arguments_text: str | None) -> Applied | object:
        """Decide on the event loop when nothing makes that wait: the store is free in this
        process and no other connection holds the write lock at a BEGIN (``Store.nowait``).
        A worker-thread hop costs ~0.15 ms and GIL hand-offs per call; the decision's own
        SQLite work is short (reads under WAL never wait on writers; its COMMIT is one
        fsync, which a thread would only have waited for too). Otherwise ``WOULD_BLOCK``:
        the caller decides again in a worker thread, which may wait up to the busy timeout.
        A write refused that way wrote nothing, and a decision is always safe to make again
        (as after a lost race: each one reads the index afresh)."""
        with self.store.nowait() as free:
            if not free:
                return WOULD_BLOCK
            try:
                return self._decide_safely(tool, key, arguments_text)
            except WouldBlock:
                return WOULD_BLOCK

    def _decide_safely(self, tool: LoadedTool, key: str | None, arguments_text: str | None) -> Applied:
        try:
            return self._decide(tool, key, arguments_text)
        except StoreError as err:
            self.parts.log.error(f"{tool.name}: {err}")
            # A database refusing writes (full, read-only, locked past the busy timeout) refused
            # a settlement or an effect the rules write before anything runs: say so, not "read".
            refused_write = isinstance(err, StoreFull | StoreReadOnly | StoreLocked)
            what = model_text.COULD_NOT_WRITE if refused_write else model_text.COULD_NOT_READ
            return Answer(answers.prose(model_text.unavailable(what)))

    # ====================================================================== decide

    def _decide(self, tool: LoadedTool, key: str | None, arguments_text: str | None) -> Applied:
        """Read what the rules ask for and decide again until they name an action; apply it.
        An effect that answers nothing (an expiry, a take-over, a collection the gate ended)
        changes what the next read sees: its run is read again and the rules decide again."""
        facts = self.facts[tool.name]
        outcome = self.outcomes[tool.name]
        now = self.parts.clock.now_ns()
        call = rules.CallFacts(facts, key, outcome, now, self.parts.gate.wall.now_ns())  # leases: the gate's wall clock
        reader = CallReader(self.store, self.parts.clock, self.parts.settings.session, tool.name, key, now,
                            tool.repeat_window)
        view = CallView()
        while True:
            ruling = rules.decide(view, call, self.session_facts)
            view = reader.settle(view, ruling.settle)
            action = ruling.action
            if isinstance(action, _READS):
                view = reader.read(view, action)
                continue
            if not isinstance(action, _EFFECTS):
                return self._apply(tool, key, arguments_text, action)
            applied = self._apply_effect(tool, action)
            if not isinstance(applied, DecideAgain):
                return applied
            view = view.after_effect(action.run_id, of_this_request=action.of_this_request)

    def _apply_effect(self, tool: LoadedTool, action: Effect) -> Applied | DecideAgain:
        if isinstance(action, Collect):
            return self.attaching.collect(tool.name, action.run_id)
        if isinstance(action, Expire):
            return self.attaching.expire(action.run_id)
        if action.of_this_request:
            return self.attaching.take_over(tool.name, action.run_id)
        return self.attaching.take_over_other(tool.name, action.run_id)

    def _apply(self, tool: LoadedTool, key: str | None, arguments_text: str | None, action: Action) -> Applied:
        if isinstance(action, Begin):
            return self.beginning.begin(tool, key, arguments_text, action)
        if isinstance(action, AwaitApproval):
            return Pending(action.approval)
        if isinstance(action, AskUnknown):
            approval = self.beginning.reopen(tool, action.request_key, action.args_text, action.attempt)
            if approval is None:
                return Answer(answers.prose(model_text.unavailable(model_text.COULD_NOT_ASK)))
            return Answer(answers.prose(model_text.blocked_unknown(tool.name, approval.id)))
        if isinstance(action, Duplicate):
            return Answer(self._duplicate(tool, action))
        if isinstance(action, Answering):
            return Answer(answers.prose(action.text))
        raise TypeError(operator_text.BUG_UNAPPLIED_ACTION.format(action=action))

    def _duplicate(self, tool: LoadedTool, action: Duplicate) -> dict[str, Any]:
        """DUPLICATE. Quoting the earlier result or error, it quotes the server's text, read from
        the record: it taints this process as that answer did (in whichever process gave it)."""
        answer = answers.prose(action.text)
        if action.quotes_server and self.parts.untrusted.returned(tool.server, tool.name, action.run_id):
            return answers.marked_untrusted(answer)
        return answer
