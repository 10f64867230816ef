"""Capping a result at ``max_result_bytes``, counted in the canonical schema form it is recorded in.

A result that fits is kept whole. One that does not keeps, in this order and while they fit: its
structured content (a host that validates the tool's ``outputSchema`` needs it), its content
blocks in order (a text block that no longer fits whole is cut; any other block that does not fit
is left out, and a later, smaller one may still fit), then its ``_meta``; and it ends with a text
block saying what was left out. The capped whole never exceeds the cap (the marker's room is kept
aside first), unless the cap is below the marker itself.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from agentrt_proxy.canonical.encoder import SCHEMA, encode
from agentrt_proxy.canonical.schema_form import encode_string, parse_form

__all__ = ["MARKER_ROOM", "Capped", "Pieces", "cap_pieces", "longest_prefix", "size_of"]

# Room kept for the final text block (a comma, the block, its numbers of at most 20 digits each).
MARKER_ROOM = 400
_CONTENT = len('{"content":[]}')
_STRUCTURED = len(',"structuredContent":')
_META = len('"_meta":,')
MARKER = (
    "[truncated: this result is {total} bytes, over the proxy's limit of {cap} bytes (max_result_bytes): "
    "{kept} of {count} content blocks kept whole{cut}{left}{structured}{meta}]"
)


@dataclass(frozen=True)
class Pieces:
    """A result's fields as recorded, each in the canonical schema form."""

    blocks: list[bytes]
    structured: bytes | None = None
    meta: bytes | None = None


@dataclass(frozen=True)
class Capped(Pieces):
    """The pieces kept, the recorded size and whether anything was cut or left out."""

    size: int = 0
    truncated: bool = False


def size_of(pieces: Pieces) -> int:
    """The length of ``{"_meta":…,"content":[…],"structuredContent":…}`` in bytes (keys sorted)."""
    size = _CONTENT + sum(len(block) for block in pieces.blocks) + max(len(pieces.blocks) - 1, 0)
    if pieces.structured is not None:
        size += _STRUCTURED + len(pieces.structured)
    if pieces.meta is not None:
        size += _META + len(pieces.meta)
    return size


def _encoded_len(text: str) -> int:
    return len(encode_string(text).encode("utf-8"))


def longest_prefix(text: str, budget: int) -> str:
    """The longest prefix of ``text`` whose JSON string (quotes included) fits ``budget`` bytes."""
    lo, hi = 0, min(len(text), max(budget - 2, 0))  # every character takes at least one byte
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if _encoded_len(text[:mid]) <= budget:
            lo = mid
        else:
            hi = mid - 1
    return text[:lo]


def _form(value: Any) -> bytes:
    return encode(value, SCHEMA).encode("utf-8")


def _cut(block: bytes, room: int) -> bytes | None:
    """A text block cut to fit ``room`` bytes, or ``None`` when it is no text block or nothing fits."""
    tree = parse_form(block)
    if not isinstance(tree, dict) or tree.get("type") != "text" or not isinstance(tree.get("text"), str):
        return None
    empty = _form({**tree, "text": ""})
    prefix = longest_prefix(tree["text"], room - len(empty) + 2)  # +2: the empty text's quotes
    if not prefix:
        return None
    return _form({**tree, "text": prefix})


def cap_pieces(pieces: Pieces, cap: int) -> Capped:
    """``pieces`` within ``cap`` bytes (see the module's description)."""
    total = size_of(pieces)
    if total <= cap:
        return Capped(pieces.blocks, pieces.structured, pieces.meta, total, False)
    budget = cap - MARKER_ROOM
    used = _CONTENT
    structured = None
    if pieces.structured is not None and used + _STRUCTURED + len(pieces.structured) <= budget:
        structured = pieces.structured
        used += _STRUCTURED + len(structured)
    kept: list[bytes] = []
    whole = cut = left = 0
    for block in pieces.blocks:
        if used + len(block) + 1 <= budget:  # +1: the comma before the next block (the marker at least)
            kept.append(block)
            used += len(block) + 1
            whole += 1
            continue
        shorter = _cut(block, budget - used - 1)
        if shorter is None:
            left += 1
            continue
        kept.append(shorter)
        used += len(shorter) + 1
        cut += 1
    meta = None
    if pieces.meta is not None and used + _META + len(pieces.meta) <= budget:
        meta = pieces.meta
        used += _META + len(meta)
    marker = MARKER.format(
        total=total,
        cap=cap,
        kept=whole,
        count=len(pieces.blocks),
        cut=f", {cut} cut" if cut else "",
        left=f", {left} left out" if left else "",
        structured="; the structured content left out" if pieces.structured is not None and structured is None else "",
        meta="; the _meta left out" if pieces.meta is not None and meta is None else "",
    )
    kept.append(_form({"type": "text", "text": marker}))
    capped = Pieces(kept, structured, meta)
    return Capped(kept, structured, meta, size_of(capped), True)
