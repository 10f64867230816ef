"""The official MCP conformance suite (npm `@modelcontextprotocol/conformance`, client mode)
against OUR upstream HTTP client, through tests/fixtures/conformance_driver.py.

The suite starts a scenario's HTTP server and runs the driver with its URL as the last
argument; the driver connects with `agentrt_proxy.mcp.open_connection` and calls what the
scenario wants. Needs Node >= 22 and tests/node/node_modules: scripts/setup-node.sh
installs both (scripts/test runs it and exports AGENTRT_NODE_BIN).
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
NODE_DIR = REPO / "tests" / "node"
DRIVER = REPO / "tests" / "fixtures" / "conformance_driver.py"


def node_env() -> dict[str, str]:
    """The environment that runs the pinned npm packages with Node 22+, or a skip."""
    node = os.environ.get("AGENTRT_NODE_BIN") or str(REPO / ".venv" / "node-bin" / "node")
    modules = Path(os.environ.get("AGENTRT_NODE_MODULES") or NODE_DIR / "node_modules")
    if not Path(node).is_file():
        pytest.skip("Node 22+ is not installed: run scripts/setup-node.sh")
    version = subprocess.run([node, "--version"], capture_output=True, text=True, check=False).stdout.strip()
    if not version.startswith("v") or int(version[1:].split(".")[0]) < 22:
        pytest.skip(f"Node 22+ is not installed ({node} is {version or 'unusable'}): run scripts/setup-node.sh")
    if not (modules / "@modelcontextprotocol" / "conformance").is_dir():
        pytest.skip("the npm test packages are not installed: run scripts/setup-node.sh")
    if shutil.which("npx") is None:
        pytest.skip("npx is not installed")
    env = dict(os.environ)
    env["PATH"] = os.pathsep.join([str(Path(node).parent), env.get("PATH", "")])
    env["NO_COLOR"] = "1"
    return env


@pytest.mark.parametrize(
    ("scenario", "checks"),
    [
        ("initialize", {"mcp-client-initialization"}),
        ("tools_call", {"tool-add-numbers"}),
        ("sse-retry", {"client-sse-graceful-reconnect", "client-sse-retry-timing", "client-sse-last-event-id"}),
    ],
)
def test_the_conformance_suite_passes_our_upstream_client(scenario: str, checks: set[str], tmp_path: Path) -> None:
    env = node_env()
    command = shlex.join([sys.executable, str(DRIVER)])
    proc = subprocess.run(
        ["npx", "--no-install", "conformance", "client", "--command", command, "--scenario", scenario,
         "-o", str(tmp_path)],
        cwd=NODE_DIR, env=env, capture_output=True, text=True, timeout=90, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    (result,) = tmp_path.glob(f"{scenario}-*/checks.json")
    ran = json.loads(result.read_text())
    verdicts = {c["id"]: c["status"] for c in ran if c["status"] not in ("INFO",)}
    assert checks <= set(verdicts), verdicts
    assert all(status == "SUCCESS" for status in verdicts.values()), json.dumps(ran, indent=1)[-4000:]
