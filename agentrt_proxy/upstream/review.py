"""The review of a server's changes since its pin (decision 0018): pure.

``review_server(manifest, live_tools, live_prompts)`` compares every pinned tool (and prompt)
with what the server lists now and says, per changed one, exactly what differs: the description
as a unified diff; the input schema walked by ``review_schema`` (parameters added, removed,
retyped, newly or no longer required, enums, bounds, patterns, formats, additionalProperties,
defaults, consts, through every nested schema); the output schema; each of the four hints whose
effective value (MCP defaults applied) flipped; the title. A tool the server lists that the pin
does not is reviewed in full (``new``); one pinned and no longer listed is ``gone``.

Each change carries its direction (``narrowing``, ``widening``, ``text``); a hint flip, an output
schema change and a title change are held like a widening, as seed 002's gate holds them.

``fingerprint`` is a SHA-256 over the definitions the review shows, both sides of every changed
or new item; ``pin -accept -expect`` recomputes it from a fresh listing and refuses when it
differs, so what is pinned is exactly what the operator saw.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from agentrt_proxy import canonical
from agentrt_proxy.canonical import schema_form
from agentrt_proxy.text import pin_text
from agentrt_proxy.upstream._review_schema import NARROWING, TEXT, WIDENING, SchemaChange, schema_changes
from agentrt_proxy.upstream.pins import LiveTool, Manifest, PinnedPrompt, PinnedTool

__all__ = [
    "HINT_DEFAULTS",
    "NARROWING",
    "TEXT",
    "WIDENING",
    "Change",
    "ItemReview",
    "ServerReview",
    "effective_hints",
    "hint_flips",
    "pin_drift",
    "review_prompts",
    "review_server",
    "review_tools",
]

# The MCP specification's defaults for a tool that says nothing (2025-03-26 and later).
HINT_DEFAULTS = {"readOnlyHint": False, "destructiveHint": True, "idempotentHint": False, "openWorldHint": True}
# The flips by which a tool claims to be safer than it was pinned: what a rug pull would do.
_SAFER = {"readOnlyHint": True, "destructiveHint": False, "idempotentHint": True, "openWorldHint": False}
NEW, CHANGED, GONE = "new", "changed", "gone"


def effective_hints(annotations: Mapping[str, Any] | None) -> dict[str, bool]:
    """The four hints as a client must read them: the server's value, else the default."""
    given = annotations or {}
    return {key: given[key] if isinstance(given.get(key), bool) else default for key, default in HINT_DEFAULTS.items()}


def hint_flips(before: Mapping[str, Any] | None, after: Mapping[str, Any] | None) -> list[tuple[str, bool, bool]]:
    """Each hint whose effective value differs: (hint, pinned, now)."""
    old, new = effective_hints(before), effective_hints(after)
    return [(key, old[key], new[key]) for key in HINT_DEFAULTS if old[key] != new[key]]


@dataclass(frozen=True)
class Change:
    """One difference in one tool or prompt: ``where`` (``description``, ``inputSchema/…``,
    ``outputSchema/…``, ``annotations/readOnlyHint``, ``title``, ``arguments/…``), what kind,
    both values and the direction."""

    where: str
    kind: str
    before: Any
    after: Any
    direction: str


@dataclass(frozen=True)
class ItemReview:
    """One tool or prompt that differs from its pin: its status (new, changed, gone), its changes,
    the description's unified diff, and both definitions as data (``None`` for the side absent)."""

    kind: str  # "tool" or "prompt"
    name: str
    status: str
    changes: tuple[Change, ...]
    description_diff: tuple[str, ...]
    before: dict[str, Any] | None
    after: dict[str, Any] | None

    @property
    def widening(self) -> bool:
        return self.status == NEW or any(change.direction == WIDENING for change in self.changes)


@dataclass
class ServerReview:
    server: str
    items: list[ItemReview] = field(default_factory=list)

    def tools(self) -> list[ItemReview]:
        return [item for item in self.items if item.kind == "tool"]

    def prompts(self) -> list[ItemReview]:
        return [item for item in self.items if item.kind == "prompt"]

    @property
    def fingerprint(self) -> str:
        """SHA-256 of what the review shows: every reviewed item's two definitions."""
        shown = [[item.kind, item.name, item.status, item.before, item.after] for item in self.items]
        return "sha256:" + canonical.sha256_hex(canonical.canonical_bytes([self.server, shown]))


