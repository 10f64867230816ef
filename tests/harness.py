"""An in-process proxy driven by the official MCP SDK client, for the rules-across-calls tests.

The proxy runs its real host-facing session over in-memory byte streams; the host is the
SDK's ``ClientSession``. Its upstream is the bundled fake payment server in a child
process, so effects are counted in its ledger. The proxy's clock is the wall clock plus a
skew the test advances (leases always use the wall clock). ``raw_call`` writes a raw
``tools/call`` line, for arguments whose spelling matters (literals, repeated keys).
"""

from __future__ import annotations

import functools
import itertools
import json
import sys
import time
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import anyio.abc
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp import ClientSession, types
from mcp.shared.message import SessionMessage

from agentrt_proxy.config import Config, load_config
from agentrt_proxy.gate import approvals
from agentrt_proxy.mcp import ServerSession
from agentrt_proxy.proxy._runtime import open_runtime
from agentrt_proxy.proxy._ticker import REAL_TICKER
from agentrt_proxy.proxy.session import SERVER_INFO, Proxy, run_session
from agentrt_proxy.store import Store
from agentrt_proxy.testing import fakebank
from agentrt_proxy.upstream import pin_server, write_manifest

REPO = Path(__file__).resolve().parent.parent

DEFAULT_RULES: dict[str, Any] = {
    "balance": {"side_effect": "read_only", "timeout": "10s"},
    "pay": {"side_effect": "remote_mutation", "timeout": "10s"},
    "refund": {"side_effect": "destructive", "timeout": "10s"},
}


class SkewClock:
    """The wall clock plus a skew the test moves forward."""

    def __init__(self) -> None:
        self.skew_ns = 0

    def now_ns(self) -> int:
        return time.time_ns() + self.skew_ns

    def advance(self, seconds: float) -> None:
        self.skew_ns += int(seconds * 1e9)


def write_config(
    directory: Path, *, rules: dict[str, Any] | None = None, server_extra: dict[str, Any] | None = None, **top: Any
) -> Path:
    """A proxy.json (mode 0600) for session ``test`` with the fake bank as server ``bank``."""
    ledger = directory / "ledger"
    server: dict[str, Any] = {
        "name": "bank",
        "command": [sys.executable, "-m", "agentrt_proxy.testing.fakebank"],
        "env": [f"FAKE_PAYMENTS_LEDGER={ledger}", f"PYTHONPATH={REPO}"],
        "manifest": "bank.manifest.json",
        "rules": DEFAULT_RULES if rules is None else rules,
    }
    server.update(server_extra or {})
    document: dict[str, Any] = {"database": "runs.db", "session": "test", "hold": "0s", "servers": [server]}
    document.update(top)
    path = directory / "proxy.json"
    path.write_text(json.dumps(document, indent=2))
    path.chmod(0o600)
    return path


async def pin(config: Config) -> None:
    for server in config.servers:
        write_manifest(server.manifest, await pin_server(server))


class _BytesIn(anyio.abc.ByteReceiveStream):
    def __init__(self, stream: MemoryObjectReceiveStream[bytes]) -> None:
        self._stream = stream

    async def receive(self, max_bytes: int = 65536) -> bytes:
        try:
            return await self._stream.receive()
        except anyio.EndOfStream:
            raise
        except anyio.ClosedResourceError:
            raise anyio.EndOfStream from None

    async def aclose(self) -> None:
        await self._stream.aclose()


class _BytesOut(anyio.abc.ByteSendStream):
    def __init__(self, stream: MemoryObjectSendStream[bytes]) -> None:
        self._stream = stream

    async def send(self, item: bytes) -> None:
        await self._stream.send(item)

    async def aclose(self) -> None:
        await self._stream.aclose()


