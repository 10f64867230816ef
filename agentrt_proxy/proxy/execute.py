"""Executing a run the gate allowed, outside the lock, and what a recorded error means
(proxy-and-mcp-module §2.7): a known failure ends the run; an unknown outcome asks an
operator, in the same run, whether the recorded request runs again (§2.7.3).
"""

from __future__ import annotations

from typing import Any

import anyio

from agentrt_proxy import canonical
from agentrt_proxy.canonical.durations import format_time_seconds
from agentrt_proxy.gate import (
    DENIED,
    PENDING,
    Attempt,
    Observation,
    OutcomeNotRecorded,
    Session,
    ToolRequest,
    Verdict,
    attempts,
)
from agentrt_proxy.gate.budgets import settlement
from agentrt_proxy.mcp.outcomes import ToolOutcome
from agentrt_proxy.proxy import answers
from agentrt_proxy.proxy.applied import Execute
from agentrt_proxy.proxy.begin import Beginning, propose
from agentrt_proxy.proxy.parts import CallParts
from agentrt_proxy.proxy.progress import ProgressRelay
from agentrt_proxy.proxy.rules import ToolFacts
from agentrt_proxy.proxy.settling import Settling
from agentrt_proxy.store import ApprovalExpired, LeaseLost, RunStateError, StoreError
from agentrt_proxy.text import model_text, operator_text
from agentrt_proxy.text.operator_text import CLOSE_DENIED, CLOSE_ERROR, CLOSE_NOT_SENT, CLOSE_UNRECORDED
from agentrt_proxy.upstream import LoadedTool

Result = dict[str, Any]


