"""Connecting to the pinned servers: listing one for ``pin``, opening all of them as serving does.

``check`` and serving (``proxy._runtime``) open every server with ``open_servers``, loading each
against its manifest and rules (proxy-and-mcp-module §1.11, §2.12). Every server's tools call through its
``Supervisor`` (``upstream.supervisor``), which serving starts so that a server that goes down,
or was down at start-up, is started again.
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
from agentrt_proxy.text import escaping, load_text
from agentrt_proxy.upstream._display import display_of
from agentrt_proxy.upstream._manifest import ManifestError, read_manifest
from agentrt_proxy.upstream._registry import ListingFn, LoadError, LoadReport, UpstreamConnection, decide, load
from agentrt_proxy.upstream.loaded_tool import LoadedTool
from agentrt_proxy.upstream.notes import ServerNotes
from agentrt_proxy.upstream.pins import LiveTool, Manifest, PinnedTool, live_tool, pin_tool
from agentrt_proxy.upstream.supervisor import Supervision, Supervisor, pinned_listing

Connector = Callable[[ServerConfig], ListingFn]


class OpenError(ConfigurationError):
    """The configured servers cannot be served: the reach check refused one, a manifest or a load
    failed, a server could not be connected, or two register one name. Each is the operator's to
    fix in the configuration, a pin or the server's entry; ``reports`` holds every report the
    loads produced."""

    def __init__(self, message: str, reports: Sequence[LoadReport] = ()) -> None:
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
        self.notes: ServerNotes | None = None  # attached to every connection this server gets

    def relay(self, notes: ServerNotes) -> None:
        """Relay this server's notifications through ``notes``: now, and on every later connection
        (whoever opens a new one calls ``self.notes.attach`` on it)."""
        self.notes = notes
        if self.connection is not None:
            notes.attach(self.server.name, self.connection)

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
        from agentrt_proxy.oauth.serving import authorizer_for

        spec = ServerSpec(
            name=self.server.name,
            command=tuple(self.server.command or ()),
            endpoint=self.server.endpoint,
            env=tuple(self.server.env),
            inherit_env=tuple(self.server.inherit_env),
            headers=dict(self.server.headers),
            connect_timeout_ns=self.server.connect_timeout,
            max_message_bytes=self.server.max_message_bytes,
            forward=tuple(self.server.forward),
            auth=authorizer_for(self.server),
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

    async def relist(self, timeout_ns: int) -> list[LiveTool]:
        """List the tools again (the server said they changed): the new listing."""
        await self.connection.list_tools(timeout_ns)
        return self.tools

    async def call_tool(self, name: str, arguments_text: str, timeout_ns: int, **options: Any) -> Any:
        return await self.connection.call_tool(name, arguments_text, timeout_ns, **options)

    async def request(self, method: str, params: dict[str, Any] | None, timeout_ns: int) -> Any:
        """A request passed through (prompts and resources: ``upstream.passthrough``)."""
        return await self.connection.request(method, params, timeout_ns)

    # What the supervisor reads of the wire's session (upstream/supervisor.py).

    @property
    def alive(self) -> bool:
        return self.connection is not None and bool(self.connection.alive)

    @property
    def exit_status(self) -> int | None:
        return self.connection.exit_status if self.connection is not None else None

    @property
    def ended(self) -> str | None:
        return self.connection.ended if self.connection is not None else None

    async def aclose(self) -> None:
        """Release the connection and wait until its server is closed; safe twice."""
        self._release.set()
        if self._task is not None and not self._ready.is_set():
            self._task.cancel()  # still connecting (a restart when the proxy stops): the wire closes it
        if self._task is not None:
            with anyio.CancelScope(shield=True):
                await self._done.wait()


def default_connector(server: ServerConfig, *, max_result_bytes: int = DEFAULT_MAX_RESULT_BYTES) -> ListingFn:
    """Open ``server`` over its transport and list its tools (the wire layer in ``mcp/``); a
    result is capped at ``max_result_bytes`` (``open_servers`` passes the configuration's)."""

    async def connect(timeout: float) -> tuple[UpstreamConnection, list[LiveTool]]:
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
                    load_text.LIST_TOOLS_BAD_SCHEMA.format(
                        q_server=escaping.go_quote(server.name), q_tool=escaping.go_quote(tool.name), error=err
                    )
                ) from None
        prompts = None
        if server.prompts:
            from agentrt_proxy.upstream.passthrough_pins import pin_prompts  # only pin needs it; serving starts without

            prompts = await pin_prompts(server, connection)
    finally:
        with anyio.CancelScope(shield=True), contextlib.suppress(Exception):
            await connection.aclose()
    return Manifest(server=server.name, pinned_at=format_time(time.time_ns()), tools=tools, prompts=prompts)


