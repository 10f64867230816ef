"""The loaded tool registry: the pin, the operator's rules and the per-tool load checks.

``decide`` is the pure heart of Load (spec §1.11): from one server's manifest, its
rules and a live listing it decides, tool by tool, what registers, what is refused and
why, and what is only reported. ``load`` wraps it around a live connection, bounded by
the server's connect timeout. A ``LoadedTool`` is what the serve layer lists and the
gate executes: its spec, the operator's fixed and denied parameters, and ``call``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import re
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import anyio

from agentrt_proxy import canonical
from agentrt_proxy.canonical import JSONBoundaryError, Number, schema_form
from agentrt_proxy.canonical.durations import format_go
from agentrt_proxy.config import READ_ONLY, SIDE_EFFECTS, TOOL_NAME_PATTERN, Rule, ServerConfig
from agentrt_proxy.errors import ConfigurationError
from agentrt_proxy.mcp import InputRequired
from agentrt_proxy.mcp.outcomes import Result, ToolOutcome
from agentrt_proxy.text import escaping
from agentrt_proxy.upstream.spec import ToolSpec

__all__ = [
    "LiveTool",
    "LoadError",
    "LoadedTool",
    "Manifest",
    "PinnedTool",
    "Report",
    "Upstream",
    "annotation_mismatch",
    "decide",
    "hints_text",
    "is_known_answer",
    "known_answer_pattern",
    "live_tool",
    "load",
    "normalise_annotations",
    "pin_tool",
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
_ANNOTATION_BOOLS = ("readOnlyHint", "idempotentHint")  # omitted when false
_ANNOTATION_NULLABLE = ("destructiveHint", "openWorldHint")  # omitted when absent


class LoadError(ConfigurationError):
    """The pinned tools do not load as the operator pinned and classified them (no manifest, one
    for another server, rules naming unpinned tools, nothing registered, the checks out of time);
    ``report`` is set when there is one to show (nothing registered)."""

    def __init__(self, message: str, report: Report | None = None) -> None:
        super().__init__(message)
        self.report = report


# ---------------------------------------------------------------------------- the inputs


@dataclass(frozen=True)
class LiveTool:
    """One tool as the server lists it now: decoded strings and the raw ``inputSchema``."""

    name: str
    description: str
    annotations: dict[str, Any] | None
    input_schema: str


@dataclass(frozen=True)
class PinnedTool:
    """One tool as the manifest pins it."""

    name: str
    description: str
    input_schema: bytes  # the canonical schema form
    schema_hash: str
    description_hash: str
    annotations: dict[str, Any] | None = None


@dataclass(frozen=True)
class Manifest:
    server: str
    pinned_at: str
    tools: dict[str, PinnedTool]


def normalise_annotations(value: Any) -> dict[str, Any] | None:
    """The server's annotations as the SDK's ``ToolAnnotations`` keeps them (spec §1.9)."""
    if not isinstance(value, dict):
        return None
    kept: dict[str, Any] = {}
    for key in _ANNOTATION_NULLABLE:
        if isinstance(value.get(key), bool):
            kept[key] = value[key]
    for key in _ANNOTATION_BOOLS:
        if value.get(key) is True:
            kept[key] = True
    title = value.get("title")
    if isinstance(title, str) and title:
        kept["title"] = title
    return dict(sorted(kept.items()))


def live_tool(name: str, description: str | None, annotations: Any, raw_schema: str | bytes) -> LiveTool:
    # Each invalid byte its own U+FFFD, as Go decodes (and as schema_form does for bytes).
    raw = raw_schema.decode("utf-8", "agentrt-go-replace") if isinstance(raw_schema, bytes) else raw_schema
    return LiveTool(name, description or "", normalise_annotations(annotations), raw)


def pin_tool(tool: LiveTool) -> PinnedTool:
    """What ``pin`` records for one live tool (raises ``SchemaFormError`` on a broken schema)."""
    form = schema_form.canonical_schema(tool.input_schema)
    return PinnedTool(
        name=tool.name,
        description=tool.description,
        input_schema=form,
        schema_hash=canonical.sha256_hex(form),
        description_hash=schema_form.description_hash(tool.description),
        annotations=tool.annotations,
    )


def hints_text(annotations: Mapping[str, Any] | None) -> str:
    """The hints ``pin`` shows: never a classification, only what the server claims."""
    if annotations is None:
        return "no annotations"
    hints = []
    if annotations.get("readOnlyHint") is True:
        hints.append("readOnly")
    if annotations.get("destructiveHint") is True:
        hints.append("destructive")
    if annotations.get("idempotentHint") is True:
        hints.append("idempotent")
    if annotations.get("openWorldHint") is True:
        hints.append("openWorld")
    return ",".join(hints) if hints else "claims nothing"


# ------------------------------------------------------------------------------ the report


@dataclass(frozen=True)
class Registered:
    tool: str
    name: str
    side_effect: str
    hint_mismatch: str = ""


@dataclass(frozen=True)
class RefusedTool:
    tool: str
    reason: str


@dataclass
class Report:
    """What one server's load decided; ``lines()`` is its text form, escaped for a terminal."""

    server: str
    registered: list[Registered] = field(default_factory=list)
    refused: list[RefusedTool] = field(default_factory=list)
    unpinned: list[str] = field(default_factory=list)
    unclassified: list[str] = field(default_factory=list)

    def sort(self) -> None:
        self.registered.sort(key=lambda entry: entry.tool)
        self.refused.sort(key=lambda entry: entry.tool)
        self.unpinned.sort()
        self.unclassified.sort()

    def lines(self) -> list[str]:
        s = escaping.sanitize
        server = s(self.server)
        out = []
        for reg in self.registered:
            line = f"{server}: registered {s(reg.tool)} as {s(reg.name)} ({s(reg.side_effect)})"
            if reg.hint_mismatch:
                line += f" [hint mismatch allowed: {s(reg.hint_mismatch)}]"
            out.append(line)
        out.extend(f"{server}: refused {s(entry.tool)}: {s(entry.reason)}" for entry in self.refused)
        out.extend(f"{server}: unclassified {s(tool)}: no rule" for tool in self.unclassified)
        out.extend(f"{server}: unpinned {s(tool)}: not in the manifest" for tool in self.unpinned)
        return out

    def __str__(self) -> str:
        return "".join(line + "\n" for line in self.lines())

    def to_json(self) -> dict[str, Any]:
        registered = []
        for reg in self.registered:
            entry = {"tool": reg.tool, "name": reg.name, "side_effect": reg.side_effect}
            if reg.hint_mismatch:
                entry["hint_mismatch"] = reg.hint_mismatch
            registered.append(entry)
        return {
            "server": self.server,
            "registered": registered,
            "refused": [{"tool": r.tool, "reason": r.reason} for r in self.refused],
            "unpinned": list(self.unpinned),
            "unclassified": list(self.unclassified),
        }


