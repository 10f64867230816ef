"""The configuration: what it is (model), strict loading, the file checks, the reach check.

A module whose name begins with an underscore is the package's own (as h11 marks its modules):
nothing outside ``config`` imports it; callers import the names below from ``config``, or ``model``,
``files`` and ``budget_fields`` by their names.
"""

from agentrt_proxy.config._loading import load_config, read_rules
from agentrt_proxy.config._reach import check_reach
from agentrt_proxy.config.files import check_database_file, read_owned
from agentrt_proxy.config.model import (
    ABORT,
    ALLOW,
    DEFAULT_MAX_RESULT_BYTES,
    DEFAULT_POLICY,
    DENY,
    READ_ONLY,
    REQUIRE_APPROVAL,
    SIDE_EFFECTS,
    TOOL_NAME_PATTERN,
    TRUSTED,
    Budget,
    Config,
    ConfigError,
    Rule,
    ServerConfig,
)

__all__ = [
    "ABORT",
    "ALLOW",
    "DEFAULT_MAX_RESULT_BYTES",
    "DEFAULT_POLICY",
    "DENY",
    "READ_ONLY",
    "REQUIRE_APPROVAL",
    "SIDE_EFFECTS",
    "TOOL_NAME_PATTERN",
    "TRUSTED",
    "Budget",
    "Config",
    "ConfigError",
    "Rule",
    "ServerConfig",
    "check_database_file",
    "check_reach",
    "load_config",
    "read_owned",
    "read_rules",
]
