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
from agentrt_proxy.text import escaping, load_text
from agentrt_proxy.upstream._passthrough_routes import decide_prompts
from agentrt_proxy.upstream._registry import LoadError, offers
from agentrt_proxy.upstream._registry import capabilities_of as _capabilities
from agentrt_proxy.upstream.passthrough import Passthrough, list_live_prompts
from agentrt_proxy.upstream.pins import PinnedPrompt, PromptShapeError, pin_prompt

__all__ = ["passthrough_report", "pin_prompts"]


async def pin_prompts(server: ServerConfig, connection: Any) -> dict[str, PinnedPrompt]:
    """Every prompt the server lists now, as the manifest pins it (none when it offers none)."""
    if not offers(connection, "prompts"):
        return {}
    q = escaping.go_quote(server.name)
    try:
        live = await list_live_prompts(connection, Passthrough.timeout(server))
    except TransportError as err:
        raise LoadError(load_text.LIST_PROMPTS_FAILED.format(q_server=q, error=escaping.sanitize(str(err)))) from None
    pinned: dict[str, PinnedPrompt] = {}
    for listed in live:
        try:
            prompt = pin_prompt(listed)
        except PromptShapeError as err:
            raise LoadError(load_text.LIST_PROMPTS_FAILED.format(q_server=q, error=err)) from None
        if prompt.name in pinned:
            raise LoadError(load_text.LIST_PROMPTS_TWICE.format(q_server=q, q_prompt=escaping.go_quote(prompt.name)))
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
            lines.append(load_text.RESOURCES_NOT_OFFERED.format(server=name))
        else:
            subscribe = _capabilities(connection)["resources"].get("subscribe") is True
            lines.append(
                load_text.RESOURCES_PASSED.format(
                    server=name, subscriptions=load_text.WITH_SUBSCRIPTIONS if subscribe else ""
                )
            )
    if server.prompts:
        if not offers(connection, "prompts"):
            lines.append(load_text.PROMPTS_NOT_OFFERED.format(server=name))
            return lines
        try:
            live = await list_live_prompts(connection, Passthrough.timeout(server))
        except TransportError as err:
            lines.append(load_text.PROMPTS_UNLISTED.format(server=name, error=s(str(err))))
            return lines
        if pins is None:
            lines.append(load_text.PROMPTS_NOT_PINNED.format(server=name))
        decision = decide_prompts(server, pins, live)
        for prompt in sorted(decision.offered, key=lambda p: p.remote):
            lines.append(
                load_text.PROMPT_OFFERED.format(server=name, prompt=s(prompt.remote), name=s(prompt.host_name))
            )
        lines.extend(
            load_text.PROMPT_WITHHELD.format(server=name, prompt=s(remote), why=s(why))
            for remote, why in decision.withheld
        )
        lines.extend(load_text.PROMPT_GONE.format(server=name, prompt=s(gone)) for gone in decision.gone)
    return lines
