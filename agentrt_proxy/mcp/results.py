"""Turning a raw ``CallToolResult`` into the recorded outcome (proxy-and-mcp-module §1.13.6–8, and the
deviation of docs/decisions/0015: results pass through as the server sent them).

A result that is not an error is recorded as the server's own fields: its ``content`` array
(every block, in order, with its annotations and ``_meta``), its ``structuredContent`` beside
it (never instead of it) and its ``_meta``. Each is taken from the raw answer text and written
in the canonical schema form (keys sorted, every number's value kept: a literal beyond float64
survives), so what is recorded is exactly what the host is answered. A text the server sent
twice (a block and a string of its structured content) is recorded once (``shared_text``). A
result larger than ``cap`` bytes of that form (``max_result_bytes``) is never cut: it is refused
with a reason naming its size and the setting, recorded as the server's answer (so a tool that
is not read-only is known to have executed).

An ``isError`` result is recorded, as before, as its text: the text blocks joined, every other
block a short placeholder (``mapped_text``), at most ``ERROR_TEXT_BYTES``; the tool's
known-answer pattern (``upstream.loaded_tool``) matches its summary.

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
from agentrt_proxy.canonical.encoder import SCHEMA, encode
from agentrt_proxy.canonical.schema_form import SchemaFormError, canonical_schema, encode_string, parse_form
from agentrt_proxy.mcp import _messages as M
from agentrt_proxy.mcp._result_cap import Pieces, longest_prefix, size_of
from agentrt_proxy.mcp.outcomes import CALL_TOOL_RESULT, Refused, Result
from agentrt_proxy.mcp.shared_text import SHARED_KEY, entries_size, expand, share
from agentrt_proxy.mcp.spans import SpanError, find_span, iter_elements, iter_members

__all__ = [
    "ERROR_TEXT_BYTES",
    "INPUT_REQUIRED",
    "TEXT_LIMIT",
    "TOO_LARGE_HEAD_BYTES",
    "TRUNCATION_MARKER",
    "InputRequired",
    "cap_text",
    "map_result",
    "mapped_text",
    "recorded_text",
    "too_large",
]

TRUNCATION_MARKER = "\n[truncated]"
_SURROGATE = re.compile("[\ud800-\udfff]")
INPUT_REQUIRED = M.INPUT_REQUIRED
# An error's recorded text: what the record kept before results passed through (64 KiB), as an
# error's text is quoted to the model, never answered as blocks.
ERROR_TEXT_BYTES = 64 * 1024
# The short text of a result (DUPLICATE's quote, ``Result.text``): at most this many characters.
TEXT_LIMIT = 64 * 1024
_FIELD_LIMIT = 200  # a URI or a MIME type inside a placeholder
# Of a result refused as too large, what the record keeps: its answer's first characters.
TOO_LARGE_HEAD_BYTES = 4096
_MIB = 1 << 20


@dataclass(frozen=True)
class InputRequired(Refused):
    """A modern-era ``resultType: "input_required"`` answer (MRTR): the server wants the
    client to answer its ``inputRequests`` and retry, which the proxy never does. It is a
    refusal: the loaded tool (``upstream.loaded_tool``) records it as ``<name>: <reason>`` (a known answer); any
    other reader still sees a ``Refused`` whose raw bytes are the answer."""

    reason: str = INPUT_REQUIRED
    raw: bytes = b""


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
    if 6 * len(text) + 2 <= cap or _encoded_len(text) <= cap:  # 6: no character encodes longer
        return text, False
    budget = max(cap, _encoded_len(TRUNCATION_MARKER)) - _encoded_len(TRUNCATION_MARKER) + 2  # +2: quotes
    return longest_prefix(text, budget) + TRUNCATION_MARKER, True


# ------------------------------------------------------------------ the short text


def _short(value: Any) -> str:
    text = value if isinstance(value, str) else ""
    return text if len(text) <= _FIELD_LIMIT else text[:_FIELD_LIMIT] + "…"


def _base64_bytes(data: Any) -> int:
    """How many bytes a base64 text decodes to (without decoding it)."""
    if not isinstance(data, str):
        return 0
    return len(data.rstrip("=")) * 3 // 4


def _placeholder(block: Any) -> str:
    kind = block.get("type") if isinstance(block, dict) else None
    if not isinstance(block, dict) or not isinstance(kind, str):
        return "[content]"
    if kind in ("image", "audio"):
        return f"[{kind} {_short(block.get('mimeType'))}, {_base64_bytes(block.get('data'))} bytes]"
    if kind == "resource_link":
        return f"[resource link {_short(block.get('uri'))}]"
    if kind == "resource":
        inner = block.get("resource")
        resource: dict[str, Any] = inner if isinstance(inner, dict) else {}
        if isinstance(resource.get("text"), str):
            size = len(resource["text"].encode("utf-8", "surrogatepass"))
        else:
            size = _base64_bytes(resource.get("blob"))
        mime = _short(resource.get("mimeType")) or "no type"
        return f"[resource {_short(resource.get('uri'))}, {mime}, {size} bytes]"
    return f"[{_short(kind)} content]"


def mapped_text(content: Any, limit: int = TEXT_LIMIT) -> str:
    """The content blocks joined with ``\\n``: a text block's text, every other block a short
    placeholder naming it (``[image image/png, 1234 bytes]``); at most ``limit`` characters."""
    parts: list[str] = []
    length = 0
    for block in content if isinstance(content, list) else []:
        if isinstance(block, dict) and block.get("type") == "text" and isinstance(block.get("text"), str):
            part = block["text"]
        else:
            part = _placeholder(block)
        parts.append(part[: limit - length + 1])
        length += len(parts[-1]) + 1
        if length > limit:
            break
    return "\n".join(parts)[:limit]


def recorded_text(record: Any, limit: int = TEXT_LIMIT) -> str:
    """The short text of a recorded result (``CALL_TOOL_RESULT``): its blocks as ``mapped_text``
    says, or, when it has no blocks, its structured content as JSON text."""
    if not isinstance(record, dict):
        return ""
    record = expand(record)
    blocks = record.get("content")
    if (not isinstance(blocks, list) or not blocks) and record.get("structuredContent") is not None:
        return canonical.policy_text(record["structuredContent"])[:limit]
    return mapped_text(blocks, limit)


# ------------------------------------------------------------------ the mapping


def _form(raw: str) -> bytes:
    """One raw member in the canonical schema form (``SchemaFormError`` when it is not JSON)."""
    return canonical_schema(raw)


def _pieces(result: dict[str, Any], answer_text: str) -> Pieces | Refused:
    """The raw result's ``content`` blocks, ``structuredContent`` and ``_meta``, each in the
    canonical schema form, or why the answer is refused."""
    span = find_span(answer_text, ["result"])
    assert span is not None  # the line decoded with a result
    raw: dict[str, tuple[int, int]] = {}
    for key, start, end in iter_members(answer_text, span[0]):
        raw[key] = (start, end)  # the last duplicate wins, as the decoded result has it
    blocks: list[bytes] = []
    if "content" in raw and result.get("content") is not None:
        if not isinstance(result.get("content"), list):
            return Refused(M.CONTENT_NOT_ARRAY, answer_text.encode("utf-8", "replace"))
        for start, end in iter_elements(answer_text, raw["content"][0]):
            blocks.append(_form(answer_text[start:end]))
    structured: bytes | None = None
    if "structuredContent" in raw and result.get("structuredContent") is not None:
        start, end = raw["structuredContent"]
        raw_bytes = answer_text[start:end].encode("utf-8", "surrogatepass")
        try:  # the runtime's own boundary, as for arguments: repeated keys, numbers beyond bounds
            canonical.check_json(raw_bytes)
        except canonical.JSONBoundaryError as exc:
            return Refused(exc.reason, raw_bytes)
        structured = canonical_schema(raw_bytes)
    meta: bytes | None = None
    if "_meta" in raw and isinstance(result.get("_meta"), dict):
        meta = _form(answer_text[raw["_meta"][0] : raw["_meta"][1]])
    return Pieces(blocks, structured, meta)


def map_result(server: str, remote: str, result: Any, answer_text: str, cap: int) -> Result | Refused:
    """Map one decoded ``result`` whose answer line is ``answer_text``."""
    if not isinstance(result, dict):
        return Refused(M.RESULT_NOT_OBJECT, answer_text.encode("utf-8", "replace"))
    if result.get("resultType") == "input_required":
        return InputRequired(INPUT_REQUIRED, answer_text.encode("utf-8", "replace"))
    try:
        pieces = _pieces(result, answer_text)
    except (SpanError, SchemaFormError) as exc:
        return Refused(str(exc), answer_text.encode("utf-8", "replace"))
    if isinstance(pieces, Refused):
        return pieces
    if result.get("isError") is True:
        return _error(server, remote, result.get("content"), pieces.structured, cap)
    blocks = [parse_form(block) for block in pieces.blocks]
    structured = parse_form(pieces.structured) if pieces.structured is not None else None
    kept, entries = share(blocks, structured)
    recorded = [
        raw if tree is block else _tree_form(tree) for raw, block, tree in zip(pieces.blocks, blocks, kept, strict=True)
    ]
    size = size_of(Pieces(recorded, pieces.structured, pieces.meta)) + entries_size(entries)
    if size > cap:
        return Refused(too_large(size, cap), _head(answer_text))
    record: dict[str, Any] = {"content": kept}
    if structured is not None:
        record["structuredContent"] = structured
    if pieces.meta is not None:
        record["_meta"] = parse_form(pieces.meta)
    if entries:
        record[SHARED_KEY] = entries
    summary = f"{server}/{remote}: {size} bytes"
    return Result(record, recorded_text(record), summary, False, False, CALL_TOOL_RESULT)


def too_large(size: int, cap: int) -> str:
    """Why a result over ``max_result_bytes`` was refused, naming its size and the setting."""
    return M.RESULT_OVER_CAP.format(size=size, size_mib=size / _MIB, cap=cap, cap_mib=cap / _MIB)


def _tree_form(tree: Any) -> bytes:
    return encode(tree, SCHEMA).encode("utf-8")


def _head(answer_text: str) -> bytes:
    return answer_text[:TOO_LARGE_HEAD_BYTES].encode("utf-8", "replace")


def _error(server: str, remote: str, content: Any, structured: bytes | None, cap: int) -> Result:
    """An ``isError`` result: its text, bounded, as the record has always kept it."""
    text = mapped_text(content)
    if not text and structured is not None:
        text = structured.decode("utf-8")
    text, truncated = cap_text(text, min(cap, ERROR_TEXT_BYTES))
    summary = f"{server}/{remote}: {_encoded_len(text)} bytes"
    if truncated:
        summary += ", truncated"
    return Result(text, text, summary, True, truncated)
