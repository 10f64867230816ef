"""The configuration file: strict loading and its defaults.

One JSON object, read only when the current user owns it and nobody else can write it
(``files.read_owned``). Unknown fields and repeated keys are refused anywhere; every refusal
names the file and the field. Relative ``database`` and ``manifest`` paths are taken against
the file's own directory. A server's ``env`` and ``headers`` values may read the proxy's own
environment (``${env:NAME}``, see ``env_refs``) when the file is loaded.
"""

from __future__ import annotations

import json
import os
import re
import urllib.parse
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any, NoReturn

from agentrt_proxy import canonical
from agentrt_proxy.canonical import JSONBoundaryError, Number
from agentrt_proxy.canonical.durations import DurationError, format_go, parse_go
from agentrt_proxy.canonical.quoting import go_quote
from agentrt_proxy.config import _messages as T
from agentrt_proxy.config import _oauth_fields as oauth_fields
from agentrt_proxy.config import budget_fields
from agentrt_proxy.config._env_refs import EnvReferenceError, expand, has_reference
from agentrt_proxy.config.files import read_owned
from agentrt_proxy.config.model import (
    CLEAN_CONTEXT_OUTCOMES,
    DEFAULT_CONNECT_TIMEOUT,
    DEFAULT_HOLD,
    DEFAULT_LEASE_TTL,
    DEFAULT_MAX_MESSAGE_BYTES,
    DEFAULT_MAX_PENDING,
    DEFAULT_MAX_RESULT_BYTES,
    DEFAULT_POLICY,
    DEFAULT_REPEAT_WINDOW,
    DEFAULT_STATUS_TOOL,
    DEFAULT_TTL,
    FORWARDABLE,
    MAX_MAX_MESSAGE_BYTES,
    MAX_MAX_RESULT_BYTES,
    MIN_LEASE_TTL,
    MIN_MAX_MESSAGE_BYTES,
    MIN_MAX_RESULT_BYTES,
    MIN_TASK_TTL,
    OUTCOMES,
    REQUIRE_APPROVAL,
    SESSION_PATTERN,
    SIDE_EFFECTS,
    TASK_TTL_AFTER_APPROVAL,
    TOOL_NAME_PATTERN,
    Config,
    ConfigError,
    Rule,
    ServerConfig,
)

_HEADER_NAME = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")


class _Object:
    """One JSON object of the file, read field by field; what is left over is refused."""

    def __init__(self, value: Any, where: str, errors: _Errors) -> None:
        if not isinstance(value, dict):
            errors.fail(T.NOT_AN_OBJECT.format(where=where or T.THE_CONFIGURATION))
        self.value: dict[str, Any] = value
        self.where = where
        self.errors = errors
        self.seen: set[str] = set()

    def field_name(self, name: str) -> str:
        return f"{self.where}.{name}" if self.where else name

    def get(self, name: str) -> Any:
        self.seen.add(name)
        return self.value.get(name)

    def string(self, name: str) -> str | None:
        value = self.get(name)
        if value is None:
            return None
        if not isinstance(value, str) or isinstance(value, Number):
            self.errors.fail(T.MUST_BE_STRING.format(field=self.field_name(name)))
        return value

    def boolean(self, name: str) -> bool:
        value = self.get(name)
        if value is None:
            return False
        if not isinstance(value, bool):
            self.errors.fail(T.MUST_BE_BOOLEAN.format(field=self.field_name(name)))
        return value

    def strings(self, name: str) -> tuple[str, ...] | None:
        value = self.get(name)
        if value is None:
            return None
        if not isinstance(value, list) or not all(
            isinstance(item, str) and not isinstance(item, Number) for item in value
        ):
            self.errors.fail(T.MUST_BE_STRINGS.format(field=self.field_name(name)))
        return tuple(value)

    def duration(self, name: str, describe: Callable[[str], str] | None = None) -> int | None:
        value = self.get(name)
        if value is None:
            return None
        label = describe(name) if describe else self.field_name(name)
        if not isinstance(value, str) or isinstance(value, Number):
            self.errors.fail(T.DURATION_NOT_STRING.format(label=label, shown=canonical.policy_text(value)))
        try:
            ns = parse_go(value)
        except DurationError as err:
            self.errors.fail(T.DURATION_BAD.format(label=label, error=err))
        if ns < 0:
            self.errors.fail(T.DURATION_NEGATIVE.format(label=label, q_value=go_quote(value)))
        return ns

    def finish(self) -> None:
        for name in self.value:
            if name not in self.seen:
                where = T.UNKNOWN_FIELD_IN.format(where=self.where) if self.where else ""
                self.errors.fail(T.UNKNOWN_FIELD.format(q_name=go_quote(name), where=where))