# --------------------------------------------------------------------------- the loaded tool


class Upstream(Protocol):
    """The part of an upstream connection a loaded tool calls through."""

    async def call_tool(self, name: str, arguments_text: str, timeout_ns: int) -> ToolOutcome: ...


@dataclass(frozen=True)
class CallRefused(Result):
    """A call refused before anything was sent: an answered, known failure whose recorded
    error text is exactly the refusal (it matches the tool's known-answer pattern)."""

    @property
    def error_text(self) -> str:
        return self.text


def _refusal(message: str) -> CallRefused:
    return CallRefused(content=message, text=message, summary=message, is_error=True, truncated=False)


@dataclass
class LoadedTool:
    """A registered tool: what the host sees, what the gate records, how a call goes out."""

    name: str
    server: str
    remote: str
    side_effect: str
    spec: ToolSpec  # input_schema: the restricted schema as a literal-keeping tree; terminal
    schema_text: str  # the restricted schema in the canonical schema form, as the host sees it
    validator: Any  # a jsonschema validator for the restricted schema
    fixed: dict[str, Any]
    deny: tuple[str, ...]
    outcome: str | None
    repeat_window: int
    hint_mismatch: str
    known_answer: re.Pattern[str]
    upstream: Upstream | None = None

    @property
    def description(self) -> str:
        return self.spec.description

    @property
    def timeout(self) -> int:
        return self.spec.timeout

    def prepare(self, arguments_text: str | bytes | None) -> str | CallRefused:
        """The arguments text to send upstream, or the refusal that sends nothing."""
        normalised = canonical.normalise_arguments(arguments_text)
        try:
            arguments = canonical.parse_strict(normalised)
        except JSONBoundaryError as err:
            return _refusal(f"{self.name}: arguments are not a JSON object: {err.reason}")
        if not isinstance(arguments, dict):
            return _refusal(f"{self.name}: arguments are not a JSON object: got {_json_kind(arguments)}")
        for parameter in self.deny:
            if parameter in arguments:
                return _refusal(f"{self.name}: parameter {escaping.go_quote(parameter)} is denied by the operator")
        for parameter in sorted(self.fixed):
            if parameter in arguments:
                return _refusal(f"{self.name}: parameter {escaping.go_quote(parameter)} is fixed by the operator")
        arguments.update(self.fixed)
        return canonical.policy_text(arguments)

    async def call(self, arguments_text: str | bytes | None) -> ToolOutcome:
        """Refuse what the operator forbids, inject the fixed values, call the server."""
        prepared = self.prepare(arguments_text)
        if isinstance(prepared, CallRefused):
            return prepared
        if self.upstream is None:
            raise RuntimeError(f"tool {self.name}: no connection to server {self.server!r}")
        outcome = await self.upstream.call_tool(self.remote, prepared, self.spec.timeout)
        if isinstance(outcome, InputRequired):  # an answer this adapter cannot complete: a known failure
            return _refusal(f"{self.name}: {outcome.reason}")
        return outcome


