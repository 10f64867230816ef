"""Where a passed-through resource or prompt goes: the routing table and the prompt decisions.

Pure: no connection, no clock. ``Routes`` holds which server listed each resource URI and each
server's resource templates; ``route`` picks the server for a URI (the one that listed it, else
the one server whose template matches it, else a JSON-RPC error naming the URI). ``decide_prompts``
holds one server's live prompts against its pins: a prompt is offered under the host's name only
when it is pinned and equal to its pin; every other one is withheld, with the reason ``check``
reports.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from agentrt_proxy.config import TOOL_NAME_PATTERN, ServerConfig
from agentrt_proxy.mcp import JsonRpcError
from agentrt_proxy.text import model_text, pin_text
from agentrt_proxy.text.escaping import go_quote
from agentrt_proxy.upstream.pins import PinnedPrompt, PromptShapeError, pin_prompt

__all__ = ["OfferedPrompt", "PromptDecision", "Routes", "decide_prompts", "host_prompt_name", "template_pattern"]

INVALID_PARAMS = -32602
_EXPRESSION = re.compile(r"\{([+#./;?&]?)([^}]*)\}")


def template_pattern(template: str) -> re.Pattern[str]:
    """A URI template (RFC 6570) as a pattern that matches the URIs it expands to: a simple
    ``{x}`` one path segment, ``{+x}`` and ``{#x}`` anything, the query forms an optional query."""
    parts: list[str] = []
    at = 0
    for found in _EXPRESSION.finditer(template):
        parts.append(re.escape(template[at : found.start()]))
        operator = found.group(1)
        if operator in ("+", "#"):
            parts.append(".*")
        elif operator in ("?", "&"):
            parts.append(r"(?:[?&][^#]*)?")
        else:
            parts.append(r"[^/?#]*")
        at = found.end()
    parts.append(re.escape(template[at:]))
    return re.compile("".join(parts), re.DOTALL)


@dataclass
class Routes:
    """Which server listed each URI, and each server's templates (from its last listing)."""

    owner: dict[str, str] = field(default_factory=dict)
    templates: dict[str, list[tuple[str, re.Pattern[str]]]] = field(default_factory=dict)

    def listed(self, server: str, uris: Iterable[str]) -> None:
        """``server``'s resources as it just listed them (its earlier ones are forgotten)."""
        self.owner = {uri: owner for uri, owner in self.owner.items() if owner != server}
        for uri in uris:
            self.owner.setdefault(uri, server)  # two servers listing one URI: the first in order keeps it

    def listed_templates(self, server: str, templates: Iterable[str]) -> None:
        self.templates[server] = [(template, template_pattern(template)) for template in templates]

    def forget(self, server: str) -> None:
        """``server``'s lists changed: route nothing to it by what it listed before."""
        self.owner = {uri: owner for uri, owner in self.owner.items() if owner != server}
        self.templates.pop(server, None)

    def known(self, uri: str) -> bool:
        return uri in self.owner or len(self._matching(uri)) == 1

    def route(self, uri: str) -> str:
        """The server for ``uri``, or a JSON-RPC invalid-params error naming it."""
        server = self.owner.get(uri)
        if server is not None:
            return server
        matching = self._matching(uri)
        if len(matching) == 1:
            return matching[0]
        if matching:
            raise JsonRpcError(INVALID_PARAMS, model_text.passthrough_ambiguous_uri(uri))
        raise JsonRpcError(INVALID_PARAMS, model_text.passthrough_unknown_uri(uri))

    def route_template(self, template: str) -> str | None:
        """The one server that lists exactly this template (a completion's ``ref/resource``)."""
        servers = [server for server, listed in self.templates.items() if any(t == template for t, _ in listed)]
        return servers[0] if len(servers) == 1 else None

    def _matching(self, uri: str) -> list[str]:
        return [server for server, listed in self.templates.items() if any(p.fullmatch(uri) for _, p in listed)]


# ------------------------------------------------------------------------------- prompts


@dataclass(frozen=True)
class OfferedPrompt:
    """A pinned prompt as the host sees it: its name there, and the server's own name."""

    host_name: str
    server: str
    remote: str
    pinned: PinnedPrompt

    def listing(self) -> dict[str, Any]:
        """The ``prompts/list`` entry: only what the pin holds, under the host's name."""
        entry: dict[str, Any] = {"name": self.host_name}
        if self.pinned.title is not None:
            entry["title"] = self.pinned.title
        entry["description"] = self.pinned.description
        entry["arguments"] = self.pinned.arguments_tree()
        return entry


@dataclass
class PromptDecision:
    """One server's prompts decided against its pins."""

    server: str
    offered: list[OfferedPrompt] = field(default_factory=list)
    withheld: list[tuple[str, str]] = field(default_factory=list)  # (the server's name, why)
    gone: list[str] = field(default_factory=list)  # pinned, no longer listed


def host_prompt_name(server: ServerConfig, remote: str) -> str:
    """``<server>_<prompt>`` as tools are named, unless ``prompt_names`` renames it."""
    return server.prompt_names.get(remote) or f"{server.name}_{remote}"


def decide_prompts(
    server: ServerConfig, pins: Mapping[str, PinnedPrompt] | None, live: Iterable[Any]
) -> PromptDecision:
    """Offer each live prompt that is pinned and equal to its pin; withhold every other one."""
    decision = PromptDecision(server.name)
    pinned = pins or {}
    seen: set[str] = set()
    taken: set[str] = set()
    for listed in live:
        try:
            now = pin_prompt(listed)
        except PromptShapeError as err:
            decision.withheld.append(("?", str(err)))
            continue
        if now.name in seen:
            decision.withheld.append((now.name, pin_text.PROMPT_LISTED_TWICE))
            continue
        seen.add(now.name)
        pin = pinned.get(now.name)
        if pin is None:
            decision.withheld.append((now.name, pin_text.PROMPT_NOT_PINNED))
            continue
        if now != pin:
            decision.withheld.append((now.name, pin_text.PROMPT_DIFFERS.format(difference=_difference(pin, now))))
            continue
        name = host_prompt_name(server, now.name)
        if not TOOL_NAME_PATTERN.fullmatch(name) or name in taken:
            why = pin_text.PROMPT_NAME_TAKEN if name in taken else pin_text.PROMPT_NAME_NOT_PATTERN.format()
            decision.withheld.append((now.name, pin_text.PROMPT_NAME_REFUSED.format(name=go_quote(name), why=why)))
            continue
        taken.add(name)
        decision.offered.append(OfferedPrompt(name, server.name, now.name, pin))
    decision.gone = sorted(name for name in pinned if name not in seen)
    decision.withheld.sort()
    return decision


def _difference(pin: PinnedPrompt, now: PinnedPrompt) -> str:
    changed = [
        what
        for what, a, b in (
            ("title", pin.title, now.title),
            ("description", pin.description, now.description),
            ("arguments", pin.arguments, now.arguments),
        )
        if a != b
    ]
    return ", ".join(changed) + " changed"
