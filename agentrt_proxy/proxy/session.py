"""``agentrt-proxy serve`` once started (``serve.command``): one MCP host over stdin and stdout.

``initialize`` is answered at once; the upstream servers connect and the store opens
concurrently, and ``tools/list`` answers as soon as every upstream has listed. Each
``tools/call`` goes through the rules across calls (``_calls.py``) and the gate. On stdin's
end, SIGINT or SIGTERM the proxy accepts no more calls, lets the calls in flight finish and
be recorded, closes its upstreams and exits 0.
"""

from __future__ import annotations

import signal
import sys
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import anyio.abc

from agentrt_proxy import __version__
from agentrt_proxy.config import Config, ConfigError
from agentrt_proxy.errors import AgentrtError
from agentrt_proxy.mcp import CallContext, JsonRpcError, ServerSession, open_stdio
from agentrt_proxy.proxy._host_link import HostLink
from agentrt_proxy.text import model_text, operator_text

SERVER_INFO = {"name": "gated-tools", "version": __version__}
ANSWER_GRACE_SECONDS = 5.0  # after a signal, how long the answers in flight may take to be written
OPEN_REPORT_GRACE_SECONDS = 5.0  # after stdin's end, how long an opening still in progress may take


class Proxy:
    """The host-facing handler: lists the offered tools and puts every call through the gate."""

    def __init__(self, config: Config, stderr: Callable[[str], Any] = sys.stderr.write,
                 opener: Callable[..., Awaitable[Any]] | None = None) -> None:
        self.config = config
        self.opener = opener
        self.write_stderr = stderr
        self.ready = anyio.Event()
        self.failed: str | None = None
        self.shutting_down = anyio.Event()
        self.in_flight = 0
        self.idle = anyio.Event()
        self.idle.set()
        self.tools: list[dict[str, Any]] = []
        self.runtime: Any = None  # runtime.Runtime once open
        self.host = HostLink()  # bound to the host's session by run_session

    # ---------------------------------------------------------------- opening

    async def open(self) -> None:
        """Connect the upstreams and open the store; on failure, say why and stop serving."""
        opener = self.opener
        if opener is None:
            # Imported in a worker thread, so the event loop answers ``initialize`` meanwhile.
            # ``open_runtime`` orders the rest of the start-up: upstreams first (see there).
            opener = await anyio.to_thread.run_sync(_import_runtime)
        try:
            self.runtime = await opener(self.config, self.write_stderr, self.shutting_down, host=self.host)
        except ConfigError as err:
            self.failed = str(err)
        except (AgentrtError, OSError) as err:  # a dead server, a locked database: one line
            self.failed = f"{type(err).__name__}: {err}" if not str(err) else str(err)
        if self.failed is not None:
            self.write_stderr(operator_text.operator_error(self.failed))
        else:
            self.tools = self.runtime.host_tools()
            self.write_stderr(operator_text.operator_serving(self.config.session, str(self.config.database)))
        self.ready.set()

    async def _wait_ready(self) -> None:
        await self.ready.wait()
        if self.failed is not None:
            raise JsonRpcError(-32603, model_text.NOT_STARTED)

    # ------------------------------------------------------------ host requests

    async def list_tools(self) -> list[dict[str, Any]]:
        await self._wait_ready()
        listed = getattr(self.runtime, "listed", None)  # renewed when a server's tools change
        return listed if listed is not None else self.tools

    async def call_tool(self, name: str, arguments_text: str | None, ctx: CallContext) -> dict[str, Any]:
        if self.shutting_down.is_set():
            raise JsonRpcError(-32603, model_text.SHUTTING_DOWN)
        await self._wait_ready()
        self.in_flight += 1
        self.idle = anyio.Event() if self.in_flight == 1 else self.idle
        try:
            # The gate's work must not be cut short by the host: only the hold listens to it.
            with anyio.CancelScope(shield=True):
                result: dict[str, Any] = await self.runtime.call(name, arguments_text, ctx)
            return result
        finally:
            self.in_flight -= 1
            if self.in_flight == 0:
                self.idle.set()

    # ---------------------------- resources, prompts, completion (proxy/_passthrough)

    @property
    def methods(self) -> frozenset[str]:
        if not any(server.resources or server.prompts for server in self.config.servers):
            return frozenset()  # nothing opted in: the passthrough (and the store it imports) stays unloaded
        from agentrt_proxy.proxy._passthrough import METHODS

        return METHODS

    async def capabilities(self) -> dict[str, Any]:
        """What ``initialize`` adds: none until some server opted in; then its answer waits
        for the upstreams, since only their own capabilities say what can be offered."""
        if not self.methods:
            return {}
        await self.ready.wait()
        return self.runtime.passthrough.capabilities() if self.failed is None else {}

    async def handle(self, method: str, params: dict[str, Any]) -> Any:
        await self._wait_ready()
        return await self.runtime.passthrough.handle(method, params)

    # ---------------------------------------------- calls answered as tasks (proxy/_tasks)

    serves_tasks = True

    @property
    def stopping(self) -> anyio.Event:
        """Set when the proxy stops: a ``subscriptions/listen`` stream then closes."""
        return self.shutting_down

    async def task_request(self, era: str, method: str, params: dict[str, Any]) -> Any:
        await self._wait_ready()
        return await self.runtime.tasks.request(era, method, params)

    async def listen_tasks(
        self, task_ids: list[str], send: Callable[[str, dict[str, Any]], Awaitable[None]]
    ) -> list[str]:
        await self._wait_ready()
        agreed: list[str] = self.runtime.tasks.listen(task_ids, send)
        return agreed

    def unlisten_tasks(self, send: Callable[[str, dict[str, Any]], Awaitable[None]]) -> None:
        if self.runtime is not None:
            self.runtime.tasks.unlisten(send)

    async def drive_tasks(self) -> None:
        """The task owner's loop, for as long as the proxy serves (once it opened)."""
        await self.ready.wait()
        if self.failed is None:
            await self.runtime.tasks.run()

    # ---------------------------------------------------------------- shutdown

    async def drain(self) -> None:
        """Accept no more calls, end holds at once, and wait for the calls in flight."""
        self.shutting_down.set()
        await self.idle.wait()

    async def close(self) -> None:
        if self.runtime is not None:
            with anyio.CancelScope(shield=True):
                await self.runtime.close()


