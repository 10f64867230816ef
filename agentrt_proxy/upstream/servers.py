"""Connecting to the pinned servers: listing one for ``pin``, opening all of them as serving does.

``check`` and serving (``proxy.runtime``) open every server with ``open_servers``, loading each
against its manifest and rules (spec §1.11, §2.12).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import functools
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import anyio

from agentrt_proxy.canonical import schema_form
from agentrt_proxy.canonical.durations import format_time
from agentrt_proxy.config import DEFAULT_MAX_RESULT_BYTES, Config, ConfigError, ServerConfig, check_reach
from agentrt_proxy.errors import ConfigurationError
from agentrt_proxy.text import escaping
from agentrt_proxy.upstream.display import display_of
from agentrt_proxy.upstream.loaded_tool import LoadedTool
from agentrt_proxy.upstream.manifest import ManifestError, read_manifest
from agentrt_proxy.upstream.pins import LiveTool, Manifest, PinnedTool, live_tool, pin_tool
from agentrt_proxy.upstream.registry import Connection, ListingFn, LoadError, Report, load

Connector = Callable[[ServerConfig], ListingFn]


class OpenError(ConfigurationError):
    """The configured servers cannot be served: the reach check refused one, a manifest or a load
    failed, a server could not be connected, or two register one name. Each is the operator's to
    fix in the configuration, a pin or the server's entry; ``reports`` holds every report the
    loads produced."""

    def __init__(self, message: str, reports: Sequence[Report] = ()) -> None:
        super().__init__(message)
        self.reports = list(reports)


class HeldConnection:
    """One upstream connection kept open by a task of its own.

    The wire layer's ``open_connection`` is a context manager whose task group must be
    left by the task that entered it, while the proxy opens servers in one task and
    closes them from another. So each connection lives in its own asyncio task (the
    project runs anyio on asyncio), which enters the context, hands the connection over
    and waits to be released.
    """

    def __init__(self, server: ServerConfig, max_result_bytes: int = DEFAULT_MAX_RESULT_BYTES) -> None:
        self.server = server
        self.max_result_bytes = max_result_bytes
        self.connection: Any = None
        self.error: BaseException | None = None
        self._ready = anyio.Event()
        self._release = anyio.Event()
        self._done = anyio.Event()
        self._task: asyncio.Task[None] | None = None

    async def open(self, timeout_ns: int) -> None:
        """Connect, initialize and list within ``timeout_ns``; raise the wire's error."""
        self._task = asyncio.get_running_loop().create_task(self._hold(timeout_ns))
        try:
            await self._ready.wait()
        except BaseException:
            await self.aclose()
            raise
        if self.error is not None:
            raise self.error

    async def _hold(self, timeout_ns: int) -> None:
        # Lazy: the gate and the operator's commands import upstream for ToolSpec and never connect.
        from agentrt_proxy.mcp.client import open_connection
        from agentrt_proxy.mcp.spec import ServerSpec

        spec = ServerSpec(
            name=self.server.name,
            command=tuple(self.server.command or ()),
            endpoint=self.server.endpoint,
            env=tuple(self.server.env),
            inherit_env=tuple(self.server.inherit_env),
            headers=dict(self.server.headers),
            connect_timeout_ns=self.server.connect_timeout,
        )
        try:
            async with open_connection(
                spec, timeout_ns=timeout_ns, max_content_bytes=self.max_result_bytes
            ) as connection:
                self.connection = connection
                self._ready.set()
                await self._release.wait()
        except BaseException as err:  # handed to whoever waits in open()
            self.error = err
        finally:
            self._ready.set()
            self._done.set()

    @property
    def tools(self) -> list[LiveTool]:
        return [
            dataclasses.replace(
                live_tool(tool.name, tool.description, tool.annotations, tool.input_schema_raw or ""),
                display=display_of(tool.decoded),
            )
            for tool in self.connection.tools
        ]

    async def call_tool(self, name: str, arguments_text: str, timeout_ns: int) -> Any:
        return await self.connection.call_tool(name, arguments_text, timeout_ns)

    async def aclose(self) -> None:
        """Release the connection and wait until its server is closed; safe twice."""
        self._release.set()
        if self._task is not None:
            with anyio.CancelScope(shield=True):
                await self._done.wait()


def default_connector(server: ServerConfig, *, max_result_bytes: int = DEFAULT_MAX_RESULT_BYTES) -> ListingFn:
    """Open ``server`` over its transport and list its tools (the wire layer in ``mcp/``); a
    result is capped at ``max_result_bytes`` (``open_servers`` passes the configuration's)."""

    async def connect(timeout: float) -> tuple[Connection, list[LiveTool]]:
        held = HeldConnection(server, max_result_bytes)
        await held.open(round(timeout * 1e9))
        return held, held.tools

    return connect


