"""The configuration: strict loading, the file checks, the reach check."""

from agentrt_proxy.config.loading import (
    DEFAULT_POLICY,
    READ_ONLY,
    SIDE_EFFECTS,
    TOOL_NAME_PATTERN,
    Config,
    ConfigError,
    Rule,
    ServerConfig,
    check_database_file,
    check_reach,
    load_config,
    read_owned,
    read_rules,
)

__all__ = [
    "DEFAULT_POLICY",
    "READ_ONLY",
    "SIDE_EFFECTS",
    "TOOL_NAME_PATTERN",
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
