"""The scanner at pin and check (decision 0019): what a server presents, scanned, and the pin
gated by the findings.

``pin`` scans what it is about to record (every tool and prompt of the new manifest, against the
other servers' manifests for shadowing). A tool or prompt with a hard finding is left out of the
manifest's tools (so it is never offered) and recorded under the manifest's ``scan.refused``
with its findings, unless the operator named the tool and the rule in ``-override TOOL:RULE``:
then it is pinned and the finding recorded under ``scan.overridden``. Soft findings are printed.
``check`` and ``scan -config`` scan the live listings, the server's ``instructions`` included
(the proxy does not pass those to the host, so their findings refuse nothing).
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import Any

import anyio

from agentrt_proxy.canonical import schema_form
from agentrt_proxy.config import Config, ServerConfig
from agentrt_proxy.errors import UsageError
from agentrt_proxy.scan import (
    ASKS,
    Finding,
    Listing,
    instructions_definition,
    prompt_definition,
    resource_definition,
    scan,
    tool_definition,
)
from agentrt_proxy.text import escaping, load_text, operator_text
from agentrt_proxy.upstream._manifest import ManifestError, read_manifest
from agentrt_proxy.upstream.pins import LiveTool, Manifest, PinnedTool, ScanRecord

__all__ = [
    "GateOutcome",
    "explanation",
    "finding_line",
    "gate_pin",
    "live_listing",
    "manifest_listing",
    "parse_overrides",
    "scan_server",
    "unused_overrides",
]


def parse_overrides(text: str | None) -> frozenset[tuple[str, str]]:
    """``-override tool:rule[,tool:rule...]`` as (tool, rule) pairs (a prompt is ``prompt:NAME``)."""
    pairs: set[tuple[str, str]] = set()
    for item in (text or "").split(","):
        item = item.strip()
        if not item:
            continue
        tool, sep, rule = item.rpartition(":")
        if not sep or not tool or not rule:
            raise UsageError(load_text.OVERRIDE_MALFORMED.format(item=item))
        pairs.add((tool, rule))
    return frozenset(pairs)


def _tool_object(tool: PinnedTool | LiveTool) -> dict[str, Any]:
    out: dict[str, Any] = {"name": tool.name, "description": tool.description}
    if isinstance(tool, PinnedTool):
        schema_text = tool.input_schema.decode("utf-8", "replace")
    else:
        schema_text = tool.input_schema
        if tool.display.title is not None:
            out["title"] = tool.display.title
        if tool.display.output_schema is not None:
            with contextlib.suppress(ValueError):
                out["outputSchema"] = json.loads(tool.display.output_schema)
    with contextlib.suppress(ValueError):
        out["inputSchema"] = json.loads(schema_text)
    if tool.annotations:
        out["annotations"] = dict(tool.annotations)
    return out


def manifest_listing(manifest: Manifest, server: str | None = None) -> Listing:
    """What a manifest pins (tools and prompts), as the scanner reads it."""
    definitions = [tool_definition(_tool_object(tool)) for _, tool in sorted(manifest.tools.items())]
    for _, prompt in sorted((manifest.prompts or {}).items()):
        entry: dict[str, Any] = {
            "name": prompt.name,
            "description": prompt.description,
            "arguments": prompt.arguments_tree(),
        }
        if prompt.title is not None:
            entry["title"] = prompt.title
        definitions.append(prompt_definition(entry))
    return Listing(server or manifest.server, tuple(definitions))


def _listed_object(tool: Any) -> dict[str, Any] | None:
    """A listed tool as the server sent it: the wire's decoded object when there is one (every
    field a model reads), else what a ``LiveTool`` keeps."""
    decoded = getattr(tool, "decoded", None)
    if isinstance(decoded, dict):
        return decoded
    if isinstance(tool, LiveTool):
        return _tool_object(tool)
    return tool if isinstance(tool, dict) else None


def live_listing(
    server: str,
    tools: Iterable[Any],
    instructions: str | None,
    prompts: Iterable[Any] = (),
    resources: Iterable[Any] = (),
) -> Listing:
    """What a server lists now (the wire's listed tools, ``LiveTool`` or decoded objects), its
    instructions, its prompts and its resources and templates, as the scanner reads them."""
    objects = [_listed_object(tool) for tool in tools]
    definitions = [tool_definition(obj) for obj in objects if obj is not None]
    if instructions:
        definitions.append(instructions_definition(instructions))
    definitions.extend(prompt_definition(p) for p in prompts if isinstance(p, dict))
    definitions.extend(resource_definition(r) for r in resources if isinstance(r, dict))
    return Listing(server, tuple(definitions))


def explanation(finding: Finding) -> str:
    """What the finding's text asks the model to do, in one line (decision 0022)."""
    ask = finding.ask or ASKS.get(finding.rule, "")
    return operator_text.scan_explanation(finding.rule, finding.severity, ask, finding.target)


def finding_line(finding: Finding, *, prefix: str = "") -> str:
    """One finding for a terminal: the rule, the field, what the text asks the model, the span;
    every part escaped."""
    s = escaping.sanitize
    return (
        f"{prefix}{s(finding.tool)}: {finding.severity} {finding.rule} in {s(finding.field)}: "
        f"{explanation(finding)}: {s(finding.span)}"
    )


def _record(finding: Finding) -> dict[str, str]:
    return {"rule": finding.rule, "severity": finding.severity, "field": finding.field, "span": finding.span}


@dataclass
class GateOutcome:
    manifest: Manifest
    lines: list[str] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)
    used: set[tuple[str, str]] = field(default_factory=set)  # the overrides that took effect


