"""A hand-written host for tasks (the SDKs implement no task client yet): JSON lines over the
real program's pipes, in either era, requests matched to answers by id, notifications kept."""

from __future__ import annotations

import itertools
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress
from pathlib import Path
from subprocess import PIPE
from typing import Any

import anyio
import anyio.abc

from agentrt_proxy.mcp._framing import LineBuffer

MODERN = "2026-07-28"
TASKS = "io.modelcontextprotocol/tasks"


def envelope(*, tasks: bool = True) -> dict[str, Any]:
    capabilities: dict[str, Any] = {"extensions": {TASKS: {}}} if tasks else {}
    return {
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": capabilities,
        "io.modelcontextprotocol/clientInfo": {"name": "hand-written-host", "version": "1"},
    }


class RawHost:
    """One proxy process; ``request`` sends and waits for the answer with the same id."""

    def __init__(self, process: anyio.abc.Process, era: str, tasks: bool) -> None:
        self.process = process
        self.era = era  # "modern" or "2025-11-25"
        self.tasks = tasks
        self.notifications: list[dict[str, Any]] = []
        self.sent: list[dict[str, Any]] = []  # every message this host wrote, in order
        self._ids = itertools.count(1)
        self._waiting: dict[Any, tuple[anyio.Event, dict[str, Any]]] = {}
        self.news = anyio.Event()
        self.initialized: dict[str, Any] = {}  # the handshake era's initialize result

    async def _read(self) -> None:
        lines = LineBuffer()  # linear in a line's length: an answer may be tens of MiB
        assert self.process.stdout is not None
        with suppress(anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
            async for chunk in self.process.stdout:
                for line in lines.feed(chunk):
                    message = json.loads(line)
                    if "id" in message and message["id"] in self._waiting and "method" not in message:
                        done, box = self._waiting.pop(message["id"])
                        box["message"] = message
                        done.set()
                    elif "method" in message:
                        self.notifications.append(message)
                        self.news.set()
                        self.news = anyio.Event()

    async def send(self, message: dict[str, Any]) -> None:
        assert self.process.stdin is not None
        self.sent.append(message)
        await self.process.stdin.send((json.dumps(message) + "\n").encode())

    def params(self, params: dict[str, Any]) -> dict[str, Any]:
        if self.era == "modern":
            meta = {**params.get("_meta", {}), **envelope(tasks=self.tasks)}
            return {**params, "_meta": meta}
        return params

    async def start(self, method: str, params: dict[str, Any] | None = None) -> tuple[Any, anyio.Event, dict[str, Any]]:
        request_id = next(self._ids)
        done = anyio.Event()
        box: dict[str, Any] = {}
        self._waiting[request_id] = (done, box)
        await self.send({"jsonrpc": "2.0", "id": request_id, "method": method, "params": self.params(params or {})})
        return request_id, done, box

    async def request(self, method: str, params: dict[str, Any] | None = None, timeout: float = 30) -> dict[str, Any]:
        """The whole answer (``result`` or ``error``)."""
        _, done, box = await self.start(method, params)
        with anyio.fail_after(timeout):
            await done.wait()
        answer: dict[str, Any] = box["message"]
        return answer

    async def result(self, method: str, params: dict[str, Any] | None = None, timeout: float = 30) -> dict[str, Any]:
        answer = await self.request(method, params, timeout)
        assert "result" in answer, answer
        result: dict[str, Any] = answer["result"]
        return result

    async def call(self, name: str, arguments: dict[str, Any], **extra: Any) -> dict[str, Any]:
        return await self.result("tools/call", {"name": name, "arguments": arguments, **extra})

    async def get(self, task_id: str) -> dict[str, Any]:
        return await self.result("tasks/get", {"taskId": task_id})

    async def until_terminal(self, task_id: str, timeout: float = 30) -> dict[str, Any]:
        """Poll ``tasks/get`` as a host does, until the task ends."""
        with anyio.fail_after(timeout):
            while True:
                task = await self.get(task_id)
                if task["status"] in ("completed", "failed", "cancelled"):
                    return task
                await anyio.sleep(0.1)

    def sent_requests(self, method: str) -> int:
        """How many requests of ``method`` this host sent (the effect a task saves: a re-call)."""
        return sum(1 for m in self.sent if m.get("method") == method and "id" in m)

    def notified(self, method: str) -> list[dict[str, Any]]:
        """The ``params`` of every notification of ``method`` received so far."""
        return [m.get("params", {}) for m in self.notifications if m["method"] == method]

    async def until_notified(self, what: str, predicate: Any, timeout: float = 30) -> dict[str, Any]:
        """The first notification's params for which ``predicate(message)`` holds, waiting for it."""
        with anyio.move_on_after(timeout):
            while True:
                for message in self.notifications:
                    if predicate(message):
                        params: dict[str, Any] = message.get("params", {})
                        return params
                await self.news.wait()  # no await between the look and the wait: none is missed
        raise AssertionError(f"timed out waiting for {what}; received {self.notifications}")

    def kill(self) -> None:
        if self.process.returncode is None:
            with suppress(ProcessLookupError):
                self.process.kill()


@asynccontextmanager
async def raw_host(argv: list[str], config: Path, env: dict[str, str], *, era: str = "modern", tasks: bool = True,
                   name: str = "raw") -> AsyncIterator[RawHost]:
    """``serve -config`` as a child, with a hand-written host of ``era`` ("modern" or "2025-11-25")."""
    stderr_path = config.parent / f"{name}.stderr"
    with stderr_path.open("wb") as stderr_file:
        process = await anyio.open_process([*argv, "serve", "-config", str(config)], stdin=PIPE, stdout=PIPE,
                                           stderr=stderr_file, env=env, cwd=str(config.parent))
    host = RawHost(process, era, tasks)
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(host._read)
            if era != "modern":
                host.initialized = await host.result("initialize", {"protocolVersion": era, "capabilities": {},
                                                 "clientInfo": {"name": "hand-written-host", "version": "1"}})
                await host.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
            try:
                yield host
            finally:
                host.kill()
                tg.cancel_scope.cancel()
    finally:
        host.kill()
        with anyio.CancelScope(shield=True), anyio.move_on_after(5):
            await process.wait()
