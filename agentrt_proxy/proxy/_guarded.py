"""The proxy's side of budgets and untrusted output (docs/decisions/0017): what this process
has returned from untrusted servers, the context the gate reads as it decides (each covering
budget's spending, that untrusted result), and the reservations made and settled in the
transactions that decide and record a call.

With no budget and no ``requires_clean_context`` rule, the gate reads no context and nothing
here runs on the call path but the untrusted mark on a result.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from agentrt_proxy.canonical.clock import Clock
from agentrt_proxy.config import TRUSTED, Config
from agentrt_proxy.gate import INTERRUPTED_SIDE_EFFECT, ToolRequest
from agentrt_proxy.gate.guards import Guards
from agentrt_proxy.store import HOLD_RELEASED, HOLD_SPENT, Store, holds


@dataclass
class UntrustedSource:
    """The first text an untrusted server chose that this process passed on to the host: its
    server, the tool whose call carried it (a result, an error, progress, a DUPLICATE quoting
    it) or ``via``, the other path that did (a listing, a notification), and the run.

    Every path by which a server's text reaches the host calls ``returned`` (SECURITY.md,
    "Untrusted text: every path"); a path that cannot taint must not carry the server's text.
    """

    untrusted_servers: frozenset[str] = frozenset()
    source: dict[str, str] | None = None

    @classmethod
    def from_config(cls, config: Config) -> UntrustedSource:
        return cls(frozenset(s.name for s in config.servers if s.trust != TRUSTED))

    def is_untrusted(self, server: str) -> bool:
        return server in self.untrusted_servers

    def returned(self, server: str, tool: str, run_id: str = "", via: str = "") -> bool:
        """Text of ``server``'s was just passed on to the host; whether that server is untrusted
        (the answer is then marked so)."""
        if not self.is_untrusted(server):
            return False
        if self.source is None:
            source = {"server": server, "tool": tool, "run_id": run_id}
            if via:
                source["via"] = via
            self.source = source
        return True


@dataclass
class Guarded:
    guards: Guards
    store: Store
    clock: Clock
    untrusted: UntrustedSource = field(default_factory=UntrustedSource)

    def context(self, request: ToolRequest) -> Mapping[str, Any] | None:
        """The gate's ``context``: read inside the transaction that acts on the decision."""
        name = request.spec.name
        out: dict[str, Any] = {}
        budgets = self.guards.budgets
        if budgets.covers(name):
            spending = budgets.context(self.store, name, request.args, self.clock.now_ns(), request.run_id)
            if spending is not None:
                out["budgets"] = spending
        if name in self.guards.clean and self.untrusted.source is not None:
            out["untrusted"] = dict(self.untrusted.source)
        return out or None

    def covers(self, tool: str) -> bool:
        return self.guards.budgets.covers(tool)

    def reserve(self, run_id: str, tool: str, args: Any, carry_from: str = "") -> None:
        """Inside the caller's open transaction (it joins it): the allowed call's reservation."""
        if not self.covers(tool):
            return
        with self.store.write() as tx:
            self.guards.budgets.reserve(tx, run_id, tool, args, self.clock.now_ns(), carry_from)

    def settle(self, run_id: str, tool: str, state: str | None) -> None:
        """The recorded outcome's settlement (``budgets.settlement``); None keeps the reservation.
        A re-run that ran nothing does not free what the call it re-runs may have spent: the
        run's reservation is that earlier call's too, and stays spent."""
        if state is None or not self.covers(tool):
            return
        with self.store.write() as tx:
            if state == HOLD_RELEASED and self._reruns_unknown(run_id):
                state = HOLD_SPENT
            holds.settle(tx, run_id, state, self.clock.now_ns())

    def freed(self, run_id: str, tool: str) -> None:
        """This run sent nothing at its collection (refused, expired): what collecting reserved
        is free again, unless the run was collecting a re-run of a call that may have taken
        effect, whose reservation that earlier call keeps (joining the caller's transaction, if any)."""
        if not self.covers(tool):
            return
        with self.store.write() as tx:
            if not self._reruns_unknown(run_id):
                holds.settle(tx, run_id, HOLD_RELEASED, self.clock.now_ns())

    def _reruns_unknown(self, run_id: str) -> bool:
        """The run's latest question was whether a call that may have executed runs again."""
        approvals = self.store.approvals_of(run_id)
        return bool(approvals) and approvals[-1].kind == INTERRUPTED_SIDE_EFFECT