@dataclass
class Harness:
    directory: Path
    config: Config
    clock: SkewClock
    client: ClientSession
    stderr: list[str]
    proxy: Proxy
    _to_proxy: MemoryObjectSendStream[bytes]
    _raw_waiters: dict[str, Any] = field(default_factory=dict)
    _raw_ids: Any = field(default_factory=lambda: itertools.count(1))

    # ------------------------------------------------------------------ calling

    async def call(self, name: str, arguments: dict[str, Any] | None = None, **kwargs: Any) -> types.CallToolResult:
        result = await self.client.call_tool(name, arguments or {}, **kwargs)
        assert isinstance(result, types.CallToolResult)
        return result

    async def raw_call(
        self, name: str, arguments_text: str | None, *, progress_token: str | None = None
    ) -> dict[str, Any]:
        """Send ``tools/call`` with ``arguments`` spelled exactly as given; the raw result."""
        (result,) = await self.raw_burst([(name, arguments_text)], progress_token=progress_token)
        return result

    async def raw_burst(
        self, calls: Sequence[tuple[str, str | None]], *, progress_token: str | None = None
    ) -> list[dict[str, Any]]:
        """Send every ``tools/call`` in ``calls`` in one write, as a host that pipelines them does
        (the proxy reads them all at once); their raw results, in the same order."""
        lines: list[str] = []
        waiting: list[tuple[anyio.Event, dict[str, Any]]] = []
        for name, arguments_text in calls:
            request_id = f"raw-{next(self._raw_ids)}"
            params = '{"name":' + json.dumps(name)
            if arguments_text is not None:
                params += ',"arguments":' + arguments_text
            if progress_token is not None:
                params += ',"_meta":{"progressToken":' + json.dumps(progress_token) + "}"
            line = '{"jsonrpc":"2.0","id":' + json.dumps(request_id) + ',"method":"tools/call","params":' + params
            lines.append(line + "}}\n")
            waiting.append((anyio.Event(), {}))
            self._raw_waiters[request_id] = waiting[-1]
        await self._to_proxy.send("".join(lines).encode("utf-8"))
        results: list[dict[str, Any]] = []
        with anyio.fail_after(60):  # a proxy that never answers fails the test, not hangs it
            for done, box in waiting:
                await done.wait()
                message = box["message"]
                if "error" in message:
                    raise RuntimeError(f"JSON-RPC error: {message['error']}")
                results.append(message["result"])
        return results

    # ------------------------------------------------------------- the world

    def upstream_pid(self, index: int = 0) -> int:
        """The process id of the ``index``-th stdio upstream, as the proxy runs it."""
        held = self.proxy.runtime.opened.connections[index]
        pid = held.connection._transport.pid
        assert isinstance(pid, int)
        return pid

    def payments(self) -> int:
        return fakebank.count_payments(self.directory / "ledger")

    def store(self) -> Store:
        return Store.open_readonly(str(self.config.database))

    def pending(self) -> list[Any]:
        store = self.store()
        try:
            with store.read() as conn:
                ids = [r[0] for r in conn.execute("SELECT id FROM approvals WHERE status = 'pending' ORDER BY rowid")]
            return [store.get_approval(i) for i in ids]
        finally:
            store.close()

    def approvals(self) -> list[Any]:
        store = self.store()
        try:
            with store.read() as conn:
                ids = [r[0] for r in conn.execute("SELECT id FROM approvals ORDER BY rowid")]
            return [store.get_approval(i) for i in ids]
        finally:
            store.close()

    def runs(self) -> list[Any]:
        store = self.store()
        try:
            return [summary.run for summary in reversed(store.list_runs(1000))]
        finally:
            store.close()

    def events(self, run_id: str) -> list[str]:
        store = self.store()
        try:
            return [e.type for e in store.events_of(run_id, 0, 1000)]
        finally:
            store.close()

    def decide(self, approval_id: str, *, approve: bool, note: str = "") -> None:
        """Decide as ``agentrt-proxy approve`` does: bound to the hash of the row as read now."""
        store = Store.open(str(self.config.database))
        try:
            approval = store.get_approval(approval_id)
            decide = approvals.approve_shown if approve else approvals.reject_shown
            decide(store, approval.run_id, approval.id, approval.hash, "tester", note, self.clock.now_ns())
        finally:
            store.close()

    def approve(self, approval_id: str, note: str = "") -> None:
        self.decide(approval_id, approve=True, note=note)

    def reject(self, approval_id: str, note: str = "") -> None:
        self.decide(approval_id, approve=False, note=note)


