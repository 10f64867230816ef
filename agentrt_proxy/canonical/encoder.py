"""The one Go-compatible JSON encoder: one walk, written in the style each use needs.

Every style writes as Go's ``encoding/json`` does: no insignificant whitespace; ``Number`` and
``Raw`` as the literal text they hold; ints as digits; floats as their shortest round-trip
digits; strings by their contents, with ``"`` and ``\\`` escaped, ``\\b \\f \\n \\r \\t`` short and
every other control character below U+0020 as lowercase ``\\u00xx``, and a lone surrogate (which
Go's strings cannot hold) as U+FFFD. The styles differ only in Go's own options and in two of the
callers' own rules:

- ``STORE`` (``go_json``): the store's columns and events. Fields in the order given (callers
  order struct fields), HTML-safe (``<`` ``>`` ``&`` as ``\\u003c`` ``\\u003e`` ``\\u0026``),
  U+2028/U+2029 escaped: what the original's operator tools read. Like ``json.dumps`` it writes
  NaN and the infinities and keeps a lone surrogate, so its C fast path and this walk agree.
- ``CANONICAL``: the hashing form (runtime-core §4.1). Keys sorted by their UTF-8 bytes, HTML-safe.
- ``POLICY``: the form a policy is handed (runtime-core §4.2): as ``CANONICAL`` with nothing HTML-escaped,
  U+2028/U+2029 raw too.
- ``SCHEMA``: the canonical schema form (proxy-and-mcp-module §1.8): keys sorted, HTML escaping off, U+2028/U+2029
  escaped (Go's ``json.Marshal`` after ``SetEscapeHTML(false)``). Its numbers are written by the
  schema form's decoder (``schema_form``), so here they are literals like any other.
- ``MANIFEST``: a manifest file (proxy-and-mcp-module §1.9): Go's ``MarshalIndent`` with two spaces, fields in the
  order given, HTML-safe. Indented exactly as Go does it: the compact text, re-indented.
- ``WIRE``: a JSON-RPC message on the MCP wire (``mcp.jsonrpc.encode``): what
  ``json.dumps(ensure_ascii=False, separators=(",", ":"), allow_nan=False)`` writes, with
  ``Number`` and ``Raw`` as literals. Fields in the order given, nothing HTML-escaped, U+2028 and
  U+2029 raw, a lone surrogate kept (UTF-8 cannot hold it: the message is then written in
  ``WIRE_ASCII``, every character outside ASCII as its ``\\uXXXX`` escape, as it arrived).
  A ``Raw`` may also be an object's key: the key's JSON text (its quotes, escapes and the
  whitespace around it) written verbatim, so an object rebuilt from another's member texts
  keeps every byte of them.

``STORE`` and the sorted compact styles (``CANONICAL``, ``POLICY``, ``SCHEMA``) write a tree the
C encoder writes alike through it (``_plain``, ``_sortable``), the style's changed characters then
replaced in the whole text; the tests hold both paths to the same bytes.

A float that is not finite is refused (``JSONBoundaryError``) by every style but ``STORE``.
Every style writes a key that is not a string as ``str`` makes it (``json.dumps`` would write
``True`` as ``true``; no message or record has such a key).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Mapping
from typing import Any

from agentrt_proxy.canonical import _messages as M
from agentrt_proxy.canonical._values import JSONBoundaryError, Number

__all__ = [
    "CANONICAL",
    "MANIFEST",
    "POLICY",
    "SCHEMA",
    "STORE",
    "WIRE",
    "WIRE_ASCII",
    "Raw",
    "Style",
    "encode",
    "go_json",
    "string_writer",
]


class Raw(str):
    """JSON text embedded verbatim (Go's json.RawMessage): a recorded result passed through byte
    for byte, a task's stored answer, a server's own ``_meta``."""

    __slots__ = ()


class Style:
    """How one use writes JSON: Go's options (sorted map keys or struct order, HTML escaping,
    indentation) and the two rules of the callers that differ from Go (the policy form's raw line
    separators, the store's json.dumps treatment). A plain class whose walk is made on first use:
    this module loads on the cold start."""

    __slots__ = (
        "_sorted_c",
        "_walk",
        "ensure_ascii",
        "escape_html",
        "escape_line_separators",
        "indent",
        "keep_lone_surrogates",
        "like_json_dumps",
        "sort_keys",
    )

    def __init__(
        self,
        *,
        sort_keys: bool,
        escape_html: bool,
        escape_line_separators: bool = True,
        indent: str = "",
        like_json_dumps: bool = False,
        keep_lone_surrogates: bool | None = None,
        ensure_ascii: bool = False,
    ) -> None:
        self.sort_keys = sort_keys  # object keys by UTF-8 byte order (after a lone surrogate became U+FFFD)
        self.escape_html = escape_html  # < > & as \u003c \u003e \u0026 (Go's SetEscapeHTML)
        # U+2028 U+2029 as \u2028 \u2029 (Go always; the policy form never)
        self.escape_line_separators = escape_line_separators
        self.indent = indent  # MarshalIndent's indent per level; "" writes compact JSON
        # NaN and the infinities written, lone surrogates kept, as json.dumps does
        self.like_json_dumps = like_json_dumps
        # a lone surrogate written as json.dumps does (kept) rather than as Go does (U+FFFD)
        self.keep_lone_surrogates = like_json_dumps if keep_lone_surrogates is None else keep_lone_surrogates
        self.ensure_ascii = ensure_ascii  # every character outside ASCII as \uXXXX (json.dumps's default)
        self._walk: Callable[[Any, list[str]], None] | None = None  # made by the first encode
        # (_sorted_c_writer's answer,) once the first encode made it
        self._sorted_c: tuple[Callable[[Any], str] | None] | None = None


_ESCAPES = {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028", "\u2029": "\\u2029"}
_SURROGATE = re.compile("[\ud800-\udfff]")
# json.dumps's own string writer (C): quotes, backslashes and every control character escaped.
_encode_basestring: Callable[[str], str] = json.encoder.encode_basestring  # type: ignore[attr-defined]
_encode_basestring_ascii: Callable[[str], str] = json.encoder.encode_basestring_ascii  # type: ignore[attr-defined]
_LITERALS = (Number, Raw)


def _changed_characters(style: Style) -> re.Pattern[str] | None:
    """The characters ``style`` writes otherwise than ``json.dumps``'s string writer (without
    ASCII escaping) does, or None when there are none."""
    escaped = ("<>&" if style.escape_html else "") + ("\u2028\u2029" if style.escape_line_separators else "")
    surrogates = "" if style.keep_lone_surrogates else "\ud800-\udfff"
    return re.compile(f"[{escaped}{surrogates}]") if escaped or surrogates else None


def _replacement(match: re.Match[str]) -> str:
    return _ESCAPES.get(match.group(), "\ufffd")  # a lone surrogate: U+FFFD, as Go writes it


def string_writer(style: Style) -> Callable[[str], str]:
    """The function that writes one string, quotes included, in ``style``."""
    if style.ensure_ascii:
        # Every character outside ASCII is escaped already: nothing is left to HTML-escape or
        # to replace (a lone surrogate is its own escape). Only the plain wire asks for it.
        if style.escape_html or not style.keep_lone_surrogates:
            raise ValueError(M.ASCII_STYLE)
        return _encode_basestring_ascii
    pattern = _changed_characters(style)
    if pattern is None:
        return _encode_basestring
    search, sub = pattern.search, pattern.sub

    def write_string(text: str) -> str:
        quoted = _encode_basestring(text)
        # Only the characters of ``pattern`` change, and none of them is written escaped above.
        return quoted if search(quoted) is None else sub(_replacement, quoted)

    if style.escape_html:
        return write_string

    def write_string_without_html(text: str) -> str:
        # Without < > &, every character to change is outside ASCII (a str knows it is ASCII at once).
        return _encode_basestring(text) if text.isascii() else write_string(text)

    return write_string_without_html


def _as_go_decoded(key: str) -> str:
    return _SURROGATE.sub("\ufffd", key)


def _key_text(key: Any, write_string: Callable[[str], str]) -> str:
    """An object key that is not a plain ``str``: a ``Raw`` key as its own JSON text, any other
    as the string ``str`` makes of it (the store's rule: ``3`` as ``"3"``, ``True`` as ``"True"``)."""
    return key if isinstance(key, Raw) else write_string(key if isinstance(key, str) else str(key))


def _walker(style: Style) -> Callable[[Any, list[str]], None]:
    write_string = string_writer(style)
    sort_keys = style.sort_keys
    like_json_dumps = style.like_json_dumps

    def write(value: Any, out: list[str]) -> None:
        if isinstance(value, str):
            out.append(value if isinstance(value, _LITERALS) else write_string(value))
        elif isinstance(value, dict):
            if not value:
                out.append("{}")
                return
            out.append("{")
            if sort_keys:
                keys = sorted(value)
                if not like_json_dumps and not all(map(str.isascii, keys)) and _SURROGATE.search("".join(keys)):
                    # Go sorts the keys its decoder made, where a lone surrogate is U+FFFD.
                    keys = sorted(value, key=_as_go_decoded)
                for key in keys:
                    out.append(write_string(key))
                    out.append(":")
                    write(value[key], out)
                    out.append(",")
            else:
                for key, item in value.items():
                    out.append(write_string(key) if type(key) is str else _key_text(key, write_string))
                    out.append(":")
                    write(item, out)
                    out.append(",")
            out[-1] = "}"
        elif isinstance(value, (list, tuple)):
            if not value:
                out.append("[]")
                return
            out.append("[")
            for item in value:
                write(item, out)
                out.append(",")
            out[-1] = "]"
        elif value is None:
            out.append("null")
        elif value is True:
            out.append("true")
        elif value is False:
            out.append("false")
        elif isinstance(value, int):
            out.append(int.__repr__(value))  # an IntEnum as its digits, as json.dumps writes it
        elif isinstance(value, float):
            if math.isfinite(value):
                out.append(float.__repr__(value))
            elif like_json_dumps:
                out.append("NaN" if math.isnan(value) else "Infinity" if value > 0 else "-Infinity")
            else:
                raise JSONBoundaryError(M.NUMBER_NOT_JSON.format(value=value))
        elif isinstance(value, Mapping):
            write(dict(value.items()), out)
        else:
            raise TypeError(M.CANNOT_ENCODE.format(kind=type(value).__name__))

    return write


STORE = Style(sort_keys=False, escape_html=True, like_json_dumps=True)
CANONICAL = Style(sort_keys=True, escape_html=True)
POLICY = Style(sort_keys=True, escape_html=False, escape_line_separators=False)
SCHEMA = Style(sort_keys=True, escape_html=False)
MANIFEST = Style(sort_keys=False, escape_html=True, indent="  ")
WIRE = Style(sort_keys=False, escape_html=False, escape_line_separators=False, keep_lone_surrogates=True)
WIRE_ASCII = Style(
    sort_keys=False, escape_html=False, escape_line_separators=False, keep_lone_surrogates=True, ensure_ascii=True
)


# A string literal (escapes included), or one of the characters that structure JSON.
_STRUCTURE = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|[{}\[\],:]', re.DOTALL)


def _indented(compact: str, indent: str) -> str:
    """Go's ``json.Indent`` of compact JSON: one member or element a line, ``": "`` after a key,
    and an empty object or array left as ``{}`` or ``[]``."""
    out: list[str] = []
    depth = 0
    opened = False  # the line break after an opening bracket waits: the bracket may close at once
    pos = 0
    for match in _STRUCTURE.finditer(compact):
        start, token = match.start(), match.group()
        if start > pos:  # a number or a literal
            if opened:
                out.append("\n" + indent * depth)
                opened = False
            out.append(compact[pos:start])
        pos = match.end()
        char = token[0]
        if char in "}]":
            depth -= 1
            if opened:
                opened = False
            else:
                out.append("\n" + indent * depth)
            out.append(token)
            continue
        if opened:
            out.append("\n" + indent * depth)
            opened = False
        if char in "{[":
            out.append(token)
            depth += 1
            opened = True
        elif char == ",":
            out.append(",\n" + indent * depth)
        elif char == ":":
            out.append(": ")
        else:
            out.append(token)
    out.append(compact[pos:])  # a value that is a number or a literal alone
    return "".join(out)


def encode(value: Any, style: Style) -> str:
    """``value`` as JSON text in ``style`` (see the module's description)."""
    made = style._sorted_c
    if made is None:
        made = style._sorted_c = (_sorted_c_writer(style),)
    if made[0] is not None and _sortable(value):
        return made[0](value)
    walk = style._walk
    if walk is None:
        walk = style._walk = _walker(style)
    out: list[str] = []
    walk(value, out)
    text = "".join(out)
    return _indented(text, style.indent) if style.indent else text


# ------------------------------------------------------------------------------------ STORE

_STORE_ESCAPES = re.compile("[<>&\u2028\u2029]")


def _store_escape(match: re.Match[str]) -> str:
    return _ESCAPES[match.group()]


def _plain(value: Any) -> bool:
    """Whether ``json.dumps`` writes this tree exactly as ``_go_json`` does before the HTML
    escapes: only exact dicts with str keys, lists, tuples, str, int, float, bool and None
    (no ``Raw`` or ``Number`` literal, which are str subclasses; no other mapping)."""
    t = type(value)
    if t in _SCALARS:
        return True
    # A scalar member is judged here, not by a call of its own: most members are scalars.
    if t is dict:
        for k, v in value.items():  # noqa: SIM110 (a loop: all() over a generator is slower here)
            if type(k) is not str or (type(v) not in _SCALARS and not _plain(v)):
                return False
        return True
    if t is list or t is tuple:
        for v in value:  # noqa: SIM110
            if type(v) not in _SCALARS and not _plain(v):
                return False
        return True
    return False


_SCALARS = frozenset({str, int, float, bool, type(None)})  # exact types: Raw and Number are literals


# ------------------------------------------------------------- the sorted styles' C path

_SORTABLE = frozenset({str, int, bool, type(None)})  # no float: the walk refuses one that is not finite


def _sortable(value: Any) -> bool:
    """Whether ``json.dumps(sort_keys=True)`` orders and writes this tree as the walk of a sorted
    style does, but for the characters that style changes in strings: exact dicts whose keys are
    str without a lone surrogate (the walk sorts those keys as Go decoded them), lists, tuples,
    str, int, bool and None."""
    t = type(value)
    if t in _SORTABLE:
        return True
    if t is dict:
        for k, v in value.items():
            if type(k) is not str or (not k.isascii() and _SURROGATE.search(k) is not None):
                return False
            if type(v) not in _SORTABLE and not _sortable(v):
                return False
        return True
    if t is list or t is tuple:
        for v in value:  # noqa: SIM110 (a loop: all() over a generator is slower here)
            if type(v) not in _SORTABLE and not _sortable(v):
                return False
        return True
    return False


def _sorted_c_writer(style: Style) -> Callable[[Any], str] | None:
    """For a compact style with sorted keys (``CANONICAL``, ``POLICY``, ``SCHEMA``): a tree that
    is ``_sortable`` written by the C encoder, then the style's changed characters replaced in the
    whole text (they can occur only inside strings, keys included). None for the other styles."""
    if not style.sort_keys or style.indent or style.ensure_ascii or style.like_json_dumps \
            or _c_make_encoder is None:
        return None
    c_encoder = _c_make_encoder(None, _not_plain, _encode_basestring, None, ":", ",", True, False, True)
    pattern = _changed_characters(style)

    def write(value: Any) -> str:
        out = "".join(c_encoder(value, 0))
        if pattern is None or pattern.search(out) is None:
            return out
        return pattern.sub(_replacement, out)

    return write


def go_json(value: Any) -> str:
    """``value`` in the ``STORE`` style: compact, dicts in insertion order (callers order struct
    fields; literal trees keep theirs), numbers as their literal, HTML-safe."""
    if _plain(value):
        return _plain_json(value)
    if type(value) is dict:
        return _members_json(value)
    return _go_json(value)


def _not_plain(value: Any) -> Any:
    raise TypeError(M.CANNOT_ENCODE.format(kind=type(value).__name__))


# json.dumps(ensure_ascii=False, separators=(",", ":")) as one C encoder made once: dumps makes
# an encoder object and a C encoder on every call, a third of its cost for a small tree. No
# circular check (markers None): a tree reaches it only after ``_plain`` walked all of it.
_c_make_encoder = getattr(json.encoder, "c_make_encoder", None)
_STORE_C = (
    _c_make_encoder(None, _not_plain, _encode_basestring, None, ":", ",", False, False, True)
    if _c_make_encoder is not None
    else None
)


def _plain_json(value: Any) -> str:
    # The C encoder writes a plain tree as the walk does; <, >, &, U+2028 and U+2029 can only
    # occur inside strings, so escaping them in the whole text is the same.
    if type(value) is str:
        out = _encode_basestring(value)
    elif _STORE_C is not None:
        out = "".join(_STORE_C(value, 0))
    else:
        out = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return out if _STORE_ESCAPES.search(out) is None else _STORE_ESCAPES.sub(_store_escape, out)


def _members_json(value: dict[Any, Any]) -> str:
    """An object whose members are plain trees or literals (a recorded decision, whose
    ``args`` is a ``Raw``; a run's first event, with its limits): each member written as
    ``go_json`` writes it (a literal verbatim), joined; the walk for anything else."""
    parts = []
    for key, item in value.items():
        if type(key) is not str:
            return _go_json(value)
        if isinstance(item, _LITERALS):
            parts.append(f"{_plain_json(key)}:{item}")
        elif _plain(item):
            parts.append(f"{_plain_json(key)}:{_plain_json(item)}")
        else:
            return _go_json(value)
    return "{" + ",".join(parts) + "}"


def _go_json(value: Any) -> str:
    """The walk in the ``STORE`` style, for a tree the C encoder cannot write (literals, mappings)."""
    return encode(value, STORE)
