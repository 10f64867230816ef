"""HTTP upstreams as they really behave, through the real program (issue 13, items 1 and 2).

The servers are real: the official Python SDK's ``MCPServer`` under uvicorn
(tests/fixtures/sdk_bank.py), which closes an idle keep-alive connection after 5 s and
forgets every session when restarted, and the npm everything server in ``streamableHttp``
mode (Express: the same 5 s). The host is the official SDK client over the program's
stdin and stdout. Effects are counted in the bank's ledger and in the database: every run
completed, no approval asked for.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters

from agentrt_proxy.store import COMPLETED, Store
from agentrt_proxy.testing.fakebank import count_payments
from tests.conftest import REPO_ROOT, run_program
from tests.harness import is_error, text_of

pytestmark = [pytest.mark.program, pytest.mark.anyio, pytest.mark.timeout(120)]

IDLE = 7.0  # seconds: past uvicorn's and Express's 5 s keep-alive timeout
SDK_BANK = REPO_ROOT / "tests" / "fixtures" / "sdk_bank.py"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Server:
    """A server process, started and waited for until its port accepts; ``stop`` ends it."""

    def __init__(self, argv: list[str], port: int, env: dict[str, str], log: Path) -> None:
        self.argv, self.port, self.env, self.log = argv, port, env, log
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> Server:
        with self.log.open("ab") as out:
            self.proc = subprocess.Popen(self.argv, stdout=out, stderr=out, env={**os.environ, **self.env})
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                return self
            except OSError:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    self.stop()
                    pytest.fail(f"the server did not start: {self.log.read_text(errors='replace')[-2000:]}")
                time.sleep(0.05)

    def stop(self) -> None:
        proc, self.proc = self.proc, None
        if proc is not None and proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(10)

    def __enter__(self) -> Server:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def sdk_bank(tmp_path: Path, port: int) -> Server:
    env = {"FAKE_PAYMENTS_LEDGER": str(tmp_path / "ledger")}
    return Server([sys.executable, str(SDK_BANK), str(port)], port, env, tmp_path / "bank.log")


def write_config(tmp_path: Path, name: str, endpoint: str, rules: dict[str, Any]) -> Path:
    server = {
        "name": name,
        "endpoint": endpoint,
        "connect_timeout": "20s",
        "manifest": f"{name}.manifest.json",
        "rules": rules,
    }
    document = {"database": "proxy.db", "session": "laptop", "hold": "0s", "servers": [server]}
    path = tmp_path / "proxy.json"
    path.write_text(json.dumps(document, indent=2))
    path.chmod(0o600)
    pinned = run_program(["pin", "-config", str(path)], timeout=60)
    assert pinned.returncode == 0, pinned.stderr
    return path


def host(config: Path, program_argv: list[str], program_env: dict[str, str]) -> Client:
    params = StdioServerParameters(
        command=program_argv[0], args=[*program_argv[1:], "serve", "-config", str(config)], env=program_env
    )
    return Client(params)


def settled(db: Path) -> tuple[list[str], list[str]]:
    """Every run's status and every approval's status, as the database holds them."""
    store = Store.open_readonly(str(db))
    try:
        runs = [summary.run.status for summary in store.list_runs(1000)]
        with store.read() as conn:
            approvals = [row[0] for row in conn.execute("SELECT status FROM approvals")]
    finally:
        store.close()
    return runs, approvals


PAY = {"pay": {"side_effect": "remote_mutation", "timeout": "20s", "outcome": "allow"}}


async def test_a_payment_after_seven_idle_seconds_pays_through_the_sdk_server_under_uvicorn(
    tmp_path: Path, program_argv: list[str], program_env: dict[str, str]
) -> None:
    port = free_port()
    with sdk_bank(tmp_path, port):
        config = write_config(tmp_path, "bank", f"http://127.0.0.1:{port}/mcp", PAY)
        with anyio.fail_after(60):
            async with host(config, program_argv, program_env) as client:
                first = await client.call_tool("bank_pay", {"to": "rob", "amount": 5})
                await anyio.sleep(IDLE)  # uvicorn has closed the keep-alive connection
                second = await client.call_tool("bank_pay", {"to": "sam", "amount": 7})
    answers = [(text_of(first), is_error(first)), (text_of(second), is_error(second))]
    assert answers == [("paid 5.00 to rob", False), ("paid 7.00 to sam", False)]
    assert count_payments(tmp_path / "ledger") == 2
    assert settled(tmp_path / "proxy.db") == ([COMPLETED, COMPLETED], [])


async def test_a_bank_restarted_between_two_payments_costs_the_second_nothing(
    tmp_path: Path, program_argv: list[str], program_env: dict[str, str]
) -> None:
    port = free_port()
    with sdk_bank(tmp_path, port) as bank:
        config = write_config(tmp_path, "bank", f"http://127.0.0.1:{port}/mcp", PAY)
        with anyio.fail_after(60):
            async with host(config, program_argv, program_env) as client:
                first = await client.call_tool("bank_pay", {"to": "rob", "amount": 5})
                bank.stop()  # the bank process is gone, with its sessions
                bank.start()  # a new one listens on the same port
                second = await client.call_tool("bank_pay", {"to": "sam", "amount": 7})
    assert (text_of(first), is_error(first)) == ("paid 5.00 to rob", False)
    assert (text_of(second), is_error(second)) == ("paid 7.00 to sam", False)
    assert count_payments(tmp_path / "ledger") == 2
    assert settled(tmp_path / "proxy.db") == ([COMPLETED, COMPLETED], [])
    # The new process refused the old session once (404), and was asked to initialize again.
    log = (tmp_path / "bank.log").read_text(errors="replace")
    assert log.count('"POST /mcp HTTP/1.1" 404') == 1, log[-3000:]


async def test_a_payment_to_a_bank_that_is_down_is_not_sent_and_the_same_payment_pays_once_it_is_up(
    tmp_path: Path, program_argv: list[str], program_env: dict[str, str]
) -> None:
    port = free_port()
    with sdk_bank(tmp_path, port) as bank:
        config = write_config(tmp_path, "bank", f"http://127.0.0.1:{port}/mcp", PAY)
        with anyio.fail_after(60):
            async with host(config, program_argv, program_env) as client:
                assert "bank_pay" in [tool.name for tool in (await client.list_tools()).tools]  # connected
                bank.stop()  # its port refuses: the request cannot reach it
                refused = await client.call_tool("bank_pay", {"to": "rob", "amount": 5})
                assert count_payments(tmp_path / "ledger") == 0
                bank.start()
                again = await client.call_tool("bank_pay", {"to": "rob", "amount": 5})
    assert is_error(refused) and "bank" in text_of(refused), text_of(refused)
    assert (text_of(again), is_error(again)) == ("paid 5.00 to rob", False)  # not a duplicate, not blocked
    assert count_payments(tmp_path / "ledger") == 1
    runs, approvals = settled(tmp_path / "proxy.db")
    assert sorted(runs) == sorted([COMPLETED, "FAILED"]) and approvals == []


def node_everything() -> list[str]:
    """The npm everything server's argv, or a skip naming what is missing."""
    node = os.environ.get("AGENTRT_NODE_BIN") or str(REPO_ROOT / ".venv" / "node-bin" / "node")
    modules = Path(os.environ.get("AGENTRT_NODE_MODULES") or REPO_ROOT / "tests" / "node" / "node_modules")
    script = modules / "@modelcontextprotocol" / "server-everything" / "dist" / "index.js"
    if not Path(node).is_file():
        pytest.skip("Node 22+ is not installed: run scripts/setup-node.sh")
    if not script.is_file():
        pytest.skip("@modelcontextprotocol/server-everything is not installed: run scripts/setup-node.sh")
    return [node, str(script), "streamableHttp"]


async def test_a_mutation_after_seven_idle_seconds_is_answered_by_the_npm_everything_server(
    tmp_path: Path, program_argv: list[str], program_env: dict[str, str]
) -> None:
    argv = node_everything()
    port = free_port()
    rules = {"get-sum": {"side_effect": "remote_mutation", "timeout": "10s", "outcome": "allow"}}
    with Server(argv, port, {"PORT": str(port)}, tmp_path / "everything.log"):
        config = write_config(tmp_path, "everything", f"http://127.0.0.1:{port}/mcp", rules)
        with anyio.fail_after(60):
            async with host(config, program_argv, program_env) as client:
                first = await client.call_tool("everything_get-sum", {"a": 2, "b": 3})
                await anyio.sleep(IDLE)  # Express has closed the keep-alive connection
                second = await client.call_tool("everything_get-sum", {"a": 4, "b": 5})
    assert (text_of(first), is_error(first)) == ("The sum of 2 and 3 is 5.", False)
    assert (text_of(second), is_error(second)) == ("The sum of 4 and 5 is 9.", False)
    assert settled(tmp_path / "proxy.db") == ([COMPLETED, COMPLETED], [])
