"""A result's size against ``max_result_bytes``, counted in the canonical schema form it is recorded in.

A result that fits passes whole; one that does not is never cut (a cut file read back and written
again loses its end without anyone noticing): ``mcp.results`` refuses it with an answer naming its
size and the setting. ``longest_prefix`` still bounds an error's text, which is quoted, never
passed on as the server's result.
"""

from __future__ import annotations

from dataclasses import dataclass

from agentrt_proxy.canonical.schema_form import encode_string

__all__ = ["Pieces", "longest_prefix", "size_of"]

_CONTENT = len('{"content":[]}')
_STRUCTURED = len(',"structuredContent":')
_META = len('"_meta":,')


@dataclass(frozen=True)
class Pieces:
    """A result's fields as recorded, each in the canonical schema form."""

    blocks: list[bytes]
    structured: bytes | None = None
    meta: bytes | None = None


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