class Executing:
    def __init__(self, parts: CallParts, settling: Settling, beginning: Beginning, lock: anyio.Lock) -> None:
        self.parts = parts
        self.store = parts.store
        self.clock = parts.clock
        self.log = parts.log
        self.settling = settling
        self.beginning = beginning
        self.lock = lock  # the process's lock of the rules: the re-run decides under it

    async def execute(self, tool: LoadedTool, facts: ToolFacts, allowed: Execute, progress: ProgressRelay) -> Result:
        session = allowed.session
        on_progress = progress.upstream()  # the server's progress to the host; the gate never sees it

        async def call_upstream(request: ToolRequest) -> ToolOutcome:
            return await tool.call(canonical.policy_text(request.args), on_progress)

        closed: list[str] = []

        guarded = self.parts.guarded

        def on_recorded(obs: Observation) -> None:
            # Inside the transaction that records the outcome (docs/decisions/0005): a known
            # outcome settles the row, and a known tool error also gets the proxy's closing decision.
            # A budget's reservation is spent with a result and with an UNRECORDED answer (the
            # server answered: it executed), released with a failure that ran nothing (not sent,
            # the server's own error), and kept while the outcome is unknown (docs/decisions/0017).
            if guarded is not None and obs.kind in ("tool_result", "tool_error"):
                unknown = obs.kind == "tool_error" and _unknown_ending(facts, obs) is not None
                executed = obs.kind == "tool_result" or _unrecorded(facts, obs)
                guarded.settle(session.run_id, tool.name, settlement(executed=executed, unknown=unknown))
            if obs.kind == "tool_result":
                if allowed.row is not None and session.ended_run is not None:
                    # The recording just ended the run with this result, the run's last attempt:
                    # its outcome is known (what settle_run_now would read back).
                    self.settling.settle_known(allowed.row)
                else:
                    self.settling.settle_run_now(session.run_id)
            elif obs.kind == "tool_error" and _unknown_ending(facts, obs) is None:
                message = _closing(facts, obs)
                self.settling.close_run_now(session, message)
                closed[:] = [message]  # once, however often the recording is tried

        try:
            verdict = await session.execute(call_upstream, on_recorded)
        except ApprovalExpired as err:
            until = format_time_seconds(self.clock.now_ns() + tool.repeat_window)
            if guarded is not None:  # nothing was sent: what collecting it reserved is free again
                guarded.freed(session.run_id, tool.name)
            self.settling.settle_run(session.run_id)
            return answers.prose(model_text.expired(err.approval_id, until))
        except (RunStateError, LeaseLost):
            return answers.prose(model_text.in_progress())
        except OutcomeNotRecorded as err:
            # The call ended and its outcome is not in the store: say whether it executed. The
            # step stays EXECUTING there; once its lease expires the next call takes it over.
            self.log.error(operator_text.outcome_not_recorded(session.run_id, tool.name, str(err)))
            _close_quietly(session)
            return answers.prose(model_text.unavailable(_not_recorded(facts, err.observation)))
        except StoreError as err:
            self.log.error(f"run {session.run_id}: {err}")
            _close_quietly(session)
            return answers.prose(model_text.unavailable(model_text.COULD_NOT_START))
        obs = verdict.observation
        if obs is None:
            session.close()
            return answers.prose(model_text.unavailable(model_text.OUTCOME_NOT_RECORDED))
        if obs.kind == "tool_result":
            session.close()  # the row was settled with the outcome
            untrusted = self.parts.untrusted
            untrusted.returned(tool.server, tool.name, session.run_id)
            return answers.tool_result(obs.content, obs.form, untrusted=untrusted.is_untrusted(tool.server))
        if obs.kind != "tool_error":
            session.close()
            return answers.prose(model_text.unavailable(model_text.OUTCOME_NOT_RECORDED))
        content = obs.content if isinstance(obs.content, dict) else {}
        error = str(content.get("error", ""))
        if not closed:
            ended = _unknown_ending(facts, obs)
            if ended is not None:
                async with self.lock:
                    return await anyio.to_thread.run_sync(self._rerun, tool, session, ended, error)
        if closed == [CLOSE_UNRECORDED]:
            return answers.prose(model_text.unrecorded(error, tool.repeat_window))
        return answers.tool_error(error)

    def _rerun(self, tool: LoadedTool, session: Session, ended: str, error: str) -> Result:
        """A call that may have taken effect: in the same run, ask an operator whether the
        recorded request runs again (an interrupted_side_effect approval naming the attempt)."""
        run_id = session.run_id
        self.log.unknown(run_id, tool.name, ended)
        try:
            steps = self.store.steps_of(run_id)
            attempted = next(s for s in reversed(steps) if attempts.is_tool_call(s))
            attempt = Attempt(run_id, attempted.id, attempted.started_at, ended)
            args = attempts.decision(attempted).get("args", {})
            args_text = canonical.policy_text(args if args is not None else {})
            step = session.step()
        except (StoreError, StopIteration) as err:
            self.log.error(f"run {run_id}: reading the attempt: {err}")
            session.close()
            return answers.prose(model_text.unknown_outcome(ended, None, error))
        if step is None:  # the run's step limit ended it: ask again in a fresh run
            session.close()
            self.settling.settle_run(run_id)
            key = canonical.request_key(tool.name, args_text)
            approval = self.beginning.reopen(tool, key, args_text, attempt)
            return answers.prose(model_text.unknown_outcome(ended, approval.id if approval else None, error))
        verdict = self._propose_rerun(session, tool, args_text, attempt)
        if verdict is not None and verdict.outcome == PENDING and verdict.approval is not None:
            self.log.waits(verdict.approval, tool.name)
            return answers.prose(model_text.unknown_outcome(ended, verdict.approval.id, error))
        if verdict is not None and verdict.outcome == DENIED:
            self.settling.close_run(session, CLOSE_DENIED)
        else:
            session.close()
        return answers.prose(model_text.unknown_outcome(ended, None, error))

    def _propose_rerun(self, session: Session, tool: LoadedTool, args_text: str, attempt: Attempt) -> Verdict | None:
        """Propose the recorded request again, origin operator; a failure is logged, and None."""
        try:
            return propose(self.parts, session, tool.name, args_text, "operator", attempt)
        except StoreError as err:
            self.log.error(f"run {session.run_id}: {err}")
            session.close()
            return None


def _unknown_ending(tool: ToolFacts, obs: Observation) -> str | None:
    """How a tool error's call ended when its outcome is unknown; None for a known failure."""
    return attempts.classify_tool_error(obs.tree(), tool.read_only, tool.is_known_answer)


def _close_quietly(session: Session) -> None:
    """End the session; releasing its lease may fail while the store is down (the lease then
    expires by itself), and that must not turn the answer into an internal error."""
    try:
        session.close()
    except StoreError:
        session.end()


def _not_recorded(tool: ToolFacts, obs: Observation) -> str:
    """What an UNAVAILABLE answer says of a call whose outcome could not be recorded."""
    if attempts.not_sent(obs.tree()):
        return model_text.NOT_SENT_NOT_RECORDED
    if obs.kind == "tool_result" or _unknown_ending(tool, obs) is None:
        return model_text.ANSWERED_NOT_RECORDED
    return model_text.MAYBE_EXECUTED_NOT_RECORDED


def _closing(tool: ToolFacts, obs: Observation) -> str:
    """Why a run whose call came back as a known failure ends."""
    if attempts.not_sent(obs.tree()):
        return CLOSE_NOT_SENT
    return CLOSE_UNRECORDED if _unrecorded(tool, obs) else CLOSE_ERROR


def _unrecorded(tool: ToolFacts, obs: Observation) -> bool:
    """The server answered, and the boundary refused its content: it executed."""
    content = obs.content if isinstance(obs.content, dict) else {}
    return not tool.read_only and content.get("failure") == "invalid_content"
