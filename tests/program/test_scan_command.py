"""``agentrt-proxy scan`` as the real program (issue 15, item 3): the example's poisoned tools file,
its JSON shape, its exit codes, and the npm servers' real listings scanned over -config."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT, run_program
from tests.program.test_node_peers import node_bin, node_modules

EXAMPLE = REPO_ROOT / "examples" / "scan" / "poisoned-tools.json"


@pytest.mark.program
def test_scan_of_the_poisoned_example_names_each_hard_finding_and_exits_1() -> None:
    done = run_program(["scan", "-tools", str(EXAMPLE)])
    assert done.returncode == 1, done.stderr
    lines = done.stdout.splitlines()
    assert "add: hard injection.hidden_tag in description: <IMPORTANT>" in lines
    assert any(line.startswith("add: hard exfil.credential in description: ") for line in lines)
    assert any(line.startswith("get_fact_of_the_day: hard crosstool.directive in description: ") for line in lines)
    assert not any(line.startswith("get_weather:") for line in lines)
    assert lines[-1].startswith("scanned 3 tools: ")


@pytest.mark.program
def test_scan_json_is_exactly_the_documented_shape() -> None:
    done = run_program(["scan", "-json", "-tools", str(EXAMPLE)])
    assert done.returncode == 1
    report = json.loads(done.stdout)
    assert set(report) == {"tools_scanned", "findings"} and report["tools_scanned"] == 3
    assert report["findings"] and all(
        set(f) == {"tool", "rule", "severity", "field", "span"} for f in report["findings"]
    )
    assert {f["tool"] for f in report["findings"] if f["severity"] == "hard"} == {"add", "get_fact_of_the_day"}


@pytest.mark.program
def test_scan_of_an_array_of_clean_tools_exits_0(tmp_path: Path) -> None:
    tools = tmp_path / "tools.json"
    tools.write_text(
        json.dumps([{"name": "echo", "description": "Echo a message back.", "inputSchema": {"type": "object"}}])
    )
    done = run_program(["scan", "-json", "-tools", str(tools)])
    assert (done.returncode, json.loads(done.stdout)) == (0, {"tools_scanned": 1, "findings": []})


@pytest.mark.program
@pytest.mark.parametrize("args", [["scan"], ["scan", "-tools", "a", "-config", "b"], ["scan", "-tools", "a", "extra"]])
def test_scan_without_exactly_one_source_is_a_usage_error(args: list[str]) -> None:
    done = run_program(args)
    assert done.returncode == 2 and "give one of -config FILE or -tools FILE" in done.stderr


@pytest.mark.program
def test_scan_of_a_file_that_is_not_a_listing_exits_1_with_one_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"tool": 1}')
    done = run_program(["scan", "-tools", str(bad)])
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr.count("\n") == 1 and "expected a tools/list result" in done.stderr


@pytest.mark.program
def test_scan_over_the_npm_filesystem_everything_and_memory_servers_finds_nothing_hard(tmp_path: Path) -> None:
    node, modules = node_bin(), node_modules()
    packages = {
        name: modules / "@modelcontextprotocol" / f"server-{name}" / "dist" / "index.js"
        for name in ("filesystem", "everything", "memory")
    }
    for name, entry in packages.items():
        if not entry.is_file():
            pytest.skip(f"@modelcontextprotocol/server-{name} is not installed")
    servers = [
        {"name": name, "command": [node, str(entry), *([str(tmp_path)] if name == "filesystem" else [])],
         "env": [f"MEMORY_FILE_PATH={tmp_path / 'memory.jsonl'}"], "connect_timeout": "30s",
         "manifest": f"{name}.json", "rules": {}}
        for name, entry in packages.items()
    ]  # fmt: skip
    config = tmp_path / "proxy.json"
    config.write_text(json.dumps({"database": "proxy.db", "session": "laptop", "servers": servers}))
    config.chmod(0o600)
    done = run_program(["scan", "-json", "-config", str(config)], timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads(done.stdout)
    assert report["tools_scanned"] >= 36
    assert [f for f in report["findings"] if f["severity"] == "hard"] == []
