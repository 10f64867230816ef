"""``serve`` answers ``initialize`` before its event loop exists (decision 0024), and a host sees
exactly what the session would have answered: the real program over pipes, as a host runs it.

A stdin that is a file is never answered early, so the same first line from a file is the
session's own answer, to compare byte for byte with the answer a pipe gets.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from agentrt_proxy.testing.fakebank import count_payments
from tests.conftest import PYZ_PATH, REPO_ROOT, run_program
from tests.harness import write_config

pytestmark = [pytest.mark.program, pytest.mark.usefixtures("program_target")]

RULES = {
    "balance": {"side_effect": "read_only", "timeout": "10s"},
    "pay": {"side_effect": "remote_mutation", "outcome": "allow", "timeout": "10s"},
}
CONFORMANCE_SERVER = Path(__file__).resolve().parents[1] / "fixtures" / "conformance_server.py"


def initialize(version: str | None, request_id: Any = 1) -> bytes:
    params: dict[str, Any] = {"capabilities": {"elicitation": {}}, "clientInfo": {"name": "t", "version": "1"}}
    if version is not None:
        params["protocolVersion"] = version
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "method": "initialize", "params": params}).encode()


INITIALIZED = b'{"jsonrpc":"2.0","method":"notifications/initialized"}'
PAY_BOB = b'"arguments":{"to":"bob","amount":5}}}'


def pinned(tmp_path: Path, **server: Any) -> Path:
    config = write_config(tmp_path, rules=RULES, server_extra=server or None)
    assert run_program(["pin", "-config", str(config)]).returncode == 0
    return config


def over_a_pipe(argv: list[str], env: dict[str, str], data: bytes, answers: int) -> list[bytes]:
    """Write ``data`` at once to a new ``serve`` and read ``answers`` lines back."""
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env)
    assert proc.stdin is not None and proc.stdout is not None
    try:
        proc.stdin.write(data)
        proc.stdin.flush()
        return [proc.stdout.readline() for _ in range(answers)]
    finally:
        proc.stdin.close()
        proc.wait(timeout=60)


def from_a_file(argv: list[str], env: dict[str, str], data: bytes, path: Path) -> list[bytes]:
    """``serve`` with ``data`` as a file on its stdin (never answered early): every line it writes."""
    path.write_bytes(data)
    with path.open("rb") as stdin:
        done = subprocess.run(argv, stdin=stdin, capture_output=True, env=env, timeout=60, check=False)
    return done.stdout.splitlines(keepends=True)


@pytest.mark.parametrize("version", ["2024-11-05", "2025-11-25", "1999-01-01", None])
def test_initialize_is_answered_byte_for_byte_as_the_session_answers_it(
    tmp_path: Path, program_argv: list[str], program_env: dict[str, str], version: str | None
) -> None:
    argv = [*program_argv, "serve", "-config", str(pinned(tmp_path))]
    line = initialize(version, request_id="first") + b"\n"
    early = over_a_pipe(argv, program_env, line, 1)
    session = from_a_file(argv, program_env, line, tmp_path / "stdin")
    assert early == session[:1]
    answer = json.loads(early[0])
    assert answer["id"] == "first"
    assert answer["result"]["protocolVersion"] == (version if version in ("2024-11-05", "2025-11-25") else "2025-11-25")
    assert ("tasks" in answer["result"]["capabilities"]) == (answer["result"]["protocolVersion"] == "2025-11-25")


def test_a_host_that_writes_initialize_and_its_first_calls_at_once_gets_every_answer(
    tmp_path: Path, program_argv: list[str], program_env: dict[str, str]
) -> None:
    argv = [*program_argv, "serve", "-config", str(pinned(tmp_path))]
    listing = b'{"jsonrpc":"2.0","id":2,"method":"tools/list"}'
    pay = b'{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"bank_pay",' + PAY_BOB
    got = [
        json.loads(line)
        for line in over_a_pipe(
            argv, program_env, b"\n".join([initialize("2025-06-18"), INITIALIZED, listing, pay]) + b"\n", 3
        )
    ]
    by_id = {message["id"]: message for message in got}
    assert by_id[1]["result"]["protocolVersion"] == "2025-06-18"
    assert "bank_pay" in [tool["name"] for tool in by_id[2]["result"]["tools"]]
    assert by_id[3]["result"].get("isError") is not True
    assert count_payments(tmp_path / "ledger") == 1


def test_a_first_line_that_is_not_initialize_is_answered_as_before(
    tmp_path: Path, program_argv: list[str], program_env: dict[str, str]
) -> None:
    argv = [*program_argv, "serve", "-config", str(pinned(tmp_path))]
    lines = [
        b'{"jsonrpc":"2.0","id":"p","method":"ping"}',
        b'{"jsonrpc":"2.0","id":"early","method":"tools/call","params":{"name":"bank_pay","arguments":{"to":"eve","amount":5}}}',
        b"not json",
        initialize("2025-06-18"),
    ]
    got = [json.loads(line) for line in over_a_pipe(argv, program_env, b"\n".join(lines) + b"\n", 4)]
    by_id = {message.get("id"): message for message in got}
    assert by_id["p"]["result"] == {}
    assert by_id["early"]["error"]["code"] == -32600  # nothing but ping before initialize
    assert by_id[None]["error"]["code"] == -32700
    assert by_id[1]["result"]["protocolVersion"] == "2025-06-18"
    assert count_payments(tmp_path / "ledger") == 0


def test_with_a_passthrough_server_initialize_waits_for_its_capabilities(
    tmp_path: Path, program_argv: list[str], program_env: dict[str, str]
) -> None:
    server = {
        "name": "docs",
        "command": [sys.executable, str(CONFORMANCE_SERVER)],
        "manifest": "docs.manifest.json",
        "resources": True,
        "rules": {"test_simple_text": {"side_effect": "read_only", "timeout": "10s"}},
    }
    config = tmp_path / "proxy.json"
    config.write_text(json.dumps({"database": "proxy.db", "session": "s", "servers": [server]}))
    config.chmod(0o600)
    assert run_program(["pin", "-config", str(config)]).returncode == 0
    argv = [*program_argv, "serve", "-config", str(config)]
    (answer,) = over_a_pipe(argv, program_env, initialize("2025-06-18") + b"\n", 1)
    assert "resources" in json.loads(answer)["result"]["capabilities"]  # the upstream's, after it connected


# Runs serve from the target with the early answer watched: what is loaded when it is written.
WATCHED_SERVE = """
import json, sys
sys.path.insert(0, sys.argv[1])
from agentrt_proxy.mcp import handshake
answer = handshake.answer_initialize_early
def watched(*args, **kwargs):
    sys.stderr.write("LOADED " + json.dumps(sorted(sys.modules)) + "\\n")
    return answer(*args, **kwargs)
