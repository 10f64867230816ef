"""The real program toward a host of the 2026-07-28 revision: the official Python SDK client
pinned to ``2026-07-28`` and in ``auto`` mode discovers, lists and calls through the proxy,
including a PENDING_APPROVAL round trip decided with the real ``approve`` command. Effects are
counted in the fake bank's ledger."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters

from tests.harness import is_error, text_of
from tests.program.test_serve_process import World, world

pytestmark = [pytest.mark.program, pytest.mark.anyio, pytest.mark.timeout(90)]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def host(w: World, mode: str) -> Client:
    params = StdioServerParameters(command=w.argv[0], args=[*w.argv[1:], "serve", "-config", str(w.config)], env=w.env)
    return Client(params, mode=mode)


@pytest.mark.parametrize("mode", ["2026-07-28", "auto"])
async def test_a_modern_sdk_host_discovers_lists_and_pays_after_an_approval(
    tmp_path: Path, program_argv: list[str], program_env: dict[str, str], mode: str
) -> None:
    nina = {"to": "nina", "amount": 12}
    async with world(tmp_path, program_argv, program_env) as w:
        with anyio.fail_after(60):
            async with host(w, mode) as client:
                # The SDK validates every result against the revision's schema: a result
                # without resultType, or a list without ttlMs, fails here.
                assert client.protocol_version == "2026-07-28"
                if mode == "auto":  # the probe found the modern era and adopted what it said
                    assert client.server_info is not None and client.server_info.name == "gated-tools"
                # A pinned client sends no server/discover by itself: ask, and read it raw.
                found = await client.session.send_discover("2026-07-28")
                assert found["supportedVersions"] == ["2026-07-28"] and found["resultType"] == "complete"
                assert (found["ttlMs"], found["cacheScope"]) == (60_000, "private")
                assert found["_meta"]["io.modelcontextprotocol/serverInfo"]["name"] == "gated-tools"
                assert found["capabilities"] == {"tools": {"listChanged": False},
                                                 "extensions": {"io.modelcontextprotocol/tasks": {}}}
                if mode == "auto":
                    assert client.server_capabilities.tools is not None
                listed = await client.list_tools()
                assert [t.name for t in listed.tools] == ["bank_balance", "bank_pay", "bank_refund", "gate_status"]
                balance = await client.call_tool("bank_balance", {"account": "main"})
                assert text_of(balance) == "account main holds 120.00 EUR"
                pending = await client.call_tool("bank_pay", nina)
                assert "PENDING_APPROVAL" in text_of(pending), text_of(pending)
                assert w.payments() == 0
                [approval] = w.pending()
                await w.approve(approval)
                paid = await client.call_tool("bank_pay", nina)
                assert text_of(paid) == "paid 12.00 to nina" and not is_error(paid)
                again = await client.call_tool("bank_pay", nina)
                assert "DUPLICATE" in text_of(again), text_of(again)
        assert w.payments() == 1


async def test_the_served_tool_list_is_the_same_in_two_processes_and_both_eras(
    tmp_path: Path, program_argv: list[str], program_env: dict[str, str]
) -> None:
    listings: list[Any] = []
    task_support: list[Any] = []
    async with world(tmp_path, program_argv, program_env) as w:
        for mode in ("2026-07-28", "legacy", "2026-07-28"):
            with anyio.fail_after(60):
                async with host(w, mode) as client:
                    listed = await client.list_tools()
            dumped = [t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in listed.tools]
            # 2025-11-25 (the legacy mode's revision) is told each tool may run as a task; the
            # modern era has no such field (its tasks are the server's choice): all else is equal.
            task_support.append([d.pop("execution", None) for d in dumped])
            listings.append([json.dumps(d, sort_keys=True) for d in dumped])
    assert listings[0] == listings[1] == listings[2]
    assert len(listings[0]) == 4
    assert task_support[1] == [{"taskSupport": "optional"}] * 4
    assert task_support[0] == task_support[2] == [None] * 4
