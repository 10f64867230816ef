"""What a server lists and what ``pin`` records of it (proxy-and-mcp-module §1.9): one live tool, one pinned
tool, a server's manifest, and the annotations as the SDK keeps them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, TypeGuard

from agentrt_proxy import canonical
from agentrt_proxy.canonical import schema_form
from agentrt_proxy.errors import InvalidValue
from agentrt_proxy.text import pin_text
from agentrt_proxy.upstream._display import ToolDisplay

__all__ = [
    "LiveTool",
    "Manifest",
    "PinnedPrompt",
    "PinnedTool",
    "ScanRecord",
    "hints_text",
    "live_tool",
    "normalise_annotations",
    "pin_prompt",
    "pin_tool",
]

_ANNOTATION_BOOLS = ("readOnlyHint", "idempotentHint")  # omitted when false
_ANNOTATION_NULLABLE = ("destructiveHint", "openWorldHint")  # omitted when absent


@dataclass(frozen=True)
class LiveTool:
    """One tool as the server lists it now: decoded strings and the raw ``inputSchema``."""

    name: str
    description: str
    annotations: dict[str, Any] | None
    input_schema: str
    display: ToolDisplay = field(default_factory=ToolDisplay)  # title, icons, outputSchema: shown, never pinned


@dataclass(frozen=True)
class PinnedTool:
    """One tool as the manifest pins it."""

    name: str
    description: str
    input_schema: bytes  # the canonical schema form
    schema_hash: str
    description_hash: str
    annotations: dict[str, Any] | None = None
    # The listing's title and output schema (canonical form), pinned (decision 0018) so a change to
    # either is reviewed and refused; ``display_pinned`` is False for a manifest written before.
    title: str | None = None
    output_schema: bytes | None = None
    display_pinned: bool = False


@dataclass(frozen=True)
class PinnedPrompt:
    """One prompt as the manifest pins it: every part of its listing a model may read."""

    name: str
    title: str | None
    description: str
    arguments: tuple[tuple[tuple[str, Any], ...], ...]  # each argument's pinned fields, in order

    def arguments_tree(self) -> list[dict[str, Any]]:
        return [dict(argument) for argument in self.arguments]


@dataclass(frozen=True)
class ScanRecord:
    """What the scan decided at pin (decision 0019): per tool (or ``prompt:NAME``) the hard findings
    that refused it (it is not pinned) or that the operator overrode by name (it is)."""

    refused: dict[str, tuple[dict[str, str], ...]] = field(default_factory=dict)
    overridden: dict[str, tuple[dict[str, str], ...]] = field(default_factory=dict)


@dataclass(frozen=True)
class Manifest:
    server: str
    pinned_at: str
    tools: dict[str, PinnedTool]
    prompts: dict[str, PinnedPrompt] | None = None  # None: the manifest pins no prompts (older files)
    scan: ScanRecord | None = None  # None: nothing refused or overridden (or pinned before the scanner)


_ARGUMENT_FIELDS = (("name", str), ("title", str), ("description", str), ("required", bool))


class PromptShapeError(InvalidValue):
    """A listed prompt that cannot be pinned (no name, arguments that are not objects); the
    message says what. Caught where the listing is read, so outside the error tree."""


def _is_text(value: Any) -> TypeGuard[str]:
    return isinstance(value, str) and not isinstance(value, canonical.Number)  # a strict parse's numbers are str


def pin_prompt(listed: Any) -> PinnedPrompt:
    """What ``pin`` records of one entry of a ``prompts/list`` result (and what serving compares
    against it): its name, title, description and arguments, each argument's name, title,
    description and ``required`` (kept only when true). Anything else is not pinned."""
    if not isinstance(listed, dict) or not _is_text(listed.get("name")):
        raise PromptShapeError(pin_text.PROMPT_NAMELESS)
    arguments_value = listed.get("arguments")
    if arguments_value is None:
        arguments_value = []
    if not isinstance(arguments_value, list):
        raise PromptShapeError(pin_text.PROMPT_ARGUMENTS_NOT_ARRAY.format(name=listed["name"]))
    arguments = []
    for argument in arguments_value:
        if not isinstance(argument, dict) or not _is_text(argument.get("name")):
            raise PromptShapeError(pin_text.PROMPT_ARGUMENT_NAMELESS.format(name=listed["name"]))
        kept = []
        for key, kind in _ARGUMENT_FIELDS:
            value = argument.get(key)
            if _is_text(value) if kind is str else value is True:
                kept.append((key, value))
        arguments.append(tuple(kept))
    title, description = listed.get("title"), listed.get("description")
    return PinnedPrompt(
        name=listed["name"],
        title=title if _is_text(title) else None,
        description=description if _is_text(description) else "",
        arguments=tuple(arguments),
    )


def normalise_annotations(value: Any) -> dict[str, Any] | None:
    """The server's annotations as the SDK's ``ToolAnnotations`` keeps them (proxy-and-mcp-module §1.9)."""
    if not isinstance(value, dict):
        return None
    kept: dict[str, Any] = {}
    for key in _ANNOTATION_NULLABLE:
        if isinstance(value.get(key), bool):
            kept[key] = value[key]
    for key in _ANNOTATION_BOOLS:
        if value.get(key) is True:
            kept[key] = True
    title = value.get("title")
    if isinstance(title, str) and title:
        kept["title"] = title
    return dict(sorted(kept.items()))


def live_tool(name: str, description: str | None, annotations: Any, raw_schema: str | bytes) -> LiveTool:
    # Each invalid byte its own U+FFFD, as Go decodes (and as schema_form does for bytes).
    raw = raw_schema.decode("utf-8", "agentrt-go-replace") if isinstance(raw_schema, bytes) else raw_schema
    return LiveTool(name, description or "", normalise_annotations(annotations), raw)


def pin_tool(tool: LiveTool) -> PinnedTool:
    """What ``pin`` records for one live tool (raises ``SchemaFormError`` on a broken schema)."""
    form = schema_form.canonical_schema(tool.input_schema)
    return PinnedTool(
        name=tool.name,
        description=tool.description,
        input_schema=form,
        schema_hash=canonical.sha256_hex(form),
        description_hash=schema_form.description_hash(tool.description),
        annotations=tool.annotations,
        title=tool.display.title,
        output_schema=tool.display.output_schema.encode("utf-8") if tool.display.output_schema is not None else None,
        display_pinned=True,
    )


def hints_text(annotations: Mapping[str, Any] | None) -> str:
    """The hints ``pin`` shows: never a classification, only what the server claims."""
    if annotations is None:
        return "no annotations"
    hints = []
    if annotations.get("readOnlyHint") is True:
        hints.append("readOnly")
    if annotations.get("destructiveHint") is True:
        hints.append("destructive")
    if annotations.get("idempotentHint") is True:
        hints.append("idempotent")
    if annotations.get("openWorldHint") is True:
        hints.append("openWorld")
    return ",".join(hints) if hints else "claims nothing"
