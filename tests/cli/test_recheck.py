"""``agentrt-proxy recheck``: today's policy handed every recorded decision (proxy spec §2.11, §3, §5.5, §5.7).

The recorded runs are made by the real gate, policy and store, in-process, with the bank's
tools loaded as serving loads them (pinned, then opened through a fake wire). Each test
names the original Go test it covers.
"""

from __future__ import annotations

import importlib.util
import io
import json
import sqlite3
import subprocess
import sys
import textwrap
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import pytest

from agentrt_proxy import canonical
from agentrt_proxy.cli import pin, recheck
from agentrt_proxy.cli.recheck_report import DIFFERENT, SAME
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
    offered_tools_from_config,
    proxy_limits,
)
from agentrt_proxy.mcp import outcomes
from agentrt_proxy.store import Store, new_id
from agentrt_proxy.testing.fakebank import FakeBank
from agentrt_proxy.text import operator_text
from agentrt_proxy.upstream import LiveTool, OpenServers, live_tool, open_servers, servers
from tests.conftest import REPO_ROOT, run_program, target_env
from tests.gate_fixtures import SECOND, FakeClock, FakeTool

ALLOWED_BY_RULE = {"outcome": "allow"}
UPSTREAM_LANDED = importlib.util.find_spec("agentrt_proxy.mcp.client") is not None


# ============================================================================ the bank, loaded


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


