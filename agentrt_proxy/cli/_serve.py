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

from agentrt_proxy.cli._flags import UsageError, parse
from agentrt_proxy.config import ConfigError, check_database_file, check_reach, load_config
from agentrt_proxy.text.cli_text import SERVE_NEED_CONFIG


def command(argv: list[str]) -> int:
    flags = parse(argv, options=("config",))
    config_path = flags.get("config")
    if not config_path or flags.positionals:
        raise UsageError(SERVE_NEED_CONFIG)
    try:
        config = load_config(config_path)
        check_database_file(config.database)
        check_reach(config)  # before any server starts: a server it refuses never runs
    except ConfigError as err:
        from agentrt_proxy.text.operator_text import operator_error

        sys.stderr.write(operator_error(str(err)))
        return 1
    from agentrt_proxy.mcp.spawn import kill_unadopted, start_early

    try:
        start_early(config.servers)
        import anyio

        from agentrt_proxy.proxy.session import serve

        return anyio.run(serve, config)
    finally:
        kill_unadopted()
