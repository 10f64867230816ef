"""Bounded upstream messages (issue 13, item 6): framing, reading which call an oversize line
answers, and the stdio client in front of a server that floods it.

A message past ``max_message_bytes`` is refused as that call's answer when its edges name the
call (``Refused``: the server answered), fails every call in flight as a protocol failure when
they do not, and is skipped to its end with the server left running (issue 25, item 4); a line
that never ends is dropped when its call times out, and the next call on the same connection
works, or, past 16 times the bound, resets the connection.
"""

from __future__ import annotations

import contextlib
import json
import sys
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import anyio
import pytest

from agentrt_proxy.mcp import ServerSpec, ServerSpecError, open_connection
from agentrt_proxy.mcp._framing import EDGE_BYTES, BoundedLineBuffer, LineBuffer, Oversize
from agentrt_proxy.mcp._oversize import answer_id, partial_id
from agentrt_proxy.mcp.outcomes import NoAnswer, Refused, Result
from tests.mcp.test_http_client import Behaviour, Scripted, reply, standard
from tests.processes import alive

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
HOSTILE = str(FIXTURES / "hostile_server.py")
SECOND = 1_000_000_000
LIMIT = 1 << 20


def feed_all(buf: BoundedLineBuffer, data: bytes, chunk: int = 65536) -> list[bytes | Oversize]:
    out: list[bytes | Oversize] = []
    for i in range(0, len(data), chunk):
        out += buf.feed(data[i : i + chunk])
    return out


# ------------------------------------------------------------------------------ framing


def test_a_line_at_the_limit_is_framed_and_one_byte_more_is_an_oversize() -> None:
    buf = BoundedLineBuffer(100)
    assert buf.feed(b"x" * 100 + b"\n") == [b"x" * 100]
    out = buf.feed(b"y" * 101 + b"\r\nok\n")
    assert out == [
        Oversize(b"y" * 101, None, 101, 100),
        Oversize(b"y" * 101, b"y" * 101, 101, 100),
        b"ok",
    ]


def test_a_long_line_costs_the_limit_not_its_length() -> None:
    buf = BoundedLineBuffer(LIMIT)
    body = b'{"jsonrpc":"2.0","id":7,"result":"' + b"a" * (20 * LIMIT) + b'"}'
    held = 0
    out: list[bytes | Oversize] = []
    for i in range(0, len(body), 65536):
        out += buf.feed(body[i : i + 65536])
        held = max(held, buf.pending)
    assert held <= LIMIT + 65536  # never more than the limit and one chunk
    (crossed,) = out
    assert isinstance(crossed, Oversize) and crossed.tail is None
    assert crossed.head == body[:EDGE_BYTES] and LIMIT < crossed.size <= LIMIT + 65536
    out = buf.feed(b"\n" + b'{"id":8}' + b"\n")
    assert out == [Oversize(body[:EDGE_BYTES], body[-EDGE_BYTES:], len(body), LIMIT), b'{"id":8}']
    assert buf.pending == 0


def test_a_dropped_partial_line_never_comes_back_as_a_message() -> None:
    buf = BoundedLineBuffer(LIMIT)
    assert buf.feed(b'{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"abc') == []
    assert buf.drop() is True
    # The rest of that line, though it holds what looks like an answer to id 2, is dropped...
    assert buf.feed(b'def"},{"id":2,"result":{}}]}}\n') == []
    # ...and what follows is framed as ever.
    assert buf.feed(b'{"jsonrpc":"2.0","id":2,"result":{}}\n') == [b'{"jsonrpc":"2.0","id":2,"result":{}}']


def test_a_message_after_a_dropped_partial_line_is_kept_when_it_is_whole_json() -> None:
    buf = BoundedLineBuffer(LIMIT)
    buf.feed(b'{"jsonrpc":"2.0","id":1,"result":{"content":[')
    buf.drop()
    # A server that abandoned the line and answered the next call: whole JSON, so passed on.
    assert buf.feed(b'{"jsonrpc":"2.0","id":2,"result":{}}\n') == [b'{"jsonrpc":"2.0","id":2,"result":{}}']
    assert buf.drop() is False  # nothing under way


