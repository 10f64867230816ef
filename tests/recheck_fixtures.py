"""Recorded runs for recheck to re-check, made in process by the real gate, policy and store.

Shared by tests/cli and tests/program; the fixtures reach both through pytest_plugins.
"""

from __future__ import annotations

import importlib.util
import io
import json
import sqlite3
import sys
import textwrap
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import pytest

from agentrt_proxy import canonical
from agentrt_proxy.cli import _pin as pin
from agentrt_proxy.cli import _recheck as recheck
from agentrt_proxy.config import Config, load_config
from agentrt_proxy.gate import (
    ALLOWED,
    DENIED,
    ENDED,
    PENDING,
    Attempt,
    Decision,
    Gate,
    OfferedTool,
    ProxyPolicy,
    RunView,
    Session,
    ToolRequest,
    approve_shown,
    proxy_limits,
)
from agentrt_proxy.mcp import outcomes
from agentrt_proxy.store import Store, new_id
from agentrt_proxy.testing.fakebank import FakeBank
from agentrt_proxy.upstream import LiveTool, OpenServers, live_tool, open_servers
from tests.conftest import REPO_ROOT
from tests.gate_fixtures import SECOND, FakeClock, FakeTool

ALLOWED_BY_RULE = {"outcome": "allow"}


UPSTREAM_LANDED = importlib.util.find_spec("agentrt_proxy.mcp.client") is not None


def bank_listing() -> list[LiveTool]:
    return [
        live_tool(t["name"], t["description"], t.get("annotations"), json.dumps(t["inputSchema"]))
        for t in FakeBank(None).list_tools()
    ]


class FakeConnection:
    async def call_tool(self, name: str, arguments_text: str, timeout_ns: int) -> Any:
        raise AssertionError("recheck never calls a tool")

    async def aclose(self) -> None:
        return None


def fake_wire(server: Any) -> Any:
    async def connect(timeout: float) -> tuple[FakeConnection, list[LiveTool]]:
        return FakeConnection(), bank_listing()

    return connect


def fake_opener(config: Config) -> Any:
    return open_servers(config, connector=fake_wire)


def bank_rules(pay: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "balance": {"side_effect": "read_only", "timeout": "5s"},
        "pay": {"side_effect": "remote_mutation", "timeout": "20s", **(pay or {})},
        "refund": {"side_effect": "destructive", "timeout": "5s"},
    }


def write_config(directory: Path, rules: dict[str, Any], *, policy: dict[str, str] | None = None,
                 name: str = "proxy.json") -> Path:
    server = {
        "name": "bank",
        "command": [sys.executable, "-m", "agentrt_proxy.testing.fakebank"],
        "env": [f"FAKE_PAYMENTS_LEDGER={directory / 'ledger'}", f"PYTHONPATH={REPO_ROOT}"],
        "manifest": "bank.json",
        "rules": rules,
    }
    data: dict[str, Any] = {"database": "proxy.db", "session": "laptop", "hold": "0s", "servers": [server]}
    if policy:
        data["policy"] = policy
    path = directory / name
    path.write_text(json.dumps(data))
    path.chmod(0o600)
    return path


@dataclass
class Recorder:
    """The gate, policy and store a proxy serving ``config`` would have, on a fake clock."""

    config: Config
    store: Store
    gate: Gate
    policy: Any
    clock: FakeClock = field(default_factory=FakeClock)
    run_ids: list[str] = field(default_factory=list)

    def begin(self, tool: str, args: str) -> tuple[Session, Any]:
        run_id = new_id()
        side_effect = self.gate.tools[tool].side_effect
        key = canonical.request_key(tool, args)
        assert key is not None
        self.store.index.claim(self.config.session, key, tool, side_effect, run_id, None, self.clock.now_ns())
        session = self.gate.begin(run_id, f"{tool} {args}", proxy_limits(self.config.approval_ttl,
                                                                          self.config.grant_ttl))
        assert session.step() is not None
        self.run_ids.append(run_id)
        self.clock.advance(SECOND)
        return session, session.propose(Decision("tool_call", tool, args, origin="model"))

    def execute(self, session: Session, answer: outcomes.ToolOutcome | None = None) -> Any:
        verdict = anyio.run(session.execute, FakeTool(answer))
        self.clock.advance(SECOND)
        return verdict

    def approve_and_collect(self, run_id: str, approval: Any, answer: outcomes.ToolOutcome | None = None) -> None:
        approve_shown(self.store, run_id, approval.id, approval.hash, "tester", now_ns=self.clock.now_ns())
        self.clock.advance(SECOND)
        session, verdict = self.gate.attach(run_id)
        assert session is not None and verdict.outcome == ALLOWED
        self.execute(session, answer)
        session.close()


def recorder(config_path: Path, policy_factory: Callable[[Config, dict[str, OfferedTool]], Any] | None = None,
             connector: Any = fake_wire) -> Recorder:
    """Pin and open the bank as serving would (through ``connector``), then a gate over a new store."""
    assert pin.pin_command(["-config", str(config_path)], stdout=io.StringIO(), connector=connector) == 0
    config = load_config(config_path)

    async def open_and_close() -> OpenServers:
        opened = await open_servers(config, connector=connector)
        await opened.aclose()
        return opened

    opened = anyio.run(open_and_close)
    offered = {t.name: OfferedTool(t.name, t.server, t.remote, t.side_effect, t.outcome, dict(t.fixed))
               for t in opened.tools}
    policy = (policy_factory or ProxyPolicy.from_config)(config, offered)
    store = Store.open(str(config.database))
    clock = FakeClock()
    gate = Gate(store, policy, [t.spec for t in opened.tools], clock=clock,
                reconcile=getattr(policy, "reconcile", None), lease_owner=f"agentrt-proxy:{config.session}")
    return Recorder(config, store, gate, policy, clock)


