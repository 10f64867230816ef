"""Honest schemas (issue 25, item 5): a Python SDK ``str`` tool declares an ``outputSchema``
(``{"result": string}``), and a validating host refuses prose that is no error toward such a
tool. A tool the policy does not simply allow is offered without its schema, so a waiting
payment is ``PENDING_APPROVAL`` with ``isError: false``; once approved, its structured result
still arrives as ``structuredContent``. A simply allowed tool keeps its schema."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest
from mcp import Client

from agentrt_proxy.store import Store
from agentrt_proxy.testing.fakebank import count_payments
from tests.conftest import run_program
from tests.harness import text_of
from tests.program.test_http_upstreams import free_port, host, sdk_bank, write_config

pytestmark = [pytest.mark.program, pytest.mark.anyio, pytest.mark.timeout(180)]

RULES = {
    "send": {"side_effect": "remote_mutation", "timeout": "20s"},  # the default policy: an approval
    "balance": {"side_effect": "read_only", "timeout": "20s"},  # allowed as it comes
}


def pending_approval(db: str) -> tuple[str, str]:
    store = Store.open_readonly(db)
    try:
        with store.read() as conn:
            row = conn.execute("SELECT run_id, id FROM approvals WHERE status = 'pending'").fetchone()
    finally:
        store.close()
    return row[0], row[1]


async def test_a_waiting_payment_to_an_sdk_str_tool_is_no_error_and_its_structured_result_arrives(
    tmp_path: Path, program_argv: list[str], program_env: dict[str, str]
) -> None:
    port = free_port()
    with sdk_bank(tmp_path, port):
        config = write_config(tmp_path, "bank", f"http://127.0.0.1:{port}/mcp", RULES)
        db = str(config.parent / "proxy.db")
        with anyio.fail_after(120):
            client: Client = host(config, program_argv, program_env)
            async with client:
                listed = {tool.name: tool for tool in (await client.list_tools()).tools}
                waiting = await client.call_tool("bank_send", {"to": "rob", "amount": 5})
                paid_before = count_payments(tmp_path / "ledger")
                run_id, approval_id = pending_approval(db)
                approved = await anyio.to_thread.run_sync(
                    lambda: run_program(
                        ["approve", "-db", db, run_id, "-approval", approval_id, "-by", "tester", "-yes"], timeout=30
                    )
                )
                assert approved.returncode == 0, approved.stderr
                paid = await client.call_tool("bank_send", {"to": "rob", "amount": 5})
                balance = await client.call_tool("bank_balance", {})
    assert listed["bank_send"].output_schema is None  # not simply allowed: offered without it
    assert listed["bank_balance"].output_schema == {
        "type": "object",
        "properties": {"result": {"title": "Result", "type": "string"}},
        "required": ["result"],
        "title": "balanceOutput",
    }
    assert waiting.is_error is False and text_of(waiting).startswith("PENDING_APPROVAL:")
    assert (waiting.meta or {}).get("gate/outcome") == "PENDING_APPROVAL"
    assert paid_before == 0
    assert paid.is_error is False and paid.structured_content == {"result": "paid 5.00 to rob"}
    assert balance.is_error is False and balance.structured_content == {"result": "balance 100.00"}
    assert count_payments(tmp_path / "ledger") == 1
