"""The canonical *schema* form of proxy-and-mcp-module §1.8, and the pin hashes built on it.

This is the form the original wrote with Go's ``encoding/json`` after decoding with
``UseNumber``: keys sorted, no insignificant whitespace, no HTML escaping, strings
escaped as Go escapes them, and every number written as Go writes the float64 it
parses to when that text denotes exactly the same decimal, else the literal's own
digits in Go's float shape. A duplicated key keeps its last value (as Go's decoder
does). It is used for schema pins and for recorded ``structuredContent``; it is *not*
the runtime's hashing form (that is ``canonical.canonical_bytes``).

The decoder here writes each number in that shape as it reads it; the one encoder
(``encoder.SCHEMA``) writes the rest.
"""

from __future__ import annotations

import codecs
import hashlib
import json
from decimal import Decimal, InvalidOperation
from typing import Any

from agentrt_proxy.canonical import _messages as M
from agentrt_proxy.canonical._values import Number
from agentrt_proxy.canonical.encoder import SCHEMA, encode, string_writer
from agentrt_proxy.errors import InvalidValue

__all__ = [
    "SchemaFormError",
    "canonical_schema",
    "description_hash",
    "encode_string",
    "format_number",
    "parse_form",
    "schema_hash",
]


class SchemaFormError(InvalidValue):
    """The raw text is not one JSON value."""


def _go_replace(err: UnicodeError) -> tuple[str, int]:
    # Go's decoder turns every invalid byte into its own U+FFFD; Python's "replace"
    # would fold a truncated sequence into one.
    assert isinstance(err, UnicodeDecodeError)
    return "\ufffd" * (err.end - err.start), err.end


codecs.register_error("agentrt-go-replace", _go_replace)

_WS = " \t\n\r"


def _reject_constant(name: str) -> object:
    raise SchemaFormError(M.INVALID_CHARACTER.format(character=name[0]))


def _number(literal: str) -> Number:
    # Each number is written in the schema form's shape as it is read (format_number).
    return Number(format_number(literal))


_DECODER = json.JSONDecoder(parse_float=_number, parse_int=_number, parse_constant=_reject_constant)


def _decode(raw: bytes | str) -> tuple[object, bool]:
    text = raw.decode("utf-8", "agentrt-go-replace") if isinstance(raw, bytes) else raw
    start = len(text) - len(text.lstrip(_WS))
    if start == len(text):
        return None, False
    try:
        value, end = _DECODER.raw_decode(text, start)
    except RecursionError as exc:
        raise SchemaFormError(M.SCHEMA_TOO_DEEP) from exc
    except json.JSONDecodeError as exc:
        raise SchemaFormError(exc.msg) from exc
    if text[end:].strip(_WS):
        raise SchemaFormError(M.SCHEMA_TRAILING_DATA)
    return value, True


_write_string = string_writer(SCHEMA)


def encode_string(s: str) -> str:
    """``s`` as Go's encoder writes a JSON string with HTML escaping off, quotes included."""
    return _write_string(s)


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


def canonical_schema(raw: bytes | str) -> bytes:
    """The canonical schema form of ``raw`` (empty input is ``null``)."""
    value, _ = _decode(raw)
    try:
        return encode(value, SCHEMA).encode("utf-8")
    except RecursionError as exc:
        raise SchemaFormError(M.SCHEMA_TOO_DEEP) from exc


# Made once (json.loads with hooks makes a decoder and its scanner on every call); its hooks keep
# no state, so every thread may share it, as json.loads shares its own default decoder.
_FORM_DECODER = json.JSONDecoder(parse_int=Number, parse_float=Number)


def parse_form(form: bytes) -> Any:
    """The canonical schema form read back as a literal-keeping tree (it is JSON already)."""
    return _FORM_DECODER.decode(form.decode("utf-8"))


def schema_hash(raw: bytes | str) -> str:
    """Lowercase hex SHA-256 of the canonical schema form."""
    return hashlib.sha256(canonical_schema(raw)).hexdigest()


def description_hash(description: str) -> str:
    """Lowercase hex SHA-256 of the description JSON-encoded as a string, quotes included."""
    return hashlib.sha256(encode_string(description).encode("utf-8")).hexdigest()
