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
from agentrt_proxy.config import budget_fields, oauth_fields
from agentrt_proxy.config.env_refs import EnvReferenceError, expand, has_reference
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
            errors.fail(f"{where or 'the configuration'} must be a JSON object")
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
            self.errors.fail(f"{self.field_name(name)} must be a string")
        return value

    def boolean(self, name: str) -> bool:
        value = self.get(name)
        if value is None:
            return False
        if not isinstance(value, bool):
            self.errors.fail(f"{self.field_name(name)} must be true or false")
        return value

    def strings(self, name: str) -> tuple[str, ...] | None:
        value = self.get(name)
        if value is None:
            return None
        if not isinstance(value, list) or not all(
            isinstance(item, str) and not isinstance(item, Number) for item in value
        ):
            self.errors.fail(f"{self.field_name(name)} must be an array of strings")
        return tuple(value)

    def duration(self, name: str, describe: Callable[[str], str] | None = None) -> int | None:
        value = self.get(name)
        if value is None:
            return None
        label = describe(name) if describe else self.field_name(name)
        if not isinstance(value, str) or isinstance(value, Number):
            self.errors.fail(f"{label}: a duration is a string such as \"15s\", not {canonical.policy_text(value)}")
        try:
            ns = parse_go(value)
        except DurationError as err:
            self.errors.fail(f"{label}: {err}")
        if ns < 0:
            self.errors.fail(f"{label}: duration {go_quote(value)} is negative")
        return ns

    def finish(self) -> None:
        for name in self.value:
            if name not in self.seen:
                where = f" in {self.where}" if self.where else ""
                self.errors.fail(f"unknown field {go_quote(name)}{where}")


class _Errors:
    def __init__(self, path: Path) -> None:
        self.path = path

    def fail(self, message: str) -> NoReturn:
        raise ConfigError(f"config {self.path}: {message}")


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
        raise ConfigError(f"config: {err}") from None
    errors = _Errors(config_path)
    try:
        tree = canonical.parse_strict(data)
    except JSONBoundaryError as err:
        if err.reason == "not valid JSON":
            _diagnose_invalid(data, errors)
        errors.fail(f"not usable JSON: {err.reason}")
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
    errors.fail("trailing data after the configuration")


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
        errors.fail("database is required")
    if session is None or not SESSION_PATTERN.fullmatch(session):
        errors.fail(f"session {go_quote(session or '')} must be 1 to 64 letters, digits, '_' or '-'")
    if not isinstance(servers_value, list) or not servers_value:
        if servers_value is not None and not isinstance(servers_value, list):
            errors.fail("servers must be an array of server entries")
        errors.fail("at least one server is required")
    policy = _policy(policy_value, errors)
    max_pending = _max_pending(max_pending_value, errors)
    max_result_bytes = _max_result_bytes(max_result_bytes_value, errors)
    if lease_ttl is not None and lease_ttl < MIN_LEASE_TTL:
        errors.fail(f"lease_ttl {format_go(lease_ttl)} is shorter than 3s")
    if task_ttl is not None and task_ttl < MIN_TASK_TTL:
        errors.fail(f"task_ttl {format_go(task_ttl)} is shorter than 1s")
    if status_tool is not None and not TOOL_NAME_PATTERN.fullmatch(status_tool):
        errors.fail(f"status_tool {go_quote(status_tool)} does not match ^[a-zA-Z0-9_-]{{1,64}}$")

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
        task_ttl=((DEFAULT_TTL if approval_ttl is None else approval_ttl) + TASK_TTL_AFTER_APPROVAL
                  if task_ttl is None else task_ttl),
    )


def _in_server(name: str) -> Callable[[str], str]:
    """How a server entry's field is named in a message: ``server "<name>": <field>``."""
    return lambda field: f"server {go_quote(name)}: {field}"


def _absolute(base: Path, name: str) -> Path:
    return Path(os.path.abspath(base / os.path.expanduser(name) if not os.path.isabs(name) else name))


def _policy(value: Any, errors: _Errors) -> dict[str, str]:
    policy = dict(DEFAULT_POLICY)
    if value is None:
        return policy
    if not isinstance(value, dict):
        errors.fail("policy must be an object of side-effect class to outcome")
    for side_effect, outcome in value.items():
        if side_effect not in SIDE_EFFECTS:
            errors.fail(f"policy: unknown side effect {go_quote(side_effect)}")
        if not isinstance(outcome, str) or isinstance(outcome, Number) or outcome not in OUTCOMES:
            shown = outcome if isinstance(outcome, str) else canonical.policy_text(outcome)
            errors.fail(f"policy: {side_effect}: outcome {go_quote(shown)} is not allow, require_approval, or deny")
        policy[side_effect] = outcome
    return policy


def _max_pending(value: Any, errors: _Errors) -> int:
    if value is None:
        return DEFAULT_MAX_PENDING
    if not isinstance(value, Number) or not value.is_integer_literal():
        errors.fail("max_pending must be a whole number")
    number = int(value)
    if number < 0:
        errors.fail("max_pending must not be negative")
    return number or DEFAULT_MAX_PENDING


