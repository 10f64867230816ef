"""Manifests, ``pin`` and ``check``, and opening every upstream server as serving does.

``pin`` records what each server presents (spec §1.9) into its manifest; ``check`` and
the serve layer's ``open_servers`` load every server against its manifest and rules
(spec §1.11, §2.12). The manifest is read through the ownership check, refuses a
repeated key and ignores fields it does not know.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

import anyio

from . import canonical, prose, schema_form
from .canonical import JSONBoundaryError, Number
from .config import Config, ConfigError, ServerConfig, check_database_file, check_reach, load_config, read_owned
from .durations import format_time
from .flags import UsageError, parse
from .tools import (
    Connection,
    ListingFn,
    LiveTool,
    LoadedTool,
    LoadError,
    Manifest,
    PinnedTool,
    Report,
    hints_text,
    live_tool,
    load,
    normalise_annotations,
    pin_tool,
)

__all__ = [
    "ManifestError",
    "OpenError",
    "OpenServers",
    "check_command",
    "manifest_text",
    "open_servers",
    "pin_command",
    "pin_server",
    "read_manifest",
    "write_manifest",
]

PROGRAM = "agentrt-proxy"
NAME_COLUMNS = 28
HINT_COLUMNS = 26
DESCRIPTION_BYTES = 72
_HTML_ESCAPES = {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026"}

Connector = Callable[[ServerConfig], ListingFn]


class ManifestError(Exception):
    """A manifest that cannot be read or used; the message names the file."""


class OpenError(Exception):
    """Opening the servers failed; ``reports`` holds every report the loads produced."""

    def __init__(self, message: str, reports: Sequence[Report] = ()) -> None:
        super().__init__(message)
        self.reports = list(reports)


# ---------------------------------------------------------------------------- the manifest


def _encode_string(text: str) -> str:
    encoded = schema_form.encode_string(text)
    for char, escape in _HTML_ESCAPES.items():
        encoded = encoded.replace(char, escape)
    return encoded


def _indent(value: Any, prefix: str, out: list[str]) -> None:
    """Go's ``MarshalIndent`` with two spaces: keys in the given order, literals kept."""
    inner = prefix + "  "
    if isinstance(value, dict) and value:
        out.append("{\n")
        for index, (key, item) in enumerate(value.items()):
            out.append(f"{inner}{_encode_string(key)}: ")
            _indent(item, inner, out)
            out.append(",\n" if index < len(value) - 1 else "\n")
        out.append(prefix + "}")
    elif isinstance(value, list) and value:
        out.append("[\n")
        for index, item in enumerate(value):
            out.append(inner)
            _indent(item, inner, out)
            out.append(",\n" if index < len(value) - 1 else "\n")
        out.append(prefix + "]")
    elif isinstance(value, dict):
        out.append("{}")
    elif isinstance(value, list):
        out.append("[]")
    elif isinstance(value, Number):
        out.append(str(value))
    elif isinstance(value, str):
        out.append(_encode_string(value))
    else:
        out.append(canonical.policy_text(value))


def _schema_tree(form: bytes) -> Any:
    import json

    return json.loads(form.decode("utf-8"), parse_int=Number, parse_float=Number)


def manifest_text(manifest: Manifest) -> str:
    """The manifest file's text: spec §1.9's shape, indented two spaces, newline-terminated."""
    tools: dict[str, Any] = {}
    for name in sorted(manifest.tools):
        tool = manifest.tools[name]
        entry: dict[str, Any] = {
            "name": tool.name,
            "description": tool.description,
            "input_schema": _schema_tree(tool.input_schema),
            "schema_hash": tool.schema_hash,
            "description_hash": tool.description_hash,
        }
        if tool.annotations is not None:
            entry["annotations"] = tool.annotations
        tools[name] = entry
    out: list[str] = []
    _indent({"server": manifest.server, "pinned_at": manifest.pinned_at, "tools": tools}, "", out)
    return "".join(out) + "\n"


