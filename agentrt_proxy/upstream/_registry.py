"""The registry of offered tools: one server's load (proxy-and-mcp-module §1.11).

``decide`` is the pure heart of Load: from one server's manifest, its rules and a live listing
it decides, tool by tool (``checks``), what registers, what is refused and why, and what is only
reported, and refuses a name taken twice. ``load`` wraps it around a live connection, bounded by
the server's connect timeout. A ``LoadedTool`` (``loaded_tool``) is what the proxy lists
and the gate executes.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

import anyio

from agentrt_proxy.canonical.durations import format_go
from agentrt_proxy.config import ServerConfig
from agentrt_proxy.errors import ConfigurationError
from agentrt_proxy.text import escaping, load_text, pin_text
from agentrt_proxy.upstream.checks import Context, Prepared, Refusal, build, prepare
from agentrt_proxy.upstream.loaded_tool import LoadedTool, Upstream
from agentrt_proxy.upstream.pins import LiveTool, Manifest
from agentrt_proxy.upstream.withholding import REFUSED_BY_CHECK, REFUSED_BY_SCAN

__all__ = [
    "ListingFn",
    "LoadError",
    "LoadReport",
    "RefusedTool",
    "Registered",
    "UpstreamConnection",
    "check_manifest",
    "decide",
    "load",
]


class LoadError(ConfigurationError):
    """The pinned tools do not load as the operator pinned and classified them (no manifest, one
    for another server, rules naming unpinned tools, nothing registered, the checks out of time);
    ``report`` is set when there is one to show (nothing registered)."""

    def __init__(self, message: str, report: LoadReport | None = None) -> None:
        super().__init__(message)
        self.report = report


# ------------------------------------------------------------------------------ the report


@dataclass(frozen=True)
class Registered:
    tool: str
    name: str
    side_effect: str
    hint_mismatch: str = ""


@dataclass(frozen=True)
class RefusedTool:
    tool: str
    reason: str
    kind: str = REFUSED_BY_CHECK  # the reason's name (withholding.WITHHOLDING_REASONS)


@dataclass
class LoadReport:
    """What one server's load decided; ``lines()`` is its text form, escaped for a terminal."""

    server: str
    registered: list[Registered] = field(default_factory=list)
    refused: list[RefusedTool] = field(default_factory=list)
    unpinned: list[str] = field(default_factory=list)
    unclassified: list[str] = field(default_factory=list)

    def sort(self) -> None:
        self.registered.sort(key=lambda entry: entry.tool)
        self.refused.sort(key=lambda entry: entry.tool)
        self.unpinned.sort()
        self.unclassified.sort()

    def lines(self) -> list[str]:
        s = escaping.sanitize
        server = s(self.server)
        out = []
        for reg in self.registered:
            line = load_text.REGISTERED.format(
                server=server, tool=s(reg.tool), name=s(reg.name), cls=s(reg.side_effect)
            )
            if reg.hint_mismatch:
                line += load_text.HINT_MISMATCH_ALLOWED.format(mismatch=s(reg.hint_mismatch))
            out.append(line)
        out.extend(
            load_text.REFUSED.format(server=server, tool=s(entry.tool), reason=s(entry.reason))
            for entry in self.refused
        )
        out.extend(load_text.UNCLASSIFIED.format(server=server, tool=s(tool)) for tool in self.unclassified)
        out.extend(load_text.UNPINNED.format(server=server, tool=s(tool)) for tool in self.unpinned)
        return out

    def __str__(self) -> str:
        return "".join(line + "\n" for line in self.lines())


# --------------------------------------------------------------------------------- decide


def check_manifest(server: ServerConfig, manifest: Manifest | None) -> Manifest:
    """The whole-load preconditions: a manifest for this server, rules that name pinned tools."""
    if manifest is None:
        raise LoadError(load_text.NO_MANIFEST)
    if manifest.server != server.name:
        raise LoadError(
            load_text.MANIFEST_OTHER_SERVER.format(
                q_pinned=escaping.go_quote(manifest.server), q_server=escaping.go_quote(server.name)
            )
        )
    refused = manifest.scan.refused if manifest.scan is not None else {}  # refused by the scan at pin
    stray = sorted(tool for tool in server.rules if tool not in manifest.tools and tool not in refused)
    if stray:
        raise LoadError(
            load_text.RULES_NOT_PINNED.format(q_server=escaping.go_quote(server.name), tools=", ".join(stray))
        )
    return manifest


