"""The per-tool load checks (proxy-and-mcp-module §1.11): one pinned, classified tool against its live listing,
the operator's rule and the server's entry, decided purely; the first that fails is the reason
the report gives.

In order: the server still offers it, its schema and description are the pinned ones, its hints
do not contradict the operator's class (unless allowed), then, on the schema's canonical form
alone, the timeout, the name, an object schema, self-contained, the fixed values, the hidden
parameters, and the runtime's own acceptance. Those last ones need no listing, so ``prepare``
runs them while the server starts and ``build`` reuses them for the very form they were decided
on (decision 0009).
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from agentrt_proxy import canonical
from agentrt_proxy.canonical import JSONBoundaryError, Number, schema_form
from agentrt_proxy.config import READ_ONLY, SIDE_EFFECTS, TOOL_NAME_PATTERN, Rule, ServerConfig
from agentrt_proxy.text import escaping, pin_text
from agentrt_proxy.upstream._spec import ToolSpec
from agentrt_proxy.upstream.loaded_tool import LoadedTool, Upstream, known_answer_pattern
from agentrt_proxy.upstream.pins import LiveTool, Manifest, PinnedTool
from agentrt_proxy.upstream.review import pin_drift
from agentrt_proxy.upstream.withholding import CHANGED_SINCE_PIN, REFUSED_BY_CHECK, REMOVED_UPSTREAM

__all__ = [
    "HIDING_KEYWORDS",
    "NAME_PATTERN_TEXT",
    "Context",
    "Prepared",
    "Refusal",
    "annotation_mismatch",
    "build",
    "check_hiding",
    "check_self_contained",
    "hidden_names",
    "prepare",
    "restrict",
]

NAME_PATTERN_TEXT = "^[a-zA-Z0-9_-]{1,64}$"
HIDING_KEYWORDS = (
    "allOf",
    "anyOf",
    "oneOf",
    "not",
    "if",
    "then",
    "else",
    "dependentRequired",
    "dependentSchemas",
    "dependencies",
    "$defs",
    "definitions",
)
_REFERENCE_KEYS = ("$ref", "$dynamicRef", "$recursiveRef")
_WELL_KNOWN_DRAFTS = frozenset(
    f"{scheme}://json-schema.org/{path}{tail}"
    for scheme in ("http", "https")
    for path in (
        "draft-04/schema",
        "draft-06/schema",
        "draft-07/schema",
        "draft/2019-09/schema",
        "draft/2020-12/schema",
        "schema",
    )
    for tail in ("", "#")
)


def annotation_mismatch(side_effect: str, annotations: Mapping[str, Any] | None) -> str:
    """How the server's hints contradict the operator's class ('' when they do not)."""
    if annotations is None:
        return ""
    read_only = annotations.get("readOnlyHint") is True
    if side_effect == READ_ONLY and not read_only:
        return pin_text.HINT_NOT_READ_ONLY
    if side_effect != "destructive" and not read_only and annotations.get("destructiveHint") is True:
        return pin_text.HINT_DESTRUCTIVE.format(cls=side_effect)
    return ""


# ------------------------------------------------------------------- the schema checks


class Refusal(Exception):
    """One tool's first failing check; the message is the report's reason, ``kind`` its name
    (``withholding.WITHHOLDING_REASONS``). Always caught where the tool is decided (it becomes a
    report line), so it is control flow, outside the error tree."""

    def __init__(self, message: str, kind: str = REFUSED_BY_CHECK) -> None:
        super().__init__(message)
        self.kind = kind


def _pointer(parent: str, key: str | int) -> str:
    token = str(key).replace("~", "~0").replace("/", "~1")
    return f"{parent}/{token}"


def _reaching_value(key: str, value: str, draft4: bool) -> bool:
    if key in _REFERENCE_KEYS:
        return not value.startswith("#")
    if key == "$id":
        return not value.startswith("#") and value not in _WELL_KNOWN_DRAFTS
    if key == "$schema":
        return value not in _WELL_KNOWN_DRAFTS
    if key == "id" and draft4:
        return not value.startswith("#") and (":" in value or value.startswith("//"))
    return False


def check_self_contained(schema: Any) -> None:
    """Refuse a schema that names anything outside itself; nothing is ever fetched."""
    root_schema = schema.get("$schema") if isinstance(schema, dict) else None
    draft4 = isinstance(root_schema, str) and "draft-04" in root_schema
    stack: list[tuple[Any, str]] = [(schema, "#")]
    while stack:
        value, pointer = stack.pop()
        children: list[tuple[Any, str]] = []
        if isinstance(value, dict):
            for key in sorted(value):
                item = value[key]
                if isinstance(item, str) and not isinstance(item, Number) and _reaching_value(key, item, draft4):
                    raise Refusal(
                        pin_text.SCHEMA_REACHES_OUT.format(key=key, pointer=pointer, item=escaping.go_quote(item))
                    )
                children.append((item, _pointer(pointer, key)))
        elif isinstance(value, list):
            children = [(item, _pointer(pointer, index)) for index, item in enumerate(value)]
        stack.extend(reversed(children))


def _mentions(value: Any, name: str) -> bool:
    if isinstance(value, dict):
        return any(key == name or _mentions(item, name) for key, item in value.items())
    if isinstance(value, list):
        return any(_mentions(item, name) for item in value)
    return isinstance(value, str) and not isinstance(value, Number) and value == name


def hidden_names(rule: Rule) -> list[str]:
    names = list(dict.fromkeys(rule.deny))
    names.extend(name for name in sorted(rule.fixed) if name not in names)
    return names


def check_hiding(schema: dict[str, Any], hidden: Sequence[str]) -> None:
    properties = schema.get("properties")
    for name in hidden:
        if not isinstance(properties, dict) or name not in properties:
            raise Refusal(pin_text.HIDES_UNKNOWN.format(name=escaping.go_quote(name)))
    if hidden and "patternProperties" in schema:
        raise Refusal(pin_text.HIDES_PATTERN_PROPERTIES)
    for name in hidden:
        for keyword in HIDING_KEYWORDS:
            if keyword in schema and _mentions(schema[keyword], name):
                raise Refusal(pin_text.HIDES_MENTIONED.format(name=escaping.go_quote(name), keyword=keyword))


def restrict(schema: dict[str, Any], hidden: Sequence[str]) -> dict[str, Any]:
    """The schema the model sees: hidden names gone from properties and required."""
    if not hidden:
        return schema
    restricted = dict(schema)
    properties = restricted.get("properties")
    if isinstance(properties, dict):
        restricted["properties"] = {key: value for key, value in properties.items() if key not in hidden}
    required = restricted.get("required")
    if isinstance(required, list):
        kept = [item for item in required if item not in hidden]
        if kept:
            restricted["required"] = kept
        else:
            del restricted["required"]
    return restricted


_IMPORTING_JSONSCHEMA = threading.Lock()


def load_jsonschema() -> None:
    """Import jsonschema (and the validators built on it) in one thread at a time. Serving
    imports it from two worker threads at once (this check while the upstreams load, and the
    gate's import in ``proxy._runtime.open_runtime``); two threads meeting inside its import
    cycle make Python refuse one of them ("deadlock detected by _ModuleLock"), and the proxy
    could not start. Once imported, this costs a lock and a dictionary lookup."""
    with _IMPORTING_JSONSCHEMA:
        import jsonschema.exceptions  # noqa: F401
        import referencing.exceptions  # noqa: F401

        from agentrt_proxy.upstream import validation  # noqa: F401


def _accept(name: str, side_effect: str, timeout: int, restricted_text: str, schema: Any) -> Any:
    """The runtime's own acceptance of the tool spec (proxy-and-mcp-module §1.11 check 13)."""
    # Imported here, not at the top: jsonschema costs ~60 ms, and serving spawns the
    # upstreams before it is loaded (proxy._runtime.open_runtime); only this check needs it.
    load_jsonschema()
    import jsonschema.exceptions
    import referencing.exceptions

    from agentrt_proxy.upstream import validation

    if side_effect not in SIDE_EFFECTS:
        raise Refusal(
            pin_text.RUNTIME_BAD_CLASS.format(name=escaping.go_quote(name), cls=escaping.go_quote(side_effect))
        )
    if timeout <= 0:
        raise Refusal(pin_text.RUNTIME_NO_TIMEOUT.format(name=escaping.go_quote(name)))
    try:
        canonical.check_json(restricted_text)
    except JSONBoundaryError as err:
        raise Refusal(pin_text.RUNTIME_BAD_SCHEMA.format(name=escaping.go_quote(name), error=err.reason)) from None
    try:
        return validation.validator(schema)
    except jsonschema.exceptions.SchemaError as err:
        raise Refusal(pin_text.RUNTIME_BAD_SCHEMA.format(name=escaping.go_quote(name), error=err.message)) from None
    except referencing.exceptions.Unresolvable as err:
        raise Refusal(pin_text.RUNTIME_BAD_SCHEMA.format(name=escaping.go_quote(name), error=err)) from None
    except (RecursionError, ValueError, TypeError) as err:
        raise Refusal(pin_text.RUNTIME_BAD_SCHEMA.format(name=escaping.go_quote(name), error=err)) from None


# ------------------------------------------------------------------------ one tool's checks


@dataclass(frozen=True)
class Context:
    """What every tool of one server's load is decided with: its entry, the configuration's repeat
    window, and the connection its registered tools call through (``None`` while preparing)."""

    server: ServerConfig
    repeat_window: int
    upstream: Upstream | None


@dataclass(frozen=True)
class Prepared:
    """One pinned tool's checks that need no listing, decided from its manifest entry.

    Every check after the hints (the timeout, the name, the schema's shape, that it is
    self-contained, the hidden and fixed parameters, the runtime's acceptance) depends only
    on the schema's canonical form, the rule and the server's entry. ``decide`` uses this
    when the live schema's form is exactly ``form``, after the checks that need the listing;
    otherwise it runs them itself.
    """

    form: bytes
    tool: LoadedTool | None  # None when refused; without the upstream and hint the listing decides
    refusal: str = ""


def prepare(server: ServerConfig, manifest: Manifest, *, repeat_window: int) -> dict[str, Prepared]:
    """The checks that need no listing, for every classified pinned tool (``Prepared``).

    ``load`` runs this while the server starts, so that once it lists only the checks that
    need the listing remain (the cold start, decision 0009). A tool whose checks raise
    anything but a refusal is left out: ``decide`` meets it again, in its order.
    """
    ctx = Context(server, repeat_window, None)
    prepared: dict[str, Prepared] = {}
    for tool_name, pinned in manifest.tools.items():
        rule = server.rules.get(tool_name)
        if rule is None:
            continue
        try:
            tool = _offer(ctx, pinned, rule, pinned.input_schema, hint="")
        except Refusal as refusal:
            prepared[tool_name] = Prepared(pinned.input_schema, None, str(refusal))
        except Exception:
            continue
        else:
            prepared[tool_name] = Prepared(pinned.input_schema, tool)
    return prepared


def build(
    ctx: Context, pinned: PinnedTool, rule: Rule, live: LiveTool | None, prepared: Prepared | None = None
) -> LoadedTool:
    """One pinned, classified tool through every check; raises ``Refusal`` at the first failure.

    The checks after the hints come from ``prepared`` when it was decided on this very form.
    """
    if live is None:
        raise Refusal(pin_text.NO_LONGER_OFFERED, REMOVED_UPSTREAM)
    try:
        form = schema_form.canonical_schema(live.input_schema)
    except schema_form.SchemaFormError as err:
        raise Refusal(pin_text.SCHEMA_CHANGED_UNREAD.format(error=err), CHANGED_SINCE_PIN) from None
    if canonical.sha256_hex(form) != pinned.schema_hash:
        raise Refusal(pin_text.SCHEMA_CHANGED, CHANGED_SINCE_PIN)
    if schema_form.description_hash(live.description) != pinned.description_hash:
        raise Refusal(pin_text.DESCRIPTION_CHANGED, CHANGED_SINCE_PIN)
    drift = pin_drift(pinned, live)
    if drift:
        raise Refusal(drift, CHANGED_SINCE_PIN)
    hint = _hint_mismatch(rule, pinned, live)
    if hint and not rule.allow_hint_mismatch:
        raise Refusal(hint)
    if prepared is None or prepared.form != form:
        return dataclasses.replace(_offer(ctx, pinned, rule, form, hint=hint), display=live.display)
    if prepared.tool is None:
        raise Refusal(prepared.refusal)
    return dataclasses.replace(prepared.tool, hint_mismatch=hint, upstream=ctx.upstream, display=live.display)


def _offer(ctx: Context, pinned: PinnedTool, rule: Rule, form: bytes, *, hint: str) -> LoadedTool:
    """The checks after the hints, on the schema's canonical form (the pinned one, or the live one
    once its hash matched the pin's)."""
    server = ctx.server
    timeout = rule.timeout or server.default_timeout
    if not timeout:
        raise Refusal(pin_text.NO_TIMEOUT)
    name = rule.rename or f"{server.name}_{pinned.name}"
    if not TOOL_NAME_PATTERN.fullmatch(name):
        raise Refusal(pin_text.NAME_NOT_PATTERN.format(name=escaping.go_quote(name), pattern=NAME_PATTERN_TEXT))
    schema = schema_form.parse_form(form)
    if not isinstance(schema, dict):
        raise Refusal(pin_text.SCHEMA_NOT_OBJECT)
    if schema.get("type") != "object" or isinstance(schema.get("type"), Number):
        raise Refusal(pin_text.SCHEMA_NOT_OBJECT_SCHEMA)
    check_self_contained(schema)
    for parameter, value in rule.fixed.items():
        try:
            canonical.check_json(canonical.policy_text(value))
        except (JSONBoundaryError, TypeError):
            raise Refusal(pin_text.FIXED_NOT_JSON.format(parameter=escaping.go_quote(parameter))) from None
    hidden = hidden_names(rule)
    check_hiding(schema, hidden)
    restricted = restrict(schema, hidden)
    restricted_text = schema_form.canonical_schema(canonical.policy_text(restricted)).decode("utf-8")
    description = rule.description if rule.description is not None else pinned.description
    validator = _accept(name, rule.side_effect, timeout, restricted_text, restricted)
    return LoadedTool(
        name=name,
        server=server.name,
        remote=pinned.name,
        side_effect=rule.side_effect,
        spec=ToolSpec(
            name, description, schema_form.parse_form(restricted_text.encode()), rule.side_effect, timeout, True
        ),
        schema_text=restricted_text,
        validator=validator,
        fixed=dict(rule.fixed),
        deny=tuple(rule.deny),
        outcome=rule.outcome,
        repeat_window=rule.repeat_window if rule.repeat_window is not None else ctx.repeat_window,
        hint_mismatch=hint,
        known_answer=known_answer_pattern(server.name, pinned.name, name),
        upstream=ctx.upstream,
    )


def _hint_mismatch(rule: Rule, pinned: PinnedTool, live: LiveTool) -> str:
    if pinned.annotations is not None:
        return annotation_mismatch(rule.side_effect, pinned.annotations)
    mismatch = annotation_mismatch(rule.side_effect, live.annotations)
    return pin_text.HINT_NOW.format(mismatch=mismatch) if mismatch else ""
