"""Turning a raw ``CallToolResult`` into the recorded outcome (spec §1.13.6–8).

Structured content is taken from the raw answer text (so numbers beyond float64
survive), checked at the runtime's strict JSON boundary and written in the
canonical schema form. Otherwise the content blocks become text, recorded as a JSON
string of at most ``cap`` bytes counting its escaped form, quotes included.

It stays on the wire (the design puts "mapping results to outcomes" in ``upstream/``): the
mapping reads the exact answer line, which only the client holds, and the client's
``call_tool`` hands every caller (the loaded tools, the demo, the conformance driver) an
outcome, not a half-read answer plus its raw text. It needs only ``canonical/``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from agentrt_proxy import canonical
from agentrt_proxy.canonical.schema_form import SchemaFormError, canonical_schema, encode_string
from agentrt_proxy.mcp.outcomes import Refused, Result
from agentrt_proxy.mcp.spans import SpanError, find_span

__all__ = ["INPUT_REQUIRED", "TRUNCATION_MARKER", "InputRequired", "cap_text", "map_result", "mapped_text"]

TRUNCATION_MARKER = "\n[truncated]"
DROPPED_PLACEHOLDER = "[structured content dropped: too large]"
_SURROGATE = re.compile("[\ud800-\udfff]")
INPUT_REQUIRED = "the server asked for more input, which this adapter does not support"


@dataclass(frozen=True)
class InputRequired(Refused):
    """A modern-era ``resultType: "input_required"`` answer (MRTR): the server wants the
    client to answer its ``inputRequests`` and retry, which the proxy never does. It is a
    refusal: the loaded tool (``upstream.loaded_tool``) records it as ``<name>: <reason>`` (a known answer); any
    other reader still sees a ``Refused`` whose raw bytes are the answer."""

    reason: str = INPUT_REQUIRED
    raw: bytes = b""


_PLACEHOLDERS = {
    "image": "[image omitted]",
    "audio": "[audio omitted]",
    "resource_link": "[resource link omitted]",
    "resource": "[embedded resource omitted]",
}


def _encoded_len(text: str) -> int:
    return len(encode_string(text).encode("utf-8"))


def _go_text(text: str) -> str:
    # What Go's decoder would have made of it: a lone surrogate escape is U+FFFD.
    return _SURROGATE.sub("\ufffd", text)


def cap_text(text: str, cap: int) -> tuple[str, bool]:
    """``text`` if its JSON encoding fits ``cap`` bytes, else the longest prefix that fits
    with the marker appended (never splitting a character). A cap below the encoded
    marker is raised to it."""
    text = _go_text(text)
    if _encoded_len(text) <= cap:
        return text, False
    budget = max(cap, _encoded_len(TRUNCATION_MARKER)) - _encoded_len(TRUNCATION_MARKER) + 2  # +2: quotes
    lo, hi = 0, len(text)
    while lo < hi:  # largest k with encoded(text[:k]) <= budget
        mid = (lo + hi + 1) // 2
        if _encoded_len(text[:mid]) <= budget:
            lo = mid
        else:
            hi = mid - 1
    return text[:lo] + TRUNCATION_MARKER, True


def mapped_text(content: Any) -> str:
    """The content blocks joined with ``\\n``; every non-text block replaced by a placeholder."""
    parts: list[str] = []
    for block in content if isinstance(content, list) else []:
        kind = block.get("type") if isinstance(block, dict) else None
        if kind == "text" and isinstance(block.get("text"), str):
            parts.append(block["text"])
        else:
            parts.append(_PLACEHOLDERS.get(kind if isinstance(kind, str) else "", "[content omitted]"))
    return "\n".join(parts)


def map_result(server: str, remote: str, result: Any, answer_text: str, cap: int) -> Result | Refused:
    """Map one decoded ``result`` whose answer line is ``answer_text``."""
    if not isinstance(result, dict):
        return Refused("the result is not a JSON object", answer_text.encode("utf-8", "replace"))
    if result.get("resultType") == "input_required":
        return InputRequired(INPUT_REQUIRED, answer_text.encode("utf-8", "replace"))
    is_error = result.get("isError") is True
    dropped: int | None = None
    if result.get("structuredContent") is not None:
        try:
            span = find_span(answer_text, ["result", "structuredContent"])
        except SpanError as exc:  # pragma: no cover - the line decoded as a whole
            return Refused(str(exc), answer_text.encode("utf-8", "replace"))
        assert span is not None
        raw = answer_text[span[0] : span[1]]
        raw_bytes = raw.encode("utf-8", "surrogatepass")
        try:
            canonical.check_json(raw_bytes)
            form = canonical_schema(raw_bytes)
        except canonical.JSONBoundaryError as exc:
            return Refused(exc.reason, raw_bytes)
        except SchemaFormError as exc:
            return Refused(str(exc), raw_bytes)
        if len(form) <= cap:
            text = form.decode("utf-8")
            summary = f"{server}/{remote}: {len(form)} bytes"
            return Result(canonical.parse_strict(form), text, summary, is_error, False)
        dropped = len(form)
    text = mapped_text(result.get("content"))
    if dropped is not None and not text:
        text = DROPPED_PLACEHOLDER
    text, truncated = cap_text(text, cap)
    summary = f"{server}/{remote}: {_encoded_len(text)} bytes"
    if truncated or dropped is not None:
        summary += ", truncated"
    if dropped is not None:
        summary += f", structured content of {dropped} bytes dropped for the text"
    return Result(text, text, summary, is_error, truncated or dropped is not None)
