"""The host-facing server session, bytes in and bytes out over in-memory streams."""

from __future__ import annotations

import json
from typing import Any

import anyio
import anyio.abc
import pytest

from agentrt_proxy.mcp import CallContext, JsonRpcError, ServerSession
from tests.mcp.host_streams import Sink

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


class Pipe(anyio.abc.ByteReceiveStream):
    def __init__(self) -> None:
        self.send_side, self._recv = anyio.create_memory_object_stream[bytes](100)

    async def receive(self, max_bytes: int = 65536) -> bytes:
        try:
            return await self._recv.receive()
        except anyio.EndOfStream:
            raise

    async def aclose(self) -> None:
        await self._recv.aclose()


class Tools:
    def __init__(self) -> None:
        self.seen: list[tuple[str, str | None]] = []
        self.release = anyio.Event()
        self.contexts: list[CallContext] = []
        self.finished: list[str] = []

    def list_tools(self) -> list[dict[str, Any]]:
        return [{"name": "echo", "inputSchema": {"type": "object"}}]

    async def call_tool(self, name: str, arguments_text: str | None, ctx: CallContext) -> dict[str, Any]:
        self.seen.append((name, arguments_text))
        self.contexts.append(ctx)
        if name == "wait":
            await ctx.report_progress(1, 2, "half")
            await self.release.wait()
            await ctx.report_progress(2, 2)
        elif name == "fail":
            raise RuntimeError("boom")
        elif name == "rpc":
            raise JsonRpcError(-32602, "no such tool")
        self.finished.append(name)
        return {"content": [{"type": "text", "text": name}]}


class Harness:
    def __init__(self) -> None:
        self.pipe = Pipe()
        self.sink = Sink()
        self.tools = Tools()
        self.eof_seen = False

        def on_eof() -> None:
            self.eof_seen = True

        self.session = ServerSession(
            self.pipe, self.sink, self.tools, {"name": "gated-tools", "version": "1"}, on_eof=on_eof
        )

    async def write(self, *lines: Any) -> None:
        for line in lines:
            raw = line if isinstance(line, bytes) else json.dumps(line).encode()
            await self.pipe.send_side.send(raw + b"\n")

    async def wait_for(self, count: int) -> list[Any]:
        with anyio.fail_after(5):
            while len(self.sink.messages()) < count:
                await self.sink.changed.wait()
        return self.sink.messages()

    async def close_input(self) -> None:
        await self.pipe.send_side.aclose()


def init(version: str = "2025-06-18", msg_id: int = 1) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": msg_id, "method": "initialize", "params": {"protocolVersion": version}}


def call(msg_id: int | str, name: str, args: Any = None, token: Any = None) -> dict[str, Any]:
    params: dict[str, Any] = {"name": name}
    if args is not None:
        params["arguments"] = args
    if token is not None:
        params["_meta"] = {"progressToken": token}
    return {"jsonrpc": "2.0", "id": msg_id, "method": "tools/call", "params": params}


