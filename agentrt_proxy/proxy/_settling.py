"""A finished run's outcome cached on its index row, and the proxy's closing decision for a
run its call did not complete (a ``fail`` decision, origin operator: proxy-and-mcp-module §2.5);
and both, with the budgets' settlement, written by the gate inside the transaction that records
a call's outcome (``recording``).

The index row is a cache of the run's record (proxy-and-mcp-module §2.4): settling reads the run again and
writes what its last attempt came to, once (``settle`` only writes an unsettled row).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from agentrt_proxy.gate import OUTCOME_KNOWN, TERMINAL, Clock, Observation, Session, Verdict, attempts
from agentrt_proxy.gate.budgets import settlement as budget_settlement
from agentrt_proxy.proxy._guarded import Guarded
from agentrt_proxy.proxy._parts import OperatorLog
from agentrt_proxy.proxy._reading import read_run
from agentrt_proxy.proxy._rules import ToolFacts, last_attempt_of, settlement
from agentrt_proxy.store import ProxyCall, Store, StoreError
from agentrt_proxy.text import operator_text
from agentrt_proxy.text.operator_text import CLOSE_DENIED, CLOSE_ERROR, CLOSE_INVALID, CLOSE_NOT_SENT, CLOSE_UNRECORDED


def closing_of_denied(verdict: Verdict) -> str:
    obs = verdict.observation
    return CLOSE_INVALID if obs is not None and obs.kind == "invalid_decision" else CLOSE_DENIED


class Settling:
    def __init__(
        self,
        store: Store,
        clock: Clock,
        tools: Mapping[str, ToolFacts],
        log: OperatorLog,
        guarded: Guarded | None = None,
    ) -> None:
        self.store = store
        self.index = store.index
        self.clock = clock
        self.tools = tools
        self.log = log
        self.guarded = guarded  # the budgets, whose reservation the recording spends or frees

    def recording(
        self, session: Session, facts: ToolFacts, row: ProxyCall | None, closed: list[str]
    ) -> Callable[[Observation], None]:
        """What the gate runs inside the transaction that records the outcome of ``session``'s
        call (docs/decisions/0005): a known outcome settles the row, and a known tool error also
        gets the proxy's closing decision (named in ``closed``, once however often the recording
        is tried). A budget's reservation is spent with a result and with an UNRECORDED answer
        (the server answered: it executed), released with a failure that ran nothing (not sent,
        the server's own error), and kept while the outcome is unknown (docs/decisions/0017).
        ``row``: a new run's index row as its begin left it."""
        guarded = self.guarded

        def on_recorded(obs: Observation) -> None:
            if guarded is not None and obs.kind in ("tool_result", "tool_error"):
                unknown = obs.kind == "tool_error" and unknown_ending(facts, obs) is not None
                executed = obs.kind == "tool_result" or unrecorded(facts, obs)
                guarded.settle(session.run_id, facts.name, budget_settlement(executed=executed, unknown=unknown))
            if obs.kind == "tool_result":
                if row is not None and session.ended_run is not None:
                    # The recording just ended the run with this result, the run's last attempt:
                    # its outcome is known (what settle_run_now would read back).
                    self.settle_known(row)
                else:
                    self.settle_run_now(session.run_id)
            elif session.standing is not None:
                pass  # nothing sent and the grant stands: the run waits for the identical call again
            elif obs.kind == "tool_error" and unknown_ending(facts, obs) is None:
                message = _closing(facts, obs)
                self.close_run_now(session, message)
                closed[:] = [message]

        return on_recorded

    def settle_known(self, row: ProxyCall) -> None:
        """Settle a row whose run just ended with a tool result (inside the transaction that
        recorded it): the outcome is known, with nothing read back."""
        if row.outcome == 0 or row.settled_at == 0:
            self.index.settle(row.id, OUTCOME_KNOWN, self.clock.now_ns())

    def settle_run(self, run_id: str) -> None:
        """Cache a finished run's outcome on its row, so later calls need not read it again."""
        try:
            self.settle_run_now(run_id)
        except StoreError as err:
            self.log.error(f"run {run_id}: {err}")

    def settle_run_now(self, run_id: str) -> None:
        """``settle_run`` without the log: inside a transaction, a failure must roll it back."""
        row = self.index.by_run(run_id)
        run = read_run(self.store, run_id)
        if row is None or run is None or run.status not in TERMINAL:
            return
        steps = self.store.steps_of(run_id)
        last = last_attempt_of(self.tools.get(row.tool), run_id, steps, self.store.approvals_of(run_id))
        found = settlement(row, last)
        if found is not None:
            self.index.settle(found.row_id, found.outcome, self.clock.now_ns())

    def close_run(self, session: Session, message: str) -> None:
        """End a run its call did not complete, with the proxy's own fail decision."""
        try:
            session.fail(message)
        except StoreError as err:
            self.log.error(operator_text.CLOSING_FAILED.format(run_id=session.run_id, detail=err))
        finally:
            session.close()
        self.settle_run(session.run_id)

    def close_run_now(self, session: Session, message: str) -> None:
        """``close_run`` inside the caller's transaction: a failure raises (and rolls it back)."""
        session.fail(message)
        session.close()
        self.settle_run_now(session.run_id)


def unknown_ending(tool: ToolFacts, obs: Observation) -> str | None:
    """How a tool error's call ended when its outcome is unknown; None for a known failure."""
    return attempts.classify_tool_error(obs.tree(), tool.read_only, tool.is_known_answer)


def unrecorded(tool: ToolFacts, obs: Observation) -> bool:
    """The server answered, and the boundary refused its content: it executed."""
    content = obs.content if isinstance(obs.content, dict) else {}
    return not tool.read_only and content.get("failure") == "invalid_content"


def _closing(tool: ToolFacts, obs: Observation) -> str:
    """Why a run whose call came back as a known failure ends."""
    if attempts.not_sent(obs.tree()):
        return CLOSE_NOT_SENT
    return CLOSE_UNRECORDED if unrecorded(tool, obs) else CLOSE_ERROR
