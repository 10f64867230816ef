"""A check that passes arguments without jsonschema when their schema is a plain shape.

Most tools' input schemas are an object of typed properties, some required, perhaps no
others allowed: jsonschema walks even such a schema in ~90,000 instructions a call (decision
0025). ``plain_check`` compiles a schema made only of the keywords below into a check
that answers True only where jsonschema (Draft 7 or 2020-12, the drafts ``validation.py``
picks by default) finds no error: any other keyword, any other draft, or anything the check
is not sure of (a float where an integer is asked, a value it does not know) answers False,
and then jsonschema decides and words every mismatch. tests/upstream/test_plain_schema.py
sets its answers against jsonschema's over generated schemas and arguments.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from agentrt_proxy.canonical import Number

Check = Callable[[Any], bool]  # True: nothing wrong with the value; False: jsonschema decides

# Keywords that assert nothing in these drafts (jsonschema checks no ``format`` here either,
# but a schema naming one is left to it: that may change with its options).
_ANNOTATIONS = frozenset({"title", "description", "default", "examples", "$comment", "deprecated", "readOnly",
                          "writeOnly"})
_ASSERTIONS = frozenset({"type", "properties", "required", "additionalProperties", "items"})


def _is_object(v: Any) -> bool:
    return type(v) is dict


def _is_array(v: Any) -> bool:
    return type(v) is list


def _is_string(v: Any) -> bool:
    return type(v) is str  # a Number is a str too: not this


def _is_integer(v: Any) -> bool:
    # A literal like 2.0 or 1e2 is an integer to these drafts, but a float once read: left to jsonschema.
    return type(v) is Number and v.is_integer_literal()


def _is_number(v: Any) -> bool:
    return type(v) is Number


def _is_boolean(v: Any) -> bool:
    return type(v) is bool


def _is_null(v: Any) -> bool:
    return v is None


_TYPES: Mapping[str, Check] = {
    "object": _is_object,
    "array": _is_array,
    "string": _is_string,
    "integer": _is_integer,
    "number": _is_number,
    "boolean": _is_boolean,
    "null": _is_null,
}


def _always(_v: Any) -> bool:
    return True


def plain_check(schema: Any) -> Check | None:
    """The check for ``schema`` (its root may name its draft), or None when it is not plain."""
    if isinstance(schema, dict) and "$schema" in schema:
        schema = {k: v for k, v in schema.items() if k != "$schema"}  # the caller checked the draft
    return _compile(schema)


def _compile(schema: Any) -> Check | None:
    if schema is True:
        return _always
    if not isinstance(schema, dict) or not set(schema) <= _ASSERTIONS | _ANNOTATIONS:
        return None
    types = _types(schema.get("type"))
    properties = _properties(schema.get("properties", {}))
    required = schema.get("required", [])
    additional = schema.get("additionalProperties", True)
    items = _compile(schema["items"]) if "items" in schema else _always
    if (types is None or properties is None or items is None or additional not in (True, False)
            or not isinstance(required, list) or not all(type(k) is str for k in required)):
        return None
    return _check(types, properties, tuple(required), additional is True, items)


def _types(named: Any) -> tuple[Check, ...] | None:
    if named is None:
        return ()
    names = [named] if isinstance(named, str) else named
    if not isinstance(names, list) or not names or not all(isinstance(n, str) and n in _TYPES for n in names):
        return None
    return tuple(_TYPES[n] for n in names)


def _properties(properties: Any) -> dict[str, Check] | None:
    if not isinstance(properties, dict):
        return None
    checks: dict[str, Check] = {}
    for name, sub in properties.items():
        check = _compile(sub)
        if check is None:
            return None
        checks[name] = check
    return checks


def _check(types: tuple[Check, ...], properties: dict[str, Check], required: tuple[str, ...], others: bool,
           items: Check) -> Check:
    def check(value: Any) -> bool:
        if types and not any(is_type(value) for is_type in types):
            return False
        if type(value) is dict:
            for name in required:
                if name not in value:
                    return False
            for name, member in value.items():
                sub = properties.get(name)
                if sub is None:
                    if not others:
                        return False
                elif not sub(member):
                    return False
        elif type(value) is list and items is not _always:
            return all(items(element) for element in value)
        return True

    return check