# ---------------------------------------------------------------------------- open_servers


@dataclass(frozen=True)
class DownServer:
    """A server that did not answer at start-up: why, and the report of its tools as pinned."""

    server: str
    error: str
    report: LoadReport


@dataclass
class OpenServers:
    """Every server loaded: the tools in host-visible order, the reports of the servers that
    answered, the servers that did not (``keep_down``), and one supervisor per server, which
    the tools call through (``connections``, in configuration order)."""

    tools: list[LoadedTool] = field(default_factory=list)
    reports: list[LoadReport] = field(default_factory=list)
    connections: list[Supervisor] = field(default_factory=list)
    down: list[DownServer] = field(default_factory=list)

    def by_name(self) -> dict[str, LoadedTool]:
        return {tool.name: tool for tool in self.tools}

    def relay(self, notes: ServerNotes) -> None:
        """Relay every server's notifications (log messages, changed lists) through ``notes``: a
        supervisor's handlers are shared with each connection it opens, restarts included."""
        for held in self.connections:
            target = held if hasattr(held, "notification_handlers") else getattr(held, "connection", None)
            if target is not None:
                notes.attach(held.server.name, target)

    def supervise(self, supervision: Supervision) -> None:
        """Keep every server served from now on: restarted when it goes down, retried if down."""
        for supervisor in self.connections:
            supervisor.start(supervision)

    async def aclose(self) -> None:
        await _close_all(self.connections)


async def _close_all(connections: Sequence[UpstreamConnection]) -> None:
    with anyio.CancelScope(shield=True):
        async with anyio.create_task_group() as group:
            for connection in connections:
                group.start_soon(_close_one, connection)


async def _close_one(connection: UpstreamConnection) -> None:
    with contextlib.suppress(Exception):
        await connection.aclose()


@dataclass
class _Outcome:
    connection: UpstreamConnection | None = None
    manifest: Manifest | None = None
    tools: list[LoadedTool] = field(default_factory=list)
    report: LoadReport | None = None
    error: str | None = None  # fatal: the configuration's to fix
    down: str | None = None  # the server did not answer: served from its manifest (keep_down)
    refusal: str | None = None  # it refused the credentials: what a call to it answers (oauth.serving)


async def _open_one(
    config: Config, server: ServerConfig, connector: Connector, outcome: _Outcome, keep_down: bool
) -> None:
    try:
        manifest = await anyio.to_thread.run_sync(read_manifest, server.manifest)
    except ManifestError as err:
        outcome.error = load_text.SERVER_MANIFEST_ERROR.format(q_server=escaping.go_quote(server.name), error=err)
        return
    outcome.manifest = manifest
    try:
        connection, tools, report = await load(server, manifest, connector(server), repeat_window=config.repeat_window)
    except LoadError as err:  # the manifest, the rules or the pins: the configuration's, always fatal
        outcome.error, outcome.report = str(err), err.report
        return
    except Exception as err:  # a connect or listing failure, already naming the server
        message = str(err) or load_text.SERVER_FAILED.format(
            q_server=escaping.go_quote(server.name), kind=type(err).__name__
        )
        if keep_down:
            outcome.refusal = getattr(err, "authorization", None)
            await _offer_pinned(config, server, manifest, message, outcome)
        else:
            outcome.error = message
        return
    outcome.connection, outcome.tools, outcome.report = connection, tools, report


