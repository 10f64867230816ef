"""What servers say besides their answers, through the real program: progress, log messages,
requests of their own and a changed tool list (issue 13, items 8 and 9).

The host is the official SDK's ``ClientSession`` over the program's pipes. The servers are the
npm everything server (stdio; skipped where Node or the package is absent, see
test_node_peers.py) and ``fixtures/notes_server.py``, which logs every message it receives.
"""

from __future__ import annotations

import itertools
import json
import os
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import ClientSession, StdioServerParameters, types
from mcp.client.stdio import stdio_client

from agentrt_proxy.store import Store
from agentrt_proxy.text.model_text import progress_waiting
from tests.conftest import REPO_ROOT, run_program
from tests.harness import is_error, text_of
from tests.program.test_node_peers import node_bin
from tests.waiting import until

pytestmark = [
    pytest.mark.program,
    pytest.mark.anyio,
    pytest.mark.timeout(120),
    # The SDK warns that the modern revision (2026-07-28) drops logging; the proxy speaks the legacy ones.
    pytest.mark.filterwarnings("ignore:The logging capability is deprecated"),
]

NOTES_SERVER = str(REPO_ROOT / "tests" / "fixtures" / "notes_server.py")
LEVELS = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")
LONG_RUNNING = "trigger-long-running-operation"
TOGGLE_LOGGING = "toggle-simulated-logging"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def everything_server() -> list[str]:
    node = node_bin()
    modules = Path(os.environ.get("AGENTRT_NODE_MODULES") or REPO_ROOT / "tests" / "node" / "node_modules")
    index = modules / "@modelcontextprotocol" / "server-everything" / "dist" / "index.js"
    if not index.is_file():
        pytest.skip("@modelcontextprotocol/server-everything is not installed: run scripts/setup-node.sh")
    return [node, str(index), "stdio"]


def write_config(directory: Path, server: dict[str, Any], **top: Any) -> Path:
    document = {"database": "proxy.db", "session": "laptop", "hold": "0s", "servers": [server], **top}
    path = directory / "proxy.json"
    path.write_text(json.dumps(document, indent=2))
    path.chmod(0o600)
    pinned = run_program(["pin", "-config", str(path)], timeout=60)
    assert pinned.returncode == 0, pinned.stderr
    return path


def everything_config(directory: Path) -> Path:
    return write_config(directory, {
        "name": "ev",
        "command": everything_server(),
        "connect_timeout": "30s",
        "manifest": "ev.manifest.json",
        "rules": {
            LONG_RUNNING: {"side_effect": "read_only", "timeout": "30s"},
            # It only starts or stops the server's simulated log messages toward this session.
            TOGGLE_LOGGING: {"side_effect": "read_only", "timeout": "10s", "allow_hint_mismatch": True},
        },
    })  # fmt: skip


def notes_config(directory: Path, **top: Any) -> Path:
    return write_config(directory, {
        "name": "notes",
        "command": [sys.executable, NOTES_SERVER],
        "env": [f"NOTES_LOG={directory / 'received.jsonl'}"],
        "manifest": "notes.manifest.json",
        "rules": {
            "ask": {"side_effect": "read_only", "timeout": "30s"},
            "log": {"side_effect": "read_only", "timeout": "5s"},
            "change": {"side_effect": "read_only", "timeout": "5s"},
            "work": {"side_effect": "local_mutation", "timeout": "10s"},
        },
    }, **top)  # fmt: skip


@dataclass
class Heard:
    """What the host was told besides answers."""

    logs: list[types.LoggingMessageNotificationParams] = field(default_factory=list)

    async def on_log(self, params: types.LoggingMessageNotificationParams) -> None:
        self.logs.append(params)

    async def wait_logs(self, count: int, timeout: float = 15) -> None:
        await until(f"{count} log messages", lambda: len(self.logs) >= count, timeout)


@asynccontextmanager
async def host(
    command: list[str], directory: Path, env: dict[str, str] | None = None
) -> AsyncIterator[tuple[ClientSession, Heard]]:
    """The SDK's client session over ``command``'s pipes; its standard error to ``stderr.txt``."""
    heard = Heard()
    params = StdioServerParameters(command=command[0], args=command[1:], env=env, cwd=str(directory))
    with (directory / "stderr.txt").open("w") as errlog:
        async with (
            stdio_client(params, errlog=errlog) as (read, write),
            ClientSession(read, write, logging_callback=heard.on_log) as session,
        ):
            with anyio.fail_after(60):
                await session.initialize()
            yield session, heard


