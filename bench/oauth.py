"""What OAuth costs a call (issue 26): the same server, behind a static ``Authorization`` header and
behind ``"auth": {"type": "oauth"}``, called through the real program by the SDK's client.

    .venv/bin/python bench/oauth.py [--calls N]

The server is the test world (tests/fixtures/oauth_world.py) in this process. Both proxies serve
at once and are called in turn, so load on the machine falls on both alike. Prints the median
and the 95th percentile of a read-only call's latency for each, in milliseconds.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

import anyio
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.fixtures.oauth_world import World  # noqa: E402

RULES = {"read_note": {"side_effect": "read_only", "timeout": "20s"}}


def configure(directory: Path, world: World, server: dict[str, Any]) -> Path:
    directory.mkdir()
    entry = {"name": "notes", "endpoint": world.endpoint, "manifest": "m.json", "rules": RULES, **server}
    path = directory / "proxy.json"
    path.write_text(json.dumps({"database": "proxy.db", "session": "bench", "hold": "0s", "servers": [entry]}))
    path.chmod(0o600)
    return path


def program(*args: str) -> list[str]:
    return [sys.executable, "-m", "agentrt_proxy", *args]


def login(config: Path) -> None:
    proc = subprocess.Popen(program("login", "-config", str(config), "notes", "-no-browser"), stdout=subprocess.PIPE,
                            text=True, cwd=REPO)  # fmt: skip
    assert proc.stdout is not None
    for line in proc.stdout:
        if line.strip().startswith("http://"):
            urllib.request.urlopen(line.strip(), timeout=30).read()
    assert proc.wait(60) == 0


async def measure(configs: dict[str, Path], calls: int) -> dict[str, list[float]]:
    times: dict[str, list[float]] = {name: [] for name in configs}
    async with anyio.create_task_group():
        sessions: dict[str, ClientSession] = {}
        stack = []
        for name, config in configs.items():
            params = StdioServerParameters(command=sys.executable, args=program("serve", "-config", str(config))[1:],
                                           cwd=str(REPO))  # fmt: skip
            client = stdio_client(params)
            read, write = await client.__aenter__()
            session = ClientSession(read, write)
            await session.__aenter__()
            await session.initialize()
            stack.append((client, session))
            sessions[name] = session
        for _ in range(calls):
            for name, session in sessions.items():
                start = time.perf_counter()
                result = await session.call_tool("notes_read_note", {})
                times[name].append((time.perf_counter() - start) * 1000)
                assert not result.is_error
        for client, session in reversed(stack):
            await session.__aexit__(None, None, None)
            await client.__aexit__(None, None, None)
    return times


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=200)
    calls = parser.parse_args().calls
    with World() as world, tempfile.TemporaryDirectory() as work:
        static_token = world.issue("machine", "read", world.endpoint, False)["access_token"]
        configs = {
            "static header": configure(
                Path(work) / "static", world, {"headers": {"Authorization": f"Bearer {static_token}"}}
            ),
            "oauth": configure(Path(work) / "oauth", world, {"auth": {"type": "oauth"}}),
        }
        login(configs["oauth"])
        for config in configs.values():
            subprocess.run(program("pin", "-config", str(config)), check=True, capture_output=True, cwd=REPO)
        times = anyio.run(measure, configs, calls)
    print(f"{calls} read-only calls each, interleaved (ms):")
    for name, values in times.items():
        values.sort()
        p95 = values[int(len(values) * 0.95) - 1]
        print(f"  {name:<14} median {statistics.median(values):7.2f}   p95 {p95:7.2f}")


if __name__ == "__main__":
    main()