async def pin_server(server: ServerConfig, *, connector: Connector = default_connector) -> Manifest:
    """Connect, list (bounded by the connect timeout) and record what the server presents."""
    connection, listing = await connector(server)(server.connect_timeout / 1e9)
    try:
        tools: dict[str, PinnedTool] = {}
        for tool in listing:
            try:
                tools[tool.name] = pin_tool(tool)
            except schema_form.SchemaFormError as err:
                raise LoadError(
                    f"mcp: server {escaping.go_quote(server.name)}: list tools: tool {escaping.go_quote(tool.name)}: "
                    f"input schema: {err}"
                ) from None
    finally:
        with anyio.CancelScope(shield=True), contextlib.suppress(Exception):
            await connection.aclose()
    return Manifest(server=server.name, pinned_at=format_time(time.time_ns()), tools=tools)


# ---------------------------------------------------------------------------- open_servers


@dataclass
class OpenServers:
    """Every server connected and loaded: the tools in host-visible order, the reports."""

    tools: list[LoadedTool] = field(default_factory=list)
    reports: list[Report] = field(default_factory=list)
    connections: list[Connection] = field(default_factory=list)

    def by_name(self) -> dict[str, LoadedTool]:
        return {tool.name: tool for tool in self.tools}

    async def aclose(self) -> None:
        await _close_all(self.connections)


async def _close_all(connections: Sequence[Connection]) -> None:
    with anyio.CancelScope(shield=True):
        async with anyio.create_task_group() as group:
            for connection in connections:
                group.start_soon(_close_one, connection)


async def _close_one(connection: Connection) -> None:
    with contextlib.suppress(Exception):
        await connection.aclose()


@dataclass
class _Outcome:
    connection: Connection | None = None
    tools: list[LoadedTool] = field(default_factory=list)
    report: Report | None = None
    error: str | None = None


async def _open_one(config: Config, server: ServerConfig, connector: Connector, outcome: _Outcome) -> None:
    try:
        manifest = await anyio.to_thread.run_sync(read_manifest, server.manifest)
    except ManifestError as err:
        outcome.error = f"server {escaping.go_quote(server.name)}: manifest: {err}"
        return
    try:
        connection, tools, report = await load(server, manifest, connector(server), repeat_window=config.repeat_window)
    except LoadError as err:
        outcome.error, outcome.report = str(err), err.report
        return
    except Exception as err:  # a connect or listing failure, already naming the server
        outcome.error = str(err) or f"mcp: server {escaping.go_quote(server.name)}: {type(err).__name__}"
        return
    outcome.connection, outcome.tools, outcome.report = connection, tools, report


def _cross_check(config: Config, outcomes: Sequence[_Outcome], status_tool_name: str) -> list[LoadedTool]:
    """Registration across servers: the status tool's name and every name once."""
    tools: list[LoadedTool] = []
    seen: set[str] = set()
    for server, outcome in zip(config.servers, outcomes, strict=True):
        for tool in outcome.tools:
            if tool.name == status_tool_name:
                raise OpenError(
                    f"server {escaping.go_quote(server.name)} registers tool {escaping.go_quote(tool.remote)} under "
                    f"{escaping.go_quote(tool.name)}, the status tool's name: "
                    "rename one (status_tool or the rule's rename)"
                )
            if tool.name in seen:
                raise OpenError(
                    f"server {escaping.go_quote(server.name)} registers {escaping.go_quote(tool.name)}, "
                    "which another server already registered"
                )
            seen.add(tool.name)
            tools.append(tool)
    return tools


async def open_servers(
    config: Config,
    *,
    status_tool_name: str | None = None,
    connector: Connector = default_connector,
) -> OpenServers:
    """The serve-time Open minus the store (spec §2.12): the reach check, then every server
    connected and loaded concurrently, each inside its own connect timeout.

    Raises ``OpenError`` (with every report produced) after closing whatever opened.
    """
    try:
        check_reach(config)
    except ConfigError as err:
        raise OpenError(str(err)) from None
    if connector is default_connector:  # the real wire: capped as the configuration says
        connector = functools.partial(default_connector, max_result_bytes=config.max_result_bytes)
    outcomes = [_Outcome() for _ in config.servers]
    try:
        async with anyio.create_task_group() as group:
            for server, outcome in zip(config.servers, outcomes, strict=True):
                group.start_soon(_open_one, config, server, connector, outcome)
    except BaseException:
        await _close_all([o.connection for o in outcomes if o.connection is not None])
        raise
    opened = OpenServers(
        reports=[o.report for o in outcomes if o.report is not None],
        connections=[o.connection for o in outcomes if o.connection is not None],
    )
    try:
        failed = next((o.error for o in outcomes if o.error is not None), None)
        if failed is not None:
            raise OpenError(failed)
        opened.tools = _cross_check(config, outcomes, status_tool_name or config.status_tool)
    except OpenError as err:
        await opened.aclose()
        err.reports = opened.reports
        raise
    return opened


# ------------------------------------------------------------------------------- commands