def test_an_oversize_line_dropped_at_a_timeout_is_not_reported_again() -> None:
    buf = BoundedLineBuffer(1000)
    out = buf.feed(b"z" * 2000)
    assert [type(o) for o in out] == [Oversize]
    assert buf.drop() is True
    assert buf.feed(b"z" * 5000 + b"\n{}\n") == [b"{}"]


def test_the_end_of_stream_ends_an_oversize_line_too() -> None:
    buf = BoundedLineBuffer(10)
    assert [o.tail for o in buf.feed(b"q" * 30) if isinstance(o, Oversize)] == [None]
    assert buf.finish() == Oversize(b"q" * 30, b"q" * 30, 30, 10)


def test_the_hosts_line_buffer_still_has_no_limit() -> None:
    buf = LineBuffer()
    assert buf.feed(b"a" * (3 << 20) + b"\n") == [b"a" * (3 << 20)]


# ------------------------------------------------------------------ which call it answers


@pytest.mark.parametrize(
    ("head", "tail", "expected"),
    [
        (b'{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"aaaa', None, 7),
        (b'{ "id" : 7 , "error" : {"code":1,"message":"', None, 7),
        (b'{"result":{"content":[{"type":"text","text":"aaaa', b'aaaa"}]},"jsonrpc":"2.0","id":12}', 12),
        (b'{"result":{"content":"aaaa', b'aaa"}, "id": 12 }\n', 12),
        (b'{"result":{"content":"aaaa', None, None),  # its end has not come yet
        (b'{"result":{"x":"aaaa', b'aaa","meta":{"id":5}}}', None),  # the last id is not the top level's
        (b'{"result":{"x":"aaaa', b'aaa"},"id":"s"}', None),  # not one of the proxy's ids
        (b'{"jsonrpc":"2.0","id":7,"method":"sampling/createMessage","params":{"x":"', None, None),
        (b'{"jsonrpc":"2.0","method":"x","params":{"a":"', b'aaa"},"id":7}', None),  # a request to the proxy
        (b'{"jsonrpc":"2.0","id":7,"junk":"aaaa', b'aaaa","result":{}}', None),  # no answer member seen
        (b'{"jsonrpc":"2.0","id":true,"result":"', None, None),
        (b'[{"jsonrpc":"2.0","id":7,"result":"', None, None),
        (b"garbage", b'"id":7}', None),
    ],
)
def test_an_oversize_message_names_the_call_it_answers_only_when_certain(
    head: bytes, tail: bytes | None, expected: int | None
) -> None:
    assert answer_id(head, tail) == expected


def test_the_id_of_a_line_still_arriving_is_read_from_its_beginning() -> None:
    assert partial_id(b'{"jsonrpc":"2.0","id":3,"result":{"con') == 3
    assert partial_id(b'{"jsonrpc":"2.0","id":"x","method":"ping"') == "x"
    assert partial_id(b'{"result":{"con') is None
    assert partial_id(b"") is None


# ------------------------------------------------------------------------- the stdio client


def hostile(tmp_path: Path, size: int, limit: int = LIMIT, **env: str) -> ServerSpec:
    entries = [f"HOSTILE_BYTES={size}", f"HOSTILE_LOG={tmp_path / 'calls.log'}", *(f"{k}={v}" for k, v in env.items())]
    return ServerSpec(name="hostile", command=[sys.executable, HOSTILE], env=entries, max_message_bytes=limit)


def calls(tmp_path: Path) -> list[str]:
    path = tmp_path / "calls.log"
    return path.read_text().split() if path.exists() else []