class _Errors:
    def __init__(self, path: Path) -> None:
        self.path = path

    def fail(self, message: str) -> NoReturn:
        raise ConfigError(T.IN_FILE.format(path=self.path, message=message))


def load_config(path: Path | str, *, environ: Mapping[str, str] | None = None, expand_env: bool = True) -> Config:
    """Read, check and return the configuration at ``path``.

    Every ``${env:NAME}`` is read from ``environ`` (the proxy's own environment by default).
    With ``expand_env`` false the references are checked but left as written: only for a
    caller that reads nothing a server is given (an operator's command wants the database,
    and the operator's shell need not hold the servers' tokens).
    """
    config_path = Path(os.path.abspath(path))
    try:
        data = read_owned(config_path)
    except ConfigError as err:
        raise ConfigError(T.CONFIG.format(error=err)) from None
    errors = _Errors(config_path)
    try:
        tree = canonical.parse_strict(data)
    except JSONBoundaryError as err:
        if err.reason == "not valid JSON":
            _diagnose_invalid(data, errors)
        errors.fail(T.NOT_USABLE_JSON.format(reason=err.reason))
    env: Mapping[str, str] | None = None
    if expand_env:
        env = os.environ if environ is None else environ
    return _build(tree, config_path, errors, env)


def _diagnose_invalid(data: bytes, errors: _Errors) -> None:
    """Say ``trailing data`` when one object is followed by more, as that is a common slip."""
    try:
        _, _end = json.JSONDecoder().raw_decode(data.decode("utf-8").lstrip())
    except ValueError:
        return
    errors.fail(T.TRAILING_DATA)


def _build(tree: Any, path: Path, errors: _Errors, environ: Mapping[str, str] | None) -> Config:
    top = _Object(tree, "", errors)
    base = path.parent
    database = top.string("database")
    session = top.string("session")
    servers_value = top.get("servers")
    policy_value = top.get("policy")
    hold = top.duration("hold")
    repeat_window = top.duration("repeat_window")
    max_pending_value = top.get("max_pending")
    approval_ttl = top.duration("approval_ttl")
    grant_ttl = top.duration("grant_ttl")
    status_tool = top.string("status_tool")
    lease_ttl = top.duration("lease_ttl")
    max_message_value = top.get("max_message_bytes")
    max_result_bytes_value = top.get("max_result_bytes")
    budgets_value = top.get("budgets")
    task_ttl = top.duration("task_ttl")
    top.finish()

    if not database:
        errors.fail(T.DATABASE_REQUIRED)
    if session is None or not SESSION_PATTERN.fullmatch(session):
        errors.fail(T.SESSION_NAME.format(q_session=go_quote(session or "")))
    if not isinstance(servers_value, list) or not servers_value:
        if servers_value is not None and not isinstance(servers_value, list):
            errors.fail(T.SERVERS_NOT_ARRAY)
        errors.fail(T.SERVERS_REQUIRED)
    policy = _policy(policy_value, errors)
    max_pending = _max_pending(max_pending_value, errors)
    max_result_bytes = _max_result_bytes(max_result_bytes_value, errors)
    if lease_ttl is not None and lease_ttl < MIN_LEASE_TTL:
        errors.fail(T.LEASE_TTL_SHORT.format(ttl=format_go(lease_ttl)))
    if task_ttl is not None and task_ttl < MIN_TASK_TTL:
        errors.fail(T.TASK_TTL_SHORT.format(ttl=format_go(task_ttl)))
    if status_tool is not None and not TOOL_NAME_PATTERN.fullmatch(status_tool):
        errors.fail(T.STATUS_TOOL_NAME.format(q_name=go_quote(status_tool)))

    max_message_bytes = _max_message_bytes(max_message_value, errors)
    servers = _servers(servers_value, base, errors, environ, max_message_bytes, _absolute(base, database))
    budgets = budget_fields.budgets(budgets_value, servers, errors.fail)
    return Config(
        path=path,
        database=_absolute(base, database),
        session=session,
        servers=servers,
        policy=policy,
        hold=DEFAULT_HOLD if hold is None else hold,
        repeat_window=DEFAULT_REPEAT_WINDOW if repeat_window is None else repeat_window,
        max_pending=max_pending,
        approval_ttl=DEFAULT_TTL if approval_ttl is None else approval_ttl,
        grant_ttl=DEFAULT_TTL if grant_ttl is None else grant_ttl,
        status_tool=status_tool or DEFAULT_STATUS_TOOL,
        lease_ttl=DEFAULT_LEASE_TTL if lease_ttl is None else lease_ttl,
        max_message_bytes=max_message_bytes,
        max_result_bytes=max_result_bytes,
        budgets=budgets,
        task_ttl=(
            (DEFAULT_TTL if approval_ttl is None else approval_ttl) + TASK_TTL_AFTER_APPROVAL
            if task_ttl is None
            else task_ttl
        ),
    )


