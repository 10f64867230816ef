"""Executing a run the gate allowed, outside the lock, and what a recorded error means
(proxy-and-mcp-module §2.7): a known failure ends the run; an unknown outcome asks an
operator, in the same run, whether the recorded request runs again (proxy-and-mcp-module §2.7.3).
"""

from __future__ import annotations

import functools
from typing import Any

import anyio

from agentrt_proxy import canonical
from agentrt_proxy.canonical.durations import format_time_seconds, parse_time
from agentrt_proxy.gate import (
    DENIED,
    PENDING,
    Attempt,
    Observation,
    OutcomeNotRecorded,
    Session,
    Verdict,
    attempts,
)
from agentrt_proxy.proxy import _answers as answers
from agentrt_proxy.proxy._actions import Execute
from agentrt_proxy.proxy._begin import Beginning, propose
from agentrt_proxy.proxy._late_record import LateRecords
from agentrt_proxy.proxy._parts import CallParts
from agentrt_proxy.proxy._progress import ProgressRelay
from agentrt_proxy.proxy._rules import ToolFacts
from agentrt_proxy.proxy._settling import Settling, unknown_ending
from agentrt_proxy.store import Approval, ApprovalExpired, LeaseLost, RunStateError, StoreError
from agentrt_proxy.text import model_text, operator_text
from agentrt_proxy.text.operator_text import CLOSE_DENIED, CLOSE_UNRECORDED
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
        self.late = LateRecords(parts.store, parts.clock, parts.log)  # outcomes the store refused

    async def execute(self, tool: LoadedTool, facts: ToolFacts, allowed: Execute, progress: ProgressRelay) -> Result:
        session = allowed.session
        # The server's progress to the host; the gate never sees it. Its message is the server's
        # text: passed on, it taints this process as a result would.
        on_progress = progress.upstream(
            lambda: self.parts.untrusted.returned(tool.server, tool.name, session.run_id, via="progress")
        )

        # The gate calls the tool, and, inside the transaction that records its outcome, the
        # proxy's settling (the row, the budgets, the closing decision: ``Settling.recording``).
        call_upstream = functools.partial(tool.call_request, on_progress=on_progress)
        closed: list[str] = []  # the closing decision the recording wrote, once
        on_recorded = self.settling.recording(session, facts, allowed.row, closed)
        guarded = self.parts.guarded

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
            # The call ended and its outcome is not in the store: say whether it executed, to the
            # host and the operator alike, and keep it, to record on the run once the store takes
            # writes again. The step stays EXECUTING; once its lease expires the next call takes
            # it over, and says what the server answered (proxy/_late_record.py).
            said, became = _not_recorded(facts, err.observation)
            self.log.error(operator_text.outcome_not_recorded(session.run_id, tool.name, str(err), became))
            if became != operator_text.NOT_RECORDED_NOT_SENT and err.step_id:
                self.late.keep(session.run_id, err.step_id, tool.name, err.observation)
            _close_quietly(session)
            return answers.prose(model_text.unavailable(said))
        except StoreError as err:
            self.log.error(f"run {session.run_id}: {err}")
            _close_quietly(session)
            return answers.prose(model_text.unavailable(model_text.COULD_NOT_START))
        obs = verdict.observation
        if obs is None:
            session.close()
            return answers.prose(model_text.unavailable(model_text.OUTCOME_NOT_RECORDED))
        # A result, and any error whose text the server chose (its isError result, its JSON-RPC
        # error, an answer refused at the boundary), is the server's text for the model.
        quoted = attempts.carries_server_text(obs.tree()) and self.parts.untrusted.returned(
            tool.server, tool.name, session.run_id
        )
        if obs.kind == "tool_result":
            session.close()  # the row was settled with the outcome
            return answers.tool_result(obs.content, obs.form, untrusted=quoted)
        if obs.kind != "tool_error":
            session.close()
            return answers.prose(model_text.unavailable(model_text.OUTCOME_NOT_RECORDED))
        content = obs.content if isinstance(obs.content, dict) else {}
        error = str(content.get("error", ""))
        if verdict.outcome == PENDING and verdict.approval is not None:
            return answers.text_result(
                model_text.not_sent_approval_stands(error, verdict.approval.id, self._grant_until(verdict.approval)),
                is_error=True,
            )
        answer = await self._error_answer(tool, facts, session, obs, error, closed)
        return answers.marked_untrusted(answer) if quoted else answer

    async def _error_answer(
        self, tool: LoadedTool, facts: ToolFacts, session: Session, obs: Observation, error: str, closed: list[str]
    ) -> Result:
        if not closed:
            ended = unknown_ending(facts, obs)
            if ended is not None:
                async with self.lock:
                    result: Result = await anyio.to_thread.run_sync(self._rerun, tool, session, ended, error)
                    return result
        if closed == [CLOSE_UNRECORDED]:
            return answers.prose(model_text.unrecorded(error, tool.repeat_window))
        return answers.tool_error(error)

    def _grant_until(self, grant: Approval) -> str:
        """When a standing grant expires (``grant_ttl`` after its decision); empty: never."""
        ttl = self.parts.settings.grant_ttl
        return format_time_seconds(parse_time(grant.decided_at) + ttl) if ttl and grant.decided_at else ""

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
            self.log.error(operator_text.READING_ATTEMPT_FAILED.format(run_id=run_id, detail=err))
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


def _close_quietly(session: Session) -> None:
    """End the session; releasing its lease may fail while the store is down (the lease then
    expires by itself), and that must not turn the answer into an internal error."""
    try:
        session.close()
    except StoreError:
        session.end()


def _not_recorded(tool: ToolFacts, obs: Observation) -> tuple[str, str]:
    """What an UNAVAILABLE answer says of a call whose outcome could not be recorded, and what
    the operator's line says became of it."""
    if attempts.not_sent(obs.tree()):
        return model_text.NOT_SENT_NOT_RECORDED, operator_text.NOT_RECORDED_NOT_SENT
    if obs.kind == "tool_result" or unknown_ending(tool, obs) is None:
        return model_text.ANSWERED_NOT_RECORDED, operator_text.NOT_RECORDED_EXECUTED
    return model_text.MAYBE_EXECUTED_NOT_RECORDED, operator_text.NOT_RECORDED_MAYBE
