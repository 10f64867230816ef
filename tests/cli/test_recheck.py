"""``agentrt-proxy recheck``: each recorded decision under today's policy (proxy-and-mcp-module §2.11, §3, §5.5, §5.7).

The recorded runs are made by the real gate, policy and store, in-process, with the bank's
tools loaded as serving loads them (pinned, then opened through a fake wire). Each test
names the original Go test it covers.
"""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

from agentrt_proxy.cli import _recheck_engine as recheck_engine
from agentrt_proxy.cli._recheck_report import DIFFERENT, SAME
from agentrt_proxy.config import load_config
from agentrt_proxy.gate import (
    ALLOWED,
    PENDING,
    Gate,
    ProxyPolicy,
    RunView,
    ToolRequest,
    offered_tools_from_config,
)
from agentrt_proxy.store import Store
from agentrt_proxy.text import recheck_text
from tests.conftest import target_env
from tests.recheck_fixtures import (
    WRITER,
    _event,
    bank_rules,
    dump,
    policy_error_run,
    recorder,
    results,
    run_recheck,
    store_approval,
    timed_out_run,
    write_config,
)

# ============================================================================ the bank, loaded


# ============================================================================ recording runs


# ============================================================================ running recheck


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
    # the database is opened read-only (proxy-and-mcp-module §2.11), with a proxy holding it open for writing
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
        f"0 run(s) differ\n{recheck_text.RECHECK_SCOPE}\n")


# ============================================================================ through the program


# ============================================================================ record details


def test_a_takeover_pause_is_not_a_policy_evaluation_and_its_collection_rechecks_the_same(tmp_path: Path) -> None:
    # runtime-core §8.4: a reconciliation's pause carries no view
    config_path = write_config(tmp_path, bank_rules({"outcome": "allow"}))
    rec = recorder(config_path)
    session, verdict = rec.begin("bank_pay", '{"to":"kim","amount":7}')
    assert verdict.outcome == ALLOWED
    assert session.current is not None
    session.start_tool()  # the tool started; then the process died
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
        report = recheck_engine.recheck_run(store, runs[1], policy)
    finally:
        store.close()
    assert report.same and report.rechecked == 2
    assert seen == [[], ["approved"]]
    approval = store_approval(config_path, runs[1])
    undecided = recheck_engine._as_at(approval, _event(seq=1, at="2000-01-01T00:00:00Z"), [])
    assert undecided.status == "pending" and undecided.decided_by == "" and undecided.decided_at == ""
    assert recheck_engine._as_at(approval, _event(seq=10**9, at="2999-01-01T00:00:00Z"), []).status == "approved"


