"""What ``pin`` records of a server's prompts, and what ``check`` reports of its passthrough.

A server with ``"prompts": true`` has its prompts pinned beside its tools (the manifest's
"prompts" section: name, title, description, arguments); serving offers a prompt only while it
equals its pin (``passthrough_routes.decide_prompts``). ``check`` says, per opted-in server, what
passes through: resources or not, and each prompt offered, withheld (with why) or gone.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from agentrt_proxy.config import ServerConfig
from agentrt_proxy.mcp.errors import TransportError
from agentrt_proxy.text import escaping
from agentrt_proxy.upstream.passthrough import Passthrough, list_live_prompts
from agentrt_proxy.upstream.passthrough_routes import decide_prompts
from agentrt_proxy.upstream.pins import PinnedPrompt, PromptShapeError, pin_prompt
from agentrt_proxy.upstream.registry import LoadError, offers
from agentrt_proxy.upstream.registry import capabilities_of as _capabilities

__all__ = ["passthrough_report", "pin_prompts"]


async def pin_prompts(server: ServerConfig, connection: Any) -> dict[str, PinnedPrompt]:
    """Every prompt the server lists now, as the manifest pins it (none when it offers none)."""
    if not offers(connection, "prompts"):
        return {}
    q = escaping.go_quote(server.name)
    try:
        live = await list_live_prompts(connection, Passthrough.timeout(server))
    except TransportError as err:
        raise LoadError(f"mcp: server {q}: list prompts: {escaping.sanitize(str(err))}") from None
    pinned: dict[str, PinnedPrompt] = {}
    for listed in live:
        try:
            prompt = pin_prompt(listed)
        except PromptShapeError as err:
            raise LoadError(f"mcp: server {q}: list prompts: {err}") from None
        if prompt.name in pinned:
            raise LoadError(f"mcp: server {q}: list prompts: the server lists {escaping.go_quote(prompt.name)} twice")
        pinned[prompt.name] = prompt
    return pinned


async def passthrough_report(
    server: ServerConfig, pins: Mapping[str, PinnedPrompt] | None, connection: Any
) -> list[str]:
    """``check``'s lines for one server's resources and prompts (nothing when it opted in to neither)."""
    s = escaping.sanitize
    name = s(server.name)
    lines: list[str] = []
    if server.resources:
        if not offers(connection, "resources"):
            lines.append(f"{name}: resources: the server does not offer resources; none pass through")
        else:
            subscribe = _capabilities(connection)["resources"].get("subscribe") is True
            lines.append(f"{name}: resources: passed through{' (with subscriptions)' if subscribe else ''}")
    if server.prompts:
        if not offers(connection, "prompts"):
            lines.append(f"{name}: prompts: the server does not offer prompts; none pass through")
            return lines
        try:
            live = await list_live_prompts(connection, Passthrough.timeout(server))
        except TransportError as err:
            lines.append(f"{name}: prompts: cannot be listed: {s(str(err))}")
            return lines
        if pins is None:
            lines.append(f"{name}: prompts: the manifest pins none; run pin to pin them")
        decision = decide_prompts(server, pins, live)
        for prompt in sorted(decision.offered, key=lambda p: p.remote):
            lines.append(f"{name}: offered prompt {s(prompt.remote)} as {s(prompt.host_name)}")
        lines.extend(f"{name}: withheld prompt {s(remote)}: {s(why)}" for remote, why in decision.withheld)
        lines.extend(f"{name}: pinned prompt {s(gone)}: the server no longer offers it" for gone in decision.gone)
    return lines