def proxy_command(argv: list[str], config: Path) -> list[str]:
    return [*argv, "serve", "-config", str(config)]


async def progress_of(session: ClientSession, name: str, arguments: dict[str, Any]) -> tuple[Any, list[Any]]:
    steps: list[tuple[float, float | None, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        steps.append((progress, total, message))

    with anyio.fail_after(60):
        result = await session.call_tool(name, arguments, progress_callback=on_progress)
    return result, steps


async def test_the_everything_servers_long_operation_reaches_the_host_step_by_step_as_it_does_directly(
    tmp_path: Path, program_argv: list[str], program_env: dict[str, str]
) -> None:
    config = everything_config(tmp_path)
    arguments = {"duration": 1, "steps": 5}
    async with host(everything_server(), tmp_path) as (direct, _heard):
        direct_result, direct_steps = await progress_of(direct, LONG_RUNNING, arguments)
    async with host(proxy_command(program_argv, config), tmp_path, program_env) as (proxied, _heard):
        result, steps = await progress_of(proxied, f"ev_{LONG_RUNNING}", arguments)
    assert not is_error(result) and text_of(result) == text_of(direct_result)
    assert direct_steps == [(float(i), 5.0, None) for i in range(1, 6)]  # what the server sends
    assert steps == direct_steps  # every step, as sent, none lost, none added
    assert all(a[0] < b[0] for a, b in itertools.pairwise(steps))


async def test_the_everything_servers_log_messages_reach_the_host_under_its_name_and_its_chosen_level(
    tmp_path: Path, program_argv: list[str], program_env: dict[str, str]
) -> None:
    config = everything_config(tmp_path)
    toggle = f"ev_{TOGGLE_LOGGING}"
    async with host(proxy_command(program_argv, config), tmp_path, program_env) as (session, heard):
        started = await session.call_tool(toggle, {})  # on: one message at once, at a random level
        assert not is_error(started), text_of(started)
        await heard.wait_logs(1)
        first = heard.logs[0]
        assert first.logger == "ev" and first.level in LEVELS
        assert isinstance(first.data, str) and "message" in first.data  # the server's own text, kept
        # Sixteen more at random levels, each at once on turning it on again: only emergencies pass.
        await session.set_logging_level("emergency")
        before = len(heard.logs)
        for _ in range(16):
            assert not is_error(await session.call_tool(toggle, {}))  # off
            assert not is_error(await session.call_tool(toggle, {}))  # on: one message
        await anyio.sleep(1)  # what the server sent meanwhile has reached the host
        filtered = heard.logs[before:]
        assert all(m.level == "emergency" and m.logger == "ev" for m in filtered), filtered
        assert len(filtered) < 16  # 16 random levels all emergencies: one chance in 8**16
        await session.set_logging_level("debug")
        after = len(heard.logs)
        assert not is_error(await session.call_tool(toggle, {}))  # off
        assert not is_error(await session.call_tool(toggle, {}))  # on: this one passes, whatever its level
        await heard.wait_logs(after + 1)
        assert heard.logs[-1].logger == "ev"
        assert not is_error(await session.call_tool(toggle, {}))  # off again


async def test_a_servers_log_messages_reach_the_host_prefixed_and_filtered_by_set_level(
    tmp_path: Path, program_argv: list[str], program_env: dict[str, str]
) -> None:
    config = notes_config(tmp_path)
    async with host(proxy_command(program_argv, config), tmp_path, program_env) as (session, heard):
        assert text_of(await session.call_tool("notes_log", {})) == "log"
        await heard.wait_logs(8)
        await session.set_logging_level("error")
        assert text_of(await session.call_tool("notes_log", {})) == "log"
        await heard.wait_logs(12)
        await anyio.sleep(0.3)
    assert [(m.level, m.logger, m.data) for m in heard.logs] == [
        *((level, "notes/core", {"n": n}) for n, level in enumerate(LEVELS)),
        *((level, "notes/core", {"n": n}) for n, level in enumerate(LEVELS) if n >= LEVELS.index("error")),
    ]
    received = [json.loads(line) for line in (tmp_path / "received.jsonl").read_text().splitlines()]
    assert not any(m.get("method") == "logging/setLevel" for m in received)  # the server keeps its own level


async def test_a_servers_elicitation_sampling_and_roots_requests_are_refused_at_once_mid_call(
    tmp_path: Path, program_argv: list[str], program_env: dict[str, str]
) -> None:
    config = notes_config(tmp_path)
    async with host(proxy_command(program_argv, config), tmp_path, program_env) as (session, _heard):
        with anyio.fail_after(15):  # the server waits up to 20 s per request: a hang fails here
            result = await session.call_tool("notes_ask", {})
        assert not is_error(result), text_of(result)
        answers = json.loads(text_of(result))
        changed = await session.call_tool("notes_change", {})
        assert text_of(changed) == "change"
        listed = await session.list_tools()
    for method in ("elicitation/create", "sampling/createMessage", "roots/list"):
        assert answers[method]["code"] == -32601, answers
        assert "offers no sampling, elicitation or roots" in answers[method]["message"]
    assert answers["ping"] == {"result": {}}
    received = [json.loads(line) for line in (tmp_path / "received.jsonl").read_text().splitlines()]
    assert [m["id"] for m in received if str(m.get("id", "")).startswith("asked-")] == [
        "asked-0", "asked-1", "asked-2", "asked-3",
    ]  # fmt: skip
    stderr = (tmp_path / "stderr.txt").read_text()
    # The changed list is listed again at once; it changed nothing offered, so no one is told (issue 15).
    assert 'server "notes"' not in stderr
    assert sum(1 for m in received if m.get("method") == "tools/list") == 3  # pin, serve, and once again
    assert sorted(t.name for t in listed.tools) == ["gate_status", "notes_ask", "notes_change", "notes_log",
                                                    "notes_work"]  # fmt: skip


def pending_approval(db: Path) -> Any:
    store = Store.open_readonly(str(db))
    try:
        with store.read() as conn:
            ids = [r[0] for r in conn.execute("SELECT id FROM approvals ORDER BY rowid")]
        approvals = [store.get_approval(i) for i in ids]
    finally:
        store.close()
    pending = [a for a in approvals if a.status == "pending"]
    return pending[0] if pending else None


async def test_a_held_calls_progress_then_its_servers_reach_the_host_under_one_token_strictly_increasing(
    tmp_path: Path, program_argv: list[str], program_env: dict[str, str]
) -> None:
    config = notes_config(tmp_path, hold="30s", policy={"local_mutation": "require_approval"})
    server_steps = [[1, 4, "a"], [2, 4, "b"], [3, 4, "c"], [4, 4, "d"]]
    steps: list[tuple[float, float | None, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        steps.append((progress, total, message))

    answer: list[Any] = []
    async with (
        host(proxy_command(program_argv, config), tmp_path, program_env) as (session, _heard),
        anyio.create_task_group() as tg,
    ):

        async def call() -> None:
            answer.append(await session.call_tool("notes_work", {"progress": server_steps},
                                                  progress_callback=on_progress))  # fmt: skip

        tg.start_soon(call)
        # the hold tells the host it waits, once a second
        await until("two progress notifications", lambda: len(steps) >= 2, 20)
        approval = pending_approval(tmp_path / "proxy.db")
        assert approval is not None
        args = ["approve", "-db", str(tmp_path / "proxy.db"), approval.run_id, "-approval", approval.id,
                "-by", "tester", "-yes"]  # fmt: skip
        approved = await anyio.to_thread.run_sync(lambda: run_program(args, timeout=30))
        assert approved.returncode == 0, approved.stderr
    assert text_of(answer[0]) == "work"
    values = [step[0] for step in steps]
    assert all(a < b for a, b in itertools.pairwise(values)), steps
    held = [step for step in steps if step[2] == progress_waiting()]
    worked = [step for step in steps if step[2] != progress_waiting()]
    assert len(held) >= 2 and steps[: len(held)] == held  # the hold first, then the server
    assert [step[2] for step in worked] == ["a", "b", "c", "d"]  # every step the server sent
    last_held = held[-1][0]
    assert [step[0] for step in worked] == [last_held + i for i in range(1, 5)]  # continuing after the hold
    assert worked[-1][1] == worked[-1][0]  # and ending at its total