handshake.answer_initialize_early = watched
sys.argv = ["agentrt-proxy", "serve", "-config", sys.argv[2]]
from agentrt_proxy.cli.main import main
sys.exit(main())
"""
# What the early answer is there to come before (decision 0024): the event loop, the store, the
# schemas, and OpenSSL (hashlib loads it; ~4-10 ms of a start, and nothing is hashed before it).
LOADED_ONLY_AFTER = {"anyio", "asyncio", "ssl", "_hashlib", "hashlib", "sqlite3", "jsonschema"}


def test_serve_answers_initialize_before_it_loads_the_event_loop_the_store_or_openssl(
    tmp_path: Path, program_target: str, program_env: dict[str, str]
) -> None:
    code = str(PYZ_PATH) if program_target == "pyz" else str(REPO_ROOT)
    argv = [sys.executable, "-I", "-c", WATCHED_SERVE, code, str(pinned(tmp_path))]
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env=program_env)
    try:
        out, err = proc.communicate(initialize("2025-06-18") + b"\n", timeout=60)
    finally:
        proc.kill()
    assert json.loads(out.splitlines()[0])["result"]["protocolVersion"] == "2025-06-18"
    (loaded,) = [json.loads(line[len(b"LOADED "):]) for line in err.splitlines() if line.startswith(b"LOADED ")]
    assert "agentrt_proxy.mcp.handshake" in loaded  # the watch saw the real program's modules
    assert sorted(LOADED_ONLY_AFTER & set(loaded)) == []