def pin_drift(pin: PinnedTool, live: LiveTool) -> str:
    """Why a tool whose schema and description match its pin still differs from it ('' when it
    does not): a hint's effective value, the annotations' title, or (when pinned) the title or
    the output schema. The load checks refuse the tool with this reason."""
    flips = hint_flips(pin.annotations, live.annotations)
    if flips:
        said = ", ".join(
            pin_text.HINT_FLIP.format(hint=hint, before=str(old).lower(), after=str(new).lower())
            for hint, old, new in flips
        )
        return pin_text.HINTS_CHANGED.format(hints=said)
    if (pin.annotations or {}).get("title") != (live.annotations or {}).get("title"):
        return pin_text.ANNOTATIONS_TITLE_CHANGED
    if pin.display_pinned:
        if pin.title != live.display.title:
            return pin_text.TITLE_CHANGED
        now = live.display.output_schema.encode("utf-8") if live.display.output_schema is not None else None
        if pin.output_schema != now:
            return pin_text.OUTPUT_SCHEMA_CHANGED
    return ""


# ------------------------------------------------------------------------------ definitions


def _schema_tree(form: bytes | str | None) -> Any:
    if form is None:
        return None
    return schema_form.parse_form(form.encode("utf-8") if isinstance(form, str) else form)


def pinned_definition(tool: PinnedTool) -> dict[str, Any]:
    """What the pin says of a tool, as the review compares it (``title``/``outputSchema`` only when
    the manifest captured them: older manifests did not, and those are not compared)."""
    out: dict[str, Any] = {
        "description": tool.description,
        "inputSchema": _schema_tree(tool.input_schema),
        "annotations": dict(tool.annotations) if tool.annotations is not None else None,
    }
    if tool.display_pinned:
        out["title"] = tool.title
        out["outputSchema"] = _schema_tree(tool.output_schema)
    return out


def live_definition(tool: LiveTool, *, with_display: bool = True) -> dict[str, Any]:
    """What the server lists now, in the pin's terms. A schema that has no canonical form is
    kept as its raw text (and differs)."""
    try:
        schema: Any = _schema_tree(schema_form.canonical_schema(tool.input_schema))
    except schema_form.SchemaFormError:
        schema = tool.input_schema
    out: dict[str, Any] = {
        "description": tool.description,
        "inputSchema": schema,
        "annotations": dict(tool.annotations) if tool.annotations is not None else None,
    }
    if with_display:
        out["title"] = tool.display.title
        out["outputSchema"] = _schema_tree(tool.display.output_schema)
    return out


def _text_diff(before: str, after: str, name: str) -> tuple[str, ...]:
    if before == after:
        return ()
    lines = difflib.unified_diff(
        before.splitlines(), after.splitlines(), f"pinned/{name}", f"now/{name}", lineterm="", n=2
    )
    return tuple(lines)


def _schema(where: str, changes: Iterable[SchemaChange], *, held: bool = False) -> list[Change]:
    out = []
    for change in changes:
        direction = WIDENING if held and change.direction != TEXT else change.direction
        out.append(Change(f"{where}{change.pointer}", change.kind, change.before, change.after, direction))
    return out


def _tool_changes(before: dict[str, Any], after: dict[str, Any]) -> list[Change]:
    changes: list[Change] = []
    if before["description"] != after["description"]:
        changes.append(Change("description", "description changed", before["description"], after["description"], TEXT))
    changes.extend(_schema("inputSchema", schema_changes(before["inputSchema"], after["inputSchema"])))
    for hint, old, new in hint_flips(before["annotations"], after["annotations"]):
        kind = "claims to be safer" if new == _SAFER[hint] else "claims to be less safe"
        changes.append(Change(f"annotations/{hint}", f"hint flipped ({kind})", old, new, WIDENING))
    old_title = (before["annotations"] or {}).get("title")
    new_title = (after["annotations"] or {}).get("title")
    if old_title != new_title:
        changes.append(Change("annotations/title", "annotations title changed", old_title, new_title, WIDENING))
    if "title" in before and before["title"] != after.get("title"):
        changes.append(Change("title", "title changed", before["title"], after.get("title"), WIDENING))
    if "outputSchema" in before:
        old_out, new_out = before["outputSchema"], after.get("outputSchema")
        if old_out is None and new_out is not None:
            changes.append(Change("outputSchema", "output schema added", None, new_out, WIDENING))
        elif old_out is not None and new_out is None:
            changes.append(Change("outputSchema", "output schema removed", old_out, None, WIDENING))
        elif old_out is not None:
            # Seed 002: an output schema's structural change is held whatever its direction.
            changes.extend(_schema("outputSchema", schema_changes(old_out, new_out), held=True))
    return changes


