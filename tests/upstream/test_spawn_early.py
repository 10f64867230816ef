"""The stdio servers started early by ``serve`` (decision 0007).

A server the reach check refuses never runs; a server started early and never adopted
(start-up failed later) is killed with its process group, descendants too; a server
started early is adopted by its transport, with the environment the transport would give.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from agentrt_proxy.config import ServerConfig
from agentrt_proxy.mcp import ServerSpec, child_env, open_connection
from agentrt_proxy.mcp import spawn as early
from tests.conftest import checked_target, target_argv, target_env
from tests.processes import alive
from tests.waiting import until, until_sync

RAW_SERVER = Path(__file__).resolve().parents[1] / "fixtures" / "raw_server.py"

# Records its own pid and a grandchild's (same group), ignores SIGTERM, never speaks MCP.
STUBBORN = """\
import os, signal, subprocess, sys, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)
IGNORE = "import signal,time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(600)"
child = subprocess.Popen([sys.executable, "-c", IGNORE])
with open(sys.argv[1] + ".tmp", "w") as f:
    f.write(f"{os.getpid()} {child.pid}")
os.rename(sys.argv[1] + ".tmp", sys.argv[1])
time.sleep(600)
"""

MARKER = """\
import sys
open(sys.argv[1], "w").close()
"""


def wait_dead(pids: list[int], seconds: float = 5.0) -> list[int]:
    deadline = time.monotonic() + seconds
    while (left := [p for p in pids if alive(p)]) and time.monotonic() < deadline:
        time.sleep(0.02)
    return left


def write_config(directory: Path, servers: list[dict[str, Any]]) -> Path:
    for server in servers:
        server.setdefault("manifest", f"{server['name']}.json")
        server.setdefault("rules", {})
    path = directory / "proxy.json"
    path.write_text(json.dumps({"database": "proxy.db", "session": "laptop", "hold": "0s", "servers": servers}))
    path.chmod(0o600)
    return path


def serve(config: Path, *, keep_stdin_open: bool) -> tuple[int, str]:
    """Run ``serve`` as a host would; with stdin open, it exits only on its own failure."""
    target = checked_target()
    proc = subprocess.Popen(
        [*target_argv(target), "serve", "-config", str(config)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=target_env(target),
    )
    try:
        if keep_stdin_open:
            proc.wait(timeout=30)
            assert proc.stdin is not None and proc.stderr is not None
            proc.stdin.close()
            err = proc.stderr.read()
        else:
            _, err = proc.communicate(input=b"", timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return proc.returncode, err.decode()


@pytest.mark.program
def test_a_server_refused_by_the_reach_check_is_never_started(tmp_path: Path) -> None:
    scripts = tmp_path / "scripts"
    scripts.mkdir()
    (scripts / "marker.py").write_text(MARKER)
    fine_marker, refused_marker = scripts / "fine-started", scripts / "refused-started"
    config = tmp_path / "proxy.json"
    servers = [
        {"name": "fine", "command": [sys.executable, str(scripts / "marker.py"), str(fine_marker)]},
        # its arguments name the configuration: refused, and so is the start of every server
        {"name": "refused", "command": [sys.executable, str(scripts / "marker.py"), str(refused_marker), str(config)]},
    ]
    write_config(tmp_path, servers)
    code, err = serve(config, keep_stdin_open=False)
    assert code == 1
    assert "which the proxy's policy and approvals depend on" in err
    time.sleep(0.3)  # a process started by mistake would have written its marker by now
    assert not fine_marker.exists()
    assert not refused_marker.exists()


@pytest.mark.program
def test_a_server_started_early_and_never_adopted_leaves_nothing_behind(tmp_path: Path) -> None:
    (tmp_path / "stubborn.py").write_text(STUBBORN)
    pids_file = tmp_path / "pids"
    servers = [
        # no manifest: start-up fails, after its process was started early
        {"name": "orphan", "command": [sys.executable, str(tmp_path / "stubborn.py"), str(pids_file)]},
        # never answers initialize: start-up waits for its connect timeout, so the orphan runs meanwhile
        {
            "name": "slow",
            "command": [sys.executable, str(RAW_SERVER)],
            "env": ["RAW_MODE=silent-init"],
            "connect_timeout": "2s",
        },
    ]
    config = write_config(tmp_path, servers)
    (tmp_path / "slow.json").write_text(
        json.dumps({"server": "slow", "pinned_at": "2026-01-01T00:00:00Z", "tools": {}})
    )
    (tmp_path / "slow.json").chmod(0o600)
    code, err = serve(config, keep_stdin_open=True)
    assert code == 1, err
    assert 'server "orphan": manifest:' in err or 'mcp: server "slow"' in err, err
    assert pids_file.exists(), f"the early process never ran: {err}"
    pids = [int(p) for p in pids_file.read_text().split()]
    assert wait_dead(pids) == []


def test_start_early_then_kill_unadopted_kills_the_group(tmp_path: Path) -> None:
    (tmp_path / "stubborn.py").write_text(STUBBORN)
    pids_file = tmp_path / "pids"
    server = ServerConfig(
        name="s", manifest=tmp_path / "s.json", command=(sys.executable, str(tmp_path / "stubborn.py"), str(pids_file))
    )
    early.start_early([server])
    try:
        until_sync("the stubborn server's pids file", pids_file.exists, 10)
        # another command or environment is not this process: not adopted
        assert early.adopt("s", [sys.executable, "other"], child_env(ServerSpec("s", command=("x",)))) is None
        assert early.adopt("s", list(server.command or ()), {"PATH": "/nowhere"}) is None
    finally:
        early.kill_unadopted()
    pids = [int(p) for p in pids_file.read_text().split()]
    assert wait_dead(pids) == []
    early.kill_unadopted()  # safe twice


@pytest.mark.anyio
async def test_the_transport_adopts_the_early_process(tmp_path: Path) -> None:
    command = (sys.executable, str(RAW_SERVER))
    server = ServerConfig(
        name="raw", manifest=tmp_path / "raw.json", command=command, env=("RAW_MODE=normal",), inherit_env=("LANG",)
    )
    early.start_early([server])
    started = early._early["raw"][2]
    assert started.pid is not None
    try:
        spec = ServerSpec("raw", command=command, env=("RAW_MODE=normal",), inherit_env=("LANG",))
        async with open_connection(spec) as conn:
            assert conn._transport.pid == started.pid  # type: ignore[attr-defined]
            assert "raw" not in early._early
            assert [t.name for t in conn.tools][:2] == ["echo", "hang"]
        await until("the adopted process's end", lambda: started.poll() is not None, 5)
    finally:
        early.kill_unadopted()
    assert started.returncode is not None
    with pytest.raises(ProcessLookupError):
        os.killpg(started.pid, 0)


# Runs ``serve`` as the program does, but records what is imported when the servers would
# start, and stops there.
WHAT_IS_LOADED_AT_THE_SPAWN = """\
import json, sys
from agentrt_proxy.mcp import spawn