async def _offer_pinned(config: Config, server: ServerConfig, manifest: Manifest, down: str, outcome: _Outcome) -> None:
    """A server that did not answer: its tools decided against its pins as the listing (what it
    would list if it matched them), offered until it is up and its real listing is checked."""
    try:
        tools, report = await anyio.to_thread.run_sync(
            lambda: decide(server, manifest, pinned_listing(manifest), repeat_window=config.repeat_window)
        )
    except LoadError as err:  # the rules register nothing even as pinned: the configuration's
        outcome.error, outcome.report = str(err), err.report
        return
    outcome.tools, outcome.report, outcome.down = tools, report, down


def _cross_check(config: Config, outcomes: Sequence[_Outcome], status_tool_name: str) -> list[LoadedTool]:
    """Registration across servers: the status tool's name and every name once."""
    tools: list[LoadedTool] = []
    seen: set[str] = set()
    for server, outcome in zip(config.servers, outcomes, strict=True):
        for tool in outcome.tools:
            if tool.name == status_tool_name:
                raise OpenError(
                    load_text.STATUS_TOOL_TAKEN.format(
                        q_server=escaping.go_quote(server.name),
                        q_remote=escaping.go_quote(tool.remote),
                        q_name=escaping.go_quote(tool.name),
                    )
                )
            if tool.name in seen:
                raise OpenError(
                    load_text.NAME_REGISTERED_TWICE.format(
                        q_server=escaping.go_quote(server.name), q_name=escaping.go_quote(tool.name)
                    )
                )
            seen.add(tool.name)
            tools.append(tool)
    return tools


def _supervisors(config: Config, outcomes: Sequence[_Outcome], connector: Connector) -> list[Supervisor]:
    """One supervisor per server, each tool calling through its server's (not one connection)."""
    supervisors = []
    for server, outcome in zip(config.servers, outcomes, strict=True):
        assert outcome.manifest is not None
        supervisor = Supervisor(
            server,
            outcome.manifest,
            connector,
            repeat_window=config.repeat_window,
            offered=[tool.remote for tool in outcome.tools],
            held=outcome.connection,
            down=outcome.down,
            refusal=outcome.refusal,
            report=outcome.report,
        )
        for tool in outcome.tools:
            tool.upstream = supervisor
        supervisors.append(supervisor)
    return supervisors


async def open_servers(
    config: Config,
    *,
    status_tool_name: str | None = None,
    connector: Connector = default_connector,
    keep_down: bool = False,
) -> OpenServers:
    """The serve-time Open minus the store (proxy-and-mcp-module §2.12): the reach check, then every server
    connected and loaded concurrently, each inside its own connect timeout.

    A server that does not answer (it cannot start, its handshake or listing fails or times
    out) fails the open, unless ``keep_down``: then its tools are offered from its manifest and
    it is named in ``down`` (``serve`` retries it once ``supervise`` is called; ``check``
    reports it). What the configuration must fix is always an ``OpenError``: the reach check, a
    manifest, rules naming unpinned tools, nothing registered, a name registered twice.

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
                group.start_soon(_open_one, config, server, connector, outcome, keep_down)
    except BaseException:
        await _close_all([o.connection for o in outcomes if o.connection is not None])
        raise
    opened = OpenServers(
        reports=[o.report for o in outcomes if o.report is not None and o.down is None],
        down=[
            DownServer(server.name, o.down, o.report)
            for server, o in zip(config.servers, outcomes, strict=True)
            if o.down is not None and o.report is not None
        ],
    )
    try:
        failed = next((o.error for o in outcomes if o.error is not None), None)
        if failed is not None:
            raise OpenError(failed)
        opened.tools = _cross_check(config, outcomes, status_tool_name or config.status_tool)
    except OpenError as err:
        await _close_all([o.connection for o in outcomes if o.connection is not None])
        err.reports = opened.reports
        raise
    opened.connections = _supervisors(config, outcomes, connector)
    return opened


# ------------------------------------------------------------------------------- commands
