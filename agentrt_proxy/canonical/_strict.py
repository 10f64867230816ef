"""The strict JSON boundary and the canonical form.

Everything that crosses into the runtime as JSON (a call's arguments, a tool's content,
the configuration) is checked here first, in the original's order and words:

1. nesting deeper than 256 levels      4. an unpaired surrogate escape
2. invalid UTF-8                       5. a repeated object key (or a nested float64 overflow)
3. not exactly one valid JSON value    6. a number literal past its bounds

Parsed values keep every number as its literal (``Number``), because ``1250.5`` and
``1250.50`` are different requests and different approvals. The canonical (hashing)
form sorts keys by UTF-8 bytes, drops whitespace, keeps literals and escapes strings in
one fixed way; the policy form is the same without the HTML-safe escapes. Both are written
by the one encoder (``encoder.CANONICAL`` and ``encoder.POLICY``).
"""

from __future__ import annotations

import json
import math
import re
import threading
from collections.abc import Iterator
from typing import Any

from agentrt_proxy.canonical import _messages as M
from agentrt_proxy.canonical._values import JSONBoundaryError, Number
from agentrt_proxy.canonical.encoder import CANONICAL, POLICY, encode
from agentrt_proxy.canonical.quoting import go_quote

MAX_DEPTH = 256
MAX_NUMBER_LENGTH = 10_000
MAX_EXPONENT = 10_000

_STRING_LITERAL = re.compile(rb'"(?:[^"\\]|\\.)*"', re.DOTALL)
_BRACKET = re.compile(rb"[\[\]{}]")
_ESCAPE = re.compile(r"\\(?:u([0-9a-fA-F]{4})|.)", re.DOTALL)


# --------------------------------------------------------------------------- the boundary


def _text_of(raw: bytes | str) -> tuple[bytes, str]:
    """Return the bytes (for the depth scan) and the decoded text, refusing invalid UTF-8."""
    if isinstance(raw, str):
        try:
            data = raw.encode("utf-8")
        except UnicodeEncodeError:
            # A str holding a raw lone surrogate cannot have come from valid UTF-8.
            raise JSONBoundaryError("not valid UTF-8") from None
        _check_depth(data)
        return data, raw
    data = bytes(raw)
    _check_depth(data)
    try:
        return data, data.decode("utf-8")
    except UnicodeDecodeError:
        raise JSONBoundaryError("not valid UTF-8") from None


def _check_depth(data: bytes) -> None:
    # Fast path: fewer opening brackets than the limit cannot nest past it.
    if data.count(b"[") + data.count(b"{") <= MAX_DEPTH:
        return
    stripped = _STRING_LITERAL.sub(b"", data)
    quote = stripped.find(b'"')
    if quote >= 0:  # an unterminated string: the rest of the input is inside it
        stripped = stripped[:quote]
    depth = 0
    for match in _BRACKET.finditer(stripped):
        if match.group() in (b"[", b"{"):
            depth += 1
            if depth > MAX_DEPTH:
                raise JSONBoundaryError(M.NESTED_TOO_DEEP.format(limit=MAX_DEPTH))
        else:
            depth -= 1


