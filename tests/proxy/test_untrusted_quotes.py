"""The paths by which a server's text reaches the host from the record or unasked (issue 22,
item 3), in process: the status tool quoting a recorded error, a task's recorded answer, and a
relayed resource update. Each taints the process as the server's own answer did. A fresh
process starts with nothing tainted; here that is the runtime's ``untrusted.source`` cleared.
The table of which recorded outcomes carry a server's text is checked beside them.
"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from agentrt_proxy.gate import attempts
from agentrt_proxy.proxy import _answers as answers
from agentrt_proxy.proxy._guarded import UntrustedSource
from agentrt_proxy.proxy._task_requests import TaskNews
from agentrt_proxy.store import TaskRow
from tests.harness import DEFAULT_RULES, is_error, proxy_harness, text_of

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(120)]

RULES: dict[str, Any] = {
    **DEFAULT_RULES,
    "refund": {"side_effect": "destructive", "timeout": "10s", "outcome": "allow", "requires_clean_context": True},
}
REFUND = '{"payment":"p1","amount":1}'


async def test_the_status_tool_quoting_a_recorded_error_taints_as_the_error_did(tmp_path: Path) -> None:
    async with proxy_harness(tmp_path, rules=RULES) as h:
        declined = '{"to":"ann","amount":5,"mode":"error"}'
        assert text_of(await h.raw_call("bank_pay", declined)).startswith("PENDING_APPROVAL")
        (approval,) = h.pending()
        h.approve(approval.id)
        failed = await h.raw_call("bank_pay", declined)
        assert is_error(failed) and "card declined for ann" in text_of(failed)
        assert failed["_meta"] == {"gate/untrusted": True}
        untrusted = h.proxy.runtime.untrusted
        assert untrusted.source is not None and untrusted.source["tool"] == "bank_pay"
        untrusted.source = None  # what a fresh process on this database knows
        status = await h.raw_call("gate_status", '{"approval_id":"' + approval.id + '"}')
        assert "card declined for ann" in text_of(status)
        assert untrusted.source == {
            "server": "bank",
            "tool": "bank_pay",
            "run_id": approval.run_id,
            "via": "gate_status",
        }
        before = h.payments()
        waits = await h.raw_call("bank_refund", REFUND)
        assert text_of(waits).startswith("PENDING_APPROVAL"), text_of(waits)
        (asked,) = h.pending()
        assert asked.kind == "clean_context" and "gate_status of tool bank_pay" in asked.presentation_json
        assert h.payments() == before  # the refund reached no bank


async def test_a_relayed_resource_update_taints_with_its_server(tmp_path: Path) -> None:
    from tests.proxy.test_passthrough import RULES as DOCS_RULES
    from tests.proxy.test_passthrough import server

    async with proxy_harness(tmp_path, rules=DOCS_RULES, server_extra=server(tmp_path)) as h:
        untrusted = h.proxy.runtime.untrusted
        assert untrusted.source is None
        relayed: list[str] = []

        async def notify(method: str, params: dict[str, Any] | None = None) -> None:
            relayed.append(method)  # not sent on: the test's host does not listen

        h.proxy.host.notify = notify  # type: ignore[method-assign]
        relay = h.proxy.runtime.passthrough._relay("docs")
        relay(SimpleNamespace(method="notifications/resources/list_changed", params=None))
        assert untrusted.source is None  # no text of the server's in it
        relay(SimpleNamespace(method="notifications/resources/updated", params={"uri": "test://watched"}))
        assert untrusted.source == {
            "server": "docs",
            "tool": "",
            "run_id": "",
            "via": "notifications/resources/updated",
        }


def task_row(result: str, tool: str = "bank_pay") -> TaskRow:
    return TaskRow(
        id="t1", session="laptop", era="2025-11-25", tool=tool, request_key="k", arguments="{}", run_id="laptop.r1",
        approval_id="", status="completed", status_message="", result=result, created_at=0, updated_at=0,
        ttl_ms=1000, owner="", lease_until=0, expired=False,
    )  # fmt: skip


@pytest.mark.parametrize(
    ("answer", "taints"),
    [
        (answers.tool_result({"content": [{"type": "text", "text": "x"}]}, "call_tool_result", untrusted=True), True),
        (answers.marked_untrusted(answers.tool_error("bank/pay: 9 bytes, error: steer")), True),
        (answers.tool_result({"content": [{"type": "text", "text": "x"}]}, "call_tool_result"), False),
        (answers.prose("PENDING_APPROVAL: waits"), False),
    ],
)
def test_a_tasks_recorded_answer_marked_untrusted_taints_the_process_that_passes_it_on(
    answer: dict[str, Any], taints: bool
) -> None:
    from agentrt_proxy.mcp import jsonrpc

    untrusted = UntrustedSource(frozenset({"bank"}))
    news = SimpleNamespace(untrusted=untrusted, tools={"bank_pay": SimpleNamespace(server="bank", name="bank_pay")})
    row = task_row(jsonrpc.encode(answer).decode("utf-8"))
    assert TaskNews.passed_on(news, row) is row  # type: ignore[arg-type]
    expected = {"server": "bank", "tool": "bank_pay", "run_id": "laptop.r1"} if taints else None
    assert untrusted.source == expected


def _error(failure: str | None) -> dict[str, Any]:
    content: dict[str, Any] = {"tool": "bank_pay", "error": "text"}
    if failure is not None:
        content["failure"] = failure
    return {"kind": "tool_error", "content": content}


@pytest.mark.parametrize(
    ("obs", "server_text"),
    [
        ({"kind": "tool_result", "content": "ok"}, True),
        (_error("error"), True),  # an isError result, a JSON-RPC error, an HTTP status with its body
        (_error("invalid_content"), True),  # the server answered; the boundary refused it
        (_error(None), True),  # an unexpected failure: its text may hold anything
        (_error("not_sent"), False),
        (_error("timeout"), False),
        (_error("cancelled"), False),
        ({"kind": "interrupted", "content": {"failure": "cancelled"}}, False),
        ({"kind": "policy_denied", "content": {}}, False),
    ],
)
def test_which_recorded_outcomes_carry_text_the_server_chose(obs: dict[str, Any], server_text: bool) -> None:
    assert attempts.carries_server_text(obs) is server_text