def test_a_server_spec_refuses_a_bound_that_is_not_positive() -> None:
    with pytest.raises(ServerSpecError, match="MaxMessageBytes 0 is not positive"):
        ServerSpec(name="x", command=["x"], max_message_bytes=0).validate()


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("tool", "reason"),
    [
        # the id first (the Python SDK's order): answered when the line passes the bound
        (
            "flood",
            f"the answer is longer than the limit of {LIMIT} bytes (1.0 MiB, max_message_bytes); "
            "it was skipped, not read",
        ),
        # the id last (the TypeScript SDK's order): answered at its end, with its size (less its newline)
        (
            "flood_id_last",
            f"the answer is {8 * LIMIT - 1} bytes (8.0 MiB), over the limit of {LIMIT} bytes "
            "(1.0 MiB, max_message_bytes); it was skipped, not read",
        ),
    ],
)
async def test_an_answer_past_the_bound_is_refused_as_that_calls_answer_and_the_server_keeps_running(
    tmp_path: Path, tool: str, reason: str
) -> None:
    async with open_connection(hostile(tmp_path, 8 * LIMIT), timeout_ns=10 * SECOND) as conn:
        pid = conn._transport.pid  # type: ignore[attr-defined]
        outcome = await conn.call_tool(tool, "{}", 20 * SECOND)
        assert isinstance(outcome, Refused), outcome
        assert outcome.reason == reason
        assert outcome.raw.startswith(b'{"') and len(outcome.raw) <= EDGE_BYTES
        # The line is skipped to its end: the same server, the same process, answers the next call.
        after = await conn.call_tool("echo", '{"n":1}', 20 * SECOND)
        assert isinstance(after, Result) and json.loads(after.text) == {"n": 1}, after
        assert conn.alive and conn._transport.pid == pid and alive(pid)  # type: ignore[attr-defined]
    assert calls(tmp_path) == [tool, "echo"]


@pytest.mark.anyio
@pytest.mark.parametrize("tool", ["flood", "flood_id_last"])
async def test_an_oversize_answer_fails_no_other_call(tmp_path: Path, tool: str) -> None:
    # Another call in flight is not what the message answered: it is still waiting afterwards.
    async with open_connection(hostile(tmp_path, 8 * LIMIT), timeout_ns=10 * SECOND) as conn:
        outcomes: dict[str, Any] = {}

        async def call(name: str) -> None:
            outcomes[name] = await conn.call_tool(name, "{}", 60 * SECOND)

        async with anyio.create_task_group() as tg:
            tg.start_soon(call, "hang")
            while calls(tmp_path) != ["hang"]:
                await anyio.sleep(0.01)
            await call(tool)
            echoed = await conn.call_tool("echo", '{"n":1}', 20 * SECOND)
            assert "hang" not in outcomes  # neither failed nor answered by the oversize message
            tg.cancel_scope.cancel()
        assert isinstance(outcomes[tool], Refused), outcomes
        assert isinstance(echoed, Result) and conn.alive


@pytest.mark.anyio
async def test_a_message_past_the_bound_that_names_no_call_fails_the_call_as_a_protocol_failure(
    tmp_path: Path,
) -> None:
    async with open_connection(hostile(tmp_path, 8 * LIMIT), timeout_ns=10 * SECOND) as conn:
        outcome = await conn.call_tool("flood_note", "{}", 20 * SECOND)
        assert isinstance(outcome, NoAnswer), outcome
        assert outcome.kind == "protocol"
        assert f"a message of {8 * LIMIT - 1} bytes, over the limit of {LIMIT} (max_message_bytes)" in outcome.detail


@pytest.mark.anyio
async def test_an_answer_within_the_bound_passes_whole(tmp_path: Path) -> None:
    async with open_connection(hostile(tmp_path, LIMIT - 10), timeout_ns=10 * SECOND) as conn:
        outcome = await conn.call_tool("flood", "{}", 20 * SECOND)
        assert isinstance(outcome, Result), outcome
        assert conn.alive


