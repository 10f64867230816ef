"""What the proxy answers before its session exists: ``initialize``, right after ``serve`` has
started the stdio servers and before anyio, asyncio and the session's code load (decision 0024).

The session (``session.Proxy``) takes its server info, its tasks and its passthrough from here,
so the answer given early and the one the session gives are made of the same parts by the same
function (``mcp.handshake.initialize_result``).
"""

from __future__ import annotations

from agentrt_proxy import __version__
from agentrt_proxy.config import Config
from agentrt_proxy.mcp.handshake import EarlyInput, answer_initialize_early

__all__ = ["SERVER_INFO", "SERVES_TASKS", "answer_early", "opts_in_passthrough"]

SERVER_INFO = {"name": "gated-tools", "version": __version__}
SERVES_TASKS = True  # calls answered as tasks (proxy/_tasks): the tasks capability


def opts_in_passthrough(config: Config) -> bool:
    """Whether some server offers its resources or prompts through the proxy."""
    return any(server.resources or server.prompts for server in config.servers)


def answer_early(config: Config) -> EarlyInput:
    """Answer stdin's first line if it is ``initialize``; what was read, for the session."""
    if opts_in_passthrough(config):
        # The capabilities then come from the upstreams' own: that answer waits for them.
        return EarlyInput()
    return answer_initialize_early(SERVER_INFO, serves_tasks=SERVES_TASKS)