def _max_message_bytes(value: Any, errors: _Errors) -> int:
    return _byte_size("max_message_bytes", value, errors, DEFAULT_MAX_MESSAGE_BYTES,
                      (MIN_MAX_MESSAGE_BYTES, "64 KiB"), (MAX_MAX_MESSAGE_BYTES, "1 GiB"))


def _max_result_bytes(value: Any, errors: _Errors) -> int:
    return _byte_size("max_result_bytes", value, errors, DEFAULT_MAX_RESULT_BYTES,
                      (MIN_MAX_RESULT_BYTES, ""), (MAX_MAX_RESULT_BYTES, "128 MiB"))


def _byte_size(
    name: str, value: Any, errors: _Errors, default: int, low: tuple[int, str], high: tuple[int, str]
) -> int:
    """A top-level size in bytes: a whole number within [low, high] (each with how it reads)."""
    if value is None:
        return default
    if not isinstance(value, Number) or not value.is_integer_literal():
        errors.fail(f"{name} must be a whole number of bytes")
    number = int(value)
    if not low[0] <= number <= high[0]:
        lo = f"{low[0]} ({low[1]})" if low[1] else str(low[0])
        hi = f"{high[0]} ({high[1]})" if high[1] else str(high[0])
        errors.fail(f"{name} {number} is not between {lo} and {hi}")
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
        entry = _Object(value, f"servers[{index}]", errors)
        name = entry.string("name")
        command = entry.strings("command")
        endpoint = entry.string("endpoint")
        env_value = entry.get("env")
        inherit_env = entry.strings("inherit_env") or ()
        headers_value = entry.get("headers")
        label = name or f"servers[{index}]"
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
            errors.fail(f"servers[{index}]: name is required")
        if name in names:
            errors.fail(f"servers[{index}]: the name {go_quote(name)} is used twice")
        names.add(name)
        if (command is None) == (endpoint is None) or (command is not None and not command):
            errors.fail(f"server {go_quote(name)}: exactly one of command or endpoint is required")
        if command is not None and not command[0]:
            errors.fail(f"server {go_quote(name)}: command[0], the program, is empty")
        _no_reference(name, command, endpoint, errors)
        env = _env(name, entry.field_name("env"), env_value, environ, errors)
        if not manifest:
            errors.fail(f"server {go_quote(name)}: manifest is required")
        _check_env(name, env, inherit_env, errors)
        headers = _headers(name, headers_value, environ, errors)
        prompt_names = _prompt_names(name, prompt_names_value, prompts, errors)
        if endpoint is not None:
            _check_endpoint(name, endpoint, errors)
            if env or inherit_env:
                errors.fail(f"server {go_quote(name)}: env and inherit_env apply only to a stdio server (command)")
        elif headers:
            errors.fail(f"server {go_quote(name)}: headers apply only to a streamable HTTP server (endpoint)")
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
        errors.fail(f"server {q}: forward must be an array of {' or '.join(map(go_quote, FORWARDABLE))}")
    for item in value:
        text = isinstance(item, str) and not isinstance(item, Number)
        if not text or item not in FORWARDABLE:
            shown = go_quote(item) if text else canonical.policy_text(item)
            errors.fail(f"server {q}: forward: {shown} is not one of {', '.join(map(go_quote, FORWARDABLE))}")
        if value.count(item) > 1:
            errors.fail(f"server {q}: forward names {go_quote(item)} twice")
    return tuple(value)


def _prompt_names(name: str, value: Any, prompts: bool, errors: _Errors) -> dict[str, str]:
    """The host's names for some of the server's prompts (like a tool rule's ``rename``)."""
    if value is None:
        return {}
    if not prompts:
        errors.fail(f"server {go_quote(name)}: prompt_names applies only with \"prompts\": true")
    if not isinstance(value, dict):
        errors.fail(f"server {go_quote(name)}: prompt_names must be an object of prompt name to the host's name")
    names: dict[str, str] = {}
    for prompt, host_name in value.items():
        text = host_name if isinstance(host_name, str) and not isinstance(host_name, Number) else ""
        if not TOOL_NAME_PATTERN.fullmatch(text):
            errors.fail(
                f"server {go_quote(name)}: prompt_names: the name for {go_quote(prompt)} must match "
                "^[a-zA-Z0-9_-]{1,64}$"
            )
        names[prompt] = host_name
    return names

def _no_reference(name: str, command: tuple[str, ...] | None, endpoint: str | None, errors: _Errors) -> None:
    """``${env:...}`` is read only in env and headers values: what runs, with which arguments,
    and where the calls go stay what the file says, where the reach check can read them."""
    fields = [(f"command[{i}]", arg) for i, arg in enumerate(command or ())] + [("endpoint", endpoint or "")]
    for field_name, text in fields:
        if has_reference(text):
            errors.fail(
                f"server {go_quote(name)}: {field_name}: ${{env:...}} is read only in env and headers values; "
                "give the server the value through env or inherit_env"
            )


