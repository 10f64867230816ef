"""A finished run's outcome cached on its index row, and the proxy's closing decision for a
run its call did not complete (a ``fail`` decision, origin operator: proxy-and-mcp-module §2.5).

The index row is a cache of the run's record (proxy-and-mcp-module §2.4): settling reads the run again and
writes what its last attempt came to, once (``settle`` only writes an unsettled row).
"""

from __future__ import annotations

from collections.abc import Mapping

from agentrt_proxy.gate import OUTCOME_KNOWN, TERMINAL, Clock, Session, Verdict
from agentrt_proxy.proxy.parts import OperatorLog
from agentrt_proxy.proxy.reading import read_run
from agentrt_proxy.proxy.rules import ToolFacts, last_attempt_of, settlement
from agentrt_proxy.store import ProxyCall, Store, StoreError
from agentrt_proxy.text import operator_text
from agentrt_proxy.text.operator_text import CLOSE_DENIED, CLOSE_INVALID


def closing_of_denied(verdict: Verdict) -> str:
    obs = verdict.observation
    return CLOSE_INVALID if obs is not None and obs.kind == "invalid_decision" else CLOSE_DENIED


class Settling:
    def __init__(self, store: Store, clock: Clock, tools: Mapping[str, ToolFacts], log: OperatorLog) -> None:
        self.store = store
        self.index = store.index
        self.clock = clock
        self.tools = tools
        self.log = log

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
            self.log.error(operator_text.closing_failed(session.run_id, str(err)))
        finally:
            session.close()
        self.settle_run(session.run_id)

    def close_run_now(self, session: Session, message: str) -> None:
        """``close_run`` inside the caller's transaction: a failure raises (and rolls it back)."""
        session.fail(message)
        session.close()
        self.settle_run_now(session.run_id)
