"""Locate the raw text of a member inside JSON text, without re-serialising it.

The gate keys a request on its literal numbers and must itself refuse repeated keys
and unpaired surrogate escapes, so ``params.arguments`` reaches it as the exact
substring of the wire line. The same scanner takes ``inputSchema`` out of a raw
``tools/list`` page and ``structuredContent`` out of a raw ``tools/call`` result.

Values are skipped with the C JSON scanner (``raw_decode``), so a 16 MiB line costs
one pass at C speed. Keys match exactly (case-sensitive, after unescaping); a
repeated key resolves to its last occurrence, as ``json.loads`` and Go's decoder do.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from agentrt_proxy.canonical.encoder import WIRE, Raw, encode
from agentrt_proxy.errors import InvalidValue
from agentrt_proxy.mcp import _messages as M

__all__ = [
    "SpanError",
    "find_span",
    "iter_elements",
    "iter_members",
    "raw_members",
    "top_level_id",
    "with_members_in_front",
]

_WS = re.compile(r"[ \t\n\r]*")
_WS_CHARS = frozenset(" \t\n\r")  # "" (past the end) is not in it: i, as the regex would give
_DECODER = json.JSONDecoder()
_SCAN = _DECODER.scan_once  # type: ignore[attr-defined]


class SpanError(InvalidValue):
    """The text is not the JSON shape the scanner was asked to walk."""


def _ws(text: str, i: int) -> int:
    if text[i : i + 1] not in _WS_CHARS:  # compact JSON, the common case: no regex call
        return i
    m = _WS.match(text, i)
    assert m is not None
    return m.end()


def _value_end(text: str, i: int) -> int:
    try:
        _, end = _SCAN(text, i)
    except StopIteration as exc:
        raise SpanError(M.EXPECTED_VALUE.format(offset=i)) from exc
    except (json.JSONDecodeError, RecursionError) as exc:
        raise SpanError(str(exc)) from exc
    return int(end)


def iter_members(text: str, start: int) -> Iterator[tuple[str, int, int]]:
    """For the object at ``start``: ``(key, value_start, value_end)`` in text order."""
    i = _ws(text, start)
    if text[i : i + 1] != "{":
        raise SpanError(M.EXPECTED_OBJECT.format(offset=i))
    i = _ws(text, i + 1)
    if text[i : i + 1] == "}":
        return
    while True:
        if text[i : i + 1] != '"':
            raise SpanError(M.EXPECTED_KEY.format(offset=i))
        key, i = json.decoder.scanstring(text, i + 1)  # type: ignore[attr-defined]
        i = _ws(text, i)
        if text[i : i + 1] != ":":
            raise SpanError(M.EXPECTED_COLON.format(offset=i))
        vstart = _ws(text, i + 1)
        vend = _value_end(text, vstart)
        yield key, vstart, vend
        i = _ws(text, vend)
        c = text[i : i + 1]
        if c == "}":
            return
        if c != ",":
            raise SpanError(M.EXPECTED_OBJECT_END.format(offset=i))
        i = _ws(text, i + 1)


def raw_members(text: str) -> list[tuple[str, Raw, Raw]]:
    """The members of the object ``text`` holds, in text order: ``(name, key, value)``, the key
    and the value as their exact JSON text with the whitespace around them, so an object encoded
    from them (a ``Raw`` key and value are written verbatim) is ``text`` again from its opening
    brace to its closing one, byte for byte; only an empty object's inner whitespace is not kept."""
    members: list[tuple[str, Raw, Raw]] = []
    key_from = _ws(text, 0) + 1  # just after the brace or comma before a key
    for name, vstart, vend in iter_members(text, 0):  # which checks the commas and braces
        colon = text.rindex(":", key_from, vstart)  # only whitespace lies between it and the value
        value_to = _ws(text, vend)  # at the comma or brace after the value
        members.append((name, Raw(text[key_from:colon]), Raw(text[colon + 1 : value_to])))
        key_from = value_to + 1
    return members


