"""The host-facing session in the 2026-07-28 revision, bytes in and bytes out: the first
request decides the era, and a handshake session stays exactly as it was."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from agentrt_proxy.mcp import modern
from tests.mcp.test_host_session import Harness, call, init

pytestmark = pytest.mark.anyio

MODERN_META = {modern.PROTOCOL_VERSION_KEY: "2026-07-28", modern.CLIENT_CAPABILITIES_KEY: {}}
SERVER_INFO = {modern.SERVER_INFO_KEY: {"name": "gated-tools", "version": "1"}}


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def req(msg_id: int, method: str, params: dict[str, Any] | None = None, meta: Any = MODERN_META) -> dict[str, Any]:
    body: dict[str, Any] = dict(params or {})
    if meta is not None:
        body["_meta"] = {**meta, **body.get("_meta", {})}
    return {"jsonrpc": "2.0", "id": msg_id, "method": method, "params": body}


async def exchange(h: Harness, *lines: dict[str, Any]) -> dict[Any, Any]:
    async with anyio.create_task_group() as tg:
        tg.start_soon(h.session.run)
        await h.write(*lines)
        answered = {m["id"]: m for m in await h.wait_for(len(lines))}
        await h.close_input()
    return answered


async def test_a_modern_host_discovers_lists_and_calls_without_initialize() -> None:
    h = Harness()
    called = call(3, "echo", {"a": 1})
    called["params"]["_meta"] = MODERN_META
    got = await exchange(h, req(1, "server/discover"), req(2, "tools/list"), called)
    assert got[1]["result"] == {
        "supportedVersions": ["2026-07-28"],
        "capabilities": {"tools": {"listChanged": False}},
        "resultType": "complete",
        "ttlMs": 60_000,
        "cacheScope": "private",
        "_meta": SERVER_INFO,
    }
    assert got[2]["result"] == {
        "tools": [{"name": "echo", "inputSchema": {"type": "object"}}],
        "resultType": "complete",
        "ttlMs": 60_000,
        "cacheScope": "private",
        "_meta": SERVER_INFO,
    }
    assert got[3]["result"] == {
        "content": [{"type": "text", "text": "echo"}],
        "resultType": "complete",
        "_meta": SERVER_INFO,
    }
    assert h.tools.seen == [("echo", '{"a": 1}')]  # the call ran once, with its literal arguments
    assert h.tools.contexts[0].protocol_version == "2026-07-28"
    assert h.session.era == "modern" and h.session.protocol_version is None


async def test_a_modern_call_without_its_envelope_runs_nothing() -> None:
    h = Harness()
    bare = call(2, "echo", {})
    old = call(3, "echo", {})
    old["params"]["_meta"] = {**MODERN_META, modern.PROTOCOL_VERSION_KEY: "2025-11-25"}
    got = await exchange(h, req(1, "server/discover"), bare, old)
    assert got[2]["error"]["code"] == -32602
    assert got[3]["error"]["code"] == -32022
    assert got[3]["error"]["data"] == {"supported": ["2026-07-28"], "requested": "2025-11-25"}
    assert h.tools.seen == []


async def test_what_the_revision_removed_is_not_served_to_a_modern_host() -> None:
    h = Harness()
    got = await exchange(
        h,
        req(1, "tools/list"),
        req(2, "ping"),
        req(3, "logging/setLevel", {"level": "debug"}),
        {**init("2025-11-25", 4)},
        req(5, "x/unknown"),
    )
    assert "result" in got[1]
    assert [got[i]["error"]["code"] for i in (2, 3, 5)] == [-32601, -32601, -32601]
    assert got[4]["error"]["code"] == -32022  # initialize after the era was settled
    assert got[4]["error"]["data"] == {"supported": ["2026-07-28"], "requested": "2025-11-25"}
    assert h.session.protocol_version is None  # no handshake happened


async def test_a_modern_session_sends_no_unsolicited_notification() -> None:
    h = Harness()
    async with anyio.create_task_group() as tg:
        tg.start_soon(h.session.run)
        await h.write(req(1, "tools/list"))
        await h.wait_for(1)
        await h.session.notify("notifications/message", {"level": "error", "data": "x"})
        await h.session.notify("notifications/resources/list_changed")
        await h.write(req(2, "tools/list"))
        got = await h.wait_for(2)
        await h.close_input()
    assert [m.get("id") for m in got] == [1, 2]


async def test_a_handshake_session_ignores_the_modern_envelope_and_keeps_its_answers() -> None:
    h = Harness()
    listed = req(2, "tools/list")  # a host that began with initialize, whatever its _meta says
    got = await exchange(h, init("2025-11-25", 1), listed, req(3, "ping"))
    assert got[1]["result"]["protocolVersion"] == "2025-11-25"
    assert got[2]["result"] == {"tools": [{"name": "echo", "inputSchema": {"type": "object"}}]}
    assert got[3]["result"] == {}
    assert h.session.era == "legacy"


async def test_a_discover_without_an_envelope_leaves_the_era_open() -> None:
    h = Harness()
    got = await exchange(h, req(1, "server/discover", meta=None), init("2025-06-18", 2))
    assert got[1]["error"]["code"] == -32601
    assert got[2]["result"]["protocolVersion"] == "2025-06-18"
    assert h.session.era == "legacy"


class WithResources:
    """A handler offering a passthrough method whose answer is a server's own text."""

    methods = frozenset({"resources/read", "resources/subscribe"})

    def __init__(self) -> None:
        self.asked: list[str] = []

    def list_tools(self) -> list[dict[str, Any]]:
        return []

    def capabilities(self) -> dict[str, Any]:
        return {"resources": {"subscribe": True, "listChanged": False}}

    async def call_tool(self, name: str, arguments_text: str | None, ctx: Any) -> dict[str, Any]:
        raise AssertionError("no call expected")

    async def handle(self, method: str, params: dict[str, Any]) -> Any:
        from agentrt_proxy.canonical.encoder import Raw

        self.asked.append(method)
        return Raw('{"contents":[{"uri":"file:///a","text":"1.50"}]}')


async def test_a_passed_through_read_is_shaped_and_subscriptions_are_gone() -> None:
    h = Harness()
    h.session.handler = WithResources()
    got = await exchange(
        h,
        req(1, "server/discover"),
        req(2, "resources/read", {"uri": "file:///a"}),
        req(3, "resources/subscribe", {"uri": "file:///a"}),
    )
    assert got[1]["result"]["capabilities"] == {"tools": {"listChanged": False}, "resources": {"listChanged": False}}
    assert got[2]["result"] == {
        "resultType": "complete",
        "ttlMs": 0,
        "cacheScope": "private",
        "contents": [{"uri": "file:///a", "text": "1.50"}],
    }
    assert got[3]["error"]["code"] == -32601
    assert h.session.handler.asked == ["resources/read"]