def short_runs(tmp_path: Path, connector: Any = fake_wire) -> tuple[Path, list[str]]:
    """shortRuns: a balance read, a payment approved and collected, a refund denied (oldest first)."""
    config_path = write_config(tmp_path, bank_rules())
    rec = recorder(config_path, connector=connector)
    session, verdict = rec.begin("bank_balance", '{"account":"household"}')
    assert verdict.outcome == ALLOWED
    rec.execute(session)
    session.close()
    session, verdict = rec.begin("bank_pay", '{"to":"kim","amount":7}')
    assert verdict.outcome == PENDING
    rec.approve_and_collect(session.run_id, verdict.approval)
    session, verdict = rec.begin("bank_refund", '{"payment":"p1"}')
    assert verdict.outcome == DENIED
    session.fail("the policy denied the call")
    session.close()
    rec.store.close()
    return config_path, rec.run_ids


def timed_out_run(tmp_path: Path) -> tuple[Path, str]:
    """timeoutPay: an allowed payment times out; its re-run waits on an interruption
    approval, which is approved, and the re-run is collected (as _calls.py's _rerun does)."""
    config_path = write_config(tmp_path, bank_rules({"outcome": "allow", "timeout": "300ms"}))
    rec = recorder(config_path)
    args = '{"to":"kim","amount":7}'
    session, verdict = rec.begin("bank_pay", args)
    assert verdict.outcome == ALLOWED
    rec.execute(session, outcomes.NoAnswer("timeout", "bank_pay: no answer within 300ms"))
    first = rec.store.steps_of(session.run_id)[0]
    attempt = Attempt(session.run_id, first.id, first.started_at, "timed_out")
    assert session.step() is not None
    rec.policy.mark_rerun(session.run_id, attempt)
    try:
        verdict = session.propose(Decision("tool_call", "bank_pay", args, origin="operator"))
    finally:
        rec.policy.forget_rerun(session.run_id)
    assert verdict.outcome == PENDING and verdict.approval.kind == "interrupted_side_effect"
    rec.approve_and_collect(session.run_id, verdict.approval)
    rec.store.close()
    return config_path, session.run_id


class FailingPolicy:
    """A policy whose rules cannot be read: every evaluation raises."""

    def __init__(self, identity: str) -> None:
        self.identity = identity

    def policy_id(self) -> str:
        return self.identity

    def evaluate(self, request: ToolRequest, view: RunView) -> Any:
        raise RuntimeError("rules unavailable")


def policy_error_run(tmp_path: Path) -> Path:
    config_path = write_config(tmp_path, bank_rules())
    rec = recorder(config_path, lambda config, offered: FailingPolicy(config.policy_id()))
    _, verdict = rec.begin("bank_pay", '{"to":"kim","amount":7}')
    assert verdict.outcome == ENDED
    rec.store.close()
    return config_path


@dataclass
class Outcome:
    code: int
    stdout: str
    stderr: str

    @property
    def reports(self) -> list[dict[str, Any]]:
        value: list[dict[str, Any]] = json.loads(self.stdout)
        return value


def run_recheck(config_path: Path, *args: str) -> Outcome:
    out, err = io.StringIO(), io.StringIO()
    code = recheck.command(["-config", str(config_path), *args], stdout=out, stderr=err, opener=fake_opener)
    return Outcome(code, out.getvalue(), err.getvalue())


def results(report: dict[str, Any]) -> list[tuple[str, str, str, str]]:
    return [(e["tool"], e["result"], e["recorded"]["outcome"], (e.get("rechecked") or {}).get("outcome", ""))
            for e in report["evaluations"]]


@pytest.fixture
def recorded(tmp_path: Path) -> tuple[Path, list[str]]:
    return short_runs(tmp_path)


WRITER = textwrap.dedent("""
    import sys
    from agentrt_proxy.store._store import Store
    store = Store.open(sys.argv[1])
    with store.write() as tx:
        tx.append(sys.argv[2], "", "2026-01-01T00:00:00Z", "writer.opened", None)
    print("open", flush=True)
    for line in sys.stdin:
        for i in range(int(line)):
            with store.write() as tx:
                tx.append(sys.argv[2], "", "2026-01-01T00:00:01Z", "writer.wrote", {"i": i})
        print("wrote", line.strip(), flush=True)
    store.close()
""")


def dump(database: Path) -> list[str]:
    conn = sqlite3.connect(f"file:{database}?mode=ro", uri=True)
    try:
        return list(conn.iterdump())
    finally:
        conn.close()


def store_approval(config_path: Path, run_id: str) -> Any:
    store = Store.open_readonly(str(config_path.parent / "proxy.db"))
    try:
        (approval,) = store.approvals_of(run_id)
        return approval
    finally:
        store.close()


def _event(seq: int, at: str) -> Any:
    from agentrt_proxy.store import Event

    return Event(seq, "", "", at, "step.policy", "{}", "")
