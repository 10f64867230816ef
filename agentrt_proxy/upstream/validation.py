"""Argument validation against a tool's input schema, with compiled validators cached.

Draft by ``$schema`` (2020-12 when absent; draft-07 when a schema without ``$schema``
is not a valid 2020-12 schema). No remote reference is ever fetched: the registry
is empty and has no retriever.
"""

from __future__ import annotations

import hashlib
import threading
from typing import Any, NamedTuple

import jsonschema
import referencing
from jsonschema import Draft7Validator, Draft202012Validator

from agentrt_proxy import canonical
from agentrt_proxy.text import record_text
from agentrt_proxy.upstream._plain_schema import Check, plain_check


class _Compiled(NamedTuple):
    validator: Any
    plain: Check | None  # passes what jsonschema would pass, for a plain schema (_plain_schema.py)


_cache: dict[str, _Compiled] = {}
_lock = threading.Lock()
# The same schema object (a registered tool's input schema) again: its validator without
# re-encoding the schema to hash it. Holds the schema, so its id cannot be reused meanwhile.
_by_object: dict[int, tuple[Any, _Compiled]] = {}
_BY_OBJECT_MAX = 256
_PLAIN_DRAFTS = (Draft7Validator, Draft202012Validator)


def _compile(schema: Any) -> Any:
    plain = canonical.to_python(schema)
    if isinstance(plain, dict) and "$schema" in plain:
        cls = jsonschema.validators.validator_for(plain, default=Draft202012Validator)
        cls.check_schema(plain)
    else:
        try:
            Draft202012Validator.check_schema(plain)
            cls = Draft202012Validator
        except jsonschema.SchemaError:
            cls = Draft7Validator
            cls.check_schema(plain)
    return cls(plain, registry=referencing.Registry())


def validator(schema: Any) -> Any:
    return _compiled(schema).validator


def _compiled(schema: Any) -> _Compiled:
    entry = _by_object.get(id(schema))
    if entry is not None and entry[0] is schema:
        return entry[1]
    key = hashlib.sha256(canonical.canonical_bytes(schema)).hexdigest()
    with _lock:
        found = _cache.get(key)
    if found is None:
        compiled = _compile(schema)
        found = _Compiled(compiled, plain_check(compiled.schema) if type(compiled) in _PLAIN_DRAFTS else None)
        with _lock:
            _cache[key] = found
    with _lock:
        if len(_by_object) >= _BY_OBJECT_MAX:
            _by_object.clear()
        _by_object[id(schema)] = (schema, found)
    return found


def schema_error(schema: Any, args: Any) -> str:
    """Every mismatch as text, joined by "; " (as the Go validator lists every cause), '' when
    the arguments match."""
    try:
        compiled = _compiled(schema)
        if compiled.plain is not None and compiled.plain(args):
            return ""
        errors = sorted(compiled.validator.iter_errors(canonical.to_python(args)), key=lambda e: list(e.absolute_path))
    except (jsonschema.SchemaError, referencing.exceptions.Unresolvable) as exc:
        return record_text.SCHEMA_UNUSABLE.format(error=getattr(exc, "message", exc))
    except jsonschema.exceptions._WrappedReferencingError as exc:  # an unresolvable $ref
        return record_text.SCHEMA_UNUSABLE.format(error=exc)
    if not errors:
        return ""
    return "; ".join(_one(e) for e in errors)


def _one(e: Any) -> str:
    where = "/" + "/".join(str(p) for p in e.absolute_path)
    return f"at {where}: {e.message}" if e.absolute_path else e.message
