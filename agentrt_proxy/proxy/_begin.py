"""Beginning a run for a call (rule 7), and asking again about an unknown outcome in a fresh
run of that request (``reopen``): claim the index row, begin the run, open its step and
propose the call, all in ONE write transaction (docs/decisions/0005).
"""

from __future__ import annotations

import dataclasses

from agentrt_proxy.gate import ALLOWED, DENIED, PENDING, TERMINAL, Attempt, Decision, PreparedDecision, Session, Verdict
from agentrt_proxy.proxy import _answers as answers
from agentrt_proxy.proxy._actions import Answer, Applied, Begin, Execute, Pending, Retry
from agentrt_proxy.proxy._parts import MAX_DECIDES, CallParts
from agentrt_proxy.proxy._reading import read_run
from agentrt_proxy.proxy._settling import Settling, closing_of_denied
from agentrt_proxy.store import (
    OUTCOME_UNSEEN,
    Approval,
    ClaimLost,
    ProxyCall,
    RunIdTaken,
    StoreError,
    call_record,
    new_run_id,
)
from agentrt_proxy.text import model_text, operator_text
from agentrt_proxy.upstream import LoadedTool


def propose(
    parts: CallParts,
    session: Session,
    tool_name: str,
    arguments_text: str | None,
    origin: str,
    rerun: Attempt | None,
    prepared: PreparedDecision | None = None,
) -> Verdict:
    """Propose the call (marked as a re-run of ``rerun`` for the policy); a failure raises.
    ``prepared``: the same call prepared already (``prepare_call``), outside any transaction."""
    if rerun is not None:
        parts.policy.mark_rerun(session.run_id, rerun)
    try:
        return session.propose(prepared or prepare_call(parts, tool_name, arguments_text, origin))
    finally:
        if rerun is not None:
            parts.policy.forget_rerun(session.run_id)


def prepare_call(parts: CallParts, tool_name: str, arguments_text: str | None, origin: str) -> PreparedDecision:
    """The call as a decision, parsed and checked (``Gate.prepare``)."""
    return parts.gate.prepare(Decision(kind="tool_call", tool=tool_name, args=arguments_text, origin=origin))


