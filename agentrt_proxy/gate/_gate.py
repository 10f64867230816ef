"""The runtime's Gate for one tool step per run (runtime-core §1.5–1.13, §3, §5).

``Gate.begin`` / ``Gate.attach`` open a ``Session`` (``_session.py``) on a run under this gate's
lease. The gate holds what every session shares: the store, the policy and its identity, the
registered tools and their recorded specs, the two clocks (``clock``, the runtime's Now that
stamps events and approvals; ``wall``, which alone stamps and judges leases), what runs the
lease renewals (``renewal_timer``), the lease's owner and time to live, and the runs this gate
has a session open on.
"""

from __future__ import annotations

import dataclasses
import secrets
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from agentrt_proxy.canonical.clock import WALL, Clock
from agentrt_proxy.canonical.encoder import Raw, go_json
from agentrt_proxy.gate import attempts
from agentrt_proxy.gate._arguments import validation_error
from agentrt_proxy.gate._attach import attach
from agentrt_proxy.gate._leases import RENEWAL_THREAD, RenewalTimer
from agentrt_proxy.gate._model import (
    Decision,
    Limits,
    Policy,
    PreparedDecision,
    Reconcile,
    RunView,
    ToolRequest,
    Verdict,
    fmt,
    record_decision,
)
from agentrt_proxy.gate._session import Session
from agentrt_proxy.store import DEFAULT_LEASE_TTL_NS, RUNNING, Run, RunLeased, Store
from agentrt_proxy.text.record_text import ERR_LIMITS, ERR_TOOL_NAMES, ERR_TOOL_TIMEOUT
from agentrt_proxy.upstream import ToolSpec

# What a decision reads besides the run (RunView.context): read as the policy is evaluated,
# inside the transaction that acts on the decision. None: nothing.
Context = Callable[[ToolRequest], "Mapping[str, Any] | None"]


class Gate:
    def __init__(self, store: Store, policy: Policy, tools: Sequence[ToolSpec], *, clock: Clock | None = None,
                 reconcile: Reconcile | None = None, lease_ttl: int = DEFAULT_LEASE_TTL_NS,
                 lease_owner: str = "", wall: Clock | None = None, context: Context | None = None,
                 renewal_timer: RenewalTimer = RENEWAL_THREAD) -> None:
        names = [t.name for t in tools]
        if len(set(names)) != len(names) or any(not n for n in names):
            raise ValueError(ERR_TOOL_NAMES)
        for t in tools:
            if t.timeout <= 0:
                raise ValueError(ERR_TOOL_TIMEOUT.format(name=t.name))
        self.store = store
        self.policy = policy
        self.policy_id = policy.policy_id()
        self.tools = {t.name: t for t in sorted(tools, key=lambda t: t.name)}
        self.clock: Clock = clock or WALL
        self.wall: Clock = wall or WALL
        self.renewal_timer = renewal_timer
        self.reconcile = reconcile
        self.context = context
        self.lease_ttl = lease_ttl
        # Random bits only, never new_id()'s time prefix: two gates made in the same
        # millisecond (two processes) must not share an owner, or each would renew and
        # release the other's leases (runtime-core §5.1).
        self.owner = f"{lease_owner}/{secrets.token_hex(6)}" if lease_owner else secrets.token_hex(16)
        self._active: set[str] = set()  # runs with a session of this gate open (runtime-core §5.3's in-process claim)
        # (hash, recorded JSON) of each tool, computed once: begin and propose write them
        self._spec_rows = {name: (spec.spec_hash(), go_json(spec.tree())) for name, spec in self.tools.items()}

    # opening sessions ----------------------------------------------------------------
    def begin(self, run_id: str, goal: str, limits: Limits, call: Mapping[str, Any] | None = None) -> Session:
        """Insert the run RUNNING under this gate's lease, with run.created and run.started.
        ``call`` (the proxy's index row the run is begun for) goes into run.created, so that
        ``verify`` can tell the row from the chain (runtime-core readers ignore the key)."""
        if min(limits.max_steps, limits.max_consecutive_tool_failures, limits.loop_threshold) <= 0:
            raise ValueError(ERR_LIMITS)
        now = fmt(self.clock.now_ns())
        limits_json, expires = limits.json(), self.lease_expiry()
        with self.store.write() as tx:
            tx.insert_run(run_id, goal, limits_json, now, self.owner, expires)
            tools = [spec_hash for spec_hash, _ in self._spec_rows.values()]
            for spec_hash, spec_json in self._spec_rows.values():
                tx.put_spec(spec_hash, spec_json)
            created: dict[str, Any] = {"goal": goal, "limits": Raw(limits_json), "tools": tools}
            if call is not None:
                created["call"] = dict(call)
            tx.append(run_id, "", now, "run.created", created)
            tx.append(run_id, "", now, "run.started", None)
        session = self.open_session(run_id, limits)
        # The row as insert_run wrote it (every other column takes its default): the
        # session's next writes in the same transaction use it instead of reading it back.
        session.began(tx, Run(run_id, goal, RUNNING, "", "", limits_json, 0, now, now, "", "", 0, 0, 0, 0, 0, 0,
                              self.owner, expires))
        return session

    def attach(self, run_id: str) -> tuple[Session | None, Verdict]:
        """Collect a WAITING run's grant, or take over a RUNNING (or INTERRUPTED) one whose
        lease is free (``_attach.py``)."""
        return attach(self, run_id)

    def open_session(self, run_id: str, limits: Limits) -> Session:
        """A session on ``run_id``, unless this gate has one open on it already."""
        if run_id in self._active:
            raise RunLeased(run_id, self.owner, "")
        self._active.add(run_id)
        return Session(self, run_id, limits)

    def session_ended(self, run_id: str) -> None:
        self._active.discard(run_id)

    def session_resumed(self, run_id: str) -> None:
        self._active.add(run_id)

    def is_active(self, run_id: str) -> bool:
        return run_id in self._active

    def lease_expiry(self) -> str:
        return fmt(self.wall.now_ns() + self.lease_ttl)

    def with_context(self, view: RunView, request: ToolRequest) -> RunView:
        """The view with what the decision reads besides the run (``context``), when any."""
        if self.context is None:
            return view
        context = self.context(request)
        return view if context is None else dataclasses.replace(view, context=context)

    def spec(self, name: str) -> ToolSpec | None:
        return self.tools.get(name)

    def prepare(self, decision: Decision) -> PreparedDecision:
        """Everything a proposal computes from the decision alone, done now, outside any
        transaction (``PreparedDecision``): the strict parse, the recorded encoding, the
        arguments against the tool's schema, and (when large enough to be kept) the stored column
        parsed once for the rules that read it back (``attempts.keep``)."""
        recorded = record_decision(decision)
        spec = self.spec(decision.tool) if decision.kind == "tool_call" else None
        decision_json = go_json(recorded.tree)
        attempts.keep(decision_json)
        error = validation_error(decision, recorded.error, spec, recorded.args)
        return PreparedDecision(decision, recorded, decision_json, spec, error)

    def spec_row(self, spec: ToolSpec) -> tuple[str, str]:
        """The spec's hash and recorded JSON (cached for the registered specs)."""
        row = self._spec_rows.get(spec.name)
        if row is not None and self.tools.get(spec.name) is spec:
            return row
        return spec.spec_hash(), go_json(spec.tree())