# ============================================================================ recording runs


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
    approval, which is approved, and the re-run is collected (as calls.py's _rerun does)."""
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


# ============================================================================ running recheck


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


# ============================================================================ TestRecheck_*


def test_the_same_configuration_rechecks_every_decision_the_same(recorded: tuple[Path, list[str]]) -> None:
    # TestRecheck_ChangedPolicyNamesTheCallsNowDenied (same configuration)
    config_path, runs = recorded
    found = run_recheck(config_path, "-json")
    assert found.code == 0, found.stderr
    reports = found.reports
    assert [r["run_id"] for r in reports] == list(reversed(runs))
    assert results(reports[0]) == [("bank_refund", SAME, "deny", "deny")]
    assert results(reports[1]) == [("bank_pay", SAME, "require_approval", "require_approval")] * 2
    assert results(reports[2]) == [("bank_balance", SAME, "allow", "allow")]
    policy_id = load_config(config_path).policy_id()
    for report in reports:
        assert report["identity"] == "unchanged"
        assert report["policy_id"] == policy_id and policy_id.startswith("agentrt-proxy/sha256:")
        assert report["same"] and report["complete"] and report["spec_source"] == "recorded"
    pay = reports[1]["evaluations"]
    assert [e.get("on_resume", False) for e in pay] == [False, True]
    assert all(e["recorded_hash"] == e["rechecked_hash"] for e in pay)


def test_a_policy_denying_remote_mutation_names_both_pay_evaluations(recorded: tuple[Path, list[str]]) -> None:
    # TestRecheck_ChangedPolicyNamesTheCallsNowDenied (policy changed)
    config_path, _ = recorded
    old_id = load_config(config_path).policy_id()
    changed = write_config(config_path.parent, bank_rules(), policy={"remote_mutation": "deny"}, name="deny.json")
    found = run_recheck(changed, "-json")
    assert found.code == 1
    reports = found.reports
    assert load_config(changed).policy_id() != old_id
    assert results(reports[1]) == [("bank_pay", DIFFERENT, "require_approval", "deny")] * 2
    assert results(reports[0]) == [("bank_refund", SAME, "deny", "deny")]
    assert results(reports[2]) == [("bank_balance", SAME, "allow", "allow")]
    assert all(r["identity"] == "changed" for r in reports)
    assert [r["same"] for r in reports] == [True, False, True]


def test_run_limit_and_session_choose_the_runs(recorded: tuple[Path, list[str]]) -> None:
    # TestRecheck_ChangedPolicyNamesTheCallsNowDenied (RunID, Limit, Session)
    config_path, runs = recorded
    one = run_recheck(config_path, "-json", "-run", runs[1])
    assert [r["run_id"] for r in one.reports] == [runs[1]]
    two = run_recheck(config_path, "-json", "-limit", "2")
    assert [r["run_id"] for r in two.reports] == [runs[2], runs[1]]
    other = run_recheck(config_path, "-json", "-session", "other")
    assert other.code == 1 and other.reports == []


def test_a_reworded_description_differs_only_with_current_tools(recorded: tuple[Path, list[str]]) -> None:
    # TestRecheck_CurrentToolsAfterADescriptionChange
    config_path, _ = recorded
    old_id = load_config(config_path).policy_id()
    reworded = write_config(config_path.parent, bank_rules({"description": "Send money to someone."}),
                            name="reworded.json")
    assert load_config(reworded).policy_id() == old_id
    recorded_specs = run_recheck(reworded, "-json")
    assert recorded_specs.code == 0
    assert all(r["same"] and r["identity"] == "unchanged" for r in recorded_specs.reports)
    current = run_recheck(reworded, "-json", "-current-tools")
    assert current.code == 1
    pay = current.reports[1]
    assert pay["spec_source"] == "current" and pay["identity"] == "unchanged"
    assert results(pay) == [("bank_pay", DIFFERENT, "require_approval", "require_approval")] * 2
    assert all("tool spec" in e["detail"] and e["recorded_hash"] != e["rechecked_hash"] for e in pay["evaluations"])
    assert results(current.reports[2]) == [("bank_balance", SAME, "allow", "allow")]
    assert "registered pay as bank_pay" in current.stderr


def test_the_rerun_of_an_unknown_outcome_rechecks_the_same(tmp_path: Path) -> None:
    # TestRecheck_ReRunOfAnUnknownOutcomeIsTheSame
    config_path, run_id = timed_out_run(tmp_path)
    found = run_recheck(config_path, "-json")
    assert found.code == 0, found.stdout
    (report,) = found.reports
    assert report["run_id"] == run_id
    assert results(report) == [
        ("bank_pay", SAME, "allow", "allow"),
        ("bank_pay", SAME, "require_approval", "require_approval"),
        ("bank_pay", SAME, "require_approval", "require_approval"),
    ]
    for evaluation in report["evaluations"][1:]:
        assert evaluation["recorded"]["kind"] == evaluation["rechecked"]["kind"] == "interrupted_side_effect"
        assert evaluation["recorded_hash"] == evaluation["rechecked_hash"]
    assert [e.get("on_resume", False) for e in report["evaluations"]] == [False, False, True]


def test_a_policy_error_is_not_rechecked_and_the_command_fails(tmp_path: Path) -> None:
    # TestCLI_RecheckOfNothingFails (policy-error record, in-process)
    config_path = policy_error_run(tmp_path)
    found = run_recheck(config_path)
    assert found.code == 1
    assert "0 decision(s) re-checked, 1 not re-checkable and skipped" in found.stdout
    assert "policy failed; no evaluation recorded: rules unavailable" in found.stdout
    assert found.stderr == "agentrt-proxy: recheck: no decision of the policy was re-checked (1 not re-checkable)\n"


def test_a_database_without_the_index_or_a_missing_run_is_an_error(recorded: tuple[Path, list[str]]) -> None:
    config_path, _ = recorded
    missing = run_recheck(config_path, "-run", "nope")
    assert missing.code == 1
    assert missing.stderr.startswith("agentrt-proxy: error: recheck run nope: ") and "not found" in missing.stderr
    database = config_path.parent / "proxy.db"
    with sqlite3.connect(database) as conn:
        conn.execute("DROP TABLE proxy_calls")
    conn.close()
    found = run_recheck(config_path)
    assert found.code == 1
    assert found.stderr.startswith("agentrt-proxy: error: recheck: the database has no index of proxy calls: ")


def test_recheck_writes_nothing_and_never_blocks_a_writer(recorded: tuple[Path, list[str]]) -> None:
    # the database is opened read-only (proxy spec §2.11), with a proxy holding it open for writing
    config_path, runs = recorded
    database = config_path.parent / "proxy.db"
    writer = subprocess.Popen(
        [sys.executable, "-c", WRITER, str(database), runs[0]], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        text=True, env=target_env("source"),
    )
    try:
        assert writer.stdout is not None and writer.stdin is not None
        assert writer.stdout.readline().strip() == "open"
        before, files = dump(database), sorted(p.name for p in database.parent.iterdir())
        for _ in range(3):
            assert run_recheck(config_path, "-json").code == 0
        assert dump(database) == before
        assert sorted(p.name for p in database.parent.iterdir()) == files
        writer.stdin.write("200\n")  # the writer appends while recheck reads
        writer.stdin.flush()
        for _ in range(3):
            found = run_recheck(config_path, "-json")
            assert found.code == 0 and len(found.reports) == 3
        assert writer.stdout.readline().strip() == "wrote 200"
    finally:
        if writer.stdin is not None:
            writer.stdin.close()
        writer.wait(timeout=10)
    assert writer.returncode == 0


WRITER = textwrap.dedent("""
    import sys
    from agentrt_proxy.store.store import Store
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


# ============================================================================ rendering


def test_the_text_names_each_evaluation_and_ends_with_the_summary_and_scope(
        recorded: tuple[Path, list[str]]) -> None:
    config_path, runs = recorded
    found = run_recheck(config_path)
    assert found.code == 0
    policy_id = load_config(config_path).policy_id()
    first = f'run {runs[2]} FAILED: 0 of 1 re-checked evaluations differ; policy unchanged: "{policy_id}"; ' \
            "recorded specs\n"
    assert found.stdout.startswith(first)
    assert "same      step 0 seq " in found.stdout
    assert " bank_pay (on resume): require_approval\n" in found.stdout
    assert found.stdout.endswith(
        f"\n\n3 run(s) re-checked under {policy_id}: 4 decision(s) re-checked, 0 not re-checkable and skipped; "
        f"0 run(s) differ\n{operator_text.RECHECK_SCOPE}\n")


# ============================================================================ through the program


@pytest.mark.program
def test_cli_recheck_prints_reports_summary_and_exit_codes(recorded: tuple[Path, list[str]]) -> None:
    # TestCLI_Recheck
    config_path, runs = recorded
    same = run_program(["recheck", "-config", str(config_path)])
    assert same.returncode == 0, same.stderr
    assert "3 run(s) re-checked under agentrt-proxy/sha256:" in same.stdout
    assert ": 4 decision(s) re-checked, 0 not re-checkable and skipped; 0 run(s) differ\n" \
           + operator_text.RECHECK_SCOPE in same.stdout
    assert "DIFFERENT" not in same.stdout and "policy unchanged" in same.stdout
    assert "same      step 0 seq " in same.stdout
    denied = write_config(config_path.parent, bank_rules(), policy={"remote_mutation": "deny"}, name="deny.json")
    changed = run_program(["recheck", "-config", str(denied)])
    assert changed.returncode == 1
    assert changed.stdout.count("DIFFERENT") == 2
    assert "bank_pay: require_approval -> deny: side effect remote_mutation is deny by policy" in changed.stdout
    assert "bank_pay (on resume): require_approval -> deny" in changed.stdout
    assert "policy changed" in changed.stdout and "; 1 run(s) differ" in changed.stdout
    reworded = write_config(config_path.parent, bank_rules({"description": "Send money to someone."}),
                            name="reworded.json")
    assert run_program(["recheck", "-config", str(reworded)]).returncode == 0
    balance = run_program(["recheck", "-config", str(config_path), "-run", runs[0]])
    assert balance.returncode == 0
    assert "1 run(s) re-checked" in balance.stdout and "bank_balance: allow" in balance.stdout
    as_json = run_program(["recheck", "-config", str(config_path), "-json"])
    assert as_json.returncode == 0 and as_json.stdout.startswith("[\n  {")
    assert len(json.loads(as_json.stdout)) == 3
    nope = run_program(["recheck", "-config", str(config_path), "-run", "nope"])
    assert nope.returncode == 1 and "not found" in nope.stderr and "Traceback" not in nope.stderr


@pytest.mark.program
@pytest.mark.parametrize("args, message", [
    (["-run", "x", "-session", "y"], "-run and -session are exclusive"),
    (["-limit", "0"], "-limit must be positive"),
    (["-limit", "-3"], "-limit must be positive"),
    (["extra"], "-config <file> is required and nothing follows the flags"),
    (["-nope"], "flag provided but not defined: -nope"),
])
def test_cli_recheck_usage_errors_exit_2(recorded: tuple[Path, list[str]], args: list[str], message: str) -> None:
    # TestCLI_Recheck (usage errors)
    config_path, _ = recorded
    found = run_program(["recheck", "-config", str(config_path), *args])
    assert found.returncode == 2
    assert found.stderr.startswith(f"agentrt-proxy: recheck: {message}\n")
    missing = run_program(["recheck", "-json"])
    assert missing.returncode == 2 and "-config <file> is required" in missing.stderr


@pytest.mark.program
def test_cli_recheck_of_nothing_fails(tmp_path: Path) -> None:
    # TestCLI_RecheckOfNothingFails
    config_path, _ = short_runs(tmp_path)
    none = run_program(["recheck", "-config", str(config_path), "-session", "no-such-session"])
    assert none.returncode == 1
    assert none.stderr == ('agentrt-proxy: recheck: no run of session "no-such-session" was found, '
                           "so nothing was re-checked\n")
    assert none.stdout.startswith("0 run(s) re-checked")
    none_json = run_program(["recheck", "-config", str(config_path), "-session", "no-such-session", "-json"])
    assert none_json.returncode == 1 and none_json.stdout == "[]\n"
    failing_dir = tmp_path / "failing"
    failing_dir.mkdir()
    failing = policy_error_run(failing_dir)
    found = run_program(["recheck", "-config", str(failing)])
    assert found.returncode == 1
    assert "0 decision(s) re-checked, 1 not re-checkable and skipped" in found.stdout
    assert "policy failed; no evaluation recorded: rules unavailable" in found.stdout
    assert "(1 not re-checkable)" in found.stderr


@pytest.mark.program
@pytest.mark.skipif(not UPSTREAM_LANDED, reason="the upstream wire layer has not landed")
def test_cli_recheck_with_current_tools_loads_the_real_server(tmp_path: Path) -> None:
    # TestCLI_Recheck (-current-tools -json against the real fake bank)
    short_runs(tmp_path, servers.default_connector)
    reworded = write_config(tmp_path, bank_rules({"description": "Send money to someone."}), name="reworded.json")
    found = run_program(["recheck", "-config", str(reworded), "-current-tools", "-json"], timeout=60)
    assert found.returncode == 1, found.stderr
    reports = json.loads(found.stdout)
    assert len(reports) == 3
    pay = reports[1]
    assert pay["spec_source"] == "current" and pay["identity"] == "unchanged" and len(pay["evaluations"]) == 2
    assert pay["evaluations"][0]["result"] == DIFFERENT and "tool spec" in pay["evaluations"][0]["detail"]
    assert reports[2]["same"]
    assert "registered pay as bank_pay" in found.stderr


# ============================================================================ record details


def test_a_takeover_pause_is_not_a_policy_evaluation_and_its_collection_rechecks_the_same(tmp_path: Path) -> None:
    # runtime-core §8.4: a reconciliation's pause carries no view
    config_path = write_config(tmp_path, bank_rules({"outcome": "allow"}))
    rec = recorder(config_path)
    session, verdict = rec.begin("bank_pay", '{"to":"kim","amount":7}')
    assert verdict.outcome == ALLOWED
    assert session.current is not None and session._proposal is not None
    session._start_tool(session.current, session._proposal)  # the tool started; then the process died
    successor = Gate(rec.store, rec.policy, list(rec.gate.tools.values()), clock=rec.clock,
                     reconcile=rec.policy.reconcile)
    successor.owner = rec.gate.owner  # the same proxy, restarted: its own lease is not another's
    _, paused = successor.attach(session.run_id)
    assert paused.outcome == PENDING and paused.approval.kind == "interrupted_side_effect"
    rec.gate = successor
    rec.approve_and_collect(session.run_id, paused.approval)
    rec.store.close()
    found = run_recheck(config_path, "-json")
    assert found.code == 0, found.stdout
    (report,) = found.reports
    assert [(e["result"], e.get("on_resume", False)) for e in report["evaluations"]] == [
        (SAME, False), ("not_a_policy_evaluation", False), (SAME, True)]
    skipped = report["evaluations"][1]
    assert "taken over" in skipped["detail"] and "rechecked" not in skipped
    assert report["complete"] and report["not_recheckable"] == 0
    text = run_recheck(config_path).stdout
    assert f"skipped   step 0 seq {skipped['seq']} bank_pay: a pause written when the run was taken over" in text


def test_each_approval_is_handed_with_the_status_it_had_at_the_event(recorded: tuple[Path, list[str]]) -> None:
    # runtime-core §8.4: the status of its last approval.decided before the event, else pending
    config_path, runs = recorded
    store = Store.open_readonly(str(config_path.parent / "proxy.db"))
    seen: list[list[str]] = []

    class Spy(ProxyPolicy):
        def evaluate(self, request: ToolRequest, view: RunView) -> Any:
            seen.append([a.status for a in view.approvals])
            return super().evaluate(request, view)

    try:
        config = load_config(config_path)
        policy = Spy(config.policy, offered_tools_from_config(config), config.policy_id())
        report = recheck.recheck_run(store, runs[1], policy)
    finally:
        store.close()
    assert report.same and report.rechecked == 2
    assert seen == [[], ["approved"]]
    approval = store_approval(config_path, runs[1])
    undecided = recheck._as_at(approval, _event(seq=1, at="2000-01-01T00:00:00Z"), [])
    assert undecided.status == "pending" and undecided.decided_by == "" and undecided.decided_at == ""
    assert recheck._as_at(approval, _event(seq=10**9, at="2999-01-01T00:00:00Z"), []).status == "approved"


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