def decide(
    server: ServerConfig,
    manifest: Manifest,
    live: Iterable[LiveTool],
    *,
    repeat_window: int,
    upstream: Upstream | None = None,
    prepared: Mapping[str, Prepared] | None = None,
) -> tuple[list[LoadedTool], LoadReport]:
    """Decide every pinned tool against the live listing (pure; proxy-and-mcp-module §1.11).

    Returns the registered tools in the server's tool-name order and the report. Raises
    ``LoadError`` (with the report) when nothing registers. ``prepared`` (``prepare`` on the
    same server and manifest) saves the checks after the hints where the schema is the pinned one.
    """
    check_manifest(server, manifest)
    listing = {tool.name: tool for tool in live}
    ctx = Context(server, repeat_window, upstream)
    report = LoadReport(server.name)
    registered: list[LoadedTool] = []
    taken: dict[str, str] = {}
    for tool_name in sorted(manifest.tools):
        rule = server.rules.get(tool_name)
        if rule is None:
            report.unclassified.append(tool_name)
            continue
        try:
            earlier = prepared.get(tool_name) if prepared is not None else None
            tool = build(ctx, manifest.tools[tool_name], rule, listing.get(tool_name), earlier)
            if tool.name in taken:
                raise Refusal(
                    pin_text.NAME_TAKEN.format(
                        name=escaping.go_quote(tool.name), remote=escaping.go_quote(taken[tool.name])
                    )
                )
        except Refusal as refusal:
            report.refused.append(RefusedTool(tool_name, str(refusal), refusal.kind))
            continue
        taken[tool.name] = tool_name
        registered.append(tool)
        report.registered.append(Registered(tool_name, tool.name, tool.side_effect, tool.hint_mismatch))
    scan_refused = manifest.scan.refused if manifest.scan is not None else {}
    for tool_name in sorted(name for name in scan_refused if not name.startswith("prompt:")):
        rules = ", ".join(sorted({f.get("rule", "?") for f in scan_refused[tool_name]}))
        reason = pin_text.SCAN_REFUSED.format(rules=rules)
        report.refused.append(RefusedTool(tool_name, reason, REFUSED_BY_SCAN))
    report.unpinned.extend(name for name in listing if name not in manifest.tools and name not in scan_refused)
    report.sort()
    if not registered and not serves_besides_tools(server, upstream):
        raise LoadError(
            load_text.NO_TOOL_REGISTERED.format(q_server=escaping.go_quote(server.name), nor_else=_nor_else(server)),
            report,
        )
    return registered, report


def capabilities_of(connection: object) -> dict[str, Any]:
    """What a server's ``initialize`` result offers (a held connection wraps the wire's)."""
    wire = getattr(connection, "connection", connection)
    found = getattr(wire, "capabilities", None)
    return found if isinstance(found, dict) else {}


def offers(connection: object, kind: str) -> bool:
    """Whether the server declared the capability ``kind`` (``resources``, ``prompts``, ``tools``)."""
    return isinstance(capabilities_of(connection).get(kind), dict)


def serves_besides_tools(server: ServerConfig, upstream: object | None) -> bool:
    """Whether a server with no tool registered still serves the host something: resources or
    prompts the operator opted into and it offers. Without a connection (the server is down,
    offered from its manifest) the opt-in is enough: what it offers is known once it is up."""
    kinds = [kind for kind, opted in (("resources", server.resources), ("prompts", server.prompts)) if opted]
    if upstream is None:
        return bool(kinds)
    return any(offers(upstream, kind) for kind in kinds)


def _nor_else(server: ServerConfig) -> str:
    opted = [kind for kind, on in (("resources", server.resources), ("prompts", server.prompts)) if on]
    return load_text.NOR_ELSE.format(kinds=" or ".join(opted)) if opted else ""


# ----------------------------------------------------------------------------------- load


class UpstreamConnection(Upstream, Protocol):
    """An upstream connection after its handshake and listing."""

    async def aclose(self) -> None: ...


ListingFn = Callable[[float], Awaitable[tuple[UpstreamConnection, list[LiveTool]]]]


async def load(
    server: ServerConfig,
    manifest: Manifest | None,
    connect: ListingFn,
    *,
    repeat_window: int,
) -> tuple[UpstreamConnection, list[LoadedTool], LoadReport]:
    """Connect, list and decide, all inside the server's connect timeout.

    ``connect(timeout_seconds)`` opens the connection and lists its tools, raising its own
    named phase errors. On any failure the connection is closed; ``LoadError.report`` is
    set only when the load got as far as deciding (nothing registered).

    The checks that need no listing (``prepare``) run in a worker thread while the server
    starts, so the listing is followed only by the checks that need it (decision 0009).
    """
    checked = check_manifest(server, manifest)
    bound = server.connect_timeout / 1e9
    deadline = time.monotonic() + bound
    prepared: dict[str, Prepared] = {}
    prepared_ready = anyio.Event()

    async def prepare_meanwhile() -> None:
        try:
            with contextlib.suppress(Exception):  # nothing prepared: decide runs every check itself
                prepared.update(
                    await anyio.to_thread.run_sync(
                        lambda: prepare(server, checked, repeat_window=repeat_window), abandon_on_cancel=True
                    )
                )
        finally:
            prepared_ready.set()

    async def connect_and_decide() -> tuple[UpstreamConnection, list[LoadedTool], LoadReport]:
        connection, listing = await connect(bound)
        try:
            remaining = deadline - time.monotonic()
            with anyio.fail_after(max(remaining, 0)):
                await prepared_ready.wait()
                tools, report = await anyio.to_thread.run_sync(
                    lambda: decide(
                        server, checked, listing, repeat_window=repeat_window, upstream=connection, prepared=prepared
                    ),
                    abandon_on_cancel=True,
                )
        except TimeoutError:
            await _close_quietly(connection)
            raise LoadError(
                load_text.LOAD_TIMED_OUT.format(
                    q_server=escaping.go_quote(server.name), after=format_go(server.connect_timeout)
                )
            ) from None
        except BaseException:
            await _close_quietly(connection)
            raise
        return connection, tools, report

    loaded: tuple[UpstreamConnection, list[LoadedTool], LoadReport] | None = None
    failure: Exception | None = None
    async with anyio.create_task_group() as group:
        group.start_soon(prepare_meanwhile)
        try:
            loaded = await connect_and_decide()
        except Exception as err:  # raised as itself below, not inside the group's ExceptionGroup
            failure = err
        group.cancel_scope.cancel()
    if failure is not None:
        raise failure
    assert loaded is not None
    return loaded


async def _close_quietly(connection: UpstreamConnection) -> None:
    with anyio.CancelScope(shield=True):
        with contextlib.suppress(Exception):  # closing must not hide why the load failed
            await connection.aclose()