def _in_server(name: str) -> Callable[[str], str]:
    """How a server entry's field is named in a message: ``server "<name>": <field>``."""
    return lambda field: T.IN_SERVER.format(q_name=go_quote(name), field=field)


def _absolute(base: Path, name: str) -> Path:
    return Path(os.path.abspath(base / os.path.expanduser(name) if not os.path.isabs(name) else name))


def _policy(value: Any, errors: _Errors) -> dict[str, str]:
    policy = dict(DEFAULT_POLICY)
    if value is None:
        return policy
    if not isinstance(value, dict):
        errors.fail(T.POLICY_NOT_OBJECT)
    for side_effect, outcome in value.items():
        if side_effect not in SIDE_EFFECTS:
            errors.fail(T.POLICY_UNKNOWN_CLASS.format(q_class=go_quote(side_effect)))
        if not isinstance(outcome, str) or isinstance(outcome, Number) or outcome not in OUTCOMES:
            shown = outcome if isinstance(outcome, str) else canonical.policy_text(outcome)
            errors.fail(T.POLICY_BAD_OUTCOME.format(side_effect=side_effect, q_outcome=go_quote(shown)))
        policy[side_effect] = outcome
    return policy


def _max_pending(value: Any, errors: _Errors) -> int:
    if value is None:
        return DEFAULT_MAX_PENDING
    if not isinstance(value, Number) or not value.is_integer_literal():
        errors.fail(T.MAX_PENDING_WHOLE)
    number = int(value)
    if number < 0:
        errors.fail(T.MAX_PENDING_NEGATIVE)
    return number or DEFAULT_MAX_PENDING


def _max_message_bytes(value: Any, errors: _Errors) -> int:
    return _byte_size(
        "max_message_bytes",
        value,
        errors,
        DEFAULT_MAX_MESSAGE_BYTES,
        (MIN_MAX_MESSAGE_BYTES, "64 KiB"),
        (MAX_MAX_MESSAGE_BYTES, "1 GiB"),
    )


def _max_result_bytes(value: Any, errors: _Errors) -> int:
    return _byte_size(
        "max_result_bytes",
        value,
        errors,
        DEFAULT_MAX_RESULT_BYTES,
        (MIN_MAX_RESULT_BYTES, ""),
        (MAX_MAX_RESULT_BYTES, "128 MiB"),
    )


def _byte_size(
    name: str, value: Any, errors: _Errors, default: int, low: tuple[int, str], high: tuple[int, str]
) -> int:
    """A top-level size in bytes: a whole number within [low, high] (each with how it reads)."""
    if value is None:
        return default
    if not isinstance(value, Number) or not value.is_integer_literal():
        errors.fail(T.BYTES_WHOLE.format(name=name))
    number = int(value)
    if not low[0] <= number <= high[0]:
        lo = T.BYTES_BOUND.format(number=low[0], reads=low[1]) if low[1] else str(low[0])
        hi = T.BYTES_BOUND.format(number=high[0], reads=high[1]) if high[1] else str(high[0])
        errors.fail(T.BYTES_RANGE.format(name=name, number=number, low=lo, high=hi))
    return number


