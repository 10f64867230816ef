"""Host lines past what the session decodes: each request still gets one answer, by its id when
the line shows it, and nothing reaches a tool (issue 14, item 5)."""

from __future__ import annotations

import json
from typing import Any

import anyio
import pytest

from agentrt_proxy.mcp._bounded_lines import BoundedLines, Oversized
from agentrt_proxy.mcp.jsonrpc import ID_SCAN_TOKENS
from agentrt_proxy.mcp.server import MAX_HOST_MESSAGE_BYTES, READ_CHUNK
from tests.mcp.host_streams import INITIALIZED, Host, initialize, line

pytestmark = pytest.mark.anyio

PING_AFTER = line({"jsonrpc": "2.0", "id": "after", "method": "ping"})


def call_line(msg_id: Any, memo_bytes: int, *, id_first: bool = True) -> bytes:
    """A ``tools/call`` of ``echo`` whose line is exactly ``memo_bytes`` longer than its skeleton."""
    params = '{"name":"echo","arguments":{"memo":"' + "m" * memo_bytes + '"}}'
    head, tail = ('{"jsonrpc":"2.0","id":' + json.dumps(msg_id) + ","), ""
    if not id_first:  # the TypeScript SDK's order: method, params, jsonrpc, id
        head, tail = "{", ',"jsonrpc":"2.0","id":' + json.dumps(msg_id)
    return (head + '"method":"tools/call","params":' + params + tail + "}").encode()


def chunks(data: bytes, size: int = READ_CHUNK) -> list[bytes]:
    return [data[i : i + size] for i in range(0, len(data), size)]


async def answers_to(host: Host, *sends: bytes, count: int) -> dict[Any, Any]:
    async with anyio.create_task_group() as tg:
        tg.start_soon(host.session.run)
        await host.send(initialize(), INITIALIZED)
        for data in sends:
            await host.send(*chunks(data))
        msgs = await host.wait_for(count + 1)
        await host.close()
    return {m["id"]: m for m in msgs if m["id"] != "init"}


async def test_a_line_over_the_bound_is_answered_by_its_id_before_it_ends_and_runs_nothing() -> None:
    host = Host()
    over = call_line("big", MAX_HOST_MESSAGE_BYTES)  # longer than the bound by its skeleton
    async with anyio.create_task_group() as tg:
        tg.start_soon(host.session.run)
        await host.send(initialize(), INITIALIZED)
        await host.send(*chunks(over[: MAX_HOST_MESSAGE_BYTES + 2 * READ_CHUNK]))  # no newline yet
        msgs = await host.wait_for(2)  # answered while the line has not ended: it is not being kept
        await host.send(*chunks(over[MAX_HOST_MESSAGE_BYTES + 2 * READ_CHUNK :]), b"\n", PING_AFTER)
        msgs = await host.wait_for(3)
        await host.close()
    got = {m["id"]: m for m in msgs}
    assert got["big"]["error"] == {
        "code": -32600,
        "message": f"the message is larger than {MAX_HOST_MESSAGE_BYTES} bytes",
    }
    assert got["after"]["result"] == {}  # the rest of the long line was dropped, the next line served
    assert host.tools.executed == []
    assert len(msgs) == 3


async def test_a_line_of_exactly_the_bound_is_served() -> None:
    skeleton = len(call_line(1, 0))
    exact = call_line(1, MAX_HOST_MESSAGE_BYTES - skeleton)
    assert len(exact) == MAX_HOST_MESSAGE_BYTES
    host = Host()
    got = await answers_to(host, exact + b"\r\n", count=1)
    assert got[1]["result"]["content"][0]["text"] == "echo"
    assert [(i, name, len(args or "")) for i, name, args in host.tools.executed] == [
        (1, "echo", MAX_HOST_MESSAGE_BYTES - skeleton + len('{"memo":""}'))
    ]


async def test_an_oversized_line_whose_id_comes_after_its_beginning_is_answered_with_id_null() -> None:
    host = Host(max_message_bytes=4096)
    got = await answers_to(host, call_line("ts-1", 8192, id_first=False) + b"\n" + PING_AFTER, count=2)
    assert got[None]["error"]["code"] == -32600 and "larger than 4096 bytes" in got[None]["error"]["message"]
    assert got["after"]["result"] == {}
    assert "ts-1" not in got
    assert host.tools.executed == []


async def test_an_unterminated_oversized_last_line_is_answered_once_at_the_end_of_input() -> None:
    host = Host(max_message_bytes=4096)
    async with anyio.create_task_group() as tg:
        tg.start_soon(host.session.run)
        await host.send(initialize(), INITIALIZED, call_line(7, 4096))  # one read, past the bound, no newline
        await host.close()
    assert [(m["id"], m.get("error", {}).get("code")) for m in host.sink.messages()] == [("init", None), (7, -32600)]
    assert host.tools.executed == []


async def test_a_request_with_an_integer_past_the_digit_limit_is_answered_by_its_id() -> None:
    huge = "9" * 5000  # valid JSON; Python's int() refuses more than 4300 digits
    text = (
        '{"jsonrpc":"2.0","id":"digits","method":"tools/call","params":{"name":"echo","arguments":{"n":' + huge + "}}}"
    )
    host = Host()
    got = await answers_to(host, text.encode() + b"\n" + PING_AFTER, count=2)
    assert got["digits"]["error"]["code"] == -32600
    assert "more digits" in got["digits"]["error"]["message"]
    assert got["after"]["result"] == {}
    assert host.tools.executed == []


@pytest.mark.parametrize("written", ["null", "true", "1.5"])
async def test_a_deep_request_whose_id_is_invalid_is_answered_with_id_null_never_another_id(written: str) -> None:
    deep = "[" * 5000 + "]" * 5000
    text = (
        '{"jsonrpc":"2.0","id":' + written + ',"method":"tools/call","params":{"name":"echo","arguments":' + deep + "}}"
    )
    host = Host()
    got = await answers_to(host, text.encode() + b"\n" + PING_AFTER, count=2)
    assert set(got) == {None, "after"}  # before: answered as id "method" (null, true) or 1 (1.5)
    assert host.tools.executed == []


async def test_a_deep_line_whose_id_stands_past_the_scan_budget_is_answered_with_id_null() -> None:
    text = '{"method":"ping","params":{"a":[' + "0," * ID_SCAN_TOKENS + "[" * 2000 + "]" * 2000 + ']},"id":5}'
    host = Host()
    got = await answers_to(host, text.encode() + b"\n" + PING_AFTER, count=2)
    assert set(got) == {None, "after"}


def test_the_framing_holds_at_most_the_bound_and_one_read_of_a_line_that_never_ends() -> None:
    lines = BoundedLines(1000, head_bytes=10)
    held = []
    out: list[bytes | Oversized] = []
    for _ in range(200):
        out += lines.feed(b"x" * 300)
        held.append(lines.pending)
    assert max(held) <= 1000 + 1 + 300
    assert out == [Oversized(b"x" * 10)]  # reported once, when it crossed the bound
    assert lines.feed(b"yy\nzz\n") == [b"zz"]  # the long line's end is dropped with it
    assert lines.finish() is None
