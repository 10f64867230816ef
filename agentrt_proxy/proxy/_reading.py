"""Reading what the rules across calls ask for, and writing the settlements they find.

Each read is one statement of the store's existing API (``Store.get_run``, ``steps_of``,
``approvals_of``, the ``proxy_calls`` index), made under the process's lock like every
decision's reads, never inside a write transaction.
"""

from __future__ import annotations

from collections.abc import Sequence

from agentrt_proxy.gate import Clock
from agentrt_proxy.proxy._actions import Settle, SettleEmpty, Settlement
from agentrt_proxy.proxy._view import (
    ATTEMPTS,
    FOR_KEY,
    UNKNOWN_FOR_TOOL,
    UNSETTLED,
    CallView,
    Read,
    ReadApprovals,
    ReadRows,
    ReadRun,
    ReadSteps,
)
from agentrt_proxy.store import NotFound, ProxyCall, Run, Store
from agentrt_proxy.text import operator_text


def read_run(store: Store, run_id: str) -> Run | None:
    try:
        return store.get_run(run_id)
    except NotFound:
        return None


class CallReader:
    """The reads and settlements of one decision about one request of one tool."""

    def __init__(
        self, store: Store, clock: Clock, session: str, tool: str, key: str | None, now: int, window: int
    ) -> None:
        self.store = store
        self.index = store.index
        self.clock = clock
        self.session = session
        self.tool = tool
        self.key = key
        self.now = now
        self.since = now - window  # this request's rows closed within the window

    def read(self, view: CallView, read: Read) -> CallView:
        if isinstance(read, ReadRun):
            return view.with_run(read.run_id, read_run(self.store, read.run_id))
        if isinstance(read, ReadSteps):
            return view.with_steps(read.run_id, tuple(self.store.steps_of(read.run_id)))
        if isinstance(read, ReadApprovals):
            return view.with_approvals(read.run_id, tuple(self.store.approvals_of(read.run_id)))
        return view.with_rows(read.which, tuple(self._rows(read)))

    def _rows(self, read: ReadRows) -> list[ProxyCall]:
        if self.key is None:
            raise ValueError(operator_text.BUG_ROWS_WITHOUT_KEY)
        if read.which == FOR_KEY:
            return self.index.for_key(self.session, self.key, self.since)
        if read.which == ATTEMPTS:
            return self.index.attempts(self.session, self.key)
        if read.which == UNSETTLED:
            return self.index.unsettled(self.session)
        if read.which == UNKNOWN_FOR_TOOL:
            return self.index.unknown_for_tool(self.session, self.tool, self.key)
        raise ValueError(operator_text.BUG_UNKNOWN_READ.format(which=read.which))

    def settle(self, view: CallView, settlements: Sequence[Settlement]) -> CallView:
        """Write the settlements the rules found (before any further read of the index, which
        filters on them), each row once per decision."""
        if not settlements:
            return view
        for found in settlements:
            if isinstance(found, Settle):
                self.index.settle(found.row_id, found.outcome, self.clock.now_ns())
            elif isinstance(found, SettleEmpty):
                self.index.settle_empty(found.row_id, self.now)
        return view.with_settled(frozenset(found.row_id for found in settlements))
