"""The canonical *schema* form of spec §1.8, and the pin hashes built on it.

This is the form the original wrote with Go's ``encoding/json`` after decoding with
``UseNumber``: keys sorted, no insignificant whitespace, no HTML escaping, strings
escaped as Go escapes them, and every number written as Go writes the float64 it
parses to when that text denotes exactly the same decimal, else the literal's own
digits in Go's float shape. A duplicated key keeps its last value (as Go's decoder
does). It is used for schema pins and for recorded ``structuredContent``; it is *not*
the runtime's hashing form (that is ``canonical.canonical_bytes``).
"""

from __future__ import annotations

import codecs
import hashlib
import json
import re
from decimal import Decimal, InvalidOperation

from agentrt_proxy.errors import InvalidValue

__all__ = [
    "SchemaFormError",
    "canonical_schema",
    "description_hash",
    "encode_string",
    "format_number",
    "schema_hash",
]


class SchemaFormError(InvalidValue):
    """The raw text is not one JSON value."""


class _Literal(str):
    """A number as it was written."""


def _go_replace(err: UnicodeError) -> tuple[str, int]:
    # Go's decoder turns every invalid byte into its own U+FFFD; Python's "replace"
    # would fold a truncated sequence into one.
    assert isinstance(err, UnicodeDecodeError)
    return "\ufffd" * (err.end - err.start), err.end


codecs.register_error("agentrt-go-replace", _go_replace)

_LONE_SURROGATE = re.compile("[\ud800-\udfff]")
_WS = " \t\n\r"


def _reject_constant(name: str) -> object:
    raise SchemaFormError(f"invalid character {name[0]!r} looking for beginning of value")


_DECODER = json.JSONDecoder(parse_float=_Literal, parse_int=_Literal, parse_constant=_reject_constant)


def _decode(raw: bytes | str) -> tuple[object, bool]:
    text = raw.decode("utf-8", "agentrt-go-replace") if isinstance(raw, bytes) else raw
    start = len(text) - len(text.lstrip(_WS))
    if start == len(text):
        return None, False
    try:
        value, end = _DECODER.raw_decode(text, start)
    except RecursionError as exc:
        raise SchemaFormError("the schema is nested too deeply") from exc
    except json.JSONDecodeError as exc:
        raise SchemaFormError(exc.msg) from exc
    if text[end:].strip(_WS):
        raise SchemaFormError("trailing data after the schema")
    return value, True


def _escape_char(m: re.Match[str]) -> str:
    c = m.group(0)
    special = {'"': '\\"', "\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t", "\b": "\\b", "\f": "\\f"}
    if c in special:
        return special[c]
    if _LONE_SURROGATE.match(c):
        return "\ufffd"
    return f"\\u{ord(c):04x}"


# Go always escapes U+2028/U+2029 (even without HTML escaping) and replaces
# invalid UTF-16 (a lone surrogate from a `\ud800` escape) with U+FFFD.
_NEEDS_ESCAPE = re.compile('["\\\\\x00-\x1f\u2028\u2029\ud800-\udfff]')


def encode_string(s: str) -> str:
    """``s`` as Go's encoder writes a JSON string with HTML escaping off, quotes included."""
    return '"' + _NEEDS_ESCAPE.sub(_escape_char, s) + '"'


def _shape(negative: bool, digits: str, sci_exp: int, force_plain: bool = False) -> str:
    """Go's float shape: plain, or ``d.ddde±x`` when the exponent is < -6 or >= 21."""
    sign = "-" if negative else ""
    if digits == "0":
        return sign + "0"
    if not force_plain and (sci_exp < -6 or sci_exp >= 21):
        mant = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
        return f"{sign}{mant}e{'-' if sci_exp < 0 else '+'}{abs(sci_exp):02d}".replace("e-0", "e-", 1)
    if sci_exp < 0:
        return f"{sign}0.{'0' * (-sci_exp - 1)}{digits}"
    if sci_exp + 1 >= len(digits):
        return sign + digits + "0" * (sci_exp + 1 - len(digits))
    return f"{sign}{digits[: sci_exp + 1]}.{digits[sci_exp + 1 :]}"


def _decimal_parts(d: Decimal) -> tuple[bool, str, int]:
    sign, digit_tuple, exp = d.as_tuple()
    assert isinstance(exp, int)
    digits = "".join(map(str, digit_tuple)).lstrip("0") or "0"
    if digits == "0":
        return bool(sign), "0", 0
    stripped = digits.rstrip("0")
    exp += len(digits) - len(stripped)
    return bool(sign), stripped, exp + len(stripped) - 1


def format_number(literal: str) -> str:
    """One JSON number literal in the canonical schema form."""
    try:
        exact = Decimal(literal)
    except InvalidOperation as exc:  # pragma: no cover - the decoder only hands us numbers
        raise SchemaFormError(f"invalid number {literal!r}") from exc
    value = float(literal)
    if value not in (float("inf"), float("-inf")):
        shortest = Decimal(repr(value))
        if shortest == exact:
            return _shape(*_decimal_parts(shortest))
    return _shape(*_decimal_parts(exact))


def _write(value: object, out: list[str]) -> None:
    if isinstance(value, _Literal):
        out.append(format_number(value))
    elif isinstance(value, str):
        out.append(encode_string(value))
    elif value is True:
        out.append("true")
    elif value is False:
        out.append("false")
    elif value is None:
        out.append("null")
    elif isinstance(value, list):
        out.append("[")
        for i, item in enumerate(value):
            if i:
                out.append(",")
            _write(item, out)
        out.append("]")
    elif isinstance(value, dict):
        # After lone surrogates became U+FFFD, code point order is UTF-8 byte order,
        # which is the order Go sorts map keys in.
        items = sorted((_LONE_SURROGATE.sub("\ufffd", k), v) for k, v in value.items())
        out.append("{")
        for i, (key, item) in enumerate(items):
            if i:
                out.append(",")
            out.append(encode_string(key))
            out.append(":")
            _write(item, out)
        out.append("}")
    else:  # pragma: no cover - the decoder produces nothing else
        raise TypeError(type(value).__name__)


def canonical_schema(raw: bytes | str) -> bytes:
    """The canonical schema form of ``raw`` (empty input is ``null``)."""
    value, _ = _decode(raw)
    out: list[str] = []
    try:
        _write(value, out)
    except RecursionError as exc:
        raise SchemaFormError("the schema is nested too deeply") from exc
    return "".join(out).encode("utf-8")


def schema_hash(raw: bytes | str) -> str:
    """Lowercase hex SHA-256 of the canonical schema form."""
    return hashlib.sha256(canonical_schema(raw)).hexdigest()


def description_hash(description: str) -> str:
    """Lowercase hex SHA-256 of the description JSON-encoded as a string, quotes included."""
    return hashlib.sha256(encode_string(description).encode("utf-8")).hexdigest()
