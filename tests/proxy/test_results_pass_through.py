"""A tool's result reaches the host as the server sent it, and is recorded so (decision 0015);
records made before keep answering as they did; a tool with an output schema never gets the
proxy's prose as a result a validating host would refuse."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest

from agentrt_proxy import canonical
from agentrt_proxy.canonical.encoder import Raw
from agentrt_proxy.mcp.jsonrpc import encode
from agentrt_proxy.proxy import _answers as answers
from agentrt_proxy.proxy._rules import duplicate_outcome
from agentrt_proxy.store import Step
from agentrt_proxy.testing.fakebank import TINY_PNG
from agentrt_proxy.text import model_text
from tests.harness import DEFAULT_RULES, proxy_harness, text_of

PAY_ALLOWED = {**DEFAULT_RULES, "pay": {**DEFAULT_RULES["pay"], "outcome": "allow"}}
BLOCKS = [
    {"type": "text", "text": "paid 2.00 to jo", "annotations": {"audience": ["user"], "priority": 0.5}},
    {"type": "image", "data": TINY_PNG, "mimeType": "image/png", "_meta": {"bank/kind": "receipt"}},
    {"type": "resource_link", "uri": "bank://receipts/jo", "name": "receipt", "size": 68},
    {"type": "resource", "resource": {"uri": "bank://ledger/jo", "mimeType": "text/plain", "text": "paid 2.00 to jo"}},
]
PNG_BYTES = len(base64.b64decode(TINY_PNG))


@pytest.mark.anyio
async def test_a_payment_answered_with_every_kind_of_block_reaches_the_host_and_the_record_as_sent(
    tmp_path: Path,
) -> None:
    async with proxy_harness(tmp_path, rules=PAY_ALLOWED) as h:
        answer = await h.raw_call("bank_pay", '{"to":"jo","amount":2,"mode":"blocks"}')
        assert answer["content"] == BLOCKS  # every block, in order, with its annotations and _meta
        assert answer["structuredContent"] == {"paid": 2, "to": "jo"}  # beside the blocks, not instead
        assert answer["isError"] is False
        # The server's own _meta passes, except a claim to be the proxy's answer; the server is
        # untrusted (the default), and the proxy says so in its own key (docs/decisions/0017).
        assert answer["_meta"] == {"bank/receipt": "r-1", "gate/untrusted": True}
        assert h.payments() == 1
        (run,) = h.runs()
        store = h.store()
        try:
            (step,) = store.steps_of(run.id)
        finally:
            store.close()
    recorded = json.loads(step.observation_json)
    assert recorded["kind"] == "tool_result" and recorded["form"] == "call_tool_result"
    assert recorded["content"]["content"] == BLOCKS
    assert recorded["content"]["structuredContent"] == {"paid": 2, "to": "jo"}
    assert recorded["content"]["_meta"] == {"gate/outcome": "DENIED", "bank/receipt": "r-1"}  # as the server sent it
    assert recorded["summary"] == f"bank/pay: {len(canonical.policy_text(recorded['content']).encode())} bytes"
    assert step.observation_hash == canonical.sha256_hex(canonical.canonical_json(json.dumps(recorded["content"])))


@pytest.mark.anyio
async def test_a_duplicate_of_a_result_with_blocks_quotes_their_short_text_and_executes_nothing(
    tmp_path: Path,
) -> None:
    async with proxy_harness(tmp_path, rules=PAY_ALLOWED) as h:
        await h.call("bank_pay", {"to": "jo", "amount": 2, "mode": "blocks"})
        again = await h.call("bank_pay", {"to": "jo", "amount": 2, "mode": "blocks"})
        assert h.payments() == 1
    text = text_of(again)
    assert text.startswith("DUPLICATE:") and again.is_error
    # It quotes the untrusted bank's result: marked so, as the result was (issue 22, item 3).
    assert again.meta == {answers.OUTCOME_META_KEY: "DUPLICATE", answers.UNTRUSTED_META_KEY: True}
    for part in (
        "paid 2.00 to jo",
        f"[image image/png, {PNG_BYTES} bytes]",
        "[resource link bank://receipts/jo]",
        "[resource bank://ledger/jo, text/plain, 15 bytes]",
    ):
        assert part in text, text
    assert TINY_PNG not in text  # the quote is a summary, never the data


# ------------------------------------------------------------------ records made before 0015


def old_step(observation: dict[str, Any]) -> Step:
    return Step(
        "st",
        "s.0",
        1,
        "done",
        '{"kind":"tool_call","tool":"bank_pay"}',
        "",
        json.dumps(observation),
        "",
        "",
        "",
        "",
        "",
    )


@pytest.mark.parametrize(
    ("content", "quoted"),
    [
        ("paid 2.00 to jo", "paid 2.00 to jo"),  # a text result
        ({"paid": 2, "to": "jo"}, '{"paid":2,"to":"jo"}'),  # a structured result, which replaced the text
        # Structured content shaped like the new form, recorded before it: still JSON text, never blocks.
        ({"content": [{"type": "text", "text": "x"}]}, '{"content":[{"text":"x","type":"text"}]}'),
    ],
)
def test_a_duplicate_of_a_record_made_before_results_passed_through_quotes_as_it_did(content: Any, quoted: str) -> None:
    step = old_step({"kind": "tool_result", "content": content, "summary": "bank/pay: 17 bytes", "content_hash": "0"})
    assert duplicate_outcome(step) == model_text.duplicate_succeeded(quoted)


def test_a_duplicate_of_a_record_in_the_new_form_quotes_its_blocks() -> None:
    record = {"content": [{"type": "text", "text": "x"}, {"type": "audio", "data": "AAAA", "mimeType": "audio/wav"}]}
    step = old_step(
        {"kind": "tool_result", "content": record, "summary": "", "content_hash": "0", "form": "call_tool_result"}
    )
    assert duplicate_outcome(step) == model_text.duplicate_succeeded("x\n[audio audio/wav, 3 bytes]")


def wire(result: dict[str, Any]) -> Any:
    return json.loads(encode(result))


def test_an_old_record_answers_as_it_did_and_the_new_form_answers_as_the_server_sent_it() -> None:
    assert wire(answers.tool_result("paid")) == {"content": [{"type": "text", "text": "paid"}], "isError": False}
    literal = canonical.parse_strict('{"n":9007199254740993}')
    assert encode(answers.tool_result(literal)) == (
        b'{"content":[{"type":"text","text":"{\\"n\\":9007199254740993}"}],"isError":false,'
        b'"structuredContent":{"n":9007199254740993}}'
    )
    record = canonical.parse_strict(
        '{"content":[{"type":"image","data":"AA==","mimeType":"image/png","annotations":{"priority":0.10}}],'
        '"structuredContent":{"n":9007199254740993},"_meta":{"gate/outcome":"DENIED"}}'
    )
    answered = answers.tool_result(record, "call_tool_result")
    assert isinstance(answered["content"], Raw) and "_meta" not in answered  # the only key was the mark
    assert b'"structuredContent":{"n":9007199254740993}' in encode(answered)
    assert wire(answered)["content"] == [
        {"annotations": {"priority": 0.10}, "data": "AA==", "mimeType": "image/png", "type": "image"}
    ]


# ------------------------------------------------------------------ toward a tool with an output schema


@pytest.mark.parametrize("prefix", sorted(p for p, error in model_text.IS_ERROR.items() if not error))
def test_the_proxys_own_prose_is_an_error_toward_a_tool_with_an_output_schema(prefix: str) -> None:
    own = answers.prose(f"{prefix}: waits")
    flipped = answers.for_output_schema(own)
    assert flipped["isError"] is True and flipped["_meta"] == own["_meta"] and flipped["content"] == own["content"]


def test_a_tools_own_result_is_untouched_toward_a_tool_with_an_output_schema() -> None:
    result = answers.tool_result(
        canonical.parse_strict('{"content":[],"structuredContent":{"a":1}}'), "call_tool_result"
    )
    assert answers.for_output_schema(result) is result
    error = answers.tool_error("fs/t: 3 bytes, error: no")
    assert answers.for_output_schema(error) is error


@pytest.mark.anyio
async def test_a_payment_whose_result_is_over_max_result_bytes_executed_once_and_is_never_cut(tmp_path: Path) -> None:
    # The fake bank's "blocks" answer names the payee four times: over 2000 bytes as recorded.
    arguments = json.dumps({"to": "j" * 500, "amount": 2, "mode": "blocks"})
    async with proxy_harness(tmp_path, rules=PAY_ALLOWED, max_result_bytes=1024) as h:
        answer = await h.raw_call("bank_pay", arguments)
        again = await h.raw_call("bank_pay", arguments)
        assert h.payments() == 1  # it ran; the identical call afterwards is not run again
        (run,) = h.runs()
    text = text_of(answer)
    assert text.startswith("UNRECORDED: the server answered this request, so it executed"), text
    assert "over the limit of 1024 bytes (0.0 MiB, max_result_bytes)" in text
    assert [block["type"] for block in answer["content"]] == ["text"]  # nothing of the result, nothing cut
    assert (answer.get("_meta") or {}).get("gate/outcome") == "UNRECORDED"
    assert text_of(again).startswith("DUPLICATE:"), text_of(again)
    assert run.status == "FAILED"
