"""Why serving withholds a pinned tool, as a fact the operator can be shown later: pure.

A tool the load checks refuse (``checks.build``) carries one reason from the small set below;
``withheld_facts`` adds a short detail (which fields differ from the pin, the hashes pinned and
seen) so the operator's console, a process of its own, can show it from the database
(``store/_withheld.py``) without listing the server again.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from agentrt_proxy import canonical
from agentrt_proxy.canonical import schema_form
from agentrt_proxy.text import console_text
from agentrt_proxy.upstream.pins import LiveTool, Manifest, PinnedTool
from agentrt_proxy.upstream.review import review_tools

__all__ = [
    "CHANGED_SINCE_PIN",
    "REFUSED_BY_CHECK",
    "REFUSED_BY_SCAN",
    "REMOVED_UPSTREAM",
    "WITHHOLDING_REASONS",
    "Withholding",
    "start_up_check",
    "withheld_facts",
]

# Why a pinned tool is not served: the reasons a withheld tool's row names.
CHANGED_SINCE_PIN = "changed-since-pin"  # its description, schema, hints, title or output schema
REMOVED_UPSTREAM = "removed-upstream"  # the server no longer lists it
REFUSED_BY_CHECK = "refused-by-check"  # another load check (its hints against the class, its schema's shape)
REFUSED_BY_SCAN = "refused-by-scan"  # the scan refused it at the pin: never pinned, never offered
WITHHOLDING_REASONS = (CHANGED_SINCE_PIN, REMOVED_UPSTREAM, REFUSED_BY_CHECK, REFUSED_BY_SCAN)

MAX_FIELDS = 8  # the changed fields a detail names; the rest are counted
HASH_CHARS = 12  # the hex digits of a hash a detail shows


@dataclass(frozen=True)
class Withholding:
    """One pinned tool withheld: the reason (``WITHHOLDING_REASONS``), the sentence the model and
    the operator's line read (the load check's own), and the detail the console shows (the
    sentence, then the fields and hashes that differ)."""

    tool: str
    reason: str
    sentence: str
    detail: str


def _short(digest: str) -> str:
    return digest.removeprefix("sha256:")[:HASH_CHARS]


def _live_hashes(live: LiveTool) -> tuple[str, str]:
    try:
        schema = canonical.sha256_hex(schema_form.canonical_schema(live.input_schema))
    except schema_form.SchemaFormError:
        schema = console_text.WITHHELD_NO_FORM
    return schema, schema_form.description_hash(live.description)


def change_detail(pinned: PinnedTool, live: LiveTool) -> str:
    """Which fields of ``live`` differ from ``pinned``, and the hashes that differ, pinned and seen."""
    parts: list[str] = []
    reviewed = review_tools({pinned.name: pinned}, [live])
    wheres = list(dict.fromkeys(change.where for item in reviewed for change in item.changes))
    if wheres:
        shown = ", ".join(wheres[:MAX_FIELDS])
        more = len(wheres) - MAX_FIELDS
        parts.append(
            console_text.WITHHELD_FIELDS.format(
                fields=shown + (console_text.WITHHELD_MORE.format(n=more) if more > 0 else "")
            )
        )
    schema, description = _live_hashes(live)
    for what, was, now in (
        ("inputSchema", pinned.schema_hash, schema),
        ("description", pinned.description_hash, description),
    ):
        if was != now:
            parts.append(console_text.WITHHELD_HASHES.format(what=what, pinned=_short(was), seen=_short(now)))
    return "; ".join(parts)


def withheld_facts(
    manifest: Manifest, refused: Iterable[tuple[str, str, str]], listing: Iterable[LiveTool]
) -> dict[str, Withholding]:
    """Each refused (tool, reason, sentence) as a ``Withholding`` with its detail, read from the
    pin and the listing that was checked."""
    live: Mapping[str, LiveTool] = {tool.name: tool for tool in listing}
    out: dict[str, Withholding] = {}
    for tool, reason, sentence in refused:
        pinned, now = manifest.tools.get(tool), live.get(tool)
        extra = ""
        if reason == CHANGED_SINCE_PIN and pinned is not None and now is not None:
            extra = change_detail(pinned, now)
        elif reason == REMOVED_UPSTREAM and pinned is not None:
            extra = console_text.WITHHELD_GONE.format(pinned=_short(pinned.schema_hash))
        out[tool] = Withholding(tool, reason, sentence, "; ".join(part for part in (sentence, extra) if part))
    return out


def start_up_check(
    manifest: Manifest, refused: Iterable[tuple[str, str, str]], listing: Iterable[LiveTool], offered: Sequence[str]
) -> tuple[list[str], dict[str, Withholding]]:
    """The start-up load's check as one record: (the tools checked, those withheld). Every pinned
    tool counts as checked, so one pinned again or no longer classified is no longer withheld; the
    scan's refusals are left out (the console shows them from the manifest)."""
    kept = [entry for entry in refused if entry[1] != REFUSED_BY_SCAN]
    checked = list(dict.fromkeys([*offered, *manifest.tools, *(tool for tool, _, _ in kept)]))
    return checked, withheld_facts(manifest, kept, listing)
