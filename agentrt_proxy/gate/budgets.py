"""Spending budgets, as the gate keeps them (docs/decisions/0017): which budgets cover a call,
what it spends, what each budget has used in its window (the view's ``context``, read inside
the transaction that decides), and the reservation written in that same transaction.

A budget's room is ``limit - used``, where ``used`` sums its reserved and spent rows whose
reservation falls in the window (all of them for a lifetime allowance). Sums are exact
decimals. A call that waits on an approval reserves nothing until it is collected.

A run's own reservation is never counted against it: the spending a decision reads is every
other run's. Two proxies collecting one approved run therefore decide alike (the first one's
reservation is the run's, not a rival's), and the second reserves nothing (decision 0017).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from agentrt_proxy.canonical.durations import format_time_seconds
from agentrt_proxy.config import Budget
from agentrt_proxy.gate._amounts import Resolved, Unresolved, resolve, show
from agentrt_proxy.store import HOLD_RELEASED, HOLD_SPENT, Hold, Store, Tx, holds


@dataclass(frozen=True)
class Priced:
    """How one registered tool is priced: its rule's amount and currency fields."""

    amount_field: str | None = None
    currency_field: str | None = None


@dataclass(frozen=True)
class Spending:
    """What one budget has used in its window as a call is decided, and when enough of it
    frees up for that call (Unix ns; 0: never, or a lifetime allowance)."""

    used: Decimal
    frees_at: int = 0

    def tree(self) -> dict[str, Any]:
        out: dict[str, Any] = {"used": show(self.used)}
        if self.frees_at:
            out["frees_at"] = format_time_seconds(self.frees_at)
        return out


class Budgets:
    """The configuration's budgets over the registered tools; empty when there are none."""

    def __init__(self, budgets: Sequence[Budget], priced: Mapping[str, Priced], session: str) -> None:
        self.budgets = tuple(budgets)
        self.priced = dict(priced)
        self.session = session
        self._by_tool: dict[str, tuple[Budget, ...]] = {}
        for budget in self.budgets:
            for tool in budget.tools:
                self._by_tool[tool] = (*self._by_tool.get(tool, ()), budget)

    def covers(self, tool: str) -> bool:
        return tool in self._by_tool

    def of_tool(self, tool: str) -> tuple[Budget, ...]:
        return self._by_tool.get(tool, ())

    def unpriced(self) -> list[tuple[Budget, str]]:
        """(budget, tool) for each covered tool whose rule declares no amount field."""
        return [(b, t) for b in self.budgets for t in b.tools if self.priced.get(t, Priced()).amount_field is None]

    def charge(self, tool: str, args: Any) -> Resolved | Unresolved | None:
        """What a call spends; None when the tool is unpriced (no amount field)."""
        priced = self.priced.get(tool, Priced())
        if priced.amount_field is None:
            return None
        return resolve(args, priced.amount_field, priced.currency_field)

    def covering(self, tool: str, charge: Resolved) -> tuple[Budget, ...]:
        """The budgets a resolved call spends from: its tool's, in its currency or spanning all
        (both sides canonical codes: the configuration's and ``resolve``'s). Empty: a currency
        none of them counts, which the guard refuses as unresolved."""
        return tuple(b for b in self.of_tool(tool) if b.currency is None or b.currency == charge.currency)

    # ------------------------------------------------------------------ the store's part
    def spending(self, store: Store, budget: Budget, amount: Decimal, now_ns: int, run_id: str = "") -> Spending:
        """What ``budget`` has used in its window, ``run_id``'s own reservation left out."""
        since = now_ns - budget.window if budget.window is not None else 0
        rows = [row for row in store.holds.live(self.session, budget.name, since) if row.run_id != run_id]
        used = sum((Decimal(row.amount) for row in rows), Decimal(0))
        return Spending(used, _frees_at(rows, budget, used, amount))

    def context(self, store: Store, tool: str, args: Any, now_ns: int, run_id: str = "") -> dict[str, Any] | None:
        """The view's budgets: each covering budget's spending now by runs other than
        ``run_id`` (the run deciding), for this call's amount."""
        if not self.covers(tool):
            return None
        charge = self.charge(tool, args)
        if not isinstance(charge, Resolved):
            return None
        return {
            b.name: self.spending(store, b, charge.amount, now_ns, run_id).tree() for b in self.covering(tool, charge)
        }

    def reserve(self, tx: Tx, run_id: str, tool: str, args: Any, now_ns: int, carry_from: str = "") -> None:
        """In the transaction that allowed the call: its amount reserved in every covering
        budget. A run that holds a reservation keeps it (an approved re-run spends once); a
        fresh run asking again about ``carry_from``'s unknown outcome takes that one over."""
        if not self.covers(tool) or holds.has_holds(tx, run_id):
            return
        if carry_from and holds.carry(tx, carry_from, run_id, now_ns):
            return
        charge = self.charge(tool, args)
        if not isinstance(charge, Resolved) or not charge.amount:
            return
        entries = [(b.name, charge.currency, show(charge.amount)) for b in self.covering(tool, charge)]
        holds.reserve(tx, self.session, run_id, entries, now_ns)

    def remaining(self, store: Store, tool: str, now_ns: int) -> list[tuple[Budget, Spending]]:
        """Each budget covering ``tool`` and its spending now (the status tool's answer)."""
        return [(b, self.spending(store, b, Decimal(0), now_ns)) for b in self.of_tool(tool)]


def settlement(*, executed: bool, unknown: bool) -> str | None:
    """What recording a call's outcome does to its run's reservation (decision 0017): kept (None)
    while the outcome is unknown, for an operator to decide; spent when the call executed (a
    result, or an answer the boundary refused: UNRECORDED); released only when the proxy knows
    nothing executed (not sent, the server's own error)."""
    if unknown:
        return None
    return HOLD_SPENT if executed else HOLD_RELEASED


def _frees_at(rows: list[Hold], budget: Budget, used: Decimal, amount: Decimal) -> int:
    """When enough of the window's spending has aged out for ``amount`` to fit; 0: never."""
    need = used + amount - budget.limit
    if need <= 0 or budget.window is None or amount > budget.limit:
        return 0
    freed = Decimal(0)
    for row in rows:
        freed += Decimal(row.amount)
        if freed >= need:
            return row.at + budget.window
    return 0
