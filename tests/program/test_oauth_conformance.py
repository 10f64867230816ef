"""The official conformance suite's client ``auth`` scenarios (npm ``@modelcontextprotocol/conformance``),
through the real program: tests/fixtures/conformance_auth_client.py writes a configuration for the
scenario's server, runs ``login -no-browser`` following the URL it prints, ``pin``, then ``serve``
with a scripted host calling a tool (issue 26). One scenario a test, one after another: run all at
once (``--suite auth``), the suite's own 30 s limit per client is too short on a loaded machine.

The TypeScript SDK's example client (the conformance repository's everything-client at v0.1.16)
passes every scenario listed here; so does the proxy.
"""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from tests.mcp.test_conformance_client import NODE_DIR, node_env

pytestmark = [pytest.mark.program, pytest.mark.timeout(300)]

CLIENT = Path(__file__).resolve().parents[1] / "fixtures" / "conformance_auth_client.py"
SCENARIOS = [
    "auth/metadata-default",
    "auth/metadata-var1",
    "auth/metadata-var2",
    "auth/metadata-var3",
    "auth/basic-cimd",
    "auth/scope-from-www-authenticate",
    "auth/scope-from-scopes-supported",
    "auth/scope-omitted-when-undefined",
    "auth/scope-step-up",
    "auth/scope-retry-limit",
    "auth/token-endpoint-auth-basic",
    "auth/token-endpoint-auth-post",
    "auth/token-endpoint-auth-none",
    "auth/pre-registration",
    "auth/2025-03-26-oauth-metadata-backcompat",
    "auth/2025-03-26-oauth-endpoint-fallback",
    "auth/resource-mismatch",
    "auth/offline-access-scope",
    "auth/offline-access-not-supported",
    "auth/client-credentials-basic",
    "auth/client-credentials-jwt",
]


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_the_conformance_suite_passes_the_proxy_as_oauth_client(scenario: str, tmp_path: Path) -> None:
    env = node_env()
    proc = subprocess.run(
        ["npx", "--no-install", "conformance", "client", "--command", shlex.join([sys.executable, str(CLIENT)]),
         "--scenario", scenario, "-o", str(tmp_path)],
        cwd=NODE_DIR, env=env, capture_output=True, text=True, timeout=240, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    (result,) = tmp_path.glob("auth/*/checks.json")
    checks = json.loads(result.read_text())
    failed = [c for c in checks if c["status"] in ("FAILURE", "WARNING")]
    assert checks and failed == [], json.dumps(failed, indent=1)[-3000:]
