"""What the real program answers a host's malformed or extreme messages, over its pipes.

Black-box: each test starts ``serve`` (source tree, and again the .pyz) in front of the fake bank.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from agentrt_proxy.store import Store
from tests.conftest import run_program
from tests.harness import write_config

pytestmark = [pytest.mark.program, pytest.mark.usefixtures("program_target")]


def serve_lines(tmp_path: Path, program_argv: list[str], program_env: dict[str, str], lines: list[bytes],
                answers: int) -> list[Any]:
    """Pin the bank, start ``serve``, write ``lines`` and read ``answers`` messages back."""
    config = write_config(tmp_path)
    assert run_program(["pin", "-config", str(config)]).returncode == 0
    proc = subprocess.Popen([*program_argv, "serve", "-config", str(config)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=program_env)
    assert proc.stdin is not None and proc.stdout is not None
    try:
        for line in lines:
            proc.stdin.write(line + b"\n")
        proc.stdin.flush()
        got = [json.loads(proc.stdout.readline()) for _ in range(answers)]
    finally:
        proc.stdin.close()
        proc.wait(timeout=30)
    return got


INITIALIZE = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                         "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                                    "clientInfo": {"name": "t", "version": "1"}}}).encode()
INITIALIZED = b'{"jsonrpc":"2.0","method":"notifications/initialized"}'


def test_a_tools_call_nested_past_the_decoders_depth_is_answered_by_its_id_and_pays_nothing(
    tmp_path: Path, program_argv: list[str], program_env: dict[str, str]
) -> None:
    deep = "[" * 2000 + "]" * 2000
    call = ('{"jsonrpc":"2.0","id":"pay-1","method":"tools/call","params":{"name":"bank_pay",'
            '"arguments":{"to":"bob","amount":25,"memo":' + deep + "}}}").encode()
    assert_refused_by_its_id_paying_nothing(tmp_path, program_argv, program_env, call)


def assert_refused_by_its_id_paying_nothing(tmp_path: Path, program_argv: list[str], program_env: dict[str, str],
                                            call: bytes) -> None:
    """``call`` (id ``pay-1``) is answered -32600, a ping after it is served, and the ledger is empty."""
    ping = b'{"jsonrpc":"2.0","id":"after","method":"ping"}'
    got = {m["id"]: m for m in serve_lines(tmp_path, program_argv, program_env,
                                           [INITIALIZE, INITIALIZED, call, ping], 3)}
    assert got["pay-1"]["error"]["code"] == -32600
    assert got["after"]["result"] == {}
    ledger = tmp_path / "ledger"
    assert not ledger.exists() or ledger.read_text() == ""


@pytest.mark.parametrize(
    "envelope",
    [
        '"method":"ping","method":"tools/call","params":{"name":"bank_pay","arguments":{"to":"bob","amount":25}}',
        '"method":"tools/call","params":{"name":"bank_balance","name":"bank_pay","arguments":{"to":"bob","amount":25}}',
        '"method":"tools/call","params":{"name":"bank_pay","arguments":{"to":"bob","amount":1},'
        '"arguments":{"to":"bob","amount":25}}',
        '"method":"tools/call","params":{},"params":{"name":"bank_pay","arguments":{"to":"bob","amount":25}}',
    ],
    ids=["method", "name", "arguments", "params"],
)
def test_a_tools_call_whose_envelope_repeats_a_key_is_refused_by_its_id_and_pays_nothing(
    tmp_path: Path, program_argv: list[str], program_env: dict[str, str], envelope: str
) -> None:
    """Issue 22, item 6: one message, one meaning; never executed as its last key says."""
    call = ('{"jsonrpc":"2.0","id":"pay-1",' + envelope + "}").encode()
    assert_refused_by_its_id_paying_nothing(tmp_path, program_argv, program_env, call)
    assert not (tmp_path / "runs.db").exists() or _runs(tmp_path / "runs.db") == 0


def _runs(db: Path) -> int:
    store = Store.open_readonly(str(db))
    try:
        return len(store.list_runs(100))
    finally:
        store.close()
