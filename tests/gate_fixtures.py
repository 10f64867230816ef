"""Shared helpers for the store, policy and gate tests: a fake clock, a renewal timer driven by
it, a fake tool, a gate."""

from __future__ import annotations

import heapq
import itertools
from dataclasses import dataclass, field
from typing import Any

from agentrt_proxy import canonical
from agentrt_proxy.gate import Gate, Limits, OfferedTool, ProxyPolicy, ToolRequest
from agentrt_proxy.gate._leases import RENEWAL_THREAD, LeaseRenewals, RenewalTimer
from agentrt_proxy.mcp import outcomes
from agentrt_proxy.store import Store
from agentrt_proxy.upstream import ToolSpec

SCHEMA = canonical.parse_strict(
    '{"type":"object","properties":{"to":{"type":"string"},"amount":{"type":"number"}},'
    '"required":["to","amount"],"additionalProperties":false}'
)
SECOND = 1_000_000_000
T0 = 1_790_000_000 * SECOND
LIMITS = Limits(3, 3, 3, 3600 * SECOND, 3600 * SECOND)


@dataclass
class FakeClock:
    now: int = T0

    def now_ns(self) -> int:
        return self.now

    def advance(self, ns: int) -> None:
        self.now += ns


class ManualTimer:
    """Lease renewals that come due only when the test moves ``clock`` (``advance``): each due
    renewal runs, in due order and on the test's own thread, with the clock set to its due time,
    so what it writes is stamped as if that much time had passed."""

    def __init__(self, clock: FakeClock) -> None:
        self.clock = clock
        self._due: list[tuple[int, int, LeaseRenewals]] = []
        self._order = itertools.count()

    def schedule(self, delay_s: float, renewals: LeaseRenewals) -> None:
        heapq.heappush(self._due, (self.clock.now + round(delay_s * SECOND), next(self._order), renewals))

    def advance(self, ns: int) -> None:
        until = self.clock.now + ns
        while self._due and self._due[0][0] <= until:
            due, _, renewals = heapq.heappop(self._due)
            self.clock.now = max(self.clock.now, due)
            renewals.fire()
        self.clock.now = until

    @property
    def pending(self) -> int:
        """Renewals scheduled and not yet due."""
        return len(self._due)


@dataclass
class FakeTool:
    """An in-memory upstream: records every call it really made."""

    answer: outcomes.ToolOutcome | None = None
    calls: list[ToolRequest] = field(default_factory=list)

    async def __call__(self, request: ToolRequest) -> outcomes.ToolOutcome:
        self.calls.append(request)
        if self.answer is not None:
            return self.answer
        content = {"paid": request.args.get("amount")}
        return outcomes.Result(content, canonical.canonical_bytes(content).decode(), "bank/pay: 13 bytes", False, False)


def specs(description: str = "pay someone", timeout: int = 5 * SECOND, schema: Any = SCHEMA) -> list[ToolSpec]:
    return [
        ToolSpec("bank_pay", description, schema, "remote_mutation", timeout, True),
        ToolSpec("bank_balance", "read the balance", canonical.parse_strict('{"type":"object"}'), "read_only",
                 timeout, True),
        ToolSpec("bank_wipe", "wipe", canonical.parse_strict('{"type":"object"}'), "destructive", timeout, True),
        ToolSpec("bank_note", "note", canonical.parse_strict('{"type":"object"}'), "local_mutation", timeout, True),
    ]


def offered(fixed: dict[str, Any] | None = None, outcome: str | None = None) -> dict[str, OfferedTool]:
    return {
        "bank_pay": OfferedTool("bank_pay", "bank", "pay", "remote_mutation", outcome, fixed or {}),
        "bank_balance": OfferedTool("bank_balance", "bank", "balance", "read_only"),
        "bank_wipe": OfferedTool("bank_wipe", "bank", "wipe", "destructive"),
        "bank_note": OfferedTool("bank_note", "bank", "note", "local_mutation"),
    }


def make_gate(store: Store, clock: FakeClock, policy: ProxyPolicy | None = None, lease_ttl: int = 30 * SECOND,
              tools: list[ToolSpec] | None = None, wall: FakeClock | None = None,
              renewal_timer: RenewalTimer = RENEWAL_THREAD) -> Gate:
    policy = policy or ProxyPolicy({}, offered(), "agentrt-proxy/sha256:test")
    return Gate(store, policy, tools or specs(), clock=clock, reconcile=policy.reconcile, lease_ttl=lease_ttl,
                lease_owner="agentrt-proxy:test", wall=wall, renewal_timer=renewal_timer)


def event_types(store: Store, run_id: str) -> list[str]:
    return [e.type for e in store.events_of(run_id, limit=1000)]
