"""What one decision of the rules across calls has read: index rows, runs, steps, approvals.

A ``CallView`` starts empty and grows one read at a time: the rules (``rules.decide``)
ask for what they reach and have not got (a ``Read``), ``reading.CallReader`` reads it,
and the rules decide again over the larger view. So a call reads what the rules it gets
to need, in the order they need it, each record once, and nothing for rules it never
reaches: a DUPLICATE reads this request's rows and its run, steps and approvals, and
nothing of the rest of the session.

The view also carries what the decision has already done, because the rules consult it:
the index rows it has settled, and the runs an effect has changed (expired, taken over,
collected) whose records were dropped so they are read again.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from agentrt_proxy.store import Approval, ProxyCall, Run, Step

# The index reads, by the rows they return (store/_index.py).
FOR_KEY = "for_key"  # this request's open row and its rows closed within the window, newest first
ATTEMPTS = "attempts"  # this request's rows whose run got as far as an attempt, newest first
UNSETTLED = "unsettled"  # the session's rows whose run has not been seen finished, oldest first
UNKNOWN_FOR_TOOL = "unknown_for_tool"  # other requests' newest attempt at this tool, unseen or unknown


@dataclass(frozen=True)
class ReadRows:
    which: str  # FOR_KEY, ATTEMPTS, UNSETTLED or UNKNOWN_FOR_TOOL


@dataclass(frozen=True)
class ReadRun:
    run_id: str


@dataclass(frozen=True)
class ReadSteps:
    run_id: str


@dataclass(frozen=True)
class ReadApprovals:
    run_id: str


Read = ReadRows | ReadRun | ReadSteps | ReadApprovals


@dataclass(frozen=True)
class CallView:
    rows: Mapping[str, tuple[ProxyCall, ...]] = field(default_factory=dict)
    runs: Mapping[str, Run | None] = field(default_factory=dict)  # None: no such run
    steps: Mapping[str, tuple[Step, ...]] = field(default_factory=dict)
    approvals: Mapping[str, tuple[Approval, ...]] = field(default_factory=dict)
    settled: frozenset[int] = frozenset()  # index rows this decision has settled
    acted_on: frozenset[str] = frozenset()  # runs an effect of this decision has changed

    # Each read of a decision makes a new view (four or five a call): built field by field, as
    # dataclasses.replace would, without its walk over the fields each time.
    def with_rows(self, which: str, rows: tuple[ProxyCall, ...]) -> CallView:
        return CallView({**self.rows, which: rows}, self.runs, self.steps, self.approvals, self.settled,
                        self.acted_on)

    def with_run(self, run_id: str, run: Run | None) -> CallView:
        return CallView(self.rows, {**self.runs, run_id: run}, self.steps, self.approvals, self.settled,
                        self.acted_on)

    def with_steps(self, run_id: str, steps: tuple[Step, ...]) -> CallView:
        return CallView(self.rows, self.runs, {**self.steps, run_id: steps}, self.approvals, self.settled,
                        self.acted_on)

    def with_approvals(self, run_id: str, approvals: tuple[Approval, ...]) -> CallView:
        return CallView(self.rows, self.runs, self.steps, {**self.approvals, run_id: approvals}, self.settled,
                        self.acted_on)

    def with_settled(self, row_ids: frozenset[int]) -> CallView:
        return CallView(self.rows, self.runs, self.steps, self.approvals, self.settled | row_ids, self.acted_on)

    def after_effect(self, run_id: str, *, of_this_request: bool) -> CallView:
        """The view once an effect changed ``run_id``: its records are read again, and so is
        this request's index (an effect on its own run can settle its row)."""
        return replace(
            self,
            rows={k: v for k, v in self.rows.items() if k != FOR_KEY} if of_this_request else self.rows,
            runs={k: v for k, v in self.runs.items() if k != run_id},
            steps={k: v for k, v in self.steps.items() if k != run_id},
            approvals={k: v for k, v in self.approvals.items() if k != run_id},
            acted_on=self.acted_on | {run_id},
        )