def _json_kind(value: Any) -> str:
    if isinstance(value, list):
        return "an array"
    if isinstance(value, Number):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, bool):
        return "a boolean"
    return "something else"


def known_answer_pattern(server: str, remote: str, name: str) -> re.Pattern[str]:
    """The recorded error texts that are answers, not silence (spec §2.7.2)."""
    result = (
        rf"{re.escape(server)}/{re.escape(remote)}: \d+ bytes(?:, truncated)?"
        r"(?:, structured content of \d+ bytes dropped for the text)?, error: "
    )
    refusal = (
        rf"{re.escape(name)}: (?:arguments are not a JSON object|parameter \".*\" is denied by the operator"
        r"|parameter \".*\" is fixed by the operator|the server asked for more input)"
    )
    return re.compile(f"(?:{result}|{refusal})")


def is_known_answer(tool: LoadedTool, error_text: str) -> bool:
    """Whether a recorded error text is the server's answer or a refusal before sending."""
    return tool.known_answer.match(error_text) is not None


# ------------------------------------------------------------------------ the annotations


def annotation_mismatch(side_effect: str, annotations: Mapping[str, Any] | None) -> str:
    """How the server's hints contradict the operator's class ('' when they do not)."""
    if annotations is None:
        return ""
    read_only = annotations.get("readOnlyHint") is True
    if side_effect == READ_ONLY and not read_only:
        return "classified read_only, but the server does not claim readOnlyHint"
    if side_effect != "destructive" and not read_only and annotations.get("destructiveHint") is True:
        return f"classified {side_effect}, but the server claims destructiveHint"
    return ""


# ------------------------------------------------------------------- the schema checks