def _env(name: str, where: str, value: Any, environ: Mapping[str, str] | None, errors: _Errors) -> tuple[str, ...]:
    """Either form, as NAME=value entries in the file's order, every reference read."""
    q = go_quote(name)
    if value is None:
        return ()
    if isinstance(value, dict):
        entries: list[str] = []
        for variable, text in value.items():
            if not variable or "=" in variable or "\0" in variable:
                errors.fail(f"server {q}: env: {go_quote(variable)} is not a variable name")
            if not isinstance(text, str) or isinstance(text, Number):
                errors.fail(f"server {q}: env {variable}: the value must be a string")
            entries.append(f"{variable}={_expand(q, f'env {variable}', text, environ, errors)}")
        return tuple(entries)
    if not isinstance(value, list) or not all(isinstance(item, str) and not isinstance(item, Number) for item in value):
        errors.fail(f"{where} must be an object of variable name to value, or an array of NAME=value strings")
    entries = []
    for item in value:
        variable, sep, text = item.partition("=")
        if sep and variable:  # a malformed entry is refused by _check_env, which names it
            item = f"{variable}={_expand(q, f'env {variable}', text, environ, errors)}"
        entries.append(item)
    return tuple(entries)


def _expand(q: str, field_name: str, text: str, environ: Mapping[str, str] | None, errors: _Errors) -> str:
    try:
        return expand(text, environ)
    except EnvReferenceError as err:
        errors.fail(f"server {q}: {field_name}: {err}")


def _check_env(name: str, env: Iterable[str], inherit_env: Iterable[str], errors: _Errors) -> None:
    for entry in inherit_env:
        if not entry or "=" in entry:
            errors.fail(f"server {go_quote(name)}: inherit_env entry {go_quote(entry)} is not a variable name")
    for entry in env:
        variable, sep, _ = entry.partition("=")
        if not sep or not variable:
            errors.fail(f"server {go_quote(name)}: env entry {go_quote(entry)} is not NAME=value")


def _headers(name: str, value: Any, environ: Mapping[str, str] | None, errors: _Errors) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        errors.fail(f"server {go_quote(name)}: headers must be an object of header name to value")
    headers: dict[str, str] = {}
    for header, text in value.items():
        if not _HEADER_NAME.fullmatch(header):
            errors.fail(f"server {go_quote(name)}: headers: {go_quote(header)} is not an HTTP header name")
        if not isinstance(text, str) or isinstance(text, Number) or any(c in text for c in "\r\n\0"):
            # The value itself is never echoed: it is usually a credential.
            errors.fail(f"server {go_quote(name)}: headers: the value of {header} must be a one-line string")
        text = _expand(go_quote(name), f"headers: {header}", text, environ, errors)
        if any(c in text for c in "\r\n\0"):  # what a variable held; still never echoed
            errors.fail(
                f"server {go_quote(name)}: headers: the value of {header}, as read from the environment, "
                "must be a one-line string"
            )
        headers[header] = text
    return headers


def _check_endpoint(name: str, endpoint: str, errors: _Errors) -> None:
    parsed = urllib.parse.urlsplit(endpoint)
    if parsed.scheme not in ("http", "https") or not parsed.hostname:
        errors.fail(f"server {go_quote(name)}: endpoint {go_quote(endpoint)} is not an http:// or https:// URL")


def _rules(server: str, value: Any, errors: _Errors) -> dict[str, Rule]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        errors.fail(f"server {go_quote(server)}: rules must be an object of tool name to rule")
    rules: dict[str, Rule] = {}
    for tool in sorted(value):
        rules[tool] = _rule(server, tool, value[tool], errors)
    return rules


def _rule(server: str, tool: str, value: Any, errors: _Errors) -> Rule:
    where = f"server {go_quote(server)}: tool {go_quote(tool)}"
    entry = _Object(value, f"servers[{server}].rules.{tool}", errors)
    side_effect = entry.string("side_effect") or ""
    outcome = entry.string("outcome")
    timeout = entry.duration("timeout", lambda f: f"{where}: {f}")
    repeat_window = entry.duration("repeat_window", lambda f: f"{where}: {f}")
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
        errors.fail(f"{where}: outcome {go_quote(outcome)} is not allow, require_approval, or deny")
    budget_fields.check_field(where, "amount_field", amount_field, errors.fail)
    budget_fields.check_field(where, "currency_field", currency_field, errors.fail)
    if currency_field is not None and amount_field is None:
        errors.fail(f"{where}: currency_field needs an amount_field")
    if clean_context is not None and clean_context not in CLEAN_CONTEXT_OUTCOMES:
        errors.fail(f"{where}: clean_context {go_quote(clean_context)} is not require_approval or deny")
    if clean_context is not None and not requires_clean_context:
        errors.fail(f"{where}: clean_context applies only with \"requires_clean_context\": true")
    if fixed_value is not None and not isinstance(fixed_value, dict):
        errors.fail(f"{where}: fixed must be an object of parameter name to value")
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
        errors.fail(f"not usable JSON: {err.reason}")
    return _rules(file_path.stem, tree, errors)