class _ParseState:
    """What the literal-keeping parse noticed, reported in the boundary's order."""

    __slots__ = ("duplicate", "number_error", "overflow")

    def __init__(self) -> None:
        self.duplicate = False
        self.overflow: Number | None = None
        self.number_error: str | None = None

    def reset(self) -> None:
        self.duplicate, self.overflow, self.number_error = False, None, None

    def number(self, literal: str) -> Number:
        value = Number(literal)
        if self.number_error is None:
            self.number_error = _number_bound_error(literal)
        if self.overflow is None and math.isinf(float(literal)):
            self.overflow = value
        return value

    def pairs(self, pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        obj = dict(pairs)
        if len(obj) != len(pairs):
            self.duplicate = True
        return obj


def _refuse_constant(name: str) -> Any:
    raise ValueError(M.CONSTANT_NOT_JSON.format(name=name))


def _abbreviate(literal: str) -> str:
    return literal if len(literal) <= 24 else literal[:24] + "..."


def _number_bound_error(literal: str) -> str | None:
    if len(literal) > MAX_NUMBER_LENGTH:
        return M.NUMBER_TOO_LONG.format(head=literal[:24], limit=MAX_NUMBER_LENGTH)
    cut = max(literal.find("e"), literal.find("E"))
    if cut < 0:
        return None
    digits = literal[cut + 1 :].lstrip("+-").lstrip("0")
    if len(digits) > 5 or (digits and int(digits) > MAX_EXPONENT):
        return M.EXPONENT_TOO_LARGE.format(number=_abbreviate(literal), limit=MAX_EXPONENT)
    return None


def _first_unpaired_surrogate(text: str) -> str | None:
    if "\\u" not in text and "\\U" not in text:
        return None
    pending: re.Match[str] | None = None
    for match in _ESCAPE.finditer(text):
        hexdigits = match.group(1)
        code = int(hexdigits, 16) if hexdigits is not None else -1
        if pending is not None:
            if match.start() == pending.end() and 0xDC00 <= code <= 0xDFFF:
                pending = None
                continue
            return pending.group()
        if 0xD800 <= code <= 0xDBFF:
            pending = match
        elif 0xDC00 <= code <= 0xDFFF:
            return match.group()
    return pending.group() if pending is not None else None


class _Decoding(threading.local):
    """This thread's decoder, its hooks bound to this thread's parse state. Made once a thread:
    ``json.loads`` with hooks makes a decoder and its C scanner on every call, which cost more
    than parsing a call's arguments. A parse runs start to end on one thread and no hook
    parses, so one state a thread, reset at each parse's start, is each parse's own."""

    def __init__(self) -> None:
        self.state = _ParseState()
        self.decoder = json.JSONDecoder(
            object_pairs_hook=self.state.pairs,
            parse_int=self.state.number,
            parse_float=self.state.number,
            parse_constant=_refuse_constant,
        )


_decoding = _Decoding()


def _parse(raw: bytes | str) -> Any:
    _, text = _text_of(raw)
    decoding = _decoding
    state = decoding.state
    state.reset()
    try:
        if text.startswith("\ufeff"):  # as json.loads refuses it
            raise ValueError("Unexpected UTF-8 BOM")
        value = decoding.decoder.decode(text)
    except (ValueError, RecursionError):
        raise JSONBoundaryError("not valid JSON") from None
    surrogate = _first_unpaired_surrogate(text)
    if surrogate is not None:
        raise JSONBoundaryError(f"unpaired surrogate {surrogate}")
    if state.duplicate:
        raise JSONBoundaryError(f"duplicate key {go_quote(_first_duplicate_key(text))}")
    if state.overflow is not None and value is not state.overflow:
        raise JSONBoundaryError(M.NUMBER_OVERFLOWS.format(number=_abbreviate(state.overflow)))
    if state.number_error is not None:
        raise JSONBoundaryError(state.number_error)
    return value


def check_json(raw: bytes | str) -> None:
    """Raise ``JSONBoundaryError`` when the runtime would refuse ``raw`` as JSON."""
    _parse(raw)


def parse_strict(raw: bytes | str) -> Any:
    """Check ``raw`` at the boundary and return it with every number kept as its literal."""
    return _parse(raw)


# ------------------------------------------------------- the first repeated key, in text order


def _first_duplicate_key(text: str) -> str:
    """Walk the (already valid) text in order, as a streaming decoder would, and return the
    first key repeated within its object. Only called when a repeat is known to exist."""
    found = _DuplicateFinder(text).run()
    return found if found is not None else ""


class _DuplicateFinder:
    _WS = re.compile(r"[ \t\n\r]*")
    _SCALAR = re.compile(r"-?\d[\d.eE+-]*|true|false|null")

    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0
        self.decoder = json.JSONDecoder()

    def _skip(self) -> None:
        match = self._WS.match(self.text, self.pos)
        assert match is not None  # the pattern matches the empty string
        self.pos = match.end()

    def _string(self) -> str:
        # scanstring is CPython's (json.decoder re-exports it from _json), missing from typeshed
        value, self.pos = json.decoder.scanstring(self.text, self.pos + 1)  # type: ignore[attr-defined]
        return value

    def run(self) -> str | None:
        try:
            self._value()
            return None
        except _Found as found:
            return found.key

    def _value(self) -> None:
        self._skip()
        char = self.text[self.pos]
        if char == "{":
            self._object()
        elif char == "[":
            self._array()
        elif char == '"':
            self._string()
        else:
            match = self._SCALAR.match(self.text, self.pos)
            assert match is not None  # the text is valid JSON, so a scalar starts here
            self.pos = match.end()

    def _object(self) -> None:
        self.pos += 1
        seen: set[str] = set()
        self._skip()
        if self.text[self.pos] == "}":
            self.pos += 1
            return
        while True:
            self._skip()
            key = self._string()
            if key in seen:
                raise _Found(key)
            seen.add(key)
            self._skip()
            self.pos += 1  # ':'
            self._value()
            self._skip()
            closing = self.text[self.pos]
            self.pos += 1
            if closing == "}":
                return

    def _array(self) -> None:
        self.pos += 1
        self._skip()
        if self.text[self.pos] == "]":
            self.pos += 1
            return
        while True:
            self._value()
            self._skip()
            closing = self.text[self.pos]
            self.pos += 1
            if closing == "]":
                return


class _Found(Exception):  # not an error: it ends the walk early and run catches it, so outside the tree
    def __init__(self, key: str) -> None:
        self.key = key


# ------------------------------------------------------------------------------ the forms


def canonical_bytes(value: Any) -> bytes:
    """The hashing form of a parsed value (keys sorted, no whitespace, HTML-safe escapes)."""
    return encode(value, CANONICAL).encode("utf-8")


def policy_text(value: Any) -> str:
    """The form a policy is handed: as canonical, without the HTML-safe escapes."""
    return encode(value, POLICY)


def canonical_json(raw: bytes | str) -> bytes:
    """Check ``raw`` at the boundary and return its canonical form."""
    return canonical_bytes(parse_strict(raw))


def to_python(value: Any) -> Any:
    """Turn literal numbers into ints and floats (for jsonschema); everything else as is."""
    if isinstance(value, Number):
        if value.is_integer_literal():
            return int(value)
        return float(value)
    if isinstance(value, dict):
        return {key: to_python(item) for key, item in value.items()}
    if isinstance(value, list):
        return [to_python(item) for item in value]
    return value


def iter_numbers(value: Any) -> Iterator[Number]:
    """Every number literal in a parsed value, depth first."""
    if isinstance(value, Number):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from iter_numbers(item)
    elif isinstance(value, list):
        for item in value:
            yield from iter_numbers(item)


# ------------------------------------------------------------------------- hashes and keys


def normalise_arguments(raw: bytes | str | None) -> bytes | str:
    """A call's arguments as the proxy keys them: absent, blank or ``null`` mean ``{}``."""
    if raw is None:
        return "{}"
    stripped = raw.strip()
    if not stripped or stripped in ("null", b"null"):
        return "{}"
    return stripped


def request_key(tool: str, arguments: bytes | str | None) -> str | None:
    """Hex SHA-256 of the registered tool name, a NUL byte and the canonical arguments;
    ``None`` when the boundary refuses the arguments (they match no other request)."""
    try:
        canonical = canonical_json(normalise_arguments(arguments))
    except JSONBoundaryError:
        return None
    return sha256_hex(tool.encode("utf-8") + b"\x00" + canonical)


def content_hash(raw: bytes | str) -> str:
    """Hex SHA-256 of the canonical form; of the raw bytes when it cannot be formed."""
    try:
        data = canonical_json(raw)
    except JSONBoundaryError:
        data = raw.encode("utf-8", "surrogatepass") if isinstance(raw, str) else bytes(raw)
    return sha256_hex(data)


def sha256_hex(data: bytes) -> str:
    # Imported here, not with the module: hashlib loads OpenSSL (~4 ms), and ``serve`` answers
    # initialize before anything is hashed (decision 0024). Once loaded, this costs a dict lookup.
    import hashlib

    return hashlib.sha256(data).hexdigest()