class _Refusal(Exception):
    """One tool's first failing check; the message is the report's reason. Always caught where the
    tool is decided (it becomes a report line), so it is control flow, outside the error tree."""


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
                    raise _Refusal(
                        f"the input schema's {key} at {pointer} is {escaping.go_quote(item)}, "
                        "which could make the schema compiler read outside it"
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
            raise _Refusal(
                f"the rule hides {escaping.go_quote(name)}, which is not a top-level property of the input schema"
            )
    if hidden and "patternProperties" in schema:
        raise _Refusal(
            "the rule hides parameters and the input schema has patternProperties, which could still match them"
        )
    for name in hidden:
        for keyword in HIDING_KEYWORDS:
            if keyword in schema and _mentions(schema[keyword], name):
                raise _Refusal(f"the rule hides {escaping.go_quote(name)} and the input schema's {keyword} mentions it")


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


def _accept(name: str, side_effect: str, timeout: int, restricted_text: str, schema: Any) -> Any:
    """The runtime's own acceptance of the tool spec (spec §1.11 check 13)."""
    # Imported here, not at the top: jsonschema costs ~60 ms, and serving spawns the
    # upstreams before it is loaded (runtime.open_runtime); only this check needs it.
    import jsonschema.exceptions
    import referencing.exceptions

    from agentrt_proxy.upstream import validation

    if side_effect not in SIDE_EFFECTS:
        raise _Refusal(
            f"the runtime refuses it: tool {escaping.go_quote(name)}: invalid side effect "
            f"{escaping.go_quote(side_effect)}"
        )
    if timeout <= 0:
        raise _Refusal(f"the runtime refuses it: tool {escaping.go_quote(name)}: timeout must be positive")
    try:
        canonical.check_json(restricted_text)
    except JSONBoundaryError as err:
        raise _Refusal(f"the runtime refuses it: tool {escaping.go_quote(name)}: input schema: {err.reason}") from None
    try:
        return validation.validator(schema)
    except jsonschema.exceptions.SchemaError as err:
        raise _Refusal(f"the runtime refuses it: tool {escaping.go_quote(name)}: input schema: {err.message}") from None
    except referencing.exceptions.Unresolvable as err:
        raise _Refusal(f"the runtime refuses it: tool {escaping.go_quote(name)}: input schema: {err}") from None
    except (RecursionError, ValueError, TypeError) as err:
        raise _Refusal(f"the runtime refuses it: tool {escaping.go_quote(name)}: input schema: {err}") from None


# --------------------------------------------------------------------------------- decide


@dataclass(frozen=True)
class _Context:
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
    ctx = _Context(server, repeat_window, None)
    prepared: dict[str, Prepared] = {}
    for tool_name, pinned in manifest.tools.items():
        rule = server.rules.get(tool_name)
        if rule is None:
            continue
        try:
            tool = _offer(ctx, pinned, rule, pinned.input_schema, hint="")
        except _Refusal as refusal:
            prepared[tool_name] = Prepared(pinned.input_schema, None, str(refusal))
        except Exception:
            continue
        else:
            prepared[tool_name] = Prepared(pinned.input_schema, tool)
    return prepared


def _build(
    ctx: _Context, pinned: PinnedTool, rule: Rule, live: LiveTool | None, prepared: Prepared | None = None
) -> LoadedTool:
    """One pinned, classified tool through every check; raises ``_Refusal`` at the first failure.

    The checks after the hints come from ``prepared`` when it was decided on this very form.
    """
    if live is None:
        raise _Refusal("the server no longer offers it")
    try:
        form = schema_form.canonical_schema(live.input_schema)
    except schema_form.SchemaFormError as err:
        raise _Refusal(f"the input schema changed since the pin ({err})") from None
    if canonical.sha256_hex(form) != pinned.schema_hash:
        raise _Refusal("the input schema changed since the pin")
    if schema_form.description_hash(live.description) != pinned.description_hash:
        raise _Refusal("the description changed since the pin, and a description is model input")
    hint = _hint_mismatch(rule, pinned, live)
    if hint and not rule.allow_hint_mismatch:
        raise _Refusal(hint)
    if prepared is None or prepared.form != form:
        return _offer(ctx, pinned, rule, form, hint=hint)
    if prepared.tool is None:
        raise _Refusal(prepared.refusal)
    return dataclasses.replace(prepared.tool, hint_mismatch=hint, upstream=ctx.upstream)


def _offer(ctx: _Context, pinned: PinnedTool, rule: Rule, form: bytes, *, hint: str) -> LoadedTool:
    """The checks after the hints, on the schema's canonical form (the pinned one, or the live one
    once its hash matched the pin's)."""
    server = ctx.server
    timeout = rule.timeout or server.default_timeout
    if not timeout:
        raise _Refusal("no timeout: set Rule.Timeout or Server.DefaultTimeout")
    name = rule.rename or f"{server.name}_{pinned.name}"
    if not TOOL_NAME_PATTERN.fullmatch(name):
        raise _Refusal(f"the name {escaping.go_quote(name)} does not match {NAME_PATTERN_TEXT}")
    schema = schema_form.parse_form(form)
    if not isinstance(schema, dict):
        raise _Refusal("the input schema is not a JSON object")
    if schema.get("type") != "object" or isinstance(schema.get("type"), Number):
        raise _Refusal('the input schema is not an object schema ("type":"object")')
    check_self_contained(schema)
    for parameter, value in rule.fixed.items():
        try:
            canonical.check_json(canonical.policy_text(value))
        except (JSONBoundaryError, TypeError):
            raise _Refusal(f"the fixed value for {escaping.go_quote(parameter)} is not valid JSON") from None
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
    return f"the server now says: {mismatch}" if mismatch else ""


def check_manifest(server: ServerConfig, manifest: Manifest | None) -> Manifest:
    """The whole-load preconditions: a manifest for this server, rules that name pinned tools."""
    if manifest is None:
        raise LoadError("mcp: manifest is required; run Pin first")
    if manifest.server != server.name:
        raise LoadError(
            f"mcp: manifest is for server {escaping.go_quote(manifest.server)}, not {escaping.go_quote(server.name)}"
        )
    stray = sorted(tool for tool in server.rules if tool not in manifest.tools)
    if stray:
        raise LoadError(
            f"mcp: server {escaping.go_quote(server.name)}: rules name tools the manifest does not pin: "
            f"{', '.join(stray)}"
        )
    return manifest


def decide(
    server: ServerConfig,
    manifest: Manifest,
    live: Iterable[LiveTool],
    *,
    repeat_window: int,
    upstream: Upstream | None = None,
    prepared: Mapping[str, Prepared] | None = None,
) -> tuple[list[LoadedTool], Report]:
    """Decide every pinned tool against the live listing (pure; spec §1.11).

    Returns the registered tools in the server's tool-name order and the report. Raises
    ``LoadError`` (with the report) when nothing registers. ``prepared`` (``prepare`` on the
    same server and manifest) saves the checks after the hints where the schema is the pinned one.
    """
    check_manifest(server, manifest)
    listing = {tool.name: tool for tool in live}
    ctx = _Context(server, repeat_window, upstream)
    report = Report(server.name)
    registered: list[LoadedTool] = []
    taken: dict[str, str] = {}
    for tool_name in sorted(manifest.tools):
        rule = server.rules.get(tool_name)
        if rule is None:
            report.unclassified.append(tool_name)
            continue
        try:
            earlier = prepared.get(tool_name) if prepared is not None else None
            tool = _build(ctx, manifest.tools[tool_name], rule, listing.get(tool_name), earlier)
            if tool.name in taken:
                raise _Refusal(
                    f"the name {escaping.go_quote(tool.name)} is already taken by tool "
                    f"{escaping.go_quote(taken[tool.name])}"
                )
        except _Refusal as refusal:
            report.refused.append(RefusedTool(tool_name, str(refusal)))
            continue
        taken[tool.name] = tool_name
        registered.append(tool)
        report.registered.append(Registered(tool_name, tool.name, tool.side_effect, tool.hint_mismatch))
    report.unpinned.extend(name for name in listing if name not in manifest.tools)
    report.sort()
    if not registered:
        raise LoadError(f"mcp: server {escaping.go_quote(server.name)}: no tool registered", report)
    return registered, report


# ----------------------------------------------------------------------------------- load


class Connection(Upstream, Protocol):
    """An upstream connection after its handshake and listing."""

    async def aclose(self) -> None: ...


ListingFn = Callable[[float], Awaitable[tuple[Connection, list[LiveTool]]]]


async def load(
    server: ServerConfig,
    manifest: Manifest | None,
    connect: ListingFn,
    *,
    repeat_window: int,
) -> tuple[Connection, list[LoadedTool], Report]:
    """Connect, list and decide, all inside the server's connect timeout.

    ``connect(timeout_seconds)`` opens the connection and lists its tools, raising its own
    named phase errors. On any failure the connection is closed; ``LoadError.report`` is
    set only when the load got as far as deciding (nothing registered).

    The checks that need no listing (``prepare``) run in a worker thread while the server
    starts, so the listing is followed only by the checks that need it (decision 0009).
    """
    checked = check_manifest(server, manifest)
    bound = server.connect_timeout / 1e9
    deadline = time.monotonic() + bound
    prepared: dict[str, Prepared] = {}
    prepared_ready = anyio.Event()

    async def prepare_meanwhile() -> None:
        try:
            with contextlib.suppress(Exception):  # nothing prepared: decide runs every check itself
                prepared.update(
                    await anyio.to_thread.run_sync(
                        lambda: prepare(server, checked, repeat_window=repeat_window), abandon_on_cancel=True
                    )
                )
        finally:
            prepared_ready.set()

    async def connect_and_decide() -> tuple[Connection, list[LoadedTool], Report]:
        connection, listing = await connect(bound)
        try:
            remaining = deadline - time.monotonic()
            with anyio.fail_after(max(remaining, 0)):
                await prepared_ready.wait()
                tools, report = await anyio.to_thread.run_sync(
                    lambda: decide(
                        server, checked, listing, repeat_window=repeat_window, upstream=connection, prepared=prepared
                    ),
                    abandon_on_cancel=True,
                )
        except TimeoutError:
            await _close_quietly(connection)
            raise LoadError(
                f"mcp: server {escaping.go_quote(server.name)}: load: timed out after "
                f"{format_go(server.connect_timeout)}"
            ) from None
        except BaseException:
            await _close_quietly(connection)
            raise
        return connection, tools, report

    loaded: tuple[Connection, list[LoadedTool], Report] | None = None
    failure: Exception | None = None
    async with anyio.create_task_group() as group:
        group.start_soon(prepare_meanwhile)
        try:
            loaded = await connect_and_decide()
        except Exception as err:  # raised as itself below, not inside the group's ExceptionGroup
            failure = err
        group.cancel_scope.cancel()
    if failure is not None:
        raise failure
    assert loaded is not None
    return loaded


async def _close_quietly(connection: Connection) -> None:
    with anyio.CancelScope(shield=True):
        with contextlib.suppress(Exception):  # closing must not hide why the load failed
            await connection.aclose()