async def serve(config: Config) -> int:
    proxy = Proxy(config)
    async with open_stdio() as (receive, send):
        session = ServerSession(receive, send, proxy, SERVER_INFO)
        code = await run_session(proxy, session)
    return code


async def run_session(proxy: Proxy, session: ServerSession, *, handle_signals: bool = True) -> int:
    """Serve until stdin's end, a signal, or a failure to open; then close. The exit code."""
    code = 0
    proxy.host.bind(session)
    async with anyio.create_task_group() as tg:
        tg.start_soon(proxy.open)
        tg.start_soon(proxy.drive_tasks)

        async def on_signal() -> None:
            with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
                async for _ in signals:
                    return

        async def stop_when(trigger: Callable[[], Awaitable[None]]) -> None:
            await trigger()
            await proxy.drain()
            tg.cancel_scope.cancel()

        async def stop_on_signal() -> None:
            await on_signal()
            await proxy.drain()
            # End the input as stdin's end would, so the answers in flight are written
            # before the session stops; cancel anyway if the stream cannot end early.
            await session.end_input()
            await anyio.sleep(ANSWER_GRACE_SECONDS)
            tg.cancel_scope.cancel()

        async def stop_accepting_at_eof() -> None:
            # Stdin's end is a shutdown: no more calls, and a hold ends at once (proxy-and-mcp-module §2.6.5).
            await session.input_closed.wait()
            proxy.shutting_down.set()

        async def failure() -> None:
            await proxy.ready.wait()
            if proxy.failed is None:
                await anyio.sleep_forever()

        if handle_signals:
            tg.start_soon(stop_on_signal)
        tg.start_soon(stop_when, failure)
        tg.start_soon(stop_accepting_at_eof)
        await session.run()  # returns at stdin's end once the calls in flight are answered
        await proxy.drain()
        # A host that left at once must still learn why the proxy could not open (a missing
        # manifest, a refused server): give the opening a moment to finish and say so.
        with anyio.move_on_after(OPEN_REPORT_GRACE_SECONDS):
            await proxy.ready.wait()
        tg.cancel_scope.cancel()
    if proxy.failed is not None:
        code = 1
    await proxy.close()
    return code


def _import_runtime() -> Callable[..., Awaitable[Any]]:
    """The runtime's opener. Lazy on purpose: it imports the gate, the store and the rules."""
    from agentrt_proxy.proxy._runtime import open_runtime

    return open_runtime
