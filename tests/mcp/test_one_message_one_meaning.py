"""One message, one meaning (issue 22, items 5 and 6): an envelope that repeats a key is refused,
from a host and from an upstream, with -32600 naming the key (never executed as its last key
says); a message past the weight the proxy decodes (500,000 values and keys) is refused before it
is decoded, by the id its beginning shows."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from agentrt_proxy.canonical.message_size import MAX_MESSAGE_VALUES
from agentrt_proxy.mcp import jsonrpc
from agentrt_proxy.mcp.jsonrpc import DecodeFailure, Invalid, Request, Response
from tests.mcp.host_streams import INITIALIZED, Host, initialize

pytestmark = pytest.mark.anyio

CALL = '"method":"tools/call","params":{"name":"echo","arguments":{}}'
# (what is repeated, the line, the id its refusal carries)
REPEATED = [
    ("method", '{"jsonrpc":"2.0","id":1,"method":"ping",' + CALL + "}", 1),
    ("jsonrpc", '{"jsonrpc":"1.0","jsonrpc":"2.0","id":2,' + CALL + "}", 2),
    ("id", '{"jsonrpc":"2.0","id":3,"id":4,' + CALL + "}", None),
    ("params", '{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{},"params":{"name":"echo"}}', 5),
    ("name", '{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"x","name":"echo"}}', 6),
    (
        "arguments",
        '{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{},"arguments":{"a":1}}}',
        7,
    ),
    (
        "progressToken",
        '{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"echo",'
        '"_meta":{"progressToken":1,"progressToken":2}}}',
        8,
    ),
]
PARTS = {"name": "params", "arguments": "params", "params": "message", "progressToken": "params._meta"}


@pytest.mark.parametrize(("key", "line", "answered_id"), REPEATED, ids=[r[0] for r in REPEATED])
def test_an_envelope_that_repeats_a_key_is_invalid_naming_the_key(key: str, line: str, answered_id: Any) -> None:
    decoded = jsonrpc.decode_line(line.encode())
    assert isinstance(decoded, Invalid)
    assert decoded.id == answered_id and decoded.is_request
    assert f'repeats the key "{key}" in its {PARTS.get(key, "message")}' in decoded.reason


@pytest.mark.parametrize(
    "line",
    [
        '{"jsonrpc":"2.0","id":1,"result":{"content":[]},"result":{"content":[{"type":"text","text":"x"}]}}',
        '{"jsonrpc":"2.0","id":1,"result":{"isError":false,"isError":true,"content":[]}}',
        '{"jsonrpc":"2.0","id":1,"error":{"code":1,"code":2,"message":"m"}}',
    ],
)
def test_an_answer_that_repeats_a_key_of_its_envelope_is_invalid_by_its_id(line: str) -> None:
    decoded = jsonrpc.decode_line(line.encode())
    assert isinstance(decoded, Invalid) and decoded.id == 1 and not decoded.is_request


@pytest.mark.parametrize(
    "line",
    [
        '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"a":1,"a":2}}}',
        '{"jsonrpc":"2.0","id":1,"result":{"content":[],"structuredContent":{"a":1,"a":2}}}',
    ],
)
def test_a_key_repeated_below_the_envelope_is_left_to_the_strict_boundary(line: str) -> None:
    # The arguments and a result's content are checked by canonical.parse_strict, in its words.
    assert isinstance(jsonrpc.decode_line(line.encode()), Request | Response)


def many(count: int, item: str) -> str:
    return ",".join([item] * count)


WEIGHTS = [
    (
        "empty objects",
        '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"a":['
        + many(MAX_MESSAGE_VALUES, "{}")
        + "]}}}",
    ),
    ("numbers", '{"id":1,"jsonrpc":"2.0","method":"ping","params":{"a":[' + many(MAX_MESSAGE_VALUES, "0") + "]}}"),
    (
        "keys",
        '{"id":1,"jsonrpc":"2.0","method":"ping","params":{'
        + ",".join(f'"k{i}":0' for i in range(MAX_MESSAGE_VALUES // 2))
        + "}}",
    ),
    (
        "empty strings",
        '{"id":1,"jsonrpc":"2.0","method":"ping","params":{"a":[' + many(MAX_MESSAGE_VALUES, '""') + "]}}",
    ),
    (
        "nesting",
        '{"id":1,"jsonrpc":"2.0","method":"ping","params":{"a":'
        + "[" * MAX_MESSAGE_VALUES
        + "]" * MAX_MESSAGE_VALUES
        + "}}",
    ),
]


@pytest.mark.parametrize(("shape", "line"), WEIGHTS, ids=[w[0] for w in WEIGHTS])
def test_a_message_past_the_weight_is_refused_undecoded_by_its_id(shape: str, line: str) -> None:
    decoded = jsonrpc.decode_line(line.encode())
    assert isinstance(decoded, DecodeFailure) and decoded.undecoded, shape
    assert decoded.request_id == 1
    assert str(MAX_MESSAGE_VALUES) in decoded.reason


def test_a_long_text_full_of_commas_and_brackets_is_one_value() -> None:
    text = "a,[{:" * (MAX_MESSAGE_VALUES * 2)
    line = '{"jsonrpc":"2.0","id":1,"method":"ping","params":{"t":"' + text + '","u":"\\"' + text + '"}}'
    assert isinstance(jsonrpc.decode_line(line.encode()), Request)


def test_a_message_of_exactly_the_weight_is_decoded_and_one_more_value_is_refused() -> None:
    def ping(count: int) -> bytes:  # 11 beside the array's elements: the message, its 4 keys and
        # 4 values (params among them), the key "a" and its array
        return ('{"id":1,"jsonrpc":"2.0","method":"ping","params":{"a":[' + many(count, "0") + "]}}").encode()

    assert isinstance(jsonrpc.decode_line(ping(MAX_MESSAGE_VALUES - 11)), Request)
    assert isinstance(jsonrpc.decode_line(ping(MAX_MESSAGE_VALUES - 10)), DecodeFailure)


async def test_a_host_gets_one_invalid_request_answer_per_repeated_envelope_and_nothing_runs() -> None:
    host = Host()
    async with anyio.create_task_group() as tg:
        tg.start_soon(host.session.run)
        await host.send(initialize(), INITIALIZED)
        for _, line, _ in REPEATED:
            await host.send(line.encode() + b"\n")
        msgs = await host.wait_for(1 + len(REPEATED))
        await host.close()
    answers = [m for m in msgs if m["id"] != "init"]
    assert sorted((m["id"] is None, m["error"]["code"]) for m in answers) == sorted(
        (answered is None, -32600) for _, _, answered in REPEATED
    )
    assert all("repeats the key" in m["error"]["message"] for m in answers)
    assert host.tools.executed == []
