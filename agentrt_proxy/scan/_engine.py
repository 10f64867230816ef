"""One scan: every rule over every definition of every listing, findings deduplicated.

Deterministic and offline: the same listings give the same findings in the same order. One
finding per tool, rule and field (the hardest, then the first), so a description that repeats
an attack reads as one finding.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

from agentrt_proxy.scan import _hidden as hidden
from agentrt_proxy.scan import _payloads as payloads
from agentrt_proxy.scan import _secrets as secrets
from agentrt_proxy.scan._model import HARD, SOFT, Definition, Finding, Listing
from agentrt_proxy.scan._normal import escape_span, name_words, normalise
from agentrt_proxy.scan._phrases import DESTINATION
from agentrt_proxy.scan._shadowing import cross_server
from agentrt_proxy.scan._soft_classes import out_of_scope
from agentrt_proxy.scan._textrules import match_text

__all__ = ["ScanResult", "scan", "scan_definition"]

CONTEXT_CHARS = 12  # visible characters shown either side of a hidden run


@dataclass(frozen=True)
class ScanResult:
    tools_scanned: int
    findings: tuple[Finding, ...] = field(default_factory=tuple)

    @property
    def hard(self) -> bool:
        return any(f.hard for f in self.findings)

    def as_json(self) -> dict[str, object]:
        return {"tools_scanned": self.tools_scanned, "findings": [f.as_json() for f in self.findings]}

    def for_tool(self, server: str, tool: str) -> list[Finding]:
        return [f for f in self.findings if f.server == server and f.tool == tool]


def _label(definition: Definition) -> str:
    if definition.kind in ("prompt", "resource"):
        return f"{definition.kind}:{definition.name}"
    return definition.name


def _smuggled(raw: str) -> Iterator[str]:
    if raw.isascii():
        return  # tag characters and variation selectors are beyond ASCII
    for decoded in (payloads.tag_text(raw), payloads.selector_text(raw)):
        if decoded.strip():
            yield decoded


def scan_definition(server: str, definition: Definition) -> Iterator[Finding]:
    tool = _label(definition)
    directives = definition.kind != "instructions"
    for text in definition.texts:
        raw = text.text
        for severity, start, end in hidden.hidden_spans(raw):
            shown = raw[max(0, start - CONTEXT_CHARS) : end + CONTEXT_CHARS]
            yield Finding(server, tool, hidden.RULE, severity, text.path, escape_span(shown), "", "hidden")
        for decoded in _smuggled(raw):
            for match in match_text(normalise(decoded), hidden=True, own=definition.name):
                yield Finding(
                    server, tool, match.rule, HARD, text.path, escape_span(match.text), "hidden text",
                    match.ask, escape_span(match.target),
                )  # fmt: skip
        flat = normalise(raw)
        prose = name_words(raw) if text.kind == "name" else flat
        for match in match_text(prose, kind=text.kind, directives=directives, own=definition.name):
            yield Finding(
                server, tool, match.rule, match.severity, text.path, escape_span(match.text), "",
                match.ask, escape_span(match.target),
            )  # fmt: skip
        for start, end, decoded in payloads.decoded_runs(flat):
            inner = normalise(decoded)
            hits = bool(list(match_text(inner, hidden=True))) or bool(list(secrets.secret_spans(inner)))
            if hits or payloads.SHELLISH.search(inner) or DESTINATION.search(inner):
                yield Finding(
                    server, tool, payloads.RULE, HARD, text.path, escape_span(flat[start:end]), escape_span(inner),
                    "encoded",
                )  # fmt: skip
            elif len(inner) >= 16 and inner.count(" ") >= 2:
                yield Finding(
                    server, tool, payloads.RULE, SOFT, text.path, escape_span(flat[start:end]), escape_span(inner),
                    "encoded",
                )  # fmt: skip
        for start, end in secrets.secret_spans(flat):
            yield Finding(server, tool, secrets.RULE, SOFT, text.path, escape_span(flat[start:end]), "", "secret")
    for text, match in out_of_scope(definition):
        yield Finding(
            server, tool, match.rule, match.severity, text.path, escape_span(match.text), "",
            match.ask, escape_span(match.target),
        )  # fmt: skip


def _dedupe(findings: Sequence[Finding]) -> tuple[Finding, ...]:
    kept: dict[tuple[str, str, str, str], Finding] = {}
    for finding in findings:
        key = (finding.server, finding.tool, finding.rule, finding.field)
        if key not in kept or (finding.severity == HARD and kept[key].severity == SOFT):
            kept[key] = finding
    order = {HARD: 0, SOFT: 1}
    return tuple(sorted(kept.values(), key=lambda f: (f.server, f.tool, order[f.severity], f.rule, f.field)))


def _names_sibling(finding: Finding, siblings: set[str]) -> bool:
    """A soft call-ordering or deprecation finding that names a tool of the same server: a
    server's own tools pointing at each other ("use read_text_file instead") is documentation."""
    if finding.rule not in ("crosstool.directive", "redirect.tool") or finding.severity != SOFT:
        return False
    words = set(re.findall(r"[\w.\-]+", finding.span))
    return bool(words & siblings)


def scan(listings: Sequence[Listing]) -> ScanResult:
    """Every rule over ``listings``; ``tools_scanned`` counts their tools."""
    found: list[Finding] = []
    for listing in listings:
        siblings = set(listing.tool_names())
        for definition in listing.definitions:
            found.extend(f for f in scan_definition(listing.server, definition) if not _names_sibling(f, siblings))
    found.extend(cross_server(listings))
    tools = sum(1 for listing in listings for d in listing.definitions if d.kind == "tool")
    return ScanResult(tools_scanned=tools, findings=_dedupe(found))
