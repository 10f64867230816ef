"""Executing a session's allowed request: the record that its tool is starting, the call
itself (exactly once, bounded, under lease renewals), and the record of its outcome
(runtime-core §1.10, §5.1–5.2).

An ``Execution`` belongs to one session's open step. It reaches its session only through the
session's public methods: ``start_tool``, ``end``, ``resume_running``, ``check_lease``,
``forget_begun``, ``step_recorded``, ``step_restored`` and ``mark_lease_lost``.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

import anyio

from agentrt_proxy.canonical.clock import Clock
from agentrt_proxy.gate._dispatch import DispatchGate
from agentrt_proxy.gate._leases import LeaseRenewals, RenewalTimer
from agentrt_proxy.gate._model import (
    ENDED,
    EXECUTED,
    PENDING,
    Observation,
    Proposal,
    RunSession,
    ToolRequest,
    Verdict,
    expired,
    fmt,
    observation_from_outcome,
    observe,
)
from agentrt_proxy.gate._transitions import expire_approval, record_outcome, record_policy_row, stand_not_sent
from agentrt_proxy.gate.attempts import FAILURE_CANCELLED, KIND_INTERRUPTED, not_sent
from agentrt_proxy.mcp import outcomes
from agentrt_proxy.store import (
    AWAITING,
    DECIDING,
    EXECUTING,
    Approval,
    ApprovalExpired,
    LeaseLost,
    Run,
    Step,
    Store,
    StoreCorrupt,
    StoreError,
    StoreGone,
    StoreUnavailable,
    Tx,
    WouldBlock,
)
from agentrt_proxy.text.record_text import (
    DETAIL_PANIC,
    ERR_EXPIRED,
    ERR_NO_OUTCOME_WITHIN,
    SUMMARY_CANCELLED,
    SUMMARY_PANIC,
)


class ExecutionGate(DispatchGate, Protocol):
    """What an execution needs of its session's gate."""

    @property
    def store(self) -> Store: ...

    @property
    def clock(self) -> Clock: ...

    @property
    def lease_ttl(self) -> int: ...

    @property
    def renewal_timer(self) -> RenewalTimer: ...

    def lease_expiry(self) -> str: ...


class ExecutionSession(RunSession, Protocol):
    """What an execution tells and asks of its session (``session.Session`` is one): named
    here, not imported, so this module stays below the session that starts executions."""

    @property
    def gate(self) -> ExecutionGate: ...

    @property
    def ended_run(self) -> Run | None: ...

    def check_lease(self, tx: Tx) -> None: ...

    def forget_begun(self) -> None: ...

    def mark_lease_lost(self) -> None: ...

    def start_tool(self) -> None: ...

    def step_recorded(self, ended_run: Run | None, standing: Approval | None = None) -> None: ...

    def step_restored(self, execution: Execution) -> None: ...

RECORD_GRACE_S = 5.0  # a tool is bounded by its spec's timeout plus this, as a safety net
# An outcome the store refused (locked past the busy timeout, full, read-only for a moment) is
# kept and recorded again after these pauses, doubling, for as long as the run's lease lasts:
# past it another proxy may take the run over, and the outcome is no longer this one's to write.
RECORD_RETRY_FIRST_S = 0.1
LATE_OUTCOME_EVENT = "step.late_outcome"  # an answer that came after the run was taken over
RECORD_RETRY_MAX_S = 2.0


class OutcomeNotRecorded(StoreUnavailable):
    """The tool's call ended and its outcome could not be recorded before the lease ran out (or
    the store cannot ever take it: the file is gone or corrupt). ``observation`` is what came
    back, for the answer to say whether the call executed; the run's step stays EXECUTING in the
    store, so once its lease expires the next call takes it over and asks an operator."""

    def __init__(self, observation: Observation, cause: StoreUnavailable, step_id: str = "") -> None:
        super().__init__(str(cause))
        self.observation = observation
        self.cause = cause
        self.step_id = step_id  # the step left EXECUTING: where a late record of it belongs

CallTool = Callable[[ToolRequest], Awaitable[outcomes.ToolOutcome]]
OnRecorded = Callable[[Observation], None]


