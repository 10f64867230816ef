"""The scanner inside ``pin`` and ``check`` (decision 0019): the override flag, the gate, the lines.

Kept apart from ``cli/_pin.py`` so that ``pin`` calls it in one place each: ``pin`` gates every
server's new manifest (``upstream.scan_gate.gate_pin``) and prints the findings; ``check`` scans
what the servers list now, instructions included, and fails on a hard finding the pin did not
record as overridden (a title or instructions changed since, or a manifest pinned before the
scanner).
"""

from __future__ import annotations

from typing import Any, TextIO

from agentrt_proxy.config import Config, ServerConfig
from agentrt_proxy.scan import scan
from agentrt_proxy.text import cli_text, escaping
from agentrt_proxy.upstream import Manifest, OpenServers, read_manifest
from agentrt_proxy.upstream.scan_gate import finding_line, gate_pin, live_listing, parse_overrides, unused_overrides

__all__ = ["check_scan", "gate", "left_out", "take_overrides"]


def take_overrides(argv: list[str]) -> tuple[list[str], frozenset[tuple[str, str]]]:
    """``argv`` without its ``-override TOOL:RULE[,...]`` flags (repeatable), and the pairs they name."""
    rest: list[str] = []
    texts: list[str] = []
    index = 0
    while index < len(argv):
        arg = argv[index]
        name, sep, value = arg.lstrip("-").partition("=")
        if arg.startswith("-") and name == "override":
            if not sep:
                index += 1
                value = argv[index] if index < len(argv) else ""
            texts.append(value)
        elif arg == "--":
            rest.extend(argv[index:])
            break
        else:
            rest.append(arg)
        index += 1
    return rest, parse_overrides(",".join(texts))


def gate(
    config: Config, server: ServerConfig, manifest: Manifest, overrides: frozenset[tuple[str, str]], stdout: TextIO
) -> Manifest:
    """The manifest to write for ``server`` once the scan has gated it; its findings printed."""
    outcome = gate_pin(server, manifest, overrides, config)
    for line in outcome.lines:
        stdout.write(line + "\n")
    mine = {(tool, rule) for tool, rule in overrides if tool in manifest.tools or tool.startswith("prompt:")}
    for text in unused_overrides(frozenset(mine), outcome.used):
        if text.rpartition(":")[0] not in outcome.refused:
            name = escaping.sanitize(server.name)
            stdout.write(cli_text.OVERRIDE_UNMATCHED.format(server=name, override=escaping.sanitize(text)))
    return outcome.manifest


def left_out(listed: Manifest, gated: Manifest) -> dict[str, list[str]]:
    """The tools and prompts (``prompt:NAME``) of ``listed`` that the gate kept out of ``gated``,
    each with the rules of its hard findings."""
    record = gated.scan.refused if gated.scan is not None else {}
    names = [tool for tool in listed.tools if tool not in gated.tools]
    gone = set(gated.prompts or ())
    names += [f"prompt:{name}" for name in listed.prompts or () if name not in gone]
    return {name: sorted({str(f.get("rule")) for f in record.get(name, ())}) for name in names}


def check_scan(config: Config, opened: OpenServers, stdout: TextIO) -> list[str]:
    """Scan what every answering server lists now; print each finding; return one line per hard
    finding on a tool the manifest neither refused nor overrode (what ``check`` fails on)."""
    listings = []
    pinned: dict[str, Manifest] = {}
    for supervisor in opened.connections:
        wire: Any = getattr(supervisor, "connection", None)  # the wire's session, as the tools see it
        tools = getattr(wire, "tools", None)
        if not isinstance(tools, list):
            continue  # down, or a connection that does not show its listing
        server = supervisor.server
        instructions = getattr(wire, "instructions", None)
        listings.append(live_listing(server.name, tools, instructions if isinstance(instructions, str) else None))
        try:
            pinned[server.name] = read_manifest(server.manifest)
        except Exception:  # serving read it a moment ago; a race leaves nothing recorded
            continue
    failures: list[str] = []
    for finding in scan(listings).findings:
        record = pinned.get(finding.server)
        scan_record = record.scan if record is not None else None
        overridden = scan_record is not None and any(
            f.get("rule") == finding.rule for f in scan_record.overridden.get(finding.tool, ())
        )
        refused = scan_record is not None and finding.tool in scan_record.refused
        note = " (overridden at pin)" if overridden else " (refused at pin)" if refused else ""
        stdout.write(finding_line(finding, prefix=f"{escaping.sanitize(finding.server)}: scan: ") + note + "\n")
        offered = record is not None and finding.tool in record.tools
        if finding.hard and not overridden and not refused and (offered or finding.tool == "(instructions)"):
            failures.append(
                cli_text.HARD_FINDING_UNRECORDED.format(
                    q_server=escaping.go_quote(finding.server), tool=escaping.sanitize(finding.tool), rule=finding.rule
                )
            )
    return failures