def _other_listings(config: Config | None, server: ServerConfig) -> list[Listing]:
    others: list[Listing] = []
    for other in config.servers if config is not None else ():
        if other.name == server.name:
            continue
        try:
            others.append(manifest_listing(read_manifest(other.manifest), other.name))
        except (ManifestError, OSError, schema_form.SchemaFormError):
            continue  # not pinned yet: nothing to shadow
    return others


def gate_pin(
    server: ServerConfig, manifest: Manifest, overrides: frozenset[tuple[str, str]], config: Config | None = None
) -> GateOutcome:
    """The manifest ``pin`` writes after the scan: hard findings refuse their tools or prompts
    unless overridden by name; every finding is a line to print."""
    result = scan([manifest_listing(manifest, server.name), *_other_listings(config, server)])
    mine = [f for f in result.findings if f.server == server.name]
    outcome = GateOutcome(manifest)
    refused: dict[str, list[dict[str, str]]] = {}
    overridden: dict[str, list[dict[str, str]]] = {}
    name = escaping.sanitize(server.name)
    by_tool: dict[str, list[Finding]] = {}
    for finding in mine:
        by_tool.setdefault(finding.tool, []).append(finding)
    for tool, found in sorted(by_tool.items()):
        hard = [f for f in found if f.hard]
        taken = [f for f in hard if (tool, f.rule) in overrides]
        if hard and len(taken) < len(hard):
            refused[tool] = [_record(f) for f in hard]
            for f in hard:
                kept = load_text.SCAN_OTHERS_REMAIN if (tool, f.rule) in overrides else ""
                outcome.lines.append(finding_line(f, prefix=load_text.SCAN_REFUSED_PREFIX.format(server=name)) + kept)
            pairs = ",".join(sorted({escaping.sanitize(tool) + ":" + f.rule for f in hard}))
            outcome.lines.append(
                load_text.SCAN_NOT_PINNED.format(server=name, tool=escaping.sanitize(tool), pairs=pairs)
            )
            continue
        if taken:
            overridden[tool] = [_record(f) for f in taken]
            outcome.used.update((tool, f.rule) for f in taken)
            for f in taken:
                outcome.lines.append(
                    finding_line(f, prefix=load_text.SCAN_OVERRIDDEN_PREFIX.format(server=name))
                    + load_text.SCAN_RECORDED
                )
        for f in found:
            if not f.hard:
                outcome.lines.append(finding_line(f, prefix=load_text.SCAN_PREFIX.format(server=name)))
    tools = {k: v for k, v in manifest.tools.items() if k not in refused}
    prompts = manifest.prompts
    if prompts is not None:
        prompts = {k: v for k, v in prompts.items() if f"prompt:{k}" not in refused}
    outcome.refused = sorted(refused)
    record = ScanRecord(
        refused={k: tuple(v) for k, v in refused.items()}, overridden={k: tuple(v) for k, v in overridden.items()}
    )
    outcome.manifest = replace(manifest, tools=tools, prompts=prompts, scan=record if (refused or overridden) else None)
    return outcome


async def scan_server(server: ServerConfig, connector: Any) -> Listing:
    """Connect to ``server`` as ``pin`` does and read its tools, instructions and prompts."""
    from agentrt_proxy.upstream.passthrough import Passthrough, list_live_prompts, list_live_resources
    from agentrt_proxy.upstream.passthrough_pins import offers

    connection, tools = await connector(server)(server.connect_timeout / 1e9)
    try:
        wire = getattr(connection, "connection", connection)
        instructions = getattr(wire, "instructions", None)
        listed = getattr(wire, "tools", None)
        if isinstance(listed, list) and listed and hasattr(listed[0], "decoded"):
            tools = listed  # the wire's own objects: title, outputSchema and all, as sent
        prompts: list[Any] = []
        resources: list[Any] = []
        if offers(connection, "prompts"):
            prompts = await list_live_prompts(connection, Passthrough.timeout(server))
        if offers(connection, "resources"):
            resources = await list_live_resources(connection, Passthrough.timeout(server))
    finally:
        with anyio.CancelScope(shield=True), contextlib.suppress(Exception):
            await connection.aclose()
    text = instructions if isinstance(instructions, str) else None
    return live_listing(server.name, tools, text, prompts, resources)


def unused_overrides(overrides: frozenset[tuple[str, str]], used: set[tuple[str, str]]) -> list[str]:
    return [f"{tool}:{rule}" for tool, rule in sorted(overrides - used)]