def with_members_in_front(text: str, added: Mapping[str, Any]) -> Raw:
    """The object ``text`` holds with the members of ``added`` it lacks in front of its own,
    every byte of its own members kept (``raw_members``) but the whitespace before the first;
    ``text`` itself when it lacks none."""
    members = raw_members(text)
    present = {name for name, _key, _value in members}
    front: dict[str, Any] = {key: value for key, value in added.items() if key not in present}
    if not front:
        return text if isinstance(text, Raw) else Raw(text)
    for index, (_name, key, value) in enumerate(members):
        # Its first member follows the added ones at once, as a comma follows a member.
        front[Raw(key.lstrip(" \t\r\n")) if index == 0 else key] = value
    return Raw(encode(front, WIRE))


def iter_elements(text: str, start: int) -> Iterator[tuple[int, int]]:
    """For the array at ``start``: ``(value_start, value_end)`` of each element."""
    i = _ws(text, start)
    if text[i : i + 1] != "[":
        raise SpanError(M.EXPECTED_ARRAY.format(offset=i))
    i = _ws(text, i + 1)
    if text[i : i + 1] == "]":
        return
    while True:
        vend = _value_end(text, i)
        yield i, vend
        i = _ws(text, vend)
        c = text[i : i + 1]
        if c == "]":
            return
        if c != ",":
            raise SpanError(M.EXPECTED_ARRAY_END.format(offset=i))
        i = _ws(text, i + 1)


def find_span(text: str, path: Sequence[str | int], start: int = 0) -> tuple[int, int] | None:
    """The span of the value at ``path`` (keys and array indexes), or ``None`` if absent.

    Raises ``SpanError`` when a step meets the wrong kind of value.
    """
    begin = _ws(text, start)
    # A first key's step walks every member of the object, checking each value, comma and brace
    # as a scan of the whole value would: the text is not decoded twice for it.
    walked_whole = bool(path) and isinstance(path[0], str) and text[begin : begin + 1] == "{"
    end = begin if walked_whole else _value_end(text, begin)
    for step in path:
        found: tuple[int, int] | None = None
        if isinstance(step, str):
            if text[begin : begin + 1] != "{":
                return None
            for key, vs, ve in iter_members(text, begin):
                if key == step:
                    found = (vs, ve)  # keep scanning: the last duplicate wins
        else:
            if text[begin : begin + 1] != "[":
                return None
            for n, (vs, ve) in enumerate(iter_elements(text, begin)):
                if n == step:
                    found = (vs, ve)
                    break
        if found is None:
            return None
        begin, end = found
    return begin, end


# Whole scalars, so a float, ``true`` or ``null`` in the id's place is read as what it is
# (not as the digits before its point, or as the next key).
_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|[{}\[\]:,]|-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?|true|false|null', re.DOTALL)


def top_level_id(text: str, max_tokens: int | None = None) -> int | str | None:
    """Best effort: the top-level ``"id"`` of a message that does not decode as a whole.

    Tolerant of junk inside other values, so an answer whose result is broken can
    still be matched to the request it answers. ``None`` when the first top-level id is
    not a string or an integer, and after ``max_tokens`` tokens without one (a bound on
    the time a hostile line can cost).
    """
    depth = 0
    prev_key: str | None = None
    expect_value = False
    for count, m in enumerate(_TOKEN.finditer(text)):
        if max_tokens is not None and count >= max_tokens:
            return None
        tok = m.group(0)
        if expect_value:
            # The token right after the top-level "id": is the id, whatever it is.
            if tok in ("{", "[", "}", "]", ":", ","):
                return None
            try:
                value = json.loads(tok)
            except ValueError:
                return None
            valid = isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))
            return value if valid else None
        if tok in ("{", "["):
            depth += 1
        elif tok in ("}", "]"):
            depth -= 1
        elif tok == ":":
            expect_value = depth == 1 and prev_key == "id"
        elif tok == ",":
            prev_key = None
        elif depth == 1 and tok.startswith('"'):
            try:
                prev_key = json.loads(tok)
            except ValueError:
                prev_key = None
    return None