def _servers(
    values: list[Any],
    base: Path,
    errors: _Errors,
    environ: Mapping[str, str] | None,
    max_message_bytes: int,
    database: Path,
) -> tuple[ServerConfig, ...]:
    servers: list[ServerConfig] = []
    names: set[str] = set()
    for index, value in enumerate(values):
        entry = _Object(value, T.SERVER_AT.format(index=index), errors)
        name = entry.string("name")
        command = entry.strings("command")
        endpoint = entry.string("endpoint")
        env_value = entry.get("env")
        inherit_env = entry.strings("inherit_env") or ()
        headers_value = entry.get("headers")
        label = name or T.SERVER_AT.format(index=index)
        connect_timeout = entry.duration("connect_timeout", _in_server(label))
        default_timeout = entry.duration("default_timeout", _in_server(label))
        manifest = entry.string("manifest")
        rules_value = entry.get("rules")
        skip_path_check = entry.boolean("skip_path_check")
        resources = entry.boolean("resources")
        prompts = entry.boolean("prompts")
        prompt_names_value = entry.get("prompt_names")
        trust_value = entry.string("trust")
        forward_value = entry.get("forward")
        auth_value = entry.get("auth")
        entry.finish()

        if not name:
            errors.fail(T.SERVER_NAME_REQUIRED.format(index=index))
        if name in names:
            errors.fail(T.SERVER_NAME_TWICE.format(index=index, q_name=go_quote(name)))
        names.add(name)
        if (command is None) == (endpoint is None) or (command is not None and not command):
            errors.fail(T.SERVER_ONE_OF.format(q_name=go_quote(name)))
        if command is not None and not command[0]:
            errors.fail(T.SERVER_EMPTY_PROGRAM.format(q_name=go_quote(name)))
        _no_reference(name, command, endpoint, errors)
        env = _env(name, entry.field_name("env"), env_value, environ, errors)
        if not manifest:
            errors.fail(T.SERVER_MANIFEST_REQUIRED.format(q_name=go_quote(name)))
        _check_env(name, env, inherit_env, errors)
        headers = _headers(name, headers_value, environ, errors)
        prompt_names = _prompt_names(name, prompt_names_value, prompts, errors)
        if endpoint is not None:
            _check_endpoint(name, endpoint, errors)
            if env or inherit_env:
                errors.fail(T.SERVER_ENV_STDIO_ONLY.format(q_name=go_quote(name)))
        elif headers:
            errors.fail(T.SERVER_HEADERS_HTTP_ONLY.format(q_name=go_quote(name)))
        auth = oauth_fields.auth(
            name,
            auth_value,
            http=endpoint is not None,
            database=database,
            config_path=errors.path,
            environ=environ,
            fail=errors.fail,
        )
        servers.append(
            ServerConfig(
                name=name,
                manifest=_absolute(base, manifest),
                command=command,
                endpoint=endpoint,
                env=env,
                inherit_env=inherit_env,
                headers=headers,
                connect_timeout=connect_timeout or DEFAULT_CONNECT_TIMEOUT,
                default_timeout=default_timeout or None,
                rules=_rules(name, rules_value, errors),
                skip_path_check=skip_path_check,
                resources=resources,
                prompts=prompts,
                prompt_names=prompt_names,
                max_message_bytes=max_message_bytes,
                trust=budget_fields.trust(name, trust_value, errors.fail),
                forward=_forward(name, forward_value, errors),
                auth=auth,
            )
        )
    return tuple(servers)


def _forward(name: str, value: Any, errors: _Errors) -> tuple[str, ...]:
    """Which of the server's requests go to the host: some of ``FORWARDABLE``, each once."""
    if value is None:
        return ()
    q = go_quote(name)
    if not isinstance(value, list):
        errors.fail(T.FORWARD_NOT_ARRAY.format(q_name=q, choices=" or ".join(map(go_quote, FORWARDABLE))))
    for item in value:
        text = isinstance(item, str) and not isinstance(item, Number)
        if not text or item not in FORWARDABLE:
            shown = go_quote(item) if text else canonical.policy_text(item)
            errors.fail(T.FORWARD_NOT_ONE.format(q_name=q, shown=shown, choices=", ".join(map(go_quote, FORWARDABLE))))
        if value.count(item) > 1:
            errors.fail(T.FORWARD_TWICE.format(q_name=q, q_item=go_quote(item)))
    return tuple(value)