class Beginning:
    def __init__(self, parts: CallParts, settling: Settling) -> None:
        self.parts = parts
        self.store = parts.store
        self.index = parts.store.index
        self.settling = settling
        self.log = parts.log
        self.session = parts.settings.session

    def draw_run_id(self) -> str:
        """A new run's id, drawn on each use (tests/harness.draw_run_ids replaces it, so a test can
        make two ids collide)."""
        return new_run_id(self.session)

    def begin(self, tool: LoadedTool, key: str | None, arguments_text: str | None, begin: Begin) -> Applied:
        """A new run (reusing the open row's id if its run never began), the call proposed
        with origin model; ``begin.prior`` makes the policy ask about that unknown outcome."""
        run_id = begin.reuse.run_id if begin.reuse is not None else self.draw_run_id()
        opened = self._open_run(
            tool, key, run_id, arguments_text, origin="model", rerun=begin.prior, reuse=begin.reuse,
            prev=begin.prev, start=True,
        )
        if not isinstance(opened, tuple):
            return opened
        session, verdict, row = opened
        if verdict.outcome == ALLOWED:
            return Execute(session, row=row)
        if verdict.outcome == PENDING and verdict.approval is not None:
            self.log.waits(verdict.approval, tool.name)
            return Pending(verdict.approval)
        if verdict.outcome == DENIED:
            # closed and settled in the same transaction
            return Answer(answers.prose(answers.denied_text(verdict)))
        run = read_run(self.store, run_id)
        return Answer(answers.prose(model_text.denied(run.reason_detail if run is not None else "the run ended")))

    def reopen(self, tool: LoadedTool, key: str | None, args_text: str, attempt: Attempt) -> Approval | None:
        """Ask the same question about an unknown outcome again, in a fresh run of that request."""
        if key is None:
            return None
        rows = self.index.for_key(self.session, key, self.parts.clock.now_ns())
        open_row = next((row for row in rows if row.open), None)
        if open_row is not None:
            run = read_run(self.store, open_row.run_id)
            if run is not None and run.status not in TERMINAL:
                self.log.error(operator_text.REOPEN_NOT_FINISHED.format(run_id=run.id))
                return None
        for _ in range(MAX_DECIDES):
            run_id = self.draw_run_id()
            opened = self._open_run(
                tool, key, run_id, args_text, origin="operator", rerun=attempt, reuse=None, prev=open_row, start=False
            )
            if not (isinstance(opened, Retry) and opened.id_taken):
                break
        if not isinstance(opened, tuple):
            return None
        started, verdict, _ = opened
        if verdict.outcome == PENDING and verdict.approval is not None:
            self.log.waits(verdict.approval, tool.name)
            return verdict.approval
        self.log.error(operator_text.REOPEN_NO_APPROVAL.format(run_id=run_id))
        started.close()
        return None

    def _open_run(
        self,
        tool: LoadedTool,
        key: str | None,
        run_id: str,
        arguments_text: str | None,
        *,
        origin: str,
        rerun: Attempt | None,
        reuse: ProxyCall | None,
        prev: ProxyCall | None,
        start: bool,
    ) -> tuple[Session, Verdict, ProxyCall] | Applied:
        """Claim the index row (unless ``reuse``), begin the run, open its step and propose the
        call, all in ONE write transaction. With ``start``, an allowed proposal also writes its
        start (``Session.start_tool``) and a denied one the proxy's closing decision and the
        row's settlement, in the same transaction. Anything failing inside rolls the whole back
        and discards the session: a lost race answers Retry (``id_taken`` when another call has
        ``run_id``), anything else UNAVAILABLE."""
        session: Session | None = None
        # Parsed and checked before the transaction: its write lock is held only for the writes.
        prepared = prepare_call(self.parts, tool.name, arguments_text, origin)
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
                        self.parts.clock.now_ns(),
                    )
                else:
                    row = dataclasses.replace(reuse, settled_at=0, outcome=OUTCOME_UNSEEN)  # as unsettle leaves it
                stage = "begin"
                session = self.parts.gate.begin(
                    run_id, f"call {tool.name}", self.parts.settings.limits, call=call_record(row)
                )
                stage = "step"
                if reuse is not None:
                    # A reused row may have been settled as empty by another process before
                    # the run existed; a row claimed in this transaction cannot have been.
                    self.index.unsettle(run_id)
                if session.step() is None:  # a limit ended the run at once: commit that
                    session.close()
                    return Answer(answers.prose(model_text.unavailable(model_text.COULD_NOT_START)))
                stage = "propose"
                verdict = propose(self.parts, session, tool.name, arguments_text, origin, rerun, prepared)
                stage = "start"
                if start and verdict.outcome == ALLOWED:
                    if self.parts.guarded is not None:  # in this transaction: two proxies never overspend
                        self.parts.guarded.reserve(run_id, tool.name, prepared.recorded.args)
                    session.start_tool()
                elif start and verdict.outcome == DENIED:
                    self.settling.close_run_now(session, closing_of_denied(verdict))
        except ClaimLost as err:
            _discard(session)
            return Retry(id_taken=isinstance(err, RunIdTaken))
        except Exception as err:
            _discard(session)
            if stage == "begin" and read_run(self.store, run_id) is not None:
                # Another process began this run first (a reused row), or a run that has no
                # row in the index has the id this call drew.
                return Retry(id_taken=reuse is None)
            if stage != "begin" and not isinstance(err, StoreError):
                raise
            if stage == "claim":
                self.log.error(f"{tool.name}: {err}")
                return Answer(answers.prose(model_text.unavailable(model_text.COULD_NOT_RECORD)))
            self.log.error(f"run {run_id}: {err}")
            what = model_text.COULD_NOT_RECORD if stage == "propose" else model_text.COULD_NOT_START
            return Answer(answers.prose(model_text.unavailable(what)))
        except BaseException:
            _discard(session)
            raise
        return session, verdict, row


def _discard(session: Session | None) -> None:
    """Forget a session whose writes were rolled back (no write of its own)."""
    if session is not None:
        session.end()
