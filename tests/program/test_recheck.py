"""recheck run as the operator runs it, in a process of its own.

Black-box: each test runs the real program, on the source tree and again on the .pyz.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agentrt_proxy.cli._recheck_report import DIFFERENT
from agentrt_proxy.text import recheck_text
from agentrt_proxy.upstream import _servers as servers
from tests.conftest import run_program
from tests.recheck_fixtures import UPSTREAM_LANDED, bank_rules, policy_error_run, short_runs, write_config


@pytest.mark.program
def test_cli_recheck_prints_reports_summary_and_exit_codes(recorded: tuple[Path, list[str]]) -> None:
    # TestCLI_Recheck
    config_path, runs = recorded
    same = run_program(["recheck", "-config", str(config_path)])
    assert same.returncode == 0, same.stderr
    assert "3 run(s) re-checked under agentrt-proxy/sha256:" in same.stdout
    assert ": 4 decision(s) re-checked, 0 not re-checkable and skipped; 0 run(s) differ\n" \
           + recheck_text.RECHECK_SCOPE in same.stdout
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