async def test_ping_discover_initialize_and_listing() -> None:
    h = Harness()
    async with anyio.create_task_group() as tg:
        tg.start_soon(h.session.run)
        await h.write({"jsonrpc": "2.0", "id": 0, "method": "ping"})
        await h.write({"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {}})
        await h.write(init("1999-01-01", 2), {"jsonrpc": "2.0", "method": "notifications/initialized"})
        await h.write({"jsonrpc": "2.0", "id": 3, "method": "tools/list"})
        await h.write({"jsonrpc": "2.0", "id": 4, "method": "resources/list"})
        msgs = {m["id"]: m for m in await h.wait_for(5)}
        await h.close_input()
    assert msgs[0]["result"] == {}  # ping answered before initialize
    assert msgs[1]["error"]["code"] == -32601
    assert msgs[2]["result"] == {
        "protocolVersion": "2025-11-25",
        "capabilities": {"tools": {"listChanged": True}, "logging": {}},
        "serverInfo": {"name": "gated-tools", "version": "1"},
    }
    assert h.session.initialized.is_set()
    assert msgs[3]["result"] == {"tools": [{"name": "echo", "inputSchema": {"type": "object"}}]}
    assert msgs[4]["error"]["code"] == -32601


async def test_bad_lines_get_the_answers_json_rpc_prescribes() -> None:
    h = Harness()
    async with anyio.create_task_group() as tg:
        tg.start_soon(h.session.run)
        await h.write(init())
        await h.write(b"{not json", b'{"a":"\xff"}', b"")
        await h.write({"jsonrpc": "2.0", "id": None, "method": "ping"})
        await h.write({"jsonrpc": "2.0", "id": 9, "result": {}})  # a stray response: dropped
        await h.write({"jsonrpc": "2.0", "id": 10, "method": 5})
        await h.write(b'[{"jsonrpc":"2.0","id":11,"method":"ping"}]')  # batch outside 2025-03-26
        await h.write(b"\r")
        await h.write({"jsonrpc": "2.0", "id": 12, "method": "ping"})
        msgs = await h.wait_for(7)
        await h.close_input()
    codes = [(m["id"], m.get("error", {}).get("code")) for m in msgs[1:]]
    assert codes == [(None, -32700), (None, -32700), (None, -32600), (10, -32600), (None, -32600), (12, None)]


async def test_a_batch_is_answered_as_an_array_when_2025_03_26_was_negotiated() -> None:
    h = Harness()
    async with anyio.create_task_group() as tg:
        tg.start_soon(h.session.run)
        await h.write(init("2025-03-26"))
        await h.wait_for(1)
        await h.write(
            b'[{"jsonrpc":"2.0","id":2,"method":"ping"},'
            b'{"jsonrpc":"2.0","method":"notifications/initialized"},'
            b'{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo","arguments":{"a":1.0}}}]'
        )
        msgs = await h.wait_for(2)
        await h.close_input()
    assert sorted(m["id"] for m in msgs[1]) == [2, 3]
    assert h.tools.seen == [("echo", '{"a":1.0}')]


async def test_calls_run_concurrently_and_answer_out_of_order_with_progress() -> None:
    h = Harness()
    async with anyio.create_task_group() as tg:
        tg.start_soon(h.session.run)
        await h.write(init(), call(2, "wait", {}, token="tok"), call(3, "echo", {"x": 1}))
        msgs = await h.wait_for(3)
        ids = [m.get("id") for m in msgs]
        assert 3 in ids and 2 not in ids  # the second call finished first
        progress = [m for m in msgs if m.get("method") == "notifications/progress"]
        assert progress[0]["params"] == {"progressToken": "tok", "progress": 1, "total": 2, "message": "half"}
        h.tools.release.set()
        msgs = await h.wait_for(5)
        await h.close_input()
    assert msgs[-1]["id"] == 2 and msgs[-2]["method"] == "notifications/progress"


async def test_no_progress_is_sent_without_a_token_or_after_the_answer() -> None:
    h = Harness()
    h.tools.release.set()
    async with anyio.create_task_group() as tg:
        tg.start_soon(h.session.run)
        await h.write(init(), call(2, "wait", {}))
        await h.wait_for(2)
        await h.close_input()
    assert all("method" not in m for m in h.sink.messages())
    await h.tools.contexts[0].report_progress(3, 3)  # answered: nothing is sent
    assert len(h.sink.messages()) == 2


async def test_a_cancelled_call_is_told_and_gets_no_answer() -> None:
    h = Harness()
    async with anyio.create_task_group() as tg:
        tg.start_soon(h.session.run)
        await h.write(init(), call("c1", "wait", {}, token=5))
        await h.wait_for(2)  # initialize answer + first progress
        await h.write({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": "c1"}})
        with anyio.fail_after(5):
            await h.tools.contexts[0].cancelled.wait()
        assert not h.tools.contexts[0].live
        h.tools.release.set()  # the application kept working; its answer is dropped
        await h.write({"jsonrpc": "2.0", "id": 9, "method": "ping"})
        await h.wait_for(3)
        await h.close_input()
    assert [m.get("id") for m in h.sink.messages()] == [1, None, 9]
    assert h.tools.finished == ["wait"]


async def test_handler_failures_become_errors_without_a_traceback() -> None:
    h = Harness()
    async with anyio.create_task_group() as tg:
        tg.start_soon(h.session.run)
        await h.write(init(), call(2, "fail"), call(3, "rpc"), {"jsonrpc": "2.0", "id": 4, "method": "tools/call"})
        msgs = {m["id"]: m for m in await h.wait_for(4)}
        await h.close_input()
    assert msgs[2]["error"] == {"code": -32603, "message": "Internal error"}
    assert msgs[3]["error"] == {"code": -32602, "message": "no such tool"}
    assert msgs[4]["error"]["code"] == -32602
    assert "boom" not in h.sink.data.decode()


async def test_eof_lets_in_flight_calls_finish_and_be_answered() -> None:
    h = Harness()
    async with anyio.create_task_group() as tg:
        tg.start_soon(h.session.run)
        await h.write(init(), call(2, "wait", {}))
        await h.wait_for(1)
        await h.close_input()
        with anyio.fail_after(5):
            await h.session.input_closed.wait()
        assert h.eof_seen
        h.tools.release.set()
    assert h.sink.messages()[-1]["id"] == 2


async def test_a_vanished_host_does_not_crash_the_session() -> None:
    class Broken(Sink):
        async def send(self, item: bytes) -> None:
            raise anyio.BrokenResourceError

    h = Harness()
    h.session = ServerSession(h.pipe, Broken(), h.tools, {"name": "gated-tools", "version": "1"})
    async with anyio.create_task_group() as tg:
        tg.start_soon(h.session.run)
        await h.write(init(), call(2, "echo", {}))
        await h.close_input()
    assert h.tools.finished == ["echo"]


@pytest.mark.parametrize("depth", [990, 5000, 100_000])
async def test_a_request_nested_past_the_decoders_depth_is_answered_by_its_own_id(depth: int) -> None:
    deep = "[" * depth + "]" * depth
    line = ('{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{"x":'
            + deep + "}}}").encode()
    h = Harness()
    async with anyio.create_task_group() as tg:
        tg.start_soon(h.session.run)
        await h.write(init(), {"jsonrpc": "2.0", "method": "notifications/initialized"})
        await h.write(line, b'{"jsonrpc":"2.0","id":"after","method":"ping"}')
        msgs = await h.wait_for(3)
        await h.close_input()
    answers = {m["id"]: m for m in msgs}
    assert answers[7]["error"]["code"] == -32600
    assert "nested too deeply" in answers[7]["error"]["message"]
    assert answers["after"]["result"] == {}  # the session goes on
    assert h.tools.seen == []  # nothing reached the tool


async def test_a_line_too_deep_with_no_id_still_answers_a_parse_error_with_id_null() -> None:
    h = Harness()
    async with anyio.create_task_group() as tg:
        tg.start_soon(h.session.run)
        await h.write(("[" * 5000 + "]" * 5000).encode())
        msgs = await h.wait_for(1)
        await h.close_input()
    assert [(m["id"], m["error"]["code"]) for m in msgs] == [(None, -32700)]


async def test_a_tool_is_never_run_for_a_host_that_has_not_initialized() -> None:
    h = Harness()
    async with anyio.create_task_group() as tg:
        tg.start_soon(h.session.run)
        await h.write(call(1, "echo", {}), {"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
        await h.write({"jsonrpc": "2.0", "id": 3, "method": "ping"})
        early = {m["id"]: m for m in await h.wait_for(3)}
        assert h.tools.seen == []  # nothing reached the tool
        await h.write(init(msg_id=4), {"jsonrpc": "2.0", "method": "notifications/initialized"})
        await h.write(call(5, "echo", {}))
        late = {m["id"]: m for m in await h.wait_for(5)}
        await h.close_input()
    assert early[1]["error"]["code"] == -32600 and "initialize" in early[1]["error"]["message"]
    assert early[2]["error"]["code"] == -32600
    assert early[3]["result"] == {}
    assert late[5]["result"]["content"][0]["text"] == "echo"
    assert h.tools.seen == [("echo", "{}")]
