"""The fake payment server, driven by the official SDK client over real pipes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import anyio
import pytest
from mcp import Client, StdioServerParameters

from agentrt_proxy.testing.fakebank import count_payments
from tests.waiting import until

pytestmark = pytest.mark.anyio

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def bank_params(ledger: Path, **env: str) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "agentrt_proxy.testing.fakebank"],
        env={"FAKE_PAYMENTS_LEDGER": str(ledger), "PYTHONPATH": str(ROOT), **env},
        cwd=str(ROOT),
    )


def texts(result: object) -> list[str]:
    return [block.text for block in result.content if getattr(block, "type", "") == "text"]  # type: ignore[attr-defined]


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_the_sdk_client_connects_fast_lists_and_pays(tmp_path: Path, mode: str) -> None:
    ledger = tmp_path / "ledger"
    started = time.monotonic()
    async with Client(bank_params(ledger), mode=mode) as client:  # type: ignore[arg-type]
        connected = time.monotonic() - started
        tools = await client.list_tools()
        assert [t.name for t in tools.tools] == ["balance", "pay", "refund"]
        balance = next(t for t in tools.tools if t.name == "balance")
        assert balance.description == "Report an account's balance."
        assert balance.annotations is not None and balance.annotations.read_only_hint is True
        pay = next(t for t in tools.tools if t.name == "pay")
        assert pay.annotations is not None and pay.annotations.destructive_hint is False
        modes = ["slow", "block", "error", "structured", "deep", "blocks"]
        assert pay.input_schema["properties"]["mode"]["enum"] == modes

        result = await client.call_tool("balance", {"account": "a1"})
        assert texts(result) == ["account a1 holds 120.00 EUR"]
        assert count_payments(ledger) == 0

        result = await client.call_tool("pay", {"to": "jo", "amount": 12.5})
        assert texts(result) == ["paid 12.50 to jo"] and not result.is_error
        result = await client.call_tool("pay", {"to": "jo", "amount": 3, "mode": "error"})
        assert result.is_error and texts(result) == ["card declined for jo"]
        result = await client.call_tool("pay", {"to": "al", "amount": 1, "mode": "structured"})
        assert result.structured_content == {"paid": 1, "to": "al"}
        result = await client.call_tool("refund", {"payment": "p1"})
        assert texts(result) == ["refunded"]
    # The SDK falls back to initialize at once because server/discover gets -32601;
    # silence would have cost it 10 s.
    assert connected < 5
    assert count_payments(ledger) == 3
    lines = ledger.read_text().splitlines()
    assert json.loads(lines[0]) == {"to": "jo", "amount": 12.5}


async def test_the_ledger_line_is_written_before_the_answer(tmp_path: Path) -> None:
    ledger = tmp_path / "ledger"
    answered = anyio.Event()

    async def pay(client: Client) -> None:
        await client.call_tool("pay", {"to": "jo", "amount": 1, "mode": "block"})
        answered.set()

    async with Client(bank_params(ledger), mode="legacy") as client, anyio.create_task_group() as tg:
        tg.start_soon(pay, client)
        await until("the payment in the ledger", lambda: count_payments(ledger) > 0)
        await anyio.sleep(0.1)
        assert not answered.is_set()  # recorded, yet unanswered until the release file appears
        Path(f"{ledger}.release").touch()
    assert answered.is_set() and count_payments(ledger) == 1


def test_deep_mode_returns_structured_content_300_arrays_deep(tmp_path: Path) -> None:
    # Raw pipes: the SDK client itself gives up on content this deep.
    lines = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18"}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "tools/call",
            "params": {"name": "pay", "arguments": {"to": "jo", "amount": 1, "mode": "deep"}},
        },
    ]
    out = subprocess.run(
        [sys.executable, "-m", "agentrt_proxy.testing.fakebank"],
        input="".join(json.dumps(m) + "\n" for m in lines).encode(),
        capture_output=True,
        cwd=ROOT,
        env={**os.environ, "FAKE_PAYMENTS_LEDGER": str(tmp_path / "ledger")},
        timeout=30,
        check=True,
    )
    answers = {m["id"]: m for m in map(json.loads, out.stdout.splitlines())}
    result = answers[2]["result"]
    depth, node = 0, result["structuredContent"]["nested"]
    while isinstance(node, list):
        depth += 1
        node = node[0] if node else None
    assert depth == 300 and result["content"] == [{"type": "text", "text": "deep"}]
    assert count_payments(tmp_path / "ledger") == 1


async def test_the_description_can_be_replaced_to_simulate_a_changed_server(tmp_path: Path) -> None:
    params = bank_params(tmp_path / "ledger", FAKE_PAYMENTS_DESCRIPTION="Changed.")
    async with Client(params, mode="legacy") as client:
        tools = await client.list_tools()
    assert tools.tools[0].description == "Changed."


def test_count_payments_counts_newlines_and_a_missing_ledger_is_zero(tmp_path: Path) -> None:
    assert count_payments(tmp_path / "none") == 0
    (tmp_path / "l").write_bytes(b'{"a":1}\n{"b":2}\n')
    assert count_payments(tmp_path / "l") == 2
    assert os.path.exists(tmp_path / "l")


@pytest.mark.parametrize(("declines", "paid"), [("0.1", 0), ("", 1)])
async def test_a_slow_payment_of_a_bank_told_to_decline_it_pays_nothing(
    tmp_path: Path, declines: str, paid: int
) -> None:
    ledger = tmp_path / "ledger"
    async with Client(bank_params(ledger, FAKE_PAYMENTS_SLOW_DECLINES=declines), mode="legacy") as client:
        result = await client.call_tool("pay", {"to": "florist", "amount": 40, "mode": "slow"})
        assert result.is_error is (paid == 0)
        assert count_payments(ledger) == paid
