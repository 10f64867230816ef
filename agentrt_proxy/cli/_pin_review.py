"""Re-pinning bound to what the operator was shown (decision 0018).

``pin -review -config FILE [-json]`` lists every server and shows what differs from its pin,
writing nothing. ``pin -accept SERVER [-tools a,b] -expect FINGERPRINT -config FILE`` pins that
server's changes (or only the named tools') when a fresh listing still gives the review the
fingerprint the operator saw; otherwise it refuses and shows the review again. A bare ``pin`` of
a server already pinned that finds changes shows the review and asks on a terminal, or refuses
and says what to type: it never silently takes a change. ``check`` shows the same review of
what its load found (``review_of_opened``).
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TextIO

from agentrt_proxy.canonical.encoder import MANIFEST, encode
from agentrt_proxy.cli._review_view import review_data, review_lines
from agentrt_proxy.config import Config, ServerConfig
from agentrt_proxy.errors import AgentrtError, UsageError
from agentrt_proxy.text import cli_text, escaping
from agentrt_proxy.upstream import Connector, Manifest, OpenServers, pin_server, pinned_listing, read_manifest
from agentrt_proxy.upstream.pins import PinnedPrompt
from agentrt_proxy.upstream.review import NEW, ServerReview, review_server

__all__ = [
    "AcceptRefused",
    "Ask",
    "accept_server",
    "ask_on_terminal",
    "existing_manifest",
    "repin_allowed",
    "review_all",
    "review_of_fresh",
    "review_of_opened",
    "write_json",
]

Ask = Callable[[str], bool]


class AcceptRefused(AgentrtError):
    """``pin -accept`` cannot take the change (the definitions are not those reviewed, or a named
    tool has no change); the message says why, in one line."""


def ask_on_terminal(question: str) -> bool:
    """Ask on the terminal (only when both ends are one); anything but yes is no."""
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        return False
    sys.stdout.write(question)
    sys.stdout.flush()
    return sys.stdin.readline().strip().lower() in ("y", "yes")


def existing_manifest(server: ServerConfig) -> Manifest | None:
    """The server's manifest, or ``None`` when it has none yet (its first pin). One that cannot
    be read is an error (``ManifestError``): it is never silently replaced."""
    if not Path(server.manifest).exists():
        return None
    return read_manifest(server.manifest)


def review_of_fresh(server: ServerConfig, old: Manifest | None, fresh: Manifest) -> ServerReview:
    """What pinning ``fresh`` would change in ``old``."""
    prompts = fresh.prompts if server.prompts else None
    return review_server(old, server.name, pinned_listing(fresh), prompts)


def repin_allowed(
    server: ServerConfig,
    fresh: Manifest,
    config_path: str,
    stdout: TextIO,
    ask: Ask,
    named: frozenset[str] = frozenset(),
) -> tuple[bool, ServerReview | None]:
    """A bare ``pin``: True when the fresh pin may be written (a first pin, no change, or the
    operator said yes on the terminal); the review when there were changes. ``named``: tools the
    operator named on the command line (``-override TOOL:RULE``), so a tool the scan refused
    before and that is new to the manifest now is taken as asked, not asked about again."""
    old = existing_manifest(server)
    if old is None or old.server != server.name:
        return True, None
    review = review_of_fresh(server, old, fresh)
    if all(item.kind == "tool" and item.status == NEW and item.name in named for item in review.items):
        return True, None
    for line in review_lines(review, config_path):
        stdout.write(line + "\n")
    stdout.flush()
    return ask(cli_text.PIN_ASK.format(q_server=escaping.go_quote(server.name))), review


async def review_all(config: Config, config_path: str, stdout: TextIO, connector: Connector, as_json: bool) -> None:
    """``pin -review``: every server listed and compared with its pin; nothing is written."""
    reviews = []
    for server in config.servers:
        fresh = await pin_server(server, connector=connector)
        reviews.append(review_of_fresh(server, existing_manifest(server), fresh))
    if as_json:
        write_json(reviews, stdout)
        return
    for review in reviews:
        lines = review_lines(review, config_path)
        if not lines:
            lines = [cli_text.MATCHES_PIN.format(q_server=escaping.go_quote(review.server))]
        for line in lines:
            stdout.write(line + "\n")


def write_json(reviews: Sequence[ServerReview], stdout: TextIO) -> None:
    stdout.write(encode({"servers": [review_data(review) for review in reviews]}, MANIFEST) + "\n")


def _selected(review: ServerReview, tools: Sequence[str] | None) -> list[str]:
    changed = [item.name for item in review.tools()]
    if tools is None:
        return changed
    unknown = [name for name in tools if name not in changed]
    if unknown:
        raise AcceptRefused(
            cli_text.NO_CHANGE_TO_ACCEPT.format(
                q_server=escaping.go_quote(review.server), tools=", ".join(escaping.go_quote(name) for name in unknown)
            )
        )
    return list(tools)


async def accept_server(
    config: Config,
    config_path: str,
    name: str,
    tools: Sequence[str] | None,
    expect: str,
    stdout: TextIO,
    connector: Connector,
) -> tuple[Manifest, list[str], frozenset[tuple[str, str]]]:
    """``pin -accept``: the new manifest, written only when the fresh review's fingerprint is
    ``expect`` (otherwise the fresh review is shown and ``AcceptRefused`` raised); the tools it
    takes; and the overrides the pin recorded for the tools it leaves as they were, which the
    scan that gates the new manifest honours again (an accepted tool's are not carried over:
    its new text is scanned afresh)."""
    server = next((s for s in config.servers if s.name == name), None)
    if server is None:
        raise UsageError(cli_text.ACCEPT_NO_SERVER.format(q_server=escaping.go_quote(name)))
    old = existing_manifest(server)
    fresh = await pin_server(server, connector=connector)
    review = review_of_fresh(server, old, fresh)
    if review.fingerprint != expect:
        for line in review_lines(review, config_path):
            stdout.write(line + "\n")
        raise AcceptRefused(
            cli_text.ACCEPT_NOT_REVIEWED.format(
                q_server=escaping.go_quote(name), fingerprint=review.fingerprint, expected=escaping.sanitize(expect)
            )
        )
    chosen = _selected(review, tools)
    kept = dict(old.tools) if old is not None else {}
    for tool in chosen:
        if tool in fresh.tools:
            kept[tool] = fresh.tools[tool]
        else:
            kept.pop(tool, None)
    prompts: dict[str, PinnedPrompt] | None = old.prompts if old is not None else None
    if tools is None:
        prompts = fresh.prompts
    carried = frozenset(
        (tool, str(record.get("rule", "")))
        for tool, records in (old.scan.overridden.items() if old is not None and old.scan is not None else ())
        if tool not in chosen
        for record in records
    )
    return Manifest(server=server.name, pinned_at=fresh.pinned_at, tools=kept, prompts=prompts), chosen, carried


async def review_of_opened(config: Config, opened: OpenServers) -> list[ServerReview]:
    """``check``'s review: each server that answered, its listing against the manifest it loaded."""
    from agentrt_proxy.upstream.passthrough import Passthrough, list_live_prompts
    from agentrt_proxy.upstream.pins import PromptShapeError, pin_prompt

    reviews = []
    held = {supervisor.name: supervisor for supervisor in opened.connections}
    for server in config.servers:
        supervisor = held.get(server.name)
        listing = supervisor.listing() if supervisor is not None else None
        if supervisor is None or listing is None:
            continue  # down: its tools are served from the manifest, nothing to compare
        prompts: dict[str, PinnedPrompt] | None = None
        if server.prompts:
            prompts = {}
            try:
                for listed in await list_live_prompts(supervisor.connection, Passthrough.timeout(server)):
                    prompt = pin_prompt(listed)
                    prompts[prompt.name] = prompt
            except (PromptShapeError, Exception):  # the passthrough report says why it cannot be listed
                prompts = None
        reviews.append(review_server(supervisor.manifest, server.name, listing, prompts))
    return reviews


def tools_flag(value: Any) -> list[str] | None:
    """``-tools a,b``: the names, or ``None`` when the flag is absent."""
    if value is None:
        return None
    names = [name.strip() for name in str(value).split(",") if name.strip()]
    if not names:
        raise UsageError(cli_text.TOOLS_NEEDS_ONE)
    return names