def _prompt_names(name: str, value: Any, prompts: bool, errors: _Errors) -> dict[str, str]:
    """The host's names for some of the server's prompts (like a tool rule's ``rename``)."""
    if value is None:
        return {}
    if not prompts:
        errors.fail(T.PROMPT_NAMES_NEED_PROMPTS.format(q_name=go_quote(name)))
    if not isinstance(value, dict):
        errors.fail(T.PROMPT_NAMES_NOT_OBJECT.format(q_name=go_quote(name)))
    names: dict[str, str] = {}
    for prompt, host_name in value.items():
        text = host_name if isinstance(host_name, str) and not isinstance(host_name, Number) else ""
        if not TOOL_NAME_PATTERN.fullmatch(text):
            errors.fail(T.PROMPT_NAME_PATTERN.format(q_name=go_quote(name), q_prompt=go_quote(prompt)))
        names[prompt] = host_name
    return names


def _no_reference(name: str, command: tuple[str, ...] | None, endpoint: str | None, errors: _Errors) -> None:
    """``${env:...}`` is read only in env and headers values: what runs, with which arguments,
    and where the calls go stay what the file says, where the reach check can read them."""
    fields = [(f"command[{i}]", arg) for i, arg in enumerate(command or ())] + [("endpoint", endpoint or "")]
    for field_name, text in fields:
        if has_reference(text):
            errors.fail(T.NO_REFERENCE_HERE.format(q_name=go_quote(name), field=field_name))


def _env(name: str, where: str, value: Any, environ: Mapping[str, str] | None, errors: _Errors) -> tuple[str, ...]:
    """Either form, as NAME=value entries in the file's order, every reference read."""
    q = go_quote(name)
    if value is None:
        return ()
    if isinstance(value, dict):
        entries: list[str] = []
        for variable, text in value.items():
            if not variable or "=" in variable or "\0" in variable:
                errors.fail(T.ENV_BAD_NAME.format(q_name=q, q_variable=go_quote(variable)))
            if not isinstance(text, str) or isinstance(text, Number):
                errors.fail(T.ENV_VALUE_NOT_STRING.format(q_name=q, variable=variable))
            entries.append(f"{variable}={_expand(q, T.ENV_FIELD.format(variable=variable), text, environ, errors)}")
        return tuple(entries)
    if not isinstance(value, list) or not all(isinstance(item, str) and not isinstance(item, Number) for item in value):
        errors.fail(T.ENV_NOT_ENTRIES.format(where=where))
    entries = []
    for item in value:
        variable, sep, text = item.partition("=")
        if sep and variable:  # a malformed entry is refused by _check_env, which names it
            item = f"{variable}={_expand(q, T.ENV_FIELD.format(variable=variable), text, environ, errors)}"
        entries.append(item)
    return tuple(entries)


def _expand(q: str, field_name: str, text: str, environ: Mapping[str, str] | None, errors: _Errors) -> str:
    try:
        return expand(text, environ)
    except EnvReferenceError as err:
        errors.fail(T.REFERENCE_FAILED.format(q_name=q, field=field_name, error=err))


def _check_env(name: str, env: Iterable[str], inherit_env: Iterable[str], errors: _Errors) -> None:
    for entry in inherit_env:
        if not entry or "=" in entry:
            errors.fail(T.INHERIT_ENV_BAD.format(q_name=go_quote(name), q_entry=go_quote(entry)))
    for entry in env:
        variable, sep, _ = entry.partition("=")
        if not sep or not variable:
            errors.fail(T.ENV_ENTRY_BAD.format(q_name=go_quote(name), q_entry=go_quote(entry)))