@pytest.mark.anyio
async def test_a_line_that_never_ends_is_dropped_with_its_call_and_the_next_call_works(tmp_path: Path) -> None:
    spec = hostile(tmp_path, 0, HOSTILE_TRICKLE=str(LIMIT // 2))
    async with open_connection(spec, timeout_ns=10 * SECOND) as conn:
        outcome = await conn.call_tool("trickle", "{}", SECOND)
        assert isinstance(outcome, NoAnswer) and outcome.kind == "timeout", outcome
        # The half line is gone: it neither holds memory nor swallows the next answer.
        assert conn._transport._lines.pending == 0  # type: ignore[attr-defined]
        after = await conn.call_tool("echo", '{"n":2}', 5 * SECOND)
        assert isinstance(after, Result), after
        assert json.loads(after.text) == {"n": 2}
        assert conn.alive
    assert calls(tmp_path) == ["trickle", "echo"]


@pytest.mark.anyio
async def test_a_line_that_never_ends_is_refused_at_the_bound_and_resets_the_server_past_sixteen_times_it(
    tmp_path: Path,
) -> None:
    async with open_connection(hostile(tmp_path, 0), timeout_ns=10 * SECOND) as conn:
        pid = conn._transport.pid  # type: ignore[attr-defined]
        outcome = await conn.call_tool("endless", "{}", 20 * SECOND)
        assert isinstance(outcome, Refused), outcome
        with anyio.fail_after(60):
            while conn.alive:
                await anyio.sleep(0.02)
        assert "over 16 times max_message_bytes, without ending it: the connection was reset" in (conn.ended or "")
        assert conn._transport._lines.pending == 0  # type: ignore[attr-defined]
        with anyio.fail_after(30):
            while alive(pid):
                await anyio.sleep(0.02)


# ------------------------------------------------------------------------------ over HTTP


@pytest.fixture
def http_server() -> Iterator[Callable[[Behaviour], Scripted]]:
    servers: list[Scripted] = []

    def make(behaviour: Behaviour) -> Scripted:
        servers.append(Scripted(behaviour))
        return servers[-1]

    yield make
    for server in servers:
        server.close()


def flooding(kind: str) -> Behaviour:
    """A server whose first tools/call is answered past the bound (a JSON body or an SSE
    stream), and every later one with ``{"n": <count>}``."""
    answered = {"calls": 0}

    def behave(h: BaseHTTPRequestHandler, msg: dict[str, Any]) -> None:
        if standard(h, msg):
            return
        answered["calls"] += 1
        if answered["calls"] > 1:
            result = {"content": [{"type": "text", "text": json.dumps({"n": answered["calls"]})}]}
            reply(h, 200, json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": result}).encode())
            return
        padding = "a" * (2 * LIMIT)
        answer = json.dumps(
            {"jsonrpc": "2.0", "id": msg["id"], "result": {"content": [{"type": "text", "text": padding}]}}
        )
        with contextlib.suppress(ConnectionError):  # the client drops the connection at the bound
            if kind == "json":
                reply(h, 200, answer.encode())
            else:
                reply(h, 200, f"event: message\r\ndata: {answer}\r\n\r\n".encode(), "text/event-stream")

    return behave


@pytest.mark.anyio
async def test_an_http_json_answer_past_the_bound_is_refused_and_the_next_call_works(http_server: Any) -> None:
    server = http_server(flooding("json"))
    spec = ServerSpec(name="web", endpoint=server.url, max_message_bytes=LIMIT)
    async with open_connection(spec, timeout_ns=5 * SECOND) as conn:
        outcome = await conn.call_tool("t", "{}", 5 * SECOND)
        assert isinstance(outcome, Refused), outcome
        assert f"exceeds {LIMIT}" in outcome.reason and "max_message_bytes" in outcome.reason
        after = await conn.call_tool("t", "{}", 5 * SECOND)
        assert isinstance(after, Result) and json.loads(after.text) == {"n": 2}, after
    assert [json.loads(body).get("method") for _, _, body in server.requests if body].count("tools/call") == 2


@pytest.mark.anyio
async def test_an_http_event_stream_past_the_bound_is_a_protocol_failure(http_server: Any) -> None:
    # A stream's bytes may be many messages: that they were this call's answer is not certain.
    server = http_server(flooding("sse"))
    spec = ServerSpec(name="web", endpoint=server.url, max_message_bytes=LIMIT)
    async with open_connection(spec, timeout_ns=5 * SECOND) as conn:
        outcome = await conn.call_tool("t", "{}", 5 * SECOND)
        assert isinstance(outcome, NoAnswer) and outcome.kind == "protocol", outcome
        assert f"exceeds {LIMIT}" in outcome.detail
        after = await conn.call_tool("t", "{}", 5 * SECOND)
        assert isinstance(after, Result), after


def test_the_recorded_beginning_of_an_oversize_answer_is_cut_back_to_whole_characters() -> None:
    from agentrt_proxy.mcp._oversize import whole_characters as _whole_characters

    assert _whole_characters(b'{"a":"\xc3\xa9\xe2\x82') == b'{"a":"\xc3\xa9'
    assert _whole_characters(b'{"a":"\xc3\xa9"') == b'{"a":"\xc3\xa9"'
    assert _whole_characters(b'{"a":"\xff\xc3\xa9"') == b'{"a":"\xff\xc3\xa9"'  # kept: the gate records it base64