def draw_run_ids(h: Harness, run_ids: list[str]) -> list[str]:
    """Make the proxy draw exactly these run ids, in order (a collision on demand); a draw
    past the end fails the call. Answers the ids drawn so far, as drawing goes on."""
    drawn: list[str] = []

    def next_id() -> str:
        drawn.append(run_ids[len(drawn)])
        return drawn[-1]

    h.proxy.runtime.rules.beginning.draw_run_id = next_id  # type: ignore[method-assign]
    return drawn


def text_of(result: types.CallToolResult | dict[str, Any]) -> str:
    if isinstance(result, dict):
        return "".join(block.get("text", "") for block in result["content"])
    return "".join(getattr(block, "text", "") for block in result.content)


def is_error(result: types.CallToolResult | dict[str, Any]) -> bool:
    if isinstance(result, dict):
        return bool(result.get("isError"))
    return bool(result.is_error)


@asynccontextmanager
async def proxy_harness(
    directory: Path, *, pin_first: bool = True, supervision: Any = None, ticker: Any = None, **config_fields: Any
) -> AsyncIterator[Harness]:
    """Pin the fake bank, start the proxy in-process and connect the SDK client to it.

    ``supervision`` (``upstream.Supervision``) replaces the restart backoff of the servers;
    ``ticker`` (``tests/task_ticks.ManualTicker``) the real pace of the tasks' waits."""
    config_path = write_config(directory, **config_fields)
    config = load_config(config_path)
    if pin_first:
        await pin(config)
    clock = SkewClock()
    stderr: list[str] = []

    async def opener(cfg: Config, write_stderr: Any, shutting_down: anyio.Event, **links: Any) -> Any:
        return await open_runtime(
            cfg,
            write_stderr,
            shutting_down,
            clock=clock,
            hold_poll=0.02,
            supervision=supervision,
            ticker=ticker or REAL_TICKER,
            **links,
        )

    proxy = Proxy(config, stderr.append, opener=opener)
    to_proxy_send, to_proxy_receive = anyio.create_memory_object_stream[bytes](100)
    from_proxy_send, from_proxy_receive = anyio.create_memory_object_stream[bytes](100)
    client_read_send, client_read = anyio.create_memory_object_stream[SessionMessage | Exception](100)
    client_write, client_write_receive = anyio.create_memory_object_stream[SessionMessage](100)
    session = ServerSession(_BytesIn(to_proxy_receive), _BytesOut(from_proxy_send), proxy, SERVER_INFO)
    waiters: dict[str, Any] = {}

    async def pump_to_proxy() -> None:
        async for message in client_write_receive:
            data = message.message.model_dump_json(by_alias=True, exclude_unset=True) + "\n"
            try:
                await to_proxy_send.send(data.encode("utf-8"))
            except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                return  # the proxy stopped (it could not open, or the test ended)

    async def pump_from_proxy() -> None:
        buffer = b""
        async for chunk in from_proxy_receive:
            buffer += chunk
            while b"\n" in buffer:
                line, buffer = buffer.split(b"\n", 1)
                decoded = json.loads(line)
                request_id = decoded.get("id")
                if isinstance(request_id, str) and request_id in waiters:
                    done, box = waiters.pop(request_id)
                    box["message"] = decoded
                    done.set()
                    continue
                if isinstance(request_id, str) and request_id.startswith("raw-"):
                    continue
                message = types.jsonrpc_message_adapter.validate_json(line, by_name=False)
                await client_read_send.send(SessionMessage(message))

    async with anyio.create_task_group() as tg:
        tg.start_soon(functools.partial(run_session, proxy, session, handle_signals=False))
        tg.start_soon(pump_to_proxy)
        tg.start_soon(pump_from_proxy)
        async with ClientSession(client_read, client_write) as client:
            await client.initialize()
            await proxy.ready.wait()  # upstreams listed and the store open: the database can be read
            harness = Harness(directory, config, clock, client, stderr, proxy, to_proxy_send)
            harness._raw_waiters = waiters
            try:
                yield harness
            finally:
                await to_proxy_send.aclose()  # the host's end of stdin: drain and close
                with anyio.fail_after(30):
                    await proxy.idle.wait()
        tg.cancel_scope.cancel()
