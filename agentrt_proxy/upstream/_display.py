"""What the host is shown of a tool beside its name, description and input schema.

``title``, ``icons`` and ``outputSchema`` come from the server's live listing; the pin records
the title and the output schema (a ``display`` entry, docs/decisions/0018) and the load checks
refuse a tool whose two changed, while icons are not pinned (docs/decisions/0015). Each is
passed only in a shape every host accepts, since a host that parses the listing strictly (the
TypeScript SDK's client does) refuses the whole listing for one malformed tool: a title is a
string, an icon an object with a string ``src`` (``mimeType`` a string, ``sizes`` strings,
``theme`` light or dark), an output schema a JSON object whose ``type`` is ``"object"`` (what
revisions up to 2025-11-25 require). Anything else is left out, never repaired.

``annotations``: ``readOnlyHint`` and ``destructiveHint`` are the operator's classification,
never the server's claims (``readOnlyHint`` only for ``read_only``, ``destructiveHint`` only for
``destructive``). The classification says nothing of idempotence, and of an open world only for
``remote_mutation`` (it reaches something remote): there the server's own ``idempotentHint`` and
``openWorldHint`` are kept, and where it gave none, the specification's defaults (not
idempotent, open world).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from agentrt_proxy.canonical import schema_form
from agentrt_proxy.config import READ_ONLY

__all__ = ["ToolDisplay", "annotations_for", "display_of", "hints_of"]

DESTRUCTIVE = "destructive"
REMOTE_MUTATION = "remote_mutation"  # a class that says the tool reaches an open world
_KEPT_HINTS = ("idempotentHint", "openWorldHint")  # the server's, where the class says nothing
MAX_ICONS = 16
_THEMES = ("light", "dark")


@dataclass(frozen=True)
class ToolDisplay:
    """The listing's ``title``, ``icons`` and ``outputSchema`` (its canonical schema form), each
    ``None`` when the server gave none usable."""

    title: str | None = None
    icons: tuple[dict[str, Any], ...] | None = None
    output_schema: str | None = None
    hints: tuple[tuple[str, bool], ...] = ()  # the server's idempotentHint and openWorldHint, as given

    def fields(self) -> dict[str, Any]:
        """``title`` and ``icons`` as the host's listing carries them (the output schema, JSON
        text, is embedded by the caller as a ``canonical.encoder.Raw``)."""
        out: dict[str, Any] = {}
        if self.title is not None:
            out["title"] = self.title
        if self.icons:
            out["icons"] = [dict(icon) for icon in self.icons]
        return out


def _icon(value: Any) -> dict[str, Any] | None:
    if not isinstance(value, dict) or not isinstance(value.get("src"), str) or not value["src"]:
        return None
    icon: dict[str, Any] = {"src": value["src"]}
    if isinstance(value.get("mimeType"), str):
        icon["mimeType"] = value["mimeType"]
    sizes = value.get("sizes")
    if isinstance(sizes, list) and all(isinstance(size, str) for size in sizes):
        icon["sizes"] = list(sizes)
    if value.get("theme") in _THEMES:
        icon["theme"] = value["theme"]
    return icon


def _output_schema(value: Any) -> str | None:
    if not isinstance(value, dict) or value.get("type") != "object":
        return None
    try:  # decoded by the wire with Python's json: a huge exponent is an infinity, not JSON
        text = json.dumps(value, ensure_ascii=False, allow_nan=False)
        return schema_form.canonical_schema(text).decode("utf-8")
    except (ValueError, schema_form.SchemaFormError):
        return None


def hints_of(annotations: Any) -> tuple[tuple[str, bool], ...]:
    """The server's ``idempotentHint`` and ``openWorldHint``, each only when it is a boolean."""
    if not isinstance(annotations, Mapping):
        return ()
    return tuple((key, annotations[key]) for key in _KEPT_HINTS if isinstance(annotations.get(key), bool))


def display_of(decoded: Mapping[str, Any]) -> ToolDisplay:
    """The usable ``title``, ``icons`` and ``outputSchema`` of one decoded listed tool."""
    title = decoded.get("title")
    if not isinstance(title, str):
        annotations = decoded.get("annotations")
        # Display precedence is title, then annotations.title: the second is a name, not a claim.
        title = annotations.get("title") if isinstance(annotations, dict) else None
    icons = decoded.get("icons")
    kept = [icon for icon in (_icon(value) for value in icons[:MAX_ICONS]) if icon] if isinstance(icons, list) else []
    return ToolDisplay(
        title=title if isinstance(title, str) else None,
        icons=tuple(kept) or None,
        output_schema=_output_schema(decoded.get("outputSchema")),
        hints=hints_of(decoded.get("annotations")),
    )


def annotations_for(side_effect: str, hints: tuple[tuple[str, bool], ...] = ()) -> dict[str, bool]:
    """The annotations the host is shown of a tool the operator classified as ``side_effect``
    whose server gave ``hints`` (``hints_of``)."""
    given = dict(hints)
    return {
        "readOnlyHint": side_effect == READ_ONLY,
        "destructiveHint": side_effect == DESTRUCTIVE,
        "idempotentHint": given.get("idempotentHint", False),
        "openWorldHint": True if side_effect == REMOTE_MUTATION else given.get("openWorldHint", True),
    }