class Execution:
    def __init__(self, session: ExecutionSession, step: Step, prop: Proposal) -> None:
        self.session, self.step, self.prop = session, step, prop
        self.started = False  # the record that the tool is starting was written

    # the start ----------------------------------------------------------------------
    def start(self) -> None:
        """Write step.policy and step.tool_started, after the lease check (and, for a grant,
        its expiry check: an expired grant is expired, the session ended, and
        ``ApprovalExpired`` raised)."""
        session, step, prop = self.session, self.step, self.prop
        gate = session.gate
        now_ns = gate.clock.now_ns()
        now = fmt(now_ns)
        grant = prop.grant
        if grant is not None and session.limits.grant_ttl and expired(grant.decided_at, now_ns,
                                                                       session.limits.grant_ttl):
            with gate.store.write() as tx:
                expire_approval(tx, grant, now_ns)
            session.end()
            raise ApprovalExpired(ERR_EXPIRED.format(id=grant.id), grant.id)
        with gate.store.write() as tx:
            if grant is not None:
                session.resume_running(tx, now, {"approval_id": grant.id})
            else:
                session.check_lease(tx)
            spec_hash = gate.spec_row(prop.request.spec)[0]
            record_policy_row(tx, step, prop, policy_id=gate.policy_id, spec_hash=spec_hash,
                              expect=(DECIDING, AWAITING),
                              columns={"status": EXECUTING, "started_at": now, "spec_hash": spec_hash})
            payload: dict[str, Any] = {"tool": prop.request.spec.name, "args": prop.request.args}
            if grant is not None:
                payload["approval_id"] = grant.id
            tx.append(session.run_id, step.id, now, "step.tool_started", payload)

    # the call -----------------------------------------------------------------------
    async def run(self, call_tool: CallTool, on_recorded: OnRecorded | None) -> Verdict:
        """Start (unless started), call the tool once, and record its outcome, even if the
        caller is cancelled meanwhile (the recording is shielded)."""
        if not self.started:
            await anyio.to_thread.run_sync(self.session.start_tool)
        name = self.prop.request.spec.name
        started = time.monotonic()
        try:
            outcome = await self._call_with_heartbeat(call_tool)
        except anyio.get_cancelled_exc_class():
            obs = observe(KIND_INTERRUPTED, {"tool": name, "error": FAILURE_CANCELLED, "failure": FAILURE_CANCELLED},
                          SUMMARY_CANCELLED.format(tool=name, error=FAILURE_CANCELLED))
            with anyio.CancelScope(shield=True):
                await anyio.to_thread.run_sync(self.record, obs, _ms(started), on_recorded)
            raise
        except Exception as exc:  # the caller's tool failed unexpectedly: a recorded failure
            obs = observe("tool_error", {"tool": name, "error": DETAIL_PANIC.format(error=exc)},
                          SUMMARY_PANIC.format(tool=name))
        else:
            obs = observation_from_outcome(name, outcome)
        duration_ms = _ms(started)
        with anyio.CancelScope(shield=True):
            verdict = await self._record_retrying(obs, duration_ms, on_recorded)
        return verdict

    async def _record_retrying(self, obs: Observation, duration_ms: int, on_recorded: OnRecorded | None) -> Verdict:
        """``record``, again after a pause while the store refuses it, within the lease;
        then ``OutcomeNotRecorded``. A refused recording wrote nothing (its transaction rolled
        back and ``record`` gave the step back to the session), so trying again is safe."""
        deadline = time.monotonic() + self.session.gate.lease_ttl / 1e9
        pause = RECORD_RETRY_FIRST_S
        while True:
            try:
                inline = self._record_inline(obs, duration_ms, on_recorded)
                joined = self.session.store.joined()
                if inline is not None:
                    await self.session.store.durable(joined)  # recorded durably before anyone hears it
                    return inline
                verdict: Verdict = await anyio.to_thread.run_sync(self.record, obs, duration_ms, on_recorded)
                return verdict
            except StoreUnavailable as err:
                if isinstance(err, StoreGone | StoreCorrupt) or time.monotonic() + pause >= deadline:
                    raise OutcomeNotRecorded(obs, err, self.step.id) from err
            await anyio.sleep(pause)
            pause = min(pause * 2, RECORD_RETRY_MAX_S)

    async def _call_with_heartbeat(self, call_tool: CallTool) -> outcomes.ToolOutcome:
        request, session = self.prop.request, self.session
        gate = session.gate
        bound = request.spec.timeout / 1e9 + RECORD_GRACE_S
        renewals = LeaseRenewals(gate.lease_ttl / 3 / 1e9,
                                 lambda: gate.store.renew_lease(session.run_id, gate.owner, gate.lease_expiry()),
                                 session.mark_lease_lost, gate.renewal_timer)
        outcome: outcomes.ToolOutcome
        try:
            with anyio.fail_after(bound):
                outcome = await call_tool(request)
        except TimeoutError:
            outcome = outcomes.NoAnswer("timeout", ERR_NO_OUTCOME_WITHIN.format(tool=request.spec.name,
                                                                               seconds=f"{bound:g}"))
        finally:
            await renewals.stop()
        return outcome

    # the record of the outcome ------------------------------------------------------
    def _record_inline(self, obs: Observation, duration_ms: int, on_recorded: OnRecorded | None) -> Verdict | None:
        """``record`` on the event loop when nothing makes it wait (``Store.nowait``; the
        reason is in docs/decisions/0006), else None: nothing was written, record in a
        worker thread."""
        with self.session.store.nowait() as free:
            if not free:
                return None
            try:
                return self.record(obs, duration_ms, on_recorded)
            except WouldBlock:
                return None

    def record(self, obs: Observation, duration_ms: int, on_recorded: OnRecorded | None = None) -> Verdict:
        """``on_recorded(observation)`` runs inside the recording's transaction, after the
        gate's own writes: what it writes commits with the outcome or not at all (if it
        raises, nothing is recorded, the step is still the session's, and this raises)."""
        session, spec = self.session, self.prop.request.spec
        gate = session.gate
        now = fmt(gate.clock.now_ns())
        terminal_done = not obs.failure and spec.terminal
        # Nothing reached the server, and an operator approved exactly this request: the
        # approval still stands (the identical call collects it again), not spent on nothing.
        grant = self.prop.grant if not_sent(obs.tree()) else None
        session.forget_begun()
        handed_over = False
        try:
            with gate.store.write() as tx:
                try:
                    if grant is not None:
                        stand_not_sent(tx, self.step, obs, grant, tool=spec.name, duration_ms=duration_ms,
                                       owner=gate.owner, at=now)
                        ended = None
                    else:
                        ended = record_outcome(tx, self.step, obs, tool=spec.name, terminal=spec.terminal,
                                               duration_ms=duration_ms, owner=gate.owner, at=now)
                except LeaseLost:
                    session.end()  # someone took the run over: the step is theirs to settle
                    raise
                # The hook may open the run's next step (the proxy's closing decision).
                session.step_recorded(ended if terminal_done else None, standing=grant)
                handed_over = True
                if on_recorded is not None:
                    on_recorded(obs)
        except LeaseLost:
            self._record_late(obs, now)
            raise
        except BaseException:
            if handed_over:
                # Nothing is recorded (the hook or the COMMIT failed; the transaction rolled
                # back): the step is the session's again, to record again or to release.
                session.step_restored(self)
            raise
        if terminal_done:
            session.end()
            return Verdict(ENDED, observation=obs, run=session.ended_run)  # the row as committed
        if grant is not None:
            session.end()  # the run waits again, its lease released with it
            return Verdict(PENDING, observation=obs, approval=grant)
        return Verdict(EXECUTED, observation=obs)


    def _record_late(self, obs: Observation, at: str) -> None:
        """Another gate took the run over while its tool ran, and the tool has now answered:
        the step is no longer this gate's to settle, but what came back is not thrown away. It
        is appended to the run's events as ``step.late_outcome`` (changing no row), so the
        operator deciding the interruption, and ``show``, see that the server answered and
        what. Best effort: a store that refuses it loses only this note, never a state."""
        payload = {"tool": self.prop.request.spec.name, "observation": obs.tree()}
        with contextlib.suppress(StoreError), self.session.gate.store.write() as tx:
            tx.append(self.session.run_id, self.step.id, at, LATE_OUTCOME_EVENT, payload)


def _ms(started: float) -> int:
    return int((time.monotonic() - started) * 1000)
