"""JSON as Go's encoding/json writes it: compact, fields in the order given, numbers as their
literal, HTML-safe. The store's columns and events are written with it, so the original's
operator tools read them unchanged."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from agentrt_proxy.canonical.strict import Number


class Raw(str):
    """JSON text embedded verbatim (Go's json.RawMessage)."""


_GO_ESCAPES = {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028", "\u2029": "\\u2029"}
_GO_ESCAPE_RE = re.compile("[<>&\u2028\u2029]")


def _go_escape(m: re.Match[str]) -> str:
    return _GO_ESCAPES[m.group()]


def _go_string(s: str) -> str:
    out = json.dumps(s, ensure_ascii=False)
    if _GO_ESCAPE_RE.search(out) is None:
        return out
    return _GO_ESCAPE_RE.sub(_go_escape, out)


def _plain(value: Any) -> bool:
    """Whether ``json.dumps`` writes this tree exactly as ``_go_json`` does before the HTML
    escapes: only exact dicts with str keys, lists, tuples, str, int, float, bool and None
    (no ``Raw`` or ``Number`` literal, which are str subclasses; no other mapping)."""
    t = type(value)
    if t is str or t is int or t is float or t is bool or value is None:
        return True
    if t is dict:
        for k, v in value.items():  # noqa: SIM110 (a loop: all() over a generator is slower here)
            if type(k) is not str or not _plain(v):
                return False
        return True
    if t is list or t is tuple:
        for v in value:  # noqa: SIM110
            if not _plain(v):
                return False
        return True
    return False


def go_json(value: Any) -> str:
    """Compact JSON as Go's encoding/json writes it: dicts in insertion order (callers
    order struct fields; literal trees keep theirs), numbers as their literal, HTML-safe."""
    if _plain(value):
        # The C encoder writes a plain tree as _go_json does; <, >, &, U+2028 and U+2029 can
        # only occur inside strings, so escaping them in the whole text is the same.
        out = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
        return out if _GO_ESCAPE_RE.search(out) is None else _GO_ESCAPE_RE.sub(_go_escape, out)
    return _go_json(value)


def _go_json(value: Any) -> str:
    if isinstance(value, Raw):
        return str(value)
    if isinstance(value, Number):
        return str(value)
    if isinstance(value, str):
        return _go_string(value)
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return json.dumps(value)
    if isinstance(value, Mapping):
        return "{" + ",".join(_go_string(str(k)) + ":" + _go_json(v) for k, v in value.items()) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(_go_json(v) for v in value) + "]"
    raise TypeError(f"cannot encode {type(value).__name__} as JSON")
