"""The rules' effects on a run that already exists: collect a grant (rule 1), take over a run
whose caller is gone (rule 3, and another run of the tool in the session's rules), expire an
approval past its expiry. Each attaches through the gate, which judges the run again.
"""

from __future__ import annotations

from agentrt_proxy.gate import (
    ALLOWED,
    DENIED,
    ENDED,
    INTERRUPTED_SIDE_EFFECT,
    PENDING,
    Gate,
    Session,
    Verdict,
    attempts,
)
from agentrt_proxy.proxy import _answers as answers
from agentrt_proxy.proxy._actions import Answer, Applied, DecideAgain, Execute, Pending, Retry
from agentrt_proxy.proxy._guarded import Guarded
from agentrt_proxy.proxy._late_record import late_summary
from agentrt_proxy.proxy._parts import OperatorLog
from agentrt_proxy.proxy._settling import Settling, closing_of_denied
from agentrt_proxy.store import RunLeased, RunStateError, StoreError, StoreUnavailable
from agentrt_proxy.text import model_text, operator_text
from agentrt_proxy.text.operator_text import CLOSE_TAKEN_OVER


class Attaching:
    def __init__(self, gate: Gate, settling: Settling, log: OperatorLog, guarded: Guarded | None = None) -> None:
        self.gate = gate
        self.settling = settling
        self.log = log
        self.guarded = guarded

    def _attach(self, run_id: str, could_not: str, taking_over: str = "") -> tuple[Session | None, Verdict] | Applied:
        """Attach to a run (collect, or take over a run of tool ``taking_over``); what a failed
        attach answers instead. A store that refuses the write is UNAVAILABLE, never a lost race:
        deciding again would only fail again, and end in a false IN_PROGRESS."""
        try:
            return self.gate.attach(run_id)
        except RunLeased:
            return Answer(answers.prose(model_text.in_progress()))
        except RunStateError:
            return Retry()
        except (StoreError, ValueError) as err:
            if taking_over:
                self.log.error(operator_text.could_not_take_over(run_id, taking_over, str(err)))
            else:
                self.log.error(f"run {run_id}: {err}")
            return Answer(answers.prose(model_text.unavailable(could_not)))

    def expire(self, run_id: str) -> DecideAgain:
        """Attach to a run whose approval is past its expiry: the gate expires it and ends the
        run. A failure changes nothing; the rules then see the run as they did."""
        try:
            session, _ = self.gate.attach(run_id)
        except (StoreError, ValueError):
            return DecideAgain()
        if session is not None:
            session.close()
        return DecideAgain()

    def collect(self, tool_name: str, run_id: str) -> Applied | DecideAgain:
        """Rule 1, approved: the gate evaluates the policy again and judges the grant's age;
        what executes is the recorded request, never this call's bytes."""
        if self.guarded is not None and self.guarded.covers(tool_name):
            attached = self._collect_reserving(tool_name, run_id)
        else:
            attached = self._attach(run_id, model_text.COULD_NOT_COLLECT)
        if not isinstance(attached, tuple):
            return attached
        session, verdict = attached
        if verdict.outcome == ALLOWED and session is not None:
            return Execute(session)
        if verdict.outcome == PENDING and verdict.approval is not None:
            self.log.waits(verdict.approval, tool_name)
            return Pending(verdict.approval)
        if verdict.outcome == DENIED and session is not None:
            self.settling.close_run(session, closing_of_denied(verdict))
            return Answer(answers.prose(answers.denied_text(verdict)))
        if verdict.outcome == ENDED:
            return DecideAgain()  # e.g. the grant was too old: rule 4 answers EXPIRED
        if session is not None:
            session.close()
        return Retry()

    def _collect_reserving(self, tool_name: str, run_id: str) -> tuple[Session | None, Verdict] | Applied:
        """Collect under a budget: the policy reads the budgets' spending, and an allowed call
        reserves its amount, in ONE write transaction (a waiting approval reserved nothing, and
        is checked again here). Anything failing inside rolls it back: the rules decide again."""
        guarded = self.guarded
        assert guarded is not None
        attached: tuple[Session | None, Verdict] | Applied = Retry()
        try:
            with self.gate.store.write():
                attached = self._attach(run_id, model_text.COULD_NOT_COLLECT)
                verdict = attached[1] if isinstance(attached, tuple) else None
                if verdict is not None and verdict.outcome == ALLOWED and verdict.request is not None:
                    # Reserved once per run: a second collector of the same run (another proxy
                    # on the database) finds the run's own reservation and adds nothing to it.
                    guarded.reserve(run_id, tool_name, verdict.request.args, self._carried_from(run_id))
                elif verdict is not None and verdict.outcome in (DENIED, ENDED):
                    guarded.freed(run_id, tool_name)  # a rival collector's reservation, if any
        except StoreError as err:
            if isinstance(attached, tuple) and attached[0] is not None:
                attached[0].end()  # its writes were rolled back
            self.log.error(f"run {run_id}: {err}")
            if isinstance(err, StoreUnavailable):  # the database refused it: deciding again would too
                return Answer(answers.prose(model_text.unavailable(model_text.COULD_NOT_COLLECT)))
            return Retry()
        return attached

    def _carried_from(self, run_id: str) -> str:
        """The run whose unknown outcome this run's interruption approval asks about, when another."""
        approvals = self.gate.store.approvals_of(run_id)
        latest = approvals[-1] if approvals else None
        if latest is None or latest.kind != INTERRUPTED_SIDE_EFFECT:
            return ""
        attempt = attempts.interrupted_attempt(latest)
        return attempt.run_id if attempt is not None and attempt.run_id != run_id else ""

    def take_over(
        self, tool_name: str, run_id: str, could_not: str = model_text.COULD_NOT_RECOVER
    ) -> Applied | DecideAgain:
        """Rule 3: a mutating call cut off while executing now waits on an interruption
        approval; anything else cut off leaves nothing to execute, and its run is ended."""
        attached = self._attach(run_id, could_not, taking_over=tool_name)
        if not isinstance(attached, tuple):
            return attached
        session, verdict = attached
        if verdict.outcome == PENDING and verdict.approval is not None:
            late = late_summary(self.gate.store, run_id)
            if late is None:
                self.log.cut_off(run_id, tool_name)
            else:  # the proxy that lost the run kept what its server answered, and recorded it late
                self.log.write_stderr(operator_text.operator_cut_off_answered(run_id, tool_name, late))
            self.log.waits(verdict.approval, tool_name)
            return Pending(verdict.approval)
        if verdict.outcome == ENDED or session is None:
            return DecideAgain()
        # A read cut off, or a call cut off before or after its tool ran: nothing to execute.
        self.settling.close_run(session, CLOSE_TAKEN_OVER)
        return DecideAgain()

    def take_over_other(self, tool_name: str, run_id: str) -> Applied | DecideAgain:
        """Another request's run of this tool left running by a call that is gone: once taken
        over, a question about it blocks this call; a failure answers IN_PROGRESS."""
        taken = self.take_over(tool_name, run_id, model_text.COULD_NOT_WRITE)
        if isinstance(taken, Pending):
            return Answer(answers.prose(model_text.blocked_unknown(tool_name, taken.approval.id)))
        if isinstance(taken, DecideAgain | Answer):
            return taken  # an Answer: the store refused the take-over, and nothing was executed
        return Answer(answers.prose(model_text.in_progress()))
