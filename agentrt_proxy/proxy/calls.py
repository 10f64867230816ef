"""The rules across calls: one run per call, and what the index of calls decides before it.

Before starting anything the proxy looks at this session's runs of the same request key
and applies, in order (proxy-and-mcp-module §2.6): (1) collect a run waiting on an approval
for this request, (2) a run executing under a live lease answers IN_PROGRESS, (3) take over
a run whose caller is gone, (4) a rejected, cancelled or expired request within the window,
(5) the duplicate rule, (6) an unknown outcome asks an operator; then BLOCKED and the
pending cap; (7) otherwise begin a new run. Reading the index and beginning or collecting
happens under one lock per process; executing and holding happen outside it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

import anyio

from agentrt_proxy import canonical
from agentrt_proxy.canonical.durations import SECOND, format_go, format_time_seconds, parse_time, wall_ns
from agentrt_proxy.config import READ_ONLY, Config
from agentrt_proxy.gate import (
    ALLOWED,
    DENIED,
    ENDED,
    INTERRUPTED_SIDE_EFFECT,
    OUTCOME_KNOWN,
    OUTCOME_NONE,
    OUTCOME_UNKNOWN,
    PENDING,
    TERMINAL,
    WAITING,
    Attempt,
    Clock,
    Decision,
    Gate,
    LastAttempt,
    Observation,
    ProxyPolicy,
    Session,
    ToolRequest,
    Verdict,
    attempts,
    proxy_limits,
)
from agentrt_proxy.mcp import CallContext
from agentrt_proxy.mcp.outcomes import ToolOutcome
from agentrt_proxy.proxy import answers
from agentrt_proxy.store import (
    OUTCOME_UNSEEN,
    Approval,
    ApprovalExpired,
    ClaimLost,
    LeaseLost,
    NotFound,
    ProxyCall,
    Run,
    RunIdTaken,
    RunLeased,
    RunStateError,
    Store,
    StoreError,
    WouldBlock,
    new_run_id,
)
from agentrt_proxy.text import model_text, operator_text

MAX_DECIDES = 6
HOLD_POLL_SECONDS = 0.2

# The proxy's own closing decisions for a run its call did not complete (origin operator).
CLOSE_ERROR = "one call per run: the tool call returned an error"
CLOSE_DENIED = "one call per run: the request was denied"
CLOSE_INVALID = "one call per run: the request was invalid"
CLOSE_TAKEN_OVER = "one call per run: taken over after an interruption, with nothing left in it to execute"
CLOSE_UNRECORDED = "one call per run: the tool call executed and its result could not be recorded"


class OfferedTool(Protocol):
    """What the rules need of a registered tool (``tools.LoadedTool`` provides it)."""

    name: str
    side_effect: str
    repeat_window: int

    async def call(self, arguments_text: str) -> ToolOutcome: ...


# ------------------------------------------------------------------------- decide's results


@dataclass
class Answer:
    """A finished answer for the host: a ``CallToolResult``."""

    result: dict[str, Any]


@dataclass
class Execute:
    session: Session
    grant: Approval | None = None
    row: ProxyCall | None = None  # the call's index row as its begin transaction left it (unsettled)


@dataclass
class Pending:
    approval: Approval
    run_id: str


@dataclass
class Retry:
    """The call lost a race: decide again. ``id_taken``: what it lost was only its run id
    (another call drew the same one), so the same step with a new id can go on."""

    id_taken: bool = False


Step = Answer | Execute | Pending | Retry | None
WOULD_BLOCK = object()  # _decide_inline: decide again in a worker thread


def prose_answer(text: str) -> Answer:
    return Answer(answers.prose(text))


class CallRules:
    def __init__(
        self,
        config: Config,
        store: Store,
        gate: Gate,
        policy: ProxyPolicy,
        tools: dict[str, Any],
        clock: Clock,
        *,
        write_stderr: Callable[[str], Any],
        program: str,
        shutting_down: anyio.Event,
        hold_poll: float = HOLD_POLL_SECONDS,
    ) -> None:
        self.config = config
        self.store = store
        self.index = store.index
        self.gate = gate
        self.policy = policy
        self.tools = tools
        self.clock = clock
        self.write_stderr = write_stderr
        self.program = program
        self.shutting_down = shutting_down
        self.hold_poll = hold_poll
        self.lock = anyio.Lock()
        self.session = config.session
        self.limits = proxy_limits(config.approval_ttl, config.grant_ttl)

    # ================================================================= one tools/call

    async def handle(self, tool: Any, arguments_text: str | None, ctx: CallContext) -> dict[str, Any]:
        key = canonical.request_key(tool.name, arguments_text)
        held = False
        for _ in range(MAX_DECIDES):
            async with self.lock:
                step = self._decide_inline(tool, key, arguments_text)
                if step is WOULD_BLOCK:
                    step = await anyio.to_thread.run_sync(self._decide_safely, tool, key, arguments_text)
            if isinstance(step, Answer):
                return step.result
            if isinstance(step, Execute):
                return await self._execute(tool, step)
            if isinstance(step, Pending):
                if not held and self.config.hold > 0 and ctx.live and not self.shutting_down.is_set():
                    held = True
                    if await self._hold(step.approval, ctx):
                        continue
                return answers.prose(answers.pending_text(step.approval))
            # Retry: the call lost a race; read again.
        return prose_answer(model_text.in_progress()).result

    def _decide_inline(self, tool: Any, key: str | None, arguments_text: str | None) -> Step | object:
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

    def _decide_safely(self, tool: Any, key: str | None, arguments_text: str | None) -> Step:
        try:
            return self._decide(tool, key, arguments_text)
        except StoreError as err:
            self._log_error(f"{tool.name}: {err}")
            return prose_answer(model_text.unavailable(model_text.COULD_NOT_READ))

    # ====================================================================== decide

    def _decide(self, tool: Any, key: str | None, arguments_text: str | None) -> Step:
        now = self.clock.now_ns()
        if key is None:
            return self._begin(tool, None, arguments_text, prior=None, reuse=None, prev=None)
        window = tool.repeat_window
        rows = self.index.for_key(self.session, key, now - window)
        open_row = next((row for row in rows if row.open), None)
        reuse: ProxyCall | None = None
        if open_row is not None:
            run = self._run(open_row.run_id)
            if run is None:
                reuse = open_row
            elif run.status not in TERMINAL:
                step = self._unfinished(tool, run)
                if step is not None:
                    return step
                run = self._run(open_row.run_id)
                if run is None or run.status not in TERMINAL:
                    return prose_answer(model_text.in_progress())
                rows = self.index.for_key(self.session, key, now - window)
        if window > 0:
            step = self._refusal(tool, rows, now, window)
            if step is not None:
                return step
        prior = self._unresolved(tool, key) if tool.side_effect != READ_ONLY else None
        step = self._session_rules(tool, key, prior, now)
        if step is not None:
            return step
        prev = None if reuse is not None else open_row
        return self._begin(tool, key, arguments_text, prior=prior, reuse=reuse, prev=prev)

    # ------------------------------------------------------------- rules 1 to 3

    def _unfinished(self, tool: Any, run: Run) -> Step:
        if run.status != WAITING:
            if self._lease_live(run):
                return prose_answer(model_text.in_progress())  # rule 2
            return self._recover(tool, run)  # rule 3
        approval = attempts.latest_approval(self.store.approvals_of(run.id))  # rule 1
        if approval is None:
            return prose_answer(model_text.in_progress())
        if approval.status == "pending":
            if not self._past_expiry(approval):
                return Pending(approval, run.id)
            self._attach_quietly(run.id)  # expires it and ends the run; rule 4 answers EXPIRED
            return None
        if approval.status == "approved":
            return self._collect(tool, run, approval)
        return prose_answer(model_text.in_progress())

    def _attach(self, run: Run, could_not: str) -> tuple[Session | None, Verdict] | Step:
        """Attach to a run (collect or take over); what a failed attach answers instead."""
        try:
            return self.gate.attach(run.id)
        except RunLeased:
            return prose_answer(model_text.in_progress())
        except RunStateError:
            return Retry()
        except (StoreError, ValueError) as err:
            self._log_error(f"run {run.id}: {err}")
            return prose_answer(model_text.unavailable(could_not))

    def _recover(self, tool: Any, run: Run) -> Step:
        attached = self._attach(run, model_text.COULD_NOT_RECOVER)
        if not isinstance(attached, tuple):
            return attached
        session, verdict = attached
        if verdict.outcome == PENDING and verdict.approval is not None:
            self.write_stderr(operator_text.operator_cut_off(run.id, tool.name))
            self._operator_hint(verdict.approval, tool.name)
            return Pending(verdict.approval, run.id)
        if verdict.outcome == ENDED or session is None:
            return None
        # A read cut off, or a call cut off before or after its tool ran: nothing to execute.
        self._close_run(session, CLOSE_TAKEN_OVER)
        return None

    def _collect(self, tool: Any, run: Run, grant: Approval) -> Step:
        attached = self._attach(run, model_text.COULD_NOT_COLLECT)
        if not isinstance(attached, tuple):
            return attached
        session, verdict = attached
        if verdict.outcome == ALLOWED and session is not None:
            return Execute(session, grant)
        if verdict.outcome == PENDING and verdict.approval is not None:
            self._operator_hint(verdict.approval, tool.name)
            return Pending(verdict.approval, run.id)
        if verdict.outcome == DENIED and session is not None:
            return self._denied(session, verdict)
        if verdict.outcome == ENDED:
            return None  # e.g. the grant was too old: rule 4 answers EXPIRED
        if session is not None:
            session.close()
        return Retry()

    # ----------------------------------------------------------- rules 4 and 5

    def _refusal(self, tool: Any, rows: list[ProxyCall], now: int, window: int) -> Step:
        for row in rows:
            run = self._run(row.run_id)
            if run is None or run.status not in TERMINAL:
                continue
            steps = self.store.steps_of(run.id)
            approvals = self.store.approvals_of(run.id)
            last = self._last_attempt(tool, run, steps, approvals)
            self._settle(row, last)
            if not run.finished_at:
                continue
            finished = parse_time(run.finished_at)
            if finished < now - window:
                continue
            until = format_time_seconds(finished + window)
            latest = attempts.latest_approval(approvals)
            if run.reason == "approval_rejected" and latest is not None:
                return prose_answer(model_text.rejected(latest.id, latest.note, until))
            if run.reason == "approval_expired":
                if last.unknown:
                    return None  # rule 6 asks again
                if latest is not None:
                    return prose_answer(model_text.expired(latest.id, until))
            if run.reason == "operator_cancelled":
                return prose_answer(model_text.cancelled(run.reason_detail, until))
            if tool.side_effect != READ_ONLY:
                if last.unknown:
                    return None
                executed = attempts.executed_step(steps)
                if last.known and executed is not None:
                    return prose_answer(
                        model_text.duplicate(
                            format_time_seconds(finished), format_go(window), self._outcome_of(executed)
                        )
                    )
        return None

    @staticmethod
    def _outcome_of(step: Any) -> str:
        obs = attempts.observation(step)
        if obs.get("kind") == "tool_result":
            return model_text.duplicate_succeeded(attempts.result_text(obs))
        content = obs.get("content")
        if isinstance(content, dict) and content.get("failure") == "invalid_content":
            return model_text.duplicate_unrecorded(attempts.error_text(obs))
        return model_text.duplicate_failed(attempts.error_text(obs))

    # ------------------------------------------------------------------ rule 6

    def _unresolved(self, tool: Any, key: str) -> Attempt | None:
        for row in self.index.attempts(self.session, key):
            if row.outcome == OUTCOME_KNOWN:
                return None
            run = self._run(row.run_id)
            if run is None or run.status not in TERMINAL:
                continue
            last = self._last_attempt(tool, run)
            self._settle(row, last)
            if last.known:
                return None
            if last.unknown:
                return last.attempt
        return None

    # ------------------------------------------------------------ session rules

    def _session_rules(self, tool: Any, key: str, prior: Attempt | None, now: int) -> Step:
        outcome, _ = self.policy.decide(self.policy.tools[tool.name])
        needs_approval = outcome == "require_approval" or (prior is not None and outcome != "deny")
        read_only = tool.side_effect == READ_ONLY
        if read_only and not needs_approval:
            return None
        waiting = 0
        for row in self.index.unsettled(self.session):
            if row.request_key == key:
                continue
            run = self._run(row.run_id)
            if run is None:
                self.index.settle_empty(row.id, now)
                continue
            if run.status in TERMINAL:
                self._settle(row, self._last_attempt(self.tools.get(row.tool), run))
                continue
            same_tool = not read_only and row.tool == tool.name
            if run.status == WAITING:
                approval = attempts.latest_approval(self.store.approvals_of(run.id))
                if approval is None:
                    continue
                live = self._live(approval, now)
                if same_tool and approval.kind == INTERRUPTED_SIDE_EFFECT:
                    if live:
                        return prose_answer(model_text.blocked_unknown(tool.name, approval.id))
                    self._attach_quietly(run.id)  # an expiry resolves nothing; asked again below
                elif live and approval.status == "pending":
                    waiting += 1
            elif same_tool and not self._lease_live(run):
                step = self._recover(tool, run)
                if isinstance(step, Pending):
                    return prose_answer(model_text.blocked_unknown(tool.name, step.approval.id))
                if step is not None:
                    return prose_answer(model_text.in_progress())
        if not read_only and outcome != "deny":
            step = self._unknown_block(tool, key)
            if step is not None:
                return step
        if needs_approval and waiting >= self.config.max_pending:
            return prose_answer(model_text.blocked_cap(self.config.max_pending))
        return None

    def _unknown_block(self, tool: Any, key: str) -> Step:
        """Another request to this tool has an unknown outcome that nothing asks about now:
        ask again in a fresh run of that request, and refuse this call meanwhile."""
        for row in self.index.unknown_for_tool(self.session, tool.name, key):
            run = self._run(row.run_id)
            if run is None or run.status not in TERMINAL:
                continue
            last = self._last_attempt(tool, run)
            self._settle(row, last)
            if not last.unknown or last.attempt is None:
                continue
            if run.reason in ("approval_rejected", "operator_cancelled"):
                continue  # an operator resolved it
            approval = self._reopen(tool, row.request_key, self._recorded_args(run), last.attempt)
            if approval is None:
                return prose_answer(model_text.unavailable(model_text.COULD_NOT_ASK))
            return prose_answer(model_text.blocked_unknown(tool.name, approval.id))
        return None

    # ================================================================ beginning runs

    def _new_run_id(self) -> str:
        return new_run_id(self.session)

    def _open_run(
        self,
        tool: Any,
        key: str | None,
        run_id: str,
        arguments_text: str | None,
        *,
        origin: str,
        rerun: Attempt | None,
        reuse: ProxyCall | None,
        prev: ProxyCall | None,
        start: bool,
    ) -> tuple[Session, Verdict, ProxyCall] | Step:
        """Claim the index row (unless ``reuse``), begin the run, open its step and propose the
        call, all in ONE write transaction (docs/decisions/0005). With ``start``, an allowed
        proposal also writes its start (``Session.start_tool``) and a denied one the proxy's
        closing decision and the row's settlement, in the same transaction. Anything failing
        inside rolls the whole back and discards the session: a lost race answers Retry
        (``id_taken`` when another call has ``run_id``), anything else UNAVAILABLE."""
        session: Session | None = None
        stage = "claim"
        try:
            with self.store.write():
                if reuse is None:
                    row = self.index.claim(
                        self.session,
                        key or f"invalid:{run_id}",
                        tool.name,
                        tool.side_effect,
                        run_id,
                        prev.id if prev is not None else None,
                        self.clock.now_ns(),
                    )
                else:
                    row = dataclasses.replace(reuse, settled_at=0, outcome=OUTCOME_UNSEEN)  # as unsettle leaves it
                stage = "begin"
                session = self.gate.begin(run_id, f"call {tool.name}", self.limits)
                stage = "step"
                if reuse is not None:
                    # A reused row may have been settled as empty by another process before
                    # the run existed; a row claimed in this transaction cannot have been.
                    self.index.unsettle(run_id)
                if session.step() is None:  # a limit ended the run at once: commit that
                    session.close()
                    return prose_answer(model_text.unavailable(model_text.COULD_NOT_START))
                stage = "propose"
                verdict = self._propose_now(session, tool, arguments_text, origin, rerun)
                stage = "start"
                if start and verdict.outcome == ALLOWED:
                    session.start_tool()
                elif start and verdict.outcome == DENIED:
                    self._close_run_now(session, self._closing_of_denied(verdict))
        except ClaimLost as err:
            self._discard(session)
            return Retry(id_taken=isinstance(err, RunIdTaken))
        except Exception as err:
            self._discard(session)
            if stage == "begin" and self._run(run_id) is not None:
                # Another process began this run first (a reused row), or a run that has no
                # row in the index has the id this call drew.
                return Retry(id_taken=reuse is None)
            if stage != "begin" and not isinstance(err, StoreError):
                raise
            if stage == "claim":
                self._log_error(f"{tool.name}: {err}")
                return prose_answer(model_text.unavailable(model_text.COULD_NOT_RECORD))
            self._log_error(f"run {run_id}: {err}")
            return prose_answer(
                model_text.unavailable(
                    model_text.COULD_NOT_RECORD if stage == "propose" else model_text.COULD_NOT_START
                )
            )
        except BaseException:
            self._discard(session)
            raise
        return session, verdict, row

    def _discard(self, session: Session | None) -> None:
        """Forget a session whose writes were rolled back (no write of its own)."""
        if session is not None:
            session._end()

    def _begin(
        self,
        tool: Any,
        key: str | None,
        arguments_text: str | None,
        *,
        prior: Attempt | None,
        reuse: ProxyCall | None,
        prev: ProxyCall | None,
    ) -> Step:
        run_id = reuse.run_id if reuse is not None else self._new_run_id()
        opened = self._open_run(
            tool, key, run_id, arguments_text, origin="model", rerun=prior, reuse=reuse, prev=prev, start=True
        )
        if not isinstance(opened, tuple):
            return opened
        session, verdict, row = opened
        if verdict.outcome == ALLOWED:
            return Execute(session, row=row)
        if verdict.outcome == PENDING and verdict.approval is not None:
            self._operator_hint(verdict.approval, tool.name)
            return Pending(verdict.approval, run_id)
        if verdict.outcome == DENIED:
            return self._denied_answer(verdict)  # closed and settled in the same transaction
        run = self._run(run_id)
        return prose_answer(model_text.denied(run.reason_detail if run is not None else "the run ended"))

    def _propose_now(
        self, session: Session, tool: Any, arguments_text: str | None, origin: str, rerun: Attempt | None
    ) -> Verdict:
        """Propose the call; a failure raises (the caller's transaction rolls back)."""
        if rerun is not None:
            self.policy.mark_rerun(session.run_id, rerun)
        try:
            return session.propose(Decision(kind="tool_call", tool=tool.name, args=arguments_text, origin=origin))
        finally:
            if rerun is not None:
                self.policy.forget_rerun(session.run_id)

    def _propose(
        self, session: Session, tool: Any, arguments_text: str | None, origin: str, rerun: Attempt | None
    ) -> Verdict | None:
        if rerun is not None:
            self.policy.mark_rerun(session.run_id, rerun)
        try:
            return session.propose(Decision(kind="tool_call", tool=tool.name, args=arguments_text, origin=origin))
        except StoreError as err:
            self._log_error(f"run {session.run_id}: {err}")
            session.close()
            return None
        finally:
            if rerun is not None:
                self.policy.forget_rerun(session.run_id)

    def _denied(self, session: Session, verdict: Verdict) -> Answer:
        self._close_run(session, self._closing_of_denied(verdict))
        return self._denied_answer(verdict)

    @staticmethod
    def _closing_of_denied(verdict: Verdict) -> str:
        obs = verdict.observation
        return CLOSE_INVALID if obs is not None and obs.kind == "invalid_decision" else CLOSE_DENIED

    @staticmethod
    def _denied_answer(verdict: Verdict) -> Answer:
        return prose_answer(answers.denied_text(verdict))

    def _close_run(self, session: Session, message: str) -> None:
        """End a run its call did not complete, with the proxy's own fail decision."""
        try:
            session.fail(message)
        except StoreError as err:
            self._log_error(f"run {session.run_id}: closing: {err}")
        finally:
            session.close()
        self._settle_run(session.run_id)

    def _close_run_now(self, session: Session, message: str) -> None:
        """``_close_run`` inside the caller's transaction: a failure raises (and rolls it back)."""
        session.fail(message)
        session.close()
        self._settle_run_now(session.run_id)

    # ============================================================== executing

    async def _execute(self, tool: Any, execute: Execute) -> dict[str, Any]:
        session = execute.session

        async def call_upstream(request: ToolRequest) -> ToolOutcome:
            return await tool.call(canonical.policy_text(request.args))

        closed: list[str] = []

        def on_recorded(obs: Observation) -> None:
            # Inside the transaction that records the outcome (docs/decisions/0005): a known
            # outcome settles the row, and a known tool error also gets the proxy's closing decision.
            if obs.kind == "tool_result":
                if execute.row is not None and session.ended_run is not None:
                    # The recording just ended the run with this result, the run's last attempt:
                    # its outcome is known (what _settle_run_now would read back).
                    self._settle_known(execute.row)
                else:
                    self._settle_run_now(session.run_id)
            elif obs.kind == "tool_error" and self._unknown_ending(tool, obs) is None:
                message = CLOSE_UNRECORDED if self._unrecorded(tool, obs) else CLOSE_ERROR
                self._close_run_now(session, message)
                closed.append(message)

        try:
            verdict = await session.execute(call_upstream, on_recorded)
        except ApprovalExpired as err:
            until = format_time_seconds(self.clock.now_ns() + tool.repeat_window)
            self._settle_run(session.run_id)
            return prose_answer(model_text.expired(err.approval_id, until)).result
        except (RunStateError, LeaseLost):
            return prose_answer(model_text.in_progress()).result
        except StoreError as err:
            self._log_error(f"run {session.run_id}: {err}")
            session.close()
            return prose_answer(model_text.unavailable(model_text.COULD_NOT_START)).result
        obs = verdict.observation
        if obs is None:
            session.close()
            return prose_answer(model_text.unavailable(model_text.OUTCOME_NOT_RECORDED)).result
        if obs.kind == "tool_result":
            session.close()  # the row was settled with the outcome
            return answers.tool_result(obs.content)
        if obs.kind != "tool_error":
            session.close()
            return prose_answer(model_text.unavailable(model_text.OUTCOME_NOT_RECORDED)).result
        content = obs.content if isinstance(obs.content, dict) else {}
        if not closed:
            ended = self._unknown_ending(tool, obs)
            if ended is not None:
                async with self.lock:
                    return await anyio.to_thread.run_sync(
                        self._rerun, tool, session, ended, str(content.get("error", ""))
                    )
        if closed == [CLOSE_UNRECORDED]:
            return prose_answer(model_text.unrecorded(str(content.get("error", "")), tool.repeat_window)).result
        return answers.tool_error(str(content.get("error", "")))

    def _unknown_ending(self, tool: Any, obs: Observation) -> str | None:
        """How a tool error's call ended when its outcome is unknown; None for a known failure."""
        return attempts.classify_tool_error(
            obs.tree(), tool.side_effect == READ_ONLY, lambda text: self._is_known_answer(tool, text)
        )

    @staticmethod
    def _unrecorded(tool: Any, obs: Observation) -> bool:
        content = obs.content if isinstance(obs.content, dict) else {}
        return tool.side_effect != READ_ONLY and content.get("failure") == "invalid_content"

    def _rerun(self, tool: Any, session: Session, ended: str, error: str) -> dict[str, Any]:
        """A call that may have taken effect: in the same run, ask an operator whether the
        recorded request runs again (an interrupted_side_effect approval naming the attempt)."""
        run_id = session.run_id
        self.write_stderr(operator_text.operator_unknown(run_id, tool.name, ended))
        try:
            steps = self.store.steps_of(run_id)
            attempted = next(s for s in reversed(steps) if attempts.is_tool_call(s))
            attempt = Attempt(run_id, attempted.id, attempted.started_at, ended)
            args = attempts.decision(attempted).get("args", {})
            args_text = canonical.policy_text(args if args is not None else {})
            step = session.step()
        except (StoreError, StopIteration) as err:
            self._log_error(f"run {run_id}: reading the attempt: {err}")
            session.close()
            return prose_answer(model_text.unknown_outcome(ended, None, error)).result
        if step is None:  # the run's step limit ended it: ask again in a fresh run
            session.close()
            self._settle_run(run_id)
            approval = self._reopen(tool, canonical.request_key(tool.name, args_text), args_text, attempt)
            return prose_answer(model_text.unknown_outcome(ended, approval.id if approval else None, error)).result
        verdict = self._propose(session, tool, args_text, "operator", attempt)
        if verdict is not None and verdict.outcome == PENDING and verdict.approval is not None:
            self._operator_hint(verdict.approval, tool.name)
            return prose_answer(model_text.unknown_outcome(ended, verdict.approval.id, error)).result
        if verdict is not None and verdict.outcome == DENIED:
            self._close_run(session, CLOSE_DENIED)
        else:
            session.close()
        return prose_answer(model_text.unknown_outcome(ended, None, error)).result

    def _reopen(self, tool: Any, key: str | None, args_text: str, attempt: Attempt) -> Approval | None:
        """Ask the same question about an unknown outcome again, in a fresh run of that request."""
        if key is None:
            return None
        rows = self.index.for_key(self.session, key, self.clock.now_ns())
        open_row = next((row for row in rows if row.open), None)
        if open_row is not None:
            run = self._run(open_row.run_id)
            if run is not None and run.status not in TERMINAL:
                self._log_error(
                    f"run {run.id}: asking again about an unknown outcome: the request's run {run.id} has not finished"
                )
                return None
        for _ in range(MAX_DECIDES):
            run_id = self._new_run_id()
            opened = self._open_run(
                tool, key, run_id, args_text, origin="operator", rerun=attempt, reuse=None, prev=open_row, start=False
            )
            if not (isinstance(opened, Retry) and opened.id_taken):
                break
        if not isinstance(opened, tuple):
            return None
        started, verdict, _ = opened
        if verdict.outcome == PENDING and verdict.approval is not None:
            self._operator_hint(verdict.approval, tool.name)
            return verdict.approval
        self._log_error(f"run {run_id}: asking again about an unknown outcome: no approval was opened")
        started.close()
        return None

    # ================================================================== the hold

    async def _hold(self, approval: Approval, ctx: CallContext) -> bool:
        """Wait up to ``hold`` for an operator; True when the approval was decided (or
        expired) and the call should decide again, False to answer pending now."""
        began = anyio.current_time()
        deadline = began + self.config.hold / SECOND
        last_progress = began
        while True:
            now = anyio.current_time()
            if now >= deadline or not ctx.live or self.shutting_down.is_set():
                return False
            if now - last_progress >= 1.0:
                last_progress = now
                await ctx.report_progress(now - began, self.config.hold / SECOND, model_text.progress_waiting())
            with anyio.move_on_after(min(self.hold_poll, deadline - now)):
                await _first_of(ctx.cancelled.wait, self.shutting_down.wait)
            try:
                current = await anyio.to_thread.run_sync(self.store.get_approval, approval.id)
            except StoreError:
                return False
            if current.status != "pending" or self._past_expiry(current):
                return True

    # =================================================================== helpers

    def _run(self, run_id: str) -> Run | None:
        try:
            return self.store.get_run(run_id)
        except NotFound:
            return None

    def _last_attempt(
        self, tool: Any, run: Run, steps: list[Any] | None = None, approvals: list[Approval] | None = None
    ) -> LastAttempt:
        steps = self.store.steps_of(run.id) if steps is None else steps
        approvals = self.store.approvals_of(run.id) if approvals is None else approvals
        return attempts.last_attempt(
            run.id,
            steps,
            approvals,
            read_only=tool is not None and tool.side_effect == READ_ONLY,
            tool_offered=tool is not None,
            is_known_answer=lambda text: tool is not None and self._is_known_answer(tool, text),
        )

    @staticmethod
    def _is_known_answer(tool: Any, text: str) -> bool:
        return bool(tool.known_answer.match(text))

    def _settle(self, row: ProxyCall, last: LastAttempt) -> None:
        if row.outcome == 0 or row.settled_at == 0:
            self.index.settle(row.id, last.outcome if last.outcome != 0 else OUTCOME_NONE, self.clock.now_ns())

    def _settle_known(self, row: ProxyCall) -> None:
        """``_settle`` of a row whose run just ended with a tool result: the outcome is known."""
        if row.outcome == 0 or row.settled_at == 0:
            self.index.settle(row.id, OUTCOME_KNOWN, self.clock.now_ns())

    def _settle_run(self, run_id: str) -> None:
        """Cache a finished run's outcome on its row, so later calls need not read it again."""
        try:
            self._settle_run_now(run_id)
        except StoreError as err:
            self._log_error(f"run {run_id}: {err}")

    def _settle_run_now(self, run_id: str) -> None:
        """``_settle_run`` without the log: inside a transaction, a failure must roll it back."""
        row = self.index.by_run(run_id)
        run = self._run(run_id)
        if row is None or run is None or run.status not in TERMINAL:
            return
        self._settle(row, self._last_attempt(self.tools.get(row.tool), run))

    def _recorded_args(self, run: Run) -> str:
        for step in self.store.steps_of(run.id):
            if attempts.is_tool_call(step):
                args = attempts.decision(step).get("args", {})
                return canonical.policy_text(args if args is not None else {})
        return "{}"

    def _lease_live(self, run: Run) -> bool:
        return bool(run.lease_owner) and bool(run.lease_expires_at) and parse_time(run.lease_expires_at) > wall_ns()

    def _past_expiry(self, approval: Approval) -> bool:
        return bool(approval.expires_at) and self.clock.now_ns() > parse_time(approval.expires_at)

    def _live(self, approval: Approval, now: int) -> bool:
        if approval.status == "pending":
            return not self._past_expiry(approval)
        if approval.status == "approved":
            ttl = self.config.grant_ttl
            return ttl == 0 or now <= parse_time(approval.decided_at) + ttl
        return False

    def _attach_quietly(self, run_id: str) -> None:
        try:
            session, _ = self.gate.attach(run_id)
        except (StoreError, ValueError):
            return
        if session is not None:
            session.close()

    def _operator_hint(self, approval: Approval, tool_name: str) -> None:
        self.write_stderr(operator_text.operator_waits(approval.id, approval.kind, tool_name, approval.run_id))
        self.write_stderr(
            operator_text.operator_decide_with(self.program, str(self.config.database), approval.run_id, approval.id)
        )

    def _log_error(self, text: str) -> None:
        self.write_stderr(operator_text.operator_error(text))


async def _first_of(*waiters: Callable[[], Any]) -> None:
    async with anyio.create_task_group() as tg:

        async def run(waiter: Callable[[], Any]) -> None:
            await waiter()
            tg.cancel_scope.cancel()

        for waiter in waiters:
            tg.start_soon(run, waiter)


__all__ = ["OUTCOME_UNKNOWN", "CallRules", "prose_answer"]
