"""Budgets as a property (issue 22): random interleavings of what two proxies on one database do
to one budget, through the store and gate code the proxy runs, never through a model of it.

Two ``Store`` objects (two proxies) open one file. Each step is one of: propose a payment (the
guard decides on the spending it reads, and an allowed call reserves in the same transaction);
collect an approved one (either proxy, both, in any order; the first start wins); let a
collected grant expire before it starts; record an outcome (a result, UNRECORDED, the server's
own error, not sent, unknown); a crash and a takeover; reject or approve the question whether a
call that may have executed runs again; and the operator's ``budget release``. Settlements go
through ``budgets.settlement``, ``Guarded``, ``approvals.settle_rejected`` and
``budget_release.release`` exactly as the proxy and the operator commands call them.

After every step: what the budget counts (reserved plus spent) never exceeds its limit, and every
payment the bank made is counted, unless an operator said it was not (an approved re-run that
ran stands for the attempt it re-ran; ``budget release``). A re-run that never ran, or ran nothing,
leaves the attempt before it counted.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from decimal import Decimal
from typing import Any

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from agentrt_proxy.canonical import Number
from agentrt_proxy.canonical.durations import format_time
from agentrt_proxy.config import Budget
from agentrt_proxy.gate import INTERRUPTED_SIDE_EFFECT, OfferedTool, RunView, ToolRequest, approvals, budget_release
from agentrt_proxy.gate.budgets import Budgets, Priced, settlement
from agentrt_proxy.gate.guards import Guards
from agentrt_proxy.proxy._guarded import Guarded
from agentrt_proxy.store import APPROVAL_PENDING, COMPLETED, RUNNING, Approval, Store
from tests.gate_fixtures import FakeClock, specs

LIMIT = Decimal(100)
TOOL = OfferedTool("bank_pay", "bank", "pay", "remote_mutation")
OUTCOMES = ("result", "unrecorded", "server_error", "not_sent", "unknown")
PROXIES = st.sampled_from((0, 1))
SPEC = specs()[0]
MEMORY = "/dev/shm"


class Run:
    def __init__(self, run_id: str, amount: int, owner: int) -> None:
        self.id = run_id
        self.amount = amount
        self.state = "executing"  # executing | approved | asking | rerun | ended
        self.owner = owner  # the proxy executing it
        self.collected: set[int] = set()  # the proxies that collected its grant and may start it
        self.paid = 0  # what the bank executed for it (the ledger)
        self.excused = 0  # of those, how many an operator said did not happen
        self.rerun_of: int | None = None  # an approved re-run: the payments made before it


class BudgetMachine(RuleBasedStateMachine):
    @initialize()
    def open_two_proxies(self) -> None:
        # In memory where there is such a file system: the property is about order, not disks.
        self.directory = tempfile.mkdtemp(prefix="budget-property-", dir=MEMORY if os.path.isdir(MEMORY) else None)
        path = f"{self.directory}/proxy.db"
        self.clock = FakeClock()
        self.stores = [Store.open(path), Store.open(path)]
        budget = Budget("daily", ("bank_pay",), LIMIT)
        guards = Guards(Budgets([budget], {"bank_pay": Priced("amount")}, "s"))
        self.guards = guards
        self.guarded = [Guarded(guards, store, self.clock) for store in self.stores]
        self.runs: list[Run] = []
        self.ids = 0

    def teardown(self) -> None:
        for store in getattr(self, "stores", []):
            store.close()
        shutil.rmtree(getattr(self, "directory", ""), ignore_errors=True)

    # ------------------------------------------------------------------ helpers
    def new_id(self, prefix: str) -> str:
        self.ids += 1
        return f"{prefix}{self.ids}"

    def at(self) -> str:
        self.clock.advance(1_000_000)
        return format_time(self.clock.now_ns())

    def request(self, run: Run) -> ToolRequest:
        args = {"to": run.id, "amount": Number(str(run.amount))}
        return ToolRequest(run.id, "step", SPEC, args)

    def decide(self, p: int, run: Run) -> bool:
        """The guard's decision on the spending proxy ``p`` reads now (inside its transaction)."""
        request = self.request(run)
        context = self.guarded[p].context(request)
        view = RunView(None, [], [], None, context)  # type: ignore[arg-type]  # the guard reads the context only
        return self.guards.check(TOOL, request, view, lambda tool, args: {}) is None

    def end(self, p: int, run: Run) -> None:
        run.state = "ended"
        with self.stores[p].write() as tx:
            tx.update_run(run.id, expect=RUNNING, status=COMPLETED, finished_at=self.at())

    def ask(self, p: int, run: Run) -> None:
        """The call may have executed: the run waits on the question whether it runs again."""
        run.state = "asking"
        approval = Approval(
            self.new_id("a"),
            run.id,
            "step",
            INTERRUPTED_SIDE_EFFECT,
            "{}",
            "{}",
            "{}",
            "h",
            APPROVAL_PENDING,
            self.at(),
            "",
            "",
            "",
            "",
        )
        with self.stores[p].write() as tx:
            tx.insert_approval(approval)
        run.approval = approval  # type: ignore[attr-defined]

    def bank_pays(self, run: Run, executed: bool) -> None:
        if not executed:
            return
        if run.rerun_of is not None:
            run.excused = run.rerun_of  # the approved re-run ran: it stands for the attempt it re-ran
        run.paid += 1

    def of(self, state: str) -> list[Run]:
        return [r for r in self.runs if r.state == state]

    # ------------------------------------------------------------------ what proxies do
    @rule(p=PROXIES, amount=st.sampled_from((10, 25, 40, 60, 100)), asks=st.booleans())
    def propose(self, p: int, amount: int, asks: bool) -> None:
        run = Run(self.new_id("r"), amount, p)
        with self.stores[p].write() as tx:
            at = self.at()
            tx.insert_run(run.id, "pay", "{}", at, f"proxy{p}", at)
            if not self.decide(p, run):
                return  # OVER_BUDGET: no run is left behind to count
            self.runs.append(run)
            if asks:  # an ordinary approval: a waiting call reserves nothing until collected
                run.state = "approved"
            else:
                self.guarded[p].reserve(run.id, TOOL.name, self.request(run).args)

    @precondition(lambda self: self.of("approved") or self.of("rerun"))
    @rule(p=PROXIES, data=st.data())
    def collect(self, p: int, data: Any) -> None:
        run = data.draw(st.sampled_from(self.of("approved") + self.of("rerun")))
        with self.stores[p].write():
            # A re-run of an unknown outcome is the policy's own question: no guard decides it.
            allowed = run.state == "rerun" or self.decide(p, run)
            # The reservation a rival collector made is the run's: it never refuses the run.
            assert allowed or not run.collected, (run.id, run.collected)
            if allowed:
                self.guarded[p].reserve(run.id, TOOL.name, self.request(run).args)
                run.collected.add(p)
                return
            self.guarded[p].freed(run.id, TOOL.name)  # refused at collection
        self.end(p, run)

    @precondition(lambda self: any(r.collected for r in self.of("approved") + self.of("rerun")))
    @rule(data=st.data(), expires=st.booleans())
    def start(self, data: Any, expires: bool) -> None:
        run = data.draw(st.sampled_from([r for r in self.of("approved") + self.of("rerun") if r.collected]))
        p = data.draw(st.sampled_from(sorted(run.collected)))
        if expires:  # the grant expired between collection and start: nothing was sent
            self.guarded[p].freed(run.id, TOOL.name)
            self.end(p, run)
            return
        run.state, run.owner = "executing", p

    @precondition(lambda self: self.of("executing"))
    @rule(data=st.data(), outcome=st.sampled_from(OUTCOMES), took_effect=st.booleans())
    def record(self, data: Any, outcome: str, took_effect: bool) -> None:
        run = data.draw(st.sampled_from(self.of("executing")))
        executed = outcome in ("result", "unrecorded") or (outcome == "unknown" and took_effect)
        self.bank_pays(run, executed)
        state = settlement(executed=outcome in ("result", "unrecorded"), unknown=outcome == "unknown")
        with self.stores[run.owner].write():
            self.guarded[run.owner].settle(run.id, TOOL.name, state)
        if outcome == "unknown":
            self.ask(run.owner, run)
        else:
            self.end(run.owner, run)

    @precondition(lambda self: self.of("executing"))
    @rule(data=st.data(), took_effect=st.booleans(), taker=PROXIES)
    def crash_and_take_over(self, data: Any, took_effect: bool, taker: int) -> None:
        run = data.draw(st.sampled_from(self.of("executing")))
        self.bank_pays(run, took_effect)
        self.ask(taker, run)  # the takeover asks; the reservation is untouched

    # ------------------------------------------------------------------ what the operator does
    @precondition(lambda self: self.of("asking"))
    @rule(data=st.data(), p=PROXIES)
    def reject(self, data: Any, p: int) -> None:
        run = data.draw(st.sampled_from(self.of("asking")))
        with self.stores[p].write() as tx:
            approvals.settle_rejected(tx, run.approval, self.at())  # type: ignore[attr-defined]
        run.state = "ended"
        with self.stores[p].write() as tx:
            tx.update_run(run.id, expect=RUNNING, status="CANCELLED", finished_at=self.at())

    @precondition(lambda self: self.of("asking"))
    @rule(data=st.data())
    def approve_the_re_run(self, data: Any) -> None:
        run = data.draw(st.sampled_from(self.of("asking")))
        run.rerun_of = run.paid  # "run it again": once it runs, it stands for what was sent before
        run.state, run.collected = "rerun", set()

    @precondition(lambda self: self.of("ended"))
    @rule(data=st.data(), p=PROXIES)
    def release(self, data: Any, p: int) -> None:
        run = data.draw(st.sampled_from(self.of("ended")))
        live = self.live(run.id)
        try:
            budget_release.release(self.stores[p], run.id, "operator", "it never happened")
        except budget_release.NothingToRelease:
            assert live == Decimal(0)
            return
        assert live > 0
        run.excused = run.paid

    # ------------------------------------------------------------------ the invariants
    def live(self, run_id: str = "") -> Decimal:
        rows = self.stores[0].holds.every()
        return sum(
            (Decimal(h.amount) for h in rows if h.state in ("reserved", "spent") and run_id in ("", h.run_id)),
            Decimal(0),
        )

    @invariant()
    def what_the_budget_counts_never_exceeds_its_limit(self) -> None:
        if hasattr(self, "stores"):
            assert self.live() <= LIMIT

    @invariant()
    def every_payment_the_bank_made_is_counted(self) -> None:
        if not hasattr(self, "stores"):
            return
        unexcused = Decimal(0)
        for run in self.runs:
            owed = run.paid - run.excused
            assert owed <= 1 or run.state != "ended", (run.id, run.paid, run.excused)
            if owed > 0:
                assert self.live(run.id) == run.amount, (run.id, run.state, run.paid, run.excused)
            unexcused += owed * run.amount
        assert unexcused <= LIMIT


EXAMPLES = int(os.environ.get("BUDGET_EXAMPLES", "200"))
BudgetMachine.TestCase.settings = settings(max_examples=EXAMPLES, stateful_step_count=20, deadline=None)
test_budgets_hold_under_any_interleaving_of_two_proxies_and_an_operator = BudgetMachine.TestCase
