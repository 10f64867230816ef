"""``agentrt-proxy serve``: the checks, the stdio servers started early, then the session.

Opening order (proxy-and-mcp-module §2.12, decision 0007): the configuration, the
database file check and the reach check; then every stdio server's process is started,
before anyio, asyncio and the protocol code are imported, so the servers' own
start overlaps the proxy's; then the event loop runs the session (``serve_session``),
whose stdio transports adopt those processes. Whatever was started and not adopted is
killed with its process group before ``command`` returns.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

from .config import ConfigError, check_database_file, check_reach, load_config
from .flags import UsageError, parse

if TYPE_CHECKING:
    from .serve_session import ANSWER_GRACE_SECONDS, SERVER_INFO, Proxy, run_session, serve, tool_result

__all__ = ["ANSWER_GRACE_SECONDS", "SERVER_INFO", "Proxy", "command", "run_session", "serve", "tool_result"]


def command(argv: list[str]) -> int:
    flags = parse(argv, options=("config",))
    config_path = flags.get("config")
    if not config_path or flags.positionals:
        raise UsageError("-config <file> is required and nothing follows it")
    try:
        config = load_config(config_path)
        check_database_file(config.database)
        check_reach(config)  # before any server starts: a server it refuses never runs
    except ConfigError as err:
        from .prose import operator_error

        sys.stderr.write(operator_error(str(err)))
        return 1
    from .mcp.spawn import kill_unadopted, start_early

    try:
        start_early(config.servers)
        import anyio

        from .serve_session import serve

        return anyio.run(serve, config)
    finally:
        kill_unadopted()


def __getattr__(name: str) -> Any:
    """The session's names (``Proxy``, ``run_session``…), from ``serve_session`` on first use."""
    if name in __all__:
        from . import serve_session

        return getattr(serve_session, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
