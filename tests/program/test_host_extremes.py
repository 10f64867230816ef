"""Extreme host input through the real program (issue 14, items 5 and 11): a line at and past
the 16 MiB bound, lines the decoder cannot take, a reused id, a flood of cancellations. Each:
every request is answered once, by its id where the line shows it, the fake bank's ledger
counts exactly the payments that were valid requests, and the proxy ends cleanly at EOF.
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
from pathlib import Path
from typing import Any

import pytest

from agentrt_proxy.mcp.server import MAX_HOST_MESSAGE_BYTES
from agentrt_proxy.testing.fakebank import count_payments
from tests.conftest import run_program
from tests.harness import DEFAULT_RULES, write_config

pytestmark = [pytest.mark.program, pytest.mark.usefixtures("program_target"), pytest.mark.timeout(120)]

INITIALIZE = json.dumps(
    {
        "jsonrpc": "2.0",
        "id": "init",
        "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
    }
).encode()
INITIALIZED = b'{"jsonrpc":"2.0","method":"notifications/initialized"}'
PING = b'{"jsonrpc":"2.0","id":"after","method":"ping"}'


def pay(msg_id: Any, to: str, amount: int = 1, *, pad: int = 0, raw_amount: str | None = None) -> bytes:
    """A ``bank_pay`` call; ``pad`` more bytes of payee name make it as long as a test needs."""
    amount_text = raw_amount if raw_amount is not None else str(amount)
    return (
        '{"jsonrpc":"2.0","id":' + json.dumps(msg_id) + ',"method":"tools/call","params":{"name":"bank_pay",'
        '"arguments":{"to":"' + to + "." * pad + '","amount":' + amount_text + "}}}"
    ).encode()


def serve_all(tmp_path: Path, argv: list[str], env: dict[str, str], lines: list[bytes]) -> tuple[list[Any], str]:
    """Pin the bank (payments allowed), run ``serve`` over ``lines`` to EOF: every answer, stderr."""
    rules = {**DEFAULT_RULES, "pay": {**DEFAULT_RULES["pay"], "outcome": "allow"}}
    config = write_config(tmp_path, rules=rules)
    assert run_program(["pin", "-config", str(config)]).returncode == 0
    proc = subprocess.run(
        [*argv, "serve", "-config", str(config)],
        input=b"".join(x + b"\n" for x in lines),
        capture_output=True,
        env=env,
        timeout=100,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    stderr = proc.stderr.decode(errors="replace")
    assert "Traceback" not in stderr
    return [json.loads(x) for x in proc.stdout.splitlines()], stderr


def by_id(answers: list[Any]) -> dict[Any, list[Any]]:
    out: dict[Any, list[Any]] = {}
    for answer in answers:
        out.setdefault(answer["id"], []).append(answer)
    return out


def paid(tmp_path: Path) -> list[str]:
    ledger = tmp_path / "ledger"
    return [json.loads(x)["to"] for x in ledger.read_text().splitlines()] if ledger.exists() else []


def test_a_line_of_16_mib_is_served_and_a_longer_one_answered_by_its_id_without_paying(
    tmp_path: Path, program_argv: list[str], program_env: dict[str, str]
) -> None:
    exact = pay("exact", "ann", pad=MAX_HOST_MESSAGE_BYTES - len(pay("exact", "ann")))
    assert len(exact) == MAX_HOST_MESSAGE_BYTES
    over = pay("over", "bob", pad=MAX_HOST_MESSAGE_BYTES)
    answers, _ = serve_all(tmp_path, program_argv, program_env, [INITIALIZE, INITIALIZED, exact, over, PING])
    got = by_id(answers)
    assert sorted(got, key=str) == sorted(["init", "exact", "over", "after"], key=str)
    assert all(len(v) == 1 for v in got.values())
    assert got["exact"][0]["result"]["content"][0]["text"].startswith("paid 1.00 to ann...")
    assert got["over"][0]["error"] == {
        "code": -32600,
        "message": f"the message is larger than {MAX_HOST_MESSAGE_BYTES} bytes",
    }
    assert [to[:5] for to in paid(tmp_path)] == ["ann.."]  # the line past the bound paid nothing


def test_lines_the_decoder_cannot_take_are_answered_by_their_ids_or_id_null_and_pay_nothing(
    tmp_path: Path, program_argv: list[str], program_env: dict[str, str]
) -> None:
    deep = "[" * 5000 + "]" * 5000
    digits = pay("digits", "cy", raw_amount="1" * 5000)
    deep_null_id = (
        '{"jsonrpc":"2.0","id":null,"method":"tools/call","params":{"name":"bank_pay",'
        '"arguments":{"to":"dee","amount":1,"memo":' + deep + "}}}"
    ).encode()
    deep_id_last = (
        '{"method":"tools/call","params":{"name":"bank_pay","arguments":{"to":"eve","amount":1,'
        '"memo":' + deep + '}},"jsonrpc":"2.0","id":"ts-1"}'
    ).encode()
    answers, _ = serve_all(
        tmp_path, program_argv, program_env, [INITIALIZE, INITIALIZED, digits, deep_null_id, deep_id_last, PING]
    )
    got = by_id(answers)
    assert [a["error"]["code"] for a in got["digits"]] == [-32600]
    assert [a["error"]["code"] for a in got["ts-1"]] == [-32600]  # the id after the params still found
    assert [a["error"]["code"] for a in got[None]] == [-32700]  # before: answered as id "method"
    assert set(got) == {"init", "digits", "ts-1", None, "after"}
    assert paid(tmp_path) == []


def test_a_reused_id_is_refused_while_its_call_runs_and_the_payment_is_made_once(
    tmp_path: Path, program_argv: list[str], program_env: dict[str, str]
) -> None:
    reuse = b'{"jsonrpc":"2.0","id":7,"method":"ping"}'
    answers, _ = serve_all(tmp_path, program_argv, program_env, [INITIALIZE, INITIALIZED, pay(7, "ann"), reuse, PING])
    sevens = by_id(answers)[7]
    assert len(sevens) == 2  # two requests carried id 7: each answered once
    errors = [a["error"] for a in sevens if "error" in a]
    results = [a["result"]["content"][0]["text"] for a in sevens if "result" in a]
    assert errors == [{"code": -32600, "message": "request id already in use"}]
    assert results == ["paid 1.00 to ann"]
    assert paid(tmp_path) == ["ann"]


def test_a_flood_of_cancellations_crashes_nothing_and_spares_the_calls_it_does_not_name(
    tmp_path: Path, program_argv: list[str], program_env: dict[str, str]
) -> None:
    flood = [
        json.dumps(
            {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": rid, "reason": "x"}}
        ).encode()
        for n in range(20_000)
        for rid in [(f"nobody-{n}", n, None, 1.5)[n % 4]]
    ]
    lines = [INITIALIZE, INITIALIZED, pay("p1", "ann"), *flood, pay("p2", "bob"), *flood[:5000], PING]
    answers, _ = serve_all(tmp_path, program_argv, program_env, lines)
    assert sorted(a["id"] for a in answers) == sorted(["init", "p1", "p2", "after"])  # notifications: no answer
    texts = {a["id"]: a["result"]["content"][0]["text"] for a in answers if a["id"] in ("p1", "p2")}
    assert texts == {"p1": "paid 1.00 to ann", "p2": "paid 1.00 to bob"}
    assert sorted(paid(tmp_path)) == ["ann", "bob"]
    assert count_payments(tmp_path / "ledger") == 2


def test_calls_of_the_wrong_types_are_each_answered_once_and_pay_nothing(
    tmp_path: Path, program_argv: list[str], program_env: dict[str, str]
) -> None:
    def call(msg_id: int, params: Any) -> bytes:
        return json.dumps({"jsonrpc": "2.0", "id": msg_id, "method": "tools/call", "params": params}).encode()

    lines = [
        call(1, {"name": 5, "arguments": {"to": "ann", "amount": 1}}),  # before initialize: refused
        INITIALIZE,
        INITIALIZED,
        call(2, {"name": 5, "arguments": {"to": "ann", "amount": 1}}),
        call(3, [{"name": "bank_pay"}]),
        call(4, {"name": "bank_pay", "arguments": 5}),
        call(5, {"name": "bank_pay", "arguments": ["to", "ann"]}),
        call(6, {"name": "bank_pay", "arguments": '{"to":"ann","amount":1}'}),
        call(7, {"name": "bank_pay", "arguments": {"to": "ann", "amount": "1"}}),
        call(8, {"name": "no_such_tool", "arguments": {}}),
        PING,
    ]
    answers, _ = serve_all(tmp_path, program_argv, program_env, lines)
    got = by_id(answers)
    assert sorted(got, key=str) == sorted([1, 2, 3, 4, 5, 6, 7, 8, "init", "after"], key=str)
    assert all(len(v) == 1 for v in got.values())
    assert [got[i][0]["error"]["code"] for i in (1, 2, 3)] == [-32600, -32602, -32600]
    for i in (4, 5, 6, 7):  # the gate's answer, recorded: arguments that are not the schema's object
        assert got[i][0]["result"]["isError"] is True
        assert got[i][0]["result"]["content"][0]["text"].startswith("INVALID: "), got[i][0]
    assert paid(tmp_path) == []


def test_arguments_a_lax_check_would_take_never_reach_a_plain_schemas_tool(
    tmp_path: Path, program_argv: list[str], program_env: dict[str, str]
) -> None:
    # bank_balance's schema is plain (one required string, nothing else allowed): it is checked
    # without jsonschema (decision 0025). Spellings that slip past a loose check must not run it.
    def balance(msg_id: int, arguments_text: str) -> bytes:
        return ('{"jsonrpc":"2.0","id":' + str(msg_id) + ',"method":"tools/call","params":{"name":"bank_balance",'
                '"arguments":' + arguments_text + "}}").encode()

    refused = ['{"account":7}', '{"account":true}', '{"account":null}', '{"account":["A-1"]}', "{}",
               '{"account":"A-1","extra":1}', '{"Account":"A-1"}', '{"account":{"id":"A-1"}}']
    lines = [INITIALIZE, INITIALIZED, *(balance(i, text) for i, text in enumerate(refused)),
             balance(99, '{"account":"A-1"}')]
    answers, _ = serve_all(tmp_path, program_argv, program_env, lines)
    got = by_id(answers)
    for i in range(len(refused)):
        assert got[i][0]["result"]["content"][0]["text"].startswith("INVALID: "), (refused[i], got[i][0])
    assert "holds 120.00 EUR" in got[99][0]["result"]["content"][0]["text"]
    # Counted in the record: one tool start, the valid call's; every other run ended before it.
    with sqlite3.connect(tmp_path / "runs.db") as db:
        started = db.execute("SELECT COUNT(*) FROM events WHERE type = 'step.tool_started'").fetchone()[0]
        runs = db.execute("SELECT COUNT(*) FROM runs").fetchone()[0]
    assert (started, runs) == (1, len(refused) + 1)
