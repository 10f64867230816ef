"""An in-process host-facing session over memory streams, for the message-bound and fuzz tests.

The host's bytes go in as chunks exactly as given (so a test controls how lines are split
across reads); everything the session writes is kept, and the tool handler counts what it
was asked to run.
"""

from __future__ import annotations

import json
from typing import Any

import anyio
import anyio.abc

from agentrt_proxy.mcp import CallContext, JsonRpcError, ServerSession
from agentrt_proxy.mcp.server import MAX_HOST_MESSAGE_BYTES


class ChunkPipe(anyio.abc.ByteReceiveStream):
    """The host's side: each chunk sent is one ``receive`` of the session."""

    def __init__(self) -> None:
        self.send_side, self._recv = anyio.create_memory_object_stream[bytes](1 << 20)
        self.received = 0

    async def receive(self, max_bytes: int = 65536) -> bytes:
        chunk = await self._recv.receive()
        self.received += len(chunk)
        return chunk

    async def aclose(self) -> None:
        await self._recv.aclose()


class Sink(anyio.abc.ByteSendStream):
    """The host's reader: every byte the session wrote, and an event per write."""

    def __init__(self) -> None:
        self.data = bytearray()
        self.changed = anyio.Event()

    async def send(self, item: bytes) -> None:
        self.data += item
        self.changed.set()
        self.changed = anyio.Event()

    async def aclose(self) -> None:
        pass

    def messages(self) -> list[Any]:
        return [json.loads(line) for line in bytes(self.data).splitlines()]


class CountingTools:
    """Tools ``echo`` (answers at once), ``slow`` (yields to the loop a few times, so duplicates
    and cancellations meet it in flight), ``boom`` (raises) and ``rpc`` (a JSON-RPC error)."""

    def __init__(self) -> None:
        self.executed: list[tuple[Any, str, str | None]] = []  # (request id, name, arguments text)

    def list_tools(self) -> list[dict[str, Any]]:
        return [{"name": name, "inputSchema": {"type": "object"}} for name in ("echo", "slow", "boom", "rpc")]

    async def call_tool(self, name: str, arguments_text: str | None, ctx: CallContext) -> dict[str, Any]:
        self.executed.append((ctx.request_id, name, arguments_text))
        if name == "slow":
            for _ in range(5):
                if ctx.cancelled.is_set():
                    break
                await anyio.sleep(0)
        elif name == "boom":
            raise RuntimeError("boom")
        elif name == "rpc":
            raise JsonRpcError(-32602, "no such tool")
        return {"content": [{"type": "text", "text": name}]}


class Host:
    """One session, its pipes and its tools."""

    def __init__(self, max_message_bytes: int = MAX_HOST_MESSAGE_BYTES) -> None:
        self.pipe = ChunkPipe()
        self.sink = Sink()
        self.tools = CountingTools()
        self.session = ServerSession(
            self.pipe,
            self.sink,
            self.tools,
            {"name": "gated-tools", "version": "1"},
            max_message_bytes=max_message_bytes,
        )

    async def send(self, *chunks: bytes) -> None:
        for chunk in chunks:
            await self.pipe.send_side.send(chunk)

    async def wait_for(self, count: int, timeout: float = 10) -> list[Any]:
        with anyio.fail_after(timeout):
            while len(self.sink.messages()) < count:
                await self.sink.changed.wait()
        return self.sink.messages()

    async def close(self) -> None:
        await self.pipe.send_side.aclose()


def line(message: Any) -> bytes:
    return json.dumps(message, separators=(",", ":")).encode() + b"\n"


def initialize(version: str = "2025-06-18", msg_id: Any = "init") -> bytes:
    return line({"jsonrpc": "2.0", "id": msg_id, "method": "initialize", "params": {"protocolVersion": version}})


INITIALIZED = line({"jsonrpc": "2.0", "method": "notifications/initialized"})