def _headers(name: str, value: Any, environ: Mapping[str, str] | None, errors: _Errors) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        errors.fail(T.HEADERS_NOT_OBJECT.format(q_name=go_quote(name)))
    headers: dict[str, str] = {}
    for header, text in value.items():
        if not _HEADER_NAME.fullmatch(header):
            errors.fail(T.HEADER_BAD_NAME.format(q_name=go_quote(name), q_header=go_quote(header)))
        if not isinstance(text, str) or isinstance(text, Number) or any(c in text for c in "\r\n\0"):
            # The value itself is never echoed: it is usually a credential.
            errors.fail(T.HEADER_NOT_ONE_LINE.format(q_name=go_quote(name), header=header))
        text = _expand(go_quote(name), T.HEADER_FIELD.format(header=header), text, environ, errors)
        if any(c in text for c in "\r\n\0"):  # what a variable held; still never echoed
            errors.fail(T.HEADER_READ_NOT_ONE_LINE.format(q_name=go_quote(name), header=header))
        headers[header] = text
    return headers


def _check_endpoint(name: str, endpoint: str, errors: _Errors) -> None:
    parsed = urllib.parse.urlsplit(endpoint)
    if parsed.scheme not in ("http", "https") or not parsed.hostname:
        errors.fail(T.ENDPOINT_NOT_URL.format(q_name=go_quote(name), q_endpoint=go_quote(endpoint)))


def _rules(server: str, value: Any, errors: _Errors) -> dict[str, Rule]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        errors.fail(T.RULES_NOT_OBJECT.format(q_name=go_quote(server)))
    rules: dict[str, Rule] = {}
    for tool in sorted(value):
        rules[tool] = _rule(server, tool, value[tool], errors)
    return rules


def _rule(server: str, tool: str, value: Any, errors: _Errors) -> Rule:
    where = T.RULE_WHERE.format(q_server=go_quote(server), q_tool=go_quote(tool))
    entry = _Object(value, T.RULE_AT.format(server=server, tool=tool), errors)
    side_effect = entry.string("side_effect") or ""
    outcome = entry.string("outcome")
    timeout = entry.duration("timeout", lambda f: T.IN_RULE.format(where=where, field=f))
    repeat_window = entry.duration("repeat_window", lambda f: T.IN_RULE.format(where=where, field=f))
    description = entry.string("description")
    deny = entry.strings("deny") or ()
    fixed_value = entry.get("fixed")
    rename = entry.string("rename")
    allow_hint_mismatch = entry.boolean("allow_hint_mismatch")
    terminal = entry.boolean("terminal")
    amount_field = entry.string("amount_field")
    currency_field = entry.string("currency_field")
    requires_clean_context = entry.boolean("requires_clean_context")
    clean_context = entry.string("clean_context")
    entry.finish()
    if outcome is not None and outcome not in OUTCOMES:
        errors.fail(T.RULE_BAD_OUTCOME.format(where=where, q_outcome=go_quote(outcome)))
    budget_fields.check_field(where, "amount_field", amount_field, errors.fail)
    budget_fields.check_field(where, "currency_field", currency_field, errors.fail)
    if currency_field is not None and amount_field is None:
        errors.fail(T.RULE_CURRENCY_NEEDS_AMOUNT.format(where=where))
    if clean_context is not None and clean_context not in CLEAN_CONTEXT_OUTCOMES:
        errors.fail(T.RULE_CLEAN_CONTEXT.format(where=where, q_value=go_quote(clean_context)))
    if clean_context is not None and not requires_clean_context:
        errors.fail(T.RULE_CLEAN_CONTEXT_ALONE.format(where=where))
    if fixed_value is not None and not isinstance(fixed_value, dict):
        errors.fail(T.RULE_FIXED_NOT_OBJECT.format(where=where))
    return Rule(
        side_effect=side_effect,
        timeout=timeout,
        description=description,
        deny=deny,
        fixed=dict(fixed_value or {}),
        rename=rename,
        allow_hint_mismatch=allow_hint_mismatch,
        terminal=terminal,
        outcome=outcome,
        repeat_window=repeat_window,
        amount_field=amount_field,
        currency_field=currency_field,
        requires_clean_context=requires_clean_context,
        clean_context=clean_context or REQUIRE_APPROVAL,
    )


def read_rules(path: Path | str) -> dict[str, Rule]:
    """Read a standalone rules file (the ``examples/rules.json`` shape) strictly."""
    file_path = Path(os.path.abspath(path))
    data = read_owned(file_path)
    errors = _Errors(file_path)
    try:
        tree = canonical.parse_strict(data)
    except JSONBoundaryError as err:
        errors.fail(T.NOT_USABLE_JSON.format(reason=err.reason))
    return _rules(file_path.stem, tree, errors)
