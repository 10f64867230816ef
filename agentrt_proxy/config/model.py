"""What the configuration is: the side-effect classes and outcomes, the defaults, the operator's
rules, one server's entry, the whole configuration and its policy identity, and its refusal.

``loading`` reads a file into these; ``files`` and ``reach`` check the files they name.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

from agentrt_proxy import canonical
from agentrt_proxy.canonical.durations import HOUR, MINUTE, SECOND
from agentrt_proxy.errors import ConfigurationError

# The side-effect classes, in order of what a call can do; READ_ONLY is the one that changes nothing.
READ_ONLY = "read_only"
SIDE_EFFECTS = (READ_ONLY, "local_mutation", "remote_mutation", "destructive")
# A policy's outcomes (runtime-core §2.3): what a rule may name, and ABORT, which only the runtime's
# own policies answer (a configuration may not name it). The gate re-exports them.
ALLOW = "allow"
REQUIRE_APPROVAL = "require_approval"
DENY = "deny"
ABORT = "abort"
OUTCOMES = (ALLOW, REQUIRE_APPROVAL, DENY)
FORWARDABLE = ("elicitation", "sampling")  # what a server's "forward" may name
DEFAULT_POLICY: dict[str, str] = {
    READ_ONLY: ALLOW,
    "local_mutation": ALLOW,
    "remote_mutation": REQUIRE_APPROVAL,
    "destructive": DENY,
}
DEFAULT_HOLD = 15 * SECOND
DEFAULT_REPEAT_WINDOW = 10 * MINUTE
DEFAULT_MAX_PENDING = 5
DEFAULT_TTL = 24 * HOUR
DEFAULT_LEASE_TTL = 30 * SECOND
# A task (docs/decisions/0020) lives from its creation for the approval's own window plus a day:
# an operator may decide at the last moment of approval_ttl, and the host then still has a day to
# fetch the result (a laptop asleep overnight), after which the result is dropped.
TASK_TTL_AFTER_APPROVAL = 24 * HOUR
MIN_TASK_TTL = SECOND  # short ones are for trying expiry out; a real one outlives approval_ttl
MIN_LEASE_TTL = 3 * SECOND
DEFAULT_CONNECT_TIMEOUT = 30 * SECOND
DEFAULT_STATUS_TOOL = "gate_status"
# The largest upstream message (a stdio line, an HTTP body) the proxy takes in; a larger one is
# never held, so a server cannot make the proxy hold more than this. Sized for real use (decision 0015):
# a result at max_result_bytes whose text the server sends twice (in a block and in its structured
# content, as the npm filesystem server does), with room for JSON escapes and the envelope.
DEFAULT_MAX_MESSAGE_BYTES = 80 << 20
MIN_MAX_MESSAGE_BYTES = 64 << 10  # an initialize answer or a tools/list page must still fit
MAX_MAX_MESSAGE_BYTES = 1 << 30
# A tool's result, as recorded and answered, is at most this many bytes of its canonical form, a
# text the server sent twice counted once (docs/decisions/0015); a larger one is refused, never cut.
# 32 MiB by default: a 20 MiB source file or log read whole (decision 0015). The ceiling keeps a recorded
# step (whose store form may escape a character in six bytes) within SQLite's default limit of
# 10^9 bytes a value.
DEFAULT_MAX_RESULT_BYTES = 32 * 1024 * 1024
MIN_MAX_RESULT_BYTES = 1024
MAX_MAX_RESULT_BYTES = 128 * 1024 * 1024
POLICY_ID_PREFIX = "agentrt-proxy/sha256:"

SESSION_PATTERN = re.compile(r"[A-Za-z0-9_-]{1,64}")
TOOL_NAME_PATTERN = re.compile(r"[a-zA-Z0-9_-]{1,64}")


class ConfigError(ConfigurationError):
    """A configuration the proxy refuses; the message names the file and the field."""


@dataclass(frozen=True)
class Rule:
    """The operator's rule for one upstream tool (keyed by the server's own tool name)."""

    side_effect: str = ""
    timeout: int | None = None
    description: str | None = None
    deny: tuple[str, ...] = ()
    fixed: dict[str, Any] = field(default_factory=dict)
    rename: str | None = None
    allow_hint_mismatch: bool = False
    terminal: bool = False  # accepted for the rules.json shape; every proxy tool is terminal
    outcome: str | None = None
    repeat_window: int | None = None
    # What a call spends (docs/decisions/0017): a top-level argument name or a JSON Pointer into
    # the arguments; None: the tool is unpriced (it spends zero). currency_field likewise.
    amount_field: str | None = None
    currency_field: str | None = None
    # After this process returned a result from an untrusted server, this tool needs an
    # approval ("require_approval") or is refused ("deny").
    requires_clean_context: bool = False
    clean_context: str = REQUIRE_APPROVAL


TRUSTED = "trusted"
UNTRUSTED = "untrusted"
CLEAN_CONTEXT_OUTCOMES = (REQUIRE_APPROVAL, DENY)
OVER_BUDGET_OUTCOMES = (DENY, REQUIRE_APPROVAL)


@dataclass(frozen=True)
class Budget:
    """A spending allowance over some registered tools: ``limit`` (exact) per rolling
    ``window`` (ns; None: a lifetime allowance), in one ``currency`` or across all (None)."""

    name: str
    tools: tuple[str, ...]
    limit: Decimal
    window: int | None = None
    currency: str | None = None
    over_budget: str = DENY

    def identity(self) -> dict[str, Any]:
        entry: dict[str, Any] = {"name": self.name, "tools": list(self.tools), "limit": format(self.limit, "f")}
        if self.window is not None:
            entry["window_ns"] = str(self.window)
        if self.currency is not None:
            entry["currency"] = self.currency
        if self.over_budget != DENY:
            entry["over_budget"] = self.over_budget
        return entry


AUTHORIZATION_CODE = "authorization_code"
CLIENT_CREDENTIALS = "client_credentials"
OAUTH_GRANTS = (AUTHORIZATION_CODE, CLIENT_CREDENTIALS)
TOKEN_FILE_SUFFIX = ".oauth-tokens.json"  # beside the database: ``proxy.db.oauth-tokens.json``


@dataclass(frozen=True)
class OAuthConfig:
    """An HTTP server's ``"auth": {"type": "oauth", ...}`` (docs/oauth.md). ``client_secret`` is
    read from the environment when the file is loaded and is never shown; the tokens live in
    ``token_file`` beside the database, never in the configuration."""

    token_file: Path
    config_path: Path
    client_id: str | None = None
    client_secret: str | None = None
    private_key: str | None = None  # a PEM (read from the environment): private_key_jwt with ES256
    scopes: tuple[str, ...] = ()
    client_metadata_url: str | None = None
    redirect_port: int | None = None
    grant: str = AUTHORIZATION_CODE


@dataclass(frozen=True)
class ServerConfig:
    name: str
    manifest: Path
    command: tuple[str, ...] | None = None
    endpoint: str | None = None
    env: tuple[str, ...] = ()  # NAME=value, either form of the file, every ${env:NAME} already read
    inherit_env: tuple[str, ...] = ()
    headers: dict[str, str] = field(default_factory=dict)
    connect_timeout: int = DEFAULT_CONNECT_TIMEOUT
    default_timeout: int | None = None
    rules: dict[str, Rule] = field(default_factory=dict)
    skip_path_check: bool = False
    # Opt-in passthrough of the server's resources and prompts (off unless the operator says so).
    resources: bool = False
    prompts: bool = False
    prompt_names: dict[str, str] = field(default_factory=dict)  # a prompt's own name -> the host's name
    trust: str = UNTRUSTED  # "trusted" only when the operator says so
    # The server's requests the proxy relays to the host (docs/hosts.md, "forward"): "elicitation",
    # "sampling"; every other request of a server is refused at once.
    forward: tuple[str, ...] = ()


    auth: OAuthConfig | None = None  # an HTTP server's OAuth client (None: static headers alone)

    # The top-level max_message_bytes, copied onto each server so whatever connects one needs
    # nothing else of the configuration.
    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES


@dataclass(frozen=True)
class Config:
    path: Path
    database: Path
    session: str
    servers: tuple[ServerConfig, ...]
    policy: dict[str, str]
    hold: int = DEFAULT_HOLD
    repeat_window: int = DEFAULT_REPEAT_WINDOW
    max_pending: int = DEFAULT_MAX_PENDING
    approval_ttl: int = DEFAULT_TTL
    grant_ttl: int = DEFAULT_TTL
    status_tool: str = DEFAULT_STATUS_TOOL
    lease_ttl: int = DEFAULT_LEASE_TTL
    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES
    max_result_bytes: int = DEFAULT_MAX_RESULT_BYTES
    budgets: tuple[Budget, ...] = ()
    task_ttl: int = DEFAULT_TTL + TASK_TTL_AFTER_APPROVAL

    def policy_id(self) -> str:
        """``agentrt-proxy/sha256:`` + hex SHA-256 of exactly what the policy decides from."""
        return POLICY_ID_PREFIX + canonical.sha256_hex(canonical.canonical_bytes(self.policy_identity()))

    def policy_identity(self) -> dict[str, Any]:
        servers = []
        for server in sorted(self.servers, key=lambda s: s.name):
            rules: dict[str, Any] = {}
            for tool, rule in server.rules.items():
                entry: dict[str, Any] = {"side_effect": rule.side_effect}
                if rule.outcome:
                    entry["outcome"] = rule.outcome
                if rule.fixed:
                    entry["fixed"] = dict(rule.fixed)
                if rule.rename:
                    entry["rename"] = rule.rename
                # The fields of budgets and clean context, only when set: a configuration
                # without them keeps the identity it had before they existed.
                if rule.amount_field is not None:
                    entry["amount_field"] = rule.amount_field
                if rule.currency_field is not None:
                    entry["currency_field"] = rule.currency_field
                if rule.requires_clean_context:
                    entry["requires_clean_context"] = True
                    entry["clean_context"] = rule.clean_context
                rules[tool] = entry
            server_entry: dict[str, Any] = {"name": server.name, "rules": rules}
            if server.trust != UNTRUSTED:
                server_entry["trust"] = server.trust
            servers.append(server_entry)
        identity: dict[str, Any] = {"policy": dict(self.policy), "servers": servers}
        if self.budgets:
            identity["budgets"] = [budget.identity() for budget in self.budgets]
        return identity

    def protected_files(self) -> list[Path]:
        """The files whose writer could rewrite the policy or forge an approval."""
        return [self.path, self.database, *(server.manifest for server in self.servers)]