def record(servers):
    print(json.dumps(sorted(sys.modules)))
    raise SystemExit(0)

spawn.start_early = record
from agentrt_proxy.cli.main import main
sys.exit(main(["serve", "-config", sys.argv[1]]))
"""


def test_the_servers_start_before_the_event_loop_the_protocol_code_or_jsonschema_load(tmp_path: Path) -> None:
    # decisions 0007 and 0009: every ms before the spawn is a ms added to the host's tools/list
    config = write_config(tmp_path, [{"name": "s", "command": [sys.executable, "-c", "pass"]}])
    done = subprocess.run(
        [sys.executable, "-c", WHAT_IS_LOADED_AT_THE_SPAWN, str(config)],
        capture_output=True,
        text=True,
        env=target_env("source"),
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    loaded = set(json.loads(done.stdout))
    assert "agentrt_proxy.config._loading" in loaded  # the checks ran first
    late = {
        "anyio",
        "asyncio",
        "jsonschema",
        "sqlite3",
        "agentrt_proxy.text.model_text",
        "agentrt_proxy.proxy.session",
        "agentrt_proxy.proxy._runtime",
        "agentrt_proxy.mcp.server",
        "agentrt_proxy.mcp.client",
        "agentrt_proxy.gate._session",
    }
    assert loaded & late == set()