def write_manifest(path: Path | str, manifest: Manifest) -> None:
    """Write atomically (a temporary file renamed over the old one), mode 0600."""
    target = Path(path)
    try:
        fd, temporary = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    except OSError as err:
        raise ManifestError(f"manifest {target}: {err.strerror}") from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as file:
            file.write(manifest_text(manifest))
            file.flush()
            os.fchmod(file.fileno(), 0o600)
            os.fsync(file.fileno())
        os.replace(temporary, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
    os.chmod(target, 0o600)


def read_manifest(path: Path | str) -> Manifest:
    """Read a manifest through the ownership check; unknown fields are ignored."""
    try:
        data = read_owned(path)
    except ConfigError as err:
        raise ManifestError(str(err)) from None
    try:
        tree = canonical.parse_strict(data)
    except JSONBoundaryError as err:
        raise ManifestError(f"{path}: not usable JSON: {err.reason}") from None
    return _manifest_from(tree, str(path))


def _string(value: Any, where: str, path: str, *, required: bool = True) -> str:
    if value is None and not required:
        return ""
    if not isinstance(value, str) or isinstance(value, Number):
        raise ManifestError(f"{path}: {where} must be a string")
    return value


def _manifest_from(tree: Any, path: str) -> Manifest:
    if not isinstance(tree, dict):
        raise ManifestError(f"{path}: a manifest is a JSON object")
    server = _string(tree.get("server"), "server", path, required=False)
    pinned_at = _string(tree.get("pinned_at"), "pinned_at", path, required=False)
    tools_value = tree.get("tools")
    if tools_value is None:
        tools_value = {}
    if not isinstance(tools_value, dict):
        raise ManifestError(f"{path}: tools must be an object of tool name to pinned tool")
    tools = {name: _pinned_from(name, entry, path) for name, entry in tools_value.items()}
    return Manifest(server=server, pinned_at=pinned_at, tools=tools)


def _pinned_from(key: str, entry: Any, path: str) -> PinnedTool:
    where = f"tools[{prose.go_quote(key)}]"
    if not isinstance(entry, dict):
        raise ManifestError(f"{path}: {where} must be an object")
    annotations = entry.get("annotations")
    if annotations is not None and not isinstance(annotations, dict):
        raise ManifestError(f"{path}: {where}.annotations must be an object")
    schema = entry.get("input_schema")
    return PinnedTool(
        name=key,
        description=_string(entry.get("description"), f"{where}.description", path, required=False),
        input_schema=schema_form.canonical_schema(canonical.policy_text(schema)),
        schema_hash=_string(entry.get("schema_hash"), f"{where}.schema_hash", path, required=False),
        description_hash=_string(entry.get("description_hash"), f"{where}.description_hash", path, required=False),
        annotations=normalise_annotations(annotations) if annotations is not None else None,
    )


# -------------------------------------------------------------------------- connecting


class HeldConnection:
    """One upstream connection kept open by a task of its own.

    The wire layer's ``open_connection`` is a context manager whose task group must be
    left by the task that entered it, while the serve layer opens servers in one task and
    closes them from another. So each connection lives in its own asyncio task (the
    project runs anyio on asyncio), which enters the context, hands the connection over
    and waits to be released.
    """

    def __init__(self, server: ServerConfig) -> None:
        self.server = server
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
        from .mcp.client import open_connection
        from .mcp.spec import ServerSpec

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
            async with open_connection(spec, timeout_ns=timeout_ns) as connection:
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
            live_tool(tool.name, tool.description, tool.annotations, tool.input_schema_raw or "")
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


def default_connector(server: ServerConfig) -> ListingFn:
    """Open ``server`` over its transport and list its tools (the wire layer in ``mcp/``)."""

    async def connect(timeout: float) -> tuple[Connection, list[LiveTool]]:
        held = HeldConnection(server)
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
                    f"mcp: server {prose.go_quote(server.name)}: list tools: tool {prose.go_quote(tool.name)}: "
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
        outcome.error = f"server {prose.go_quote(server.name)}: manifest: {err}"
        return
    try:
        connection, tools, report = await load(server, manifest, connector(server), repeat_window=config.repeat_window)
    except LoadError as err:
        outcome.error, outcome.report = str(err), err.report
        return
    except Exception as err:  # a connect or listing failure, already naming the server
        outcome.error = str(err) or f"mcp: server {prose.go_quote(server.name)}: {type(err).__name__}"
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
                    f"server {prose.go_quote(server.name)} registers tool {prose.go_quote(tool.remote)} under "
                    f"{prose.go_quote(tool.name)}, the status tool's name: "
                    "rename one (status_tool or the rule's rename)"
                )
            if tool.name in seen:
                raise OpenError(
                    f"server {prose.go_quote(server.name)} registers {prose.go_quote(tool.name)}, "
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


def _config_path(argv: list[str]) -> str:
    flags = parse(argv, options=("config",))
    path = flags.get("config")
    if not path or flags.positionals:
        raise UsageError("-config <file> is required and nothing follows it")
    return path


def _fail(err: BaseException | str, stderr: TextIO) -> int:
    if isinstance(err, BrokenPipeError):
        raise err  # the reader stopped reading; the command frame ends quietly
    stderr.write(prose.sanitize(f"{PROGRAM}: error: {err}") + "\n")
    return 1


def pin_line(tool: PinnedTool) -> str:
    description = prose.clean(" ".join(tool.description.split()), DESCRIPTION_BYTES)
    name = prose.sanitize(tool.name)
    return f"  {name:<{NAME_COLUMNS}} {hints_text(tool.annotations):<{HINT_COLUMNS}} {description}"


async def _pin_all(config: Config, config_path: str, stdout: TextIO, connector: Connector) -> None:
    for server in config.servers:
        manifest = await pin_server(server, connector=connector)
        await anyio.to_thread.run_sync(write_manifest, server.manifest, manifest)
        stdout.write(
            f"server {prose.sanitize(server.name)}: {len(manifest.tools)} tools pinned in {server.manifest}, "
            "with the server's own hints, which classify nothing:\n"
        )
        for name in sorted(manifest.tools):
            stdout.write(pin_line(manifest.tools[name]) + "\n")
        stdout.flush()
    stdout.write(f"classify the tools in the configuration's rules, then: {PROGRAM} check -config {config_path}\n")


def pin_command(
    argv: list[str],
    *,
    stdout: TextIO | None = None,
    stderr: TextIO | None = None,
    connector: Connector = default_connector,
) -> int:
    """``pin -config FILE``: record every server's tools into its manifest (no reach check)."""
    out, err_out = stdout or sys.stdout, stderr or sys.stderr
    config_path = _config_path(argv)
    try:
        config = load_config(config_path)
        anyio.run(_pin_all, config, config_path, out, connector)
    except (ConfigError, LoadError, ManifestError, OSError) as err:
        return _fail(err, err_out)
    except Exception as err:  # a connect or listing failure from the wire layer
        return _fail(err, err_out)
    return 0


async def _check(config: Config, stdout: TextIO, connector: Connector) -> None:
    try:
        opened = await open_servers(config, connector=connector)
    except OpenError as err:
        _write_reports(err.reports, stdout)
        raise
    try:
        _write_reports(opened.reports, stdout)
    finally:
        await opened.aclose()


def _write_reports(reports: Sequence[Report], stdout: TextIO) -> None:
    for report in reports:
        for line in report.lines():
            stdout.write(line + "\n")


def check_command(
    argv: list[str],
    *,
    stdout: TextIO | None = None,
    stderr: TextIO | None = None,
    connector: Connector = default_connector,
) -> int:
    """``check -config FILE``: load everything as serving would and report what is offered.

    Unlike the original, it does not create or migrate the database: it checks the file
    as serving would before opening it, and leaves it as it found it.
    """
    out, err_out = stdout or sys.stdout, stderr or sys.stderr
    config_path = _config_path(argv)
    try:
        config = load_config(config_path)
        check_database_file(config.database)
        anyio.run(_check, config, out, connector)
    except (ConfigError, OpenError) as err:
        out.flush()
        return _fail(err, err_out)
    except Exception as err:  # never a traceback: one line naming what failed
        out.flush()
        return _fail(err, err_out)
    out.write(f"status tool: {config.status_tool}\n")
    out.write(f"session: {config.session}\n")
    out.write(f"database: {config.database}\n")
    return 0
