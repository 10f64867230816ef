"""Prints how many of the conformance suite's server scenarios pass through the stdio-to-HTTP bridge
alone, through the proxy, and through the proxy with the server's sampling and elicitation
forwarded (``"forward"``, issue 25), and why each failing one failed (run from the repository root):

    AGENTRT_NODE_MODULES=.../node_modules PATH=<node's bin>:$PATH python bench/conformance_counts.py

See tests/conformance_servers.py for the fixture server, the bridge and the proxy's configuration.
Asserts nothing: tests/program/test_conformance_server.py does.
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from tests.conformance_servers import bridge, proxy_command, run_suite, server_command  # noqa: E402


def main() -> int:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH")) if p)
    env["NO_COLOR"] = "1"
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        with bridge(server_command(), env) as url:
            alone = run_suite(url, root / "alone", env)
        program = [sys.executable, "-m", "agentrt_proxy"]
        with bridge(proxy_command(root / "proxy", program, env), env) as url:
            proxied = run_suite(url, root / "proxied", env)
        forward = ("sampling", "elicitation")
        with bridge(proxy_command(root / "forwarding", program, env, forward), env) as url:
            forwarded = run_suite(url, root / "forwarded", env)
    runs = (("bridge alone", alone), ("through the proxy", proxied), ("through the proxy, forwarding", forwarded))
    for label, found in runs:
        passed = sorted(name for name, s in found.items() if s.passed)
        print(f"{label}: {len(passed)} of {len(found)} scenarios pass")
        for name, scenario in sorted(found.items()):
            if not scenario.passed:
                print(f"  FAIL {name}: {'; '.join(scenario.failures)[:300]}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