def review_tools(pinned: Mapping[str, PinnedTool], live: Iterable[LiveTool]) -> list[ItemReview]:
    """Every tool that differs from its pin, is new, or is gone; sorted by name."""
    listing = {tool.name: tool for tool in live}
    items: list[ItemReview] = []
    for name in sorted(set(pinned) | set(listing)):
        pin, now = pinned.get(name), listing.get(name)
        if pin is None:
            assert now is not None
            after = live_definition(now)
            items.append(ItemReview("tool", name, NEW, (), _text_diff("", now.description, name), None, after))
            continue
        before = pinned_definition(pin)
        if now is None:
            items.append(ItemReview("tool", name, GONE, (), (), before, None))
            continue
        after = live_definition(now, with_display=pin.display_pinned)
        changes = _tool_changes(before, after)
        if not changes:  # a difference without effect (annotations {} against none): nothing to review
            continue
        diff = _text_diff(pin.description, now.description, name)
        items.append(ItemReview("tool", name, CHANGED, tuple(changes), diff, before, after))
    return items


# ---------------------------------------------------------------------------------- prompts


def prompt_definition(prompt: PinnedPrompt) -> dict[str, Any]:
    return {"title": prompt.title, "description": prompt.description, "arguments": prompt.arguments_tree()}


def _prompt_changes(before: dict[str, Any], after: dict[str, Any]) -> list[Change]:
    changes: list[Change] = []
    if before["description"] != after["description"]:
        changes.append(Change("description", "description changed", before["description"], after["description"], TEXT))
    if before["title"] != after["title"]:
        changes.append(Change("title", "title changed", before["title"], after["title"], WIDENING))
    old = {a["name"]: a for a in before["arguments"]}
    new = {a["name"]: a for a in after["arguments"]}
    for name in sorted(set(old) | set(new)):
        where = f"arguments/{name}"
        if name not in new:
            changes.append(Change(where, "argument removed", old[name], None, NARROWING))
            continue
        if name not in old:
            # A new argument the model must fill is the prompt's "new required parameter".
            held = new[name].get("required") is True
            changes.append(Change(where, "argument added", None, new[name], WIDENING if held else NARROWING))
            continue
        was, now = old[name].get("required") is True, new[name].get("required") is True
        if now and not was:
            changes.append(Change(where, "newly required", None, name, WIDENING))
        elif was and not now:
            changes.append(Change(where, "no longer required", name, None, NARROWING))
        for key in ("title", "description"):
            if old[name].get(key) != new[name].get(key):
                changes.append(Change(f"{where}/{key}", f"{key} changed", old[name].get(key), new[name].get(key), TEXT))
    return changes


def review_prompts(pinned: Mapping[str, PinnedPrompt], live: Mapping[str, PinnedPrompt]) -> list[ItemReview]:
    """Every prompt that differs from its pin (``live``: the listing as ``pin_prompt`` reads it)."""
    items: list[ItemReview] = []
    for name in sorted(set(pinned) | set(live)):
        pin, now = pinned.get(name), live.get(name)
        if pin is None:
            assert now is not None
            after = prompt_definition(now)
            items.append(ItemReview("prompt", name, NEW, (), _text_diff("", now.description, name), None, after))
        elif now is None:
            items.append(ItemReview("prompt", name, GONE, (), (), prompt_definition(pin), None))
        elif pin != now:
            before, after = prompt_definition(pin), prompt_definition(now)
            diff = _text_diff(pin.description, now.description, name)
            items.append(
                ItemReview("prompt", name, CHANGED, tuple(_prompt_changes(before, after)), diff, before, after)
            )
    return items


def review_server(
    manifest: Manifest | None,
    server: str,
    live_tools: Iterable[LiveTool],
    live_prompts: Mapping[str, PinnedPrompt] | None = None,
) -> ServerReview:
    """The whole review of one server: its tools, and its prompts when it pins or passes them."""
    review = ServerReview(server)
    review.items.extend(review_tools(manifest.tools if manifest is not None else {}, live_tools))
    if live_prompts is not None:
        pinned_prompts = (manifest.prompts if manifest is not None else None) or {}
        review.items.extend(review_prompts(pinned_prompts, live_prompts))
    return review
