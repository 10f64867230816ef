"""The structural comparison of two JSON schemas (decision 0018): every difference, each
marked narrowing or widening by the rules of seed 002 ("Structural changes are held").

Pure and deterministic: no word list, no similarity score. The walk reads both schemas keyword
by keyword and recurses through ``properties``, ``patternProperties``, ``items``,
``prefixItems``, ``$defs``/``definitions``, ``additionalProperties`` (a schema), the combinators
``anyOf``/``oneOf``/``allOf`` and ``not``, so a widening three levels down is found like one at
the root.

Widening (the seed's gate holds it): a new required entry; a type or ``$ref`` change; an enum that
gained a member or was dropped; any pattern or format change; a bound loosened or removed;
``additionalProperties: false`` relaxed; a default added or changed; a const added, changed or
removed; a new property (or ``$defs`` entry) whose subtree carries a default, const or enum;
``anyOf``/``oneOf`` gaining a branch, ``allOf`` losing one; ``not`` removed; and, beyond the seed,
a change to any structural keyword the walk does not name (``if``, ``contains``…), since what it
cannot read it cannot call narrower.

Narrowing: a property removed, a required entry removed, an enum member removed or an enum added,
a bound tightened or added, ``additionalProperties`` set to false, a default removed, a new
optional property carrying no default, const or enum, ``anyOf``/``oneOf`` losing a branch,
``allOf`` gaining one, ``not`` added.

Text keywords (``description``, ``title``, ``examples``, ``$comment``) change no structure; their
changes are reported as ``text`` (they are model input: the operator reads them).

Inside ``not`` the meaning turns over: a directional change found there is reported the other way.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any

from agentrt_proxy import canonical
from agentrt_proxy.canonical import Number

__all__ = ["NARROWING", "TEXT", "WIDENING", "SchemaChange", "carries_values", "schema_changes"]

NARROWING = "narrowing"
WIDENING = "widening"
TEXT = "text"

TEXT_KEYWORDS = frozenset({"description", "title", "examples", "$comment", "markdownDescription"})
_LOWER_BOUNDS = ("minimum", "exclusiveMinimum", "minLength", "minItems", "minProperties", "minContains")
_UPPER_BOUNDS = ("maximum", "exclusiveMaximum", "maxLength", "maxItems", "maxProperties", "maxContains")
_ALWAYS_HELD = ("type", "$ref", "pattern", "format", "const")
_MAPS = ("properties", "patternProperties", "$defs", "definitions")
_WALKED = frozenset(
    {
        *TEXT_KEYWORDS,
        *_LOWER_BOUNDS,
        *_UPPER_BOUNDS,
        *_ALWAYS_HELD,
        *_MAPS,
        "enum",
        "default",
        "required",
        "additionalProperties",
        "items",
        "prefixItems",
        "anyOf",
        "oneOf",
        "allOf",
        "not",
    }
)


@dataclass(frozen=True)
class SchemaChange:
    """One difference: where (a JSON pointer from the schema's root), what kind, the two values
    (``None`` when absent on that side) and its direction (``narrowing``, ``widening``, ``text``)."""

    pointer: str
    kind: str
    before: Any
    after: Any
    direction: str


_ABSENT: Any = object()


def _pointer(parent: str, key: str | int) -> str:
    return f"{parent}/{str(key).replace('~', '~0').replace('/', '~1')}"


def _form(value: Any) -> str:
    """A value's canonical text, to compare and to set-match (numbers by their literal's form)."""
    return canonical.policy_text(value)


def _number(value: Any) -> Decimal | None:
    if isinstance(value, Number) or (isinstance(value, int | float) and not isinstance(value, bool)):
        try:
            return Decimal(str(value))
        except InvalidOperation:
            return None
    return None


def carries_values(schema: Any) -> bool:
    """Whether a subtree sets a default, const or enum anywhere (the seed's test for a new property)."""
    if isinstance(schema, dict):
        if any(key in schema for key in ("default", "const", "enum")):
            return True
        return any(carries_values(value) for key, value in schema.items() if key not in TEXT_KEYWORDS)
    if isinstance(schema, list):
        return any(carries_values(item) for item in schema)
    return False


def _flip(direction: str) -> str:
    return {NARROWING: WIDENING, WIDENING: NARROWING}.get(direction, direction)


class _Walk:
    def __init__(self) -> None:
        self.changes: list[SchemaChange] = []

    def add(self, pointer: str, kind: str, before: Any, after: Any, direction: str, negated: bool) -> None:
        before = None if before is _ABSENT else before
        after = None if after is _ABSENT else after
        self.changes.append(SchemaChange(pointer, kind, before, after, _flip(direction) if negated else direction))

    def schema(self, before: Any, after: Any, pointer: str, negated: bool) -> None:
        if _form(before) == _form(after):
            return
        if not isinstance(before, dict) or not isinstance(after, dict):
            # true/false schemas, or a schema against a non-schema: judged as a whole.
            self.whole(before, after, pointer, negated)
            return
        for key in sorted(set(before) | set(after)):
            old, new = before.get(key, _ABSENT), after.get(key, _ABSENT)
            if old is not _ABSENT and new is not _ABSENT and _form(old) == _form(new):
                continue
            self.keyword(key, old, new, _pointer(pointer, key), negated)

    def whole(self, before: Any, after: Any, pointer: str, negated: bool) -> None:
        if after is True or after == {}:
            direction = WIDENING  # anything goes now
        elif before is True or before == {}:
            direction = NARROWING
        else:
            direction = WIDENING
        self.add(pointer, "schema replaced", before, after, direction, negated)

    def keyword(self, key: str, old: Any, new: Any, pointer: str, negated: bool) -> None:
        if key in TEXT_KEYWORDS:
            self.add(pointer, f"{key} changed", old, new, TEXT, False)
        elif key in _ALWAYS_HELD:
            verb = "added" if old is _ABSENT else "removed" if new is _ABSENT else "changed"
            self.add(pointer, f"{key} {verb}", old, new, WIDENING, False)
        elif key in _LOWER_BOUNDS or key in _UPPER_BOUNDS:
            self.bound(key, old, new, pointer, negated)
        elif key == "enum":
            self.enum(old, new, pointer, negated)
        elif key == "default":
            verb = "added" if old is _ABSENT else "removed" if new is _ABSENT else "changed"
            self.add(pointer, f"default {verb}", old, new, NARROWING if new is _ABSENT else WIDENING, False)
        elif key == "required":
            self.required(old, new, pointer, negated)
        elif key == "additionalProperties":
            self.additional(old, new, pointer, negated)
        elif key in _MAPS:
            self.mapping(key, old, new, pointer, negated)
        elif key in ("items", "prefixItems"):
            self.items(key, old, new, pointer, negated)
        elif key in ("anyOf", "oneOf", "allOf"):
            self.branches(key, old, new, pointer, negated)
        elif key == "not":
            if old is _ABSENT:
                self.add(pointer, "not added", None, new, NARROWING, negated)
            elif new is _ABSENT:
                self.add(pointer, "not removed", old, None, WIDENING, negated)
            else:
                self.schema(old, new, pointer, not negated)
        else:  # a keyword the walk does not read: it cannot be called narrower
            verb = "added" if old is _ABSENT else "removed" if new is _ABSENT else "changed"
            self.add(pointer, f"{key} {verb} (not compared structurally)", old, new, WIDENING, False)

    def bound(self, key: str, old: Any, new: Any, pointer: str, negated: bool) -> None:
        if new is _ABSENT:
            self.add(pointer, f"{key} removed", old, None, WIDENING, negated)
            return
        if old is _ABSENT:
            self.add(pointer, f"{key} added", None, new, NARROWING, negated)
            return
        a, b = _number(old), _number(new)
        if a is None or b is None:  # draft-4 boolean exclusives, or not numbers at all
            self.add(pointer, f"{key} changed", old, new, WIDENING, negated)
            return
        looser = b < a if key in _LOWER_BOUNDS else b > a
        self.add(pointer, f"{key} {'loosened' if looser else 'tightened'}", old, new,
                 WIDENING if looser else NARROWING, negated)  # fmt: skip

    def enum(self, old: Any, new: Any, pointer: str, negated: bool) -> None:
        if new is _ABSENT:
            self.add(pointer, "enum removed", old, None, WIDENING, negated)
            return
        if old is _ABSENT:
            self.add(pointer, "enum added", None, new, NARROWING, negated)
            return
        if not isinstance(old, list) or not isinstance(new, list):
            self.add(pointer, "enum changed", old, new, WIDENING, negated)
            return
        before, after = {_form(v): v for v in old}, {_form(v): v for v in new}
        gained = [after[k] for k in after if k not in before]
        lost = [before[k] for k in before if k not in after]
        if gained:
            self.add(pointer, "enum gained", None, gained, WIDENING, negated)
        if lost:
            self.add(pointer, "enum lost", lost, None, NARROWING, negated)

    def required(self, old: Any, new: Any, pointer: str, negated: bool) -> None:
        before = [v for v in old if isinstance(v, str)] if isinstance(old, list) else []
        after = [v for v in new if isinstance(v, str)] if isinstance(new, list) else []
        parent = pointer.rsplit("/", 1)[0]
        for name in after:
            if name not in before:
                self.add(
                    _pointer(_pointer(parent, "properties"), name), "newly required", None, name, WIDENING, negated
                )
        for name in before:
            if name not in after:
                self.add(_pointer(_pointer(parent, "properties"), name), "no longer required", name, None, NARROWING,
                         negated)  # fmt: skip

    def additional(self, old: Any, new: Any, pointer: str, negated: bool) -> None:
        if old in (_ABSENT, True) and new in (_ABSENT, True):  # absent means true: the same meaning
            self.add(pointer, "additionalProperties spelled out", old, new, NARROWING, negated)
        elif new is False:
            self.add(pointer, "additionalProperties set to false", old, new, NARROWING, negated)
        elif old is False:
            self.add(pointer, "additionalProperties relaxed", old, new, WIDENING, negated)
        elif isinstance(old, dict) and isinstance(new, dict):
            self.schema(old, new, pointer, negated)
        elif new is _ABSENT or new is True:
            self.add(pointer, "additionalProperties relaxed", old, new, WIDENING, negated)
        else:
            self.add(pointer, "additionalProperties changed", old, new, NARROWING if old is _ABSENT or old is True
                     else WIDENING, negated)  # fmt: skip

    def mapping(self, key: str, old: Any, new: Any, pointer: str, negated: bool) -> None:
        before = old if isinstance(old, dict) else {}
        after = new if isinstance(new, dict) else {}
        noun = "parameter" if key == "properties" else "definition" if key in ("$defs", "definitions") else "pattern"
        for name in sorted(set(before) | set(after)):
            at = _pointer(pointer, name)
            if name not in after:
                self.add(at, f"{noun} removed", before[name], None, NARROWING, negated)
            elif name not in before:
                # A new optional property narrows nothing unless it brings a value of its own; a new
                # pattern admits names the pin did not.
                held = key == "patternProperties" or carries_values(after[name])
                self.add(at, f"{noun} added", None, after[name], WIDENING if held else NARROWING, negated)
            else:
                self.schema(before[name], after[name], at, negated)

    def items(self, key: str, old: Any, new: Any, pointer: str, negated: bool) -> None:
        if isinstance(old, list) and isinstance(new, list):
            for index in range(max(len(old), len(new))):
                at = _pointer(pointer, index)
                if index >= len(new):
                    self.add(at, "item schema removed", old[index], None, WIDENING, negated)
                elif index >= len(old):
                    self.add(at, "item schema added", None, new[index], NARROWING, negated)
                else:
                    self.schema(old[index], new[index], at, negated)
        elif old is _ABSENT:
            self.add(pointer, f"{key} added", None, new, NARROWING, negated)
        elif new is _ABSENT:
            self.add(pointer, f"{key} removed", old, None, WIDENING, negated)
        else:
            self.schema(old, new, pointer, negated)

    def branches(self, key: str, old: Any, new: Any, pointer: str, negated: bool) -> None:
        before = old if isinstance(old, list) else []
        after = new if isinstance(new, list) else []
        before_forms, after_forms = [_form(b) for b in before], [_form(a) for a in after]
        gained = [i for i, form in enumerate(after_forms) if form not in before_forms]
        lost = [i for i, form in enumerate(before_forms) if form not in after_forms]
        # As many gained as lost: the same branches edited in place, compared pairwise in order.
        if gained and len(gained) == len(lost):
            for i, j in zip(lost, gained, strict=True):
                self.schema(before[i], after[j], _pointer(pointer, j), negated)
            return
        more = WIDENING if key != "allOf" else NARROWING
        for j in gained:
            self.add(_pointer(pointer, j), f"{key} gained a branch", None, after[j], more, negated)
        for i in lost:
            self.add(_pointer(pointer, i), f"{key} lost a branch", before[i], None, _flip(more), negated)


def schema_changes(before: Any, after: Any, root: str = "") -> list[SchemaChange]:
    """Every difference between two schemas (parsed trees), in walk order."""
    walk = _Walk()
    walk.schema(before, after, root, False)
    return walk.changes
