"""The host's resources, prompts and completion requests, passed through (decision 0013).

``upstream.passthrough`` routes each request to the server that opted in and answers it; this
module is what the host-facing session calls for the methods beyond tools (``handle``), and it
adds what serving owes around them: every ``resources/read`` and ``prompts/get`` is recorded in
the audit chain (``store.record_passthrough``: server, URI or prompt, size, never the content)
before the host gets the answer, and an answer that could not be recorded is withheld; and the
servers' resource and prompt notifications are relayed to the host.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from typing import Any

import anyio

from agentrt_proxy.canonical.clock import Clock
from agentrt_proxy.canonical.durations import format_time
from agentrt_proxy.config import Config
from agentrt_proxy.mcp import JsonRpcError
from agentrt_proxy.proxy._guarded import UntrustedSource
from agentrt_proxy.proxy._host_link import HostLink
from agentrt_proxy.store import PROMPT_GET, RESOURCE_READ, PassthroughRead, Store, StoreError, record_passthrough
from agentrt_proxy.text import model_text, operator_text
from agentrt_proxy.upstream import ManifestError, read_manifest
from agentrt_proxy.upstream.passthrough import Passthrough, ReadAnswer
from agentrt_proxy.upstream.pins import PinnedPrompt

__all__ = ["METHODS", "PassthroughHandler", "passthrough_configured"]

METHODS = frozenset(
    {
        "resources/list",
        "resources/templates/list",
        "resources/read",
        "resources/subscribe",
        "resources/unsubscribe",
        "prompts/list",
        "prompts/get",
        "completion/complete",
    }
)
RELAYED = {
    "notifications/resources/updated": "resources",
    "notifications/resources/list_changed": "resources",
    "notifications/prompts/list_changed": "prompts",
}


def passthrough_configured(config: Config) -> bool:
    """Whether any server opted in (else nothing here is offered and nothing waits for it)."""
    return any(server.resources or server.prompts for server in config.servers)


def read_prompt_pins(config: Config) -> dict[str, Mapping[str, PinnedPrompt] | None]:
    """Each prompts server's pinned prompts, read again from its manifest (``None``: none pinned)."""
    pins: dict[str, Mapping[str, PinnedPrompt] | None] = {}
    for server in config.servers:
        if server.prompts:
            try:
                pins[server.name] = read_manifest(server.manifest).prompts
            except ManifestError:
                pins[server.name] = None  # the load read it moments ago; nothing pinned is offered
    return pins


class PassthroughHandler:
    def __init__(
        self,
        config: Config,
        connection_of: Callable[[str], Any],
        store: Store,
        clock: Clock,
        host: HostLink,
        write_stderr: Callable[[str], Any],
        untrusted: UntrustedSource | None = None,
    ) -> None:
        self.config = config
        # A resource read or prompt from an untrusted server is untrusted content in the host's
        # context as much as a tool's result: it taints this process for clean-context tools.
        self.untrusted = untrusted
        self.store = store
        self.clock = clock
        self.host = host
        self._write_stderr = write_stderr
        self._connection_of = connection_of
        self.upstreams = Passthrough(config.servers, read_prompt_pins(config), self._bound, self._warn)
        if untrusted is not None:
            self.upstreams.on_server_text = lambda server, method: untrusted.returned(server, "", via=method)
        self._tasks: set[asyncio.Task[None]] = set()
        self._bound_to: dict[str, Any] = {}
        for server in self.upstreams.servers:
            self._bound(server.name)

    # ------------------------------------------------------------------- the host

    def capabilities(self) -> dict[str, Any]:
        return self.upstreams.capabilities()

    async def handle(self, method: str, params: dict[str, Any]) -> Any:
        if method not in METHODS or not self.upstreams.configured:
            raise JsonRpcError(-32601, "Method not found", method)
        if method == "resources/list":
            return await self.upstreams.list_resources()
        if method == "resources/templates/list":
            return await self.upstreams.list_templates()
        if method == "resources/read":
            return await self._recorded(RESOURCE_READ, await self.upstreams.read(params), "")
        if method in ("resources/subscribe", "resources/unsubscribe"):
            return await self.upstreams.subscription(method, params)
        if method == "prompts/list":
            return await self.upstreams.list_prompts()
        if method == "prompts/get":
            prompt, answer = await self.upstreams.get_prompt(params)
            return await self._recorded(PROMPT_GET, answer, prompt.host_name)
        return await self.upstreams.complete(params)

    async def _recorded(self, event: str, answer: ReadAnswer, host_name: str) -> Any:
        """Record the read, then answer it; nothing is answered that is not recorded."""
        error = "" if answer.error is None else f"{answer.error.code}: {answer.error.message}"
        read = PassthroughRead(event, answer.server, answer.target, answer.size, error, host_name)
        at = format_time(self.clock.now_ns())
        try:
            run_id = await anyio.to_thread.run_sync(record_passthrough, self.store, self.config.session, read, at)
        except StoreError as err:
            self._write_stderr(operator_text.not_recorded(read.goal, str(err)))
            raise JsonRpcError(-32603, model_text.PASSTHROUGH_NOT_RECORDED) from None
        if self.untrusted is not None:  # its result, or its error's message: the server's text either way
            self.untrusted.returned(answer.server, "", run_id, via=read.goal)
        if answer.error is not None:
            raise answer.error
        return answer.result

    # ------------------------------------------------------------ the servers' notes

    def _bound(self, server: str) -> Any:
        """The server's live connection, with the relays installed on it (a restarted server's
        new connection gets them the first time it is asked for)."""
        connection = self._connection_of(server)
        if connection is not None and self._bound_to.get(server) is not connection:
            handlers = getattr(connection, "notification_handlers", None)
            entry = next(s for s in self.upstreams.servers if s.name == server)
            if isinstance(handlers, dict):
                for method, kind in RELAYED.items():
                    if (kind == "resources" and entry.resources) or (kind == "prompts" and entry.prompts):
                        handlers[method] = self._relay(server)
            self._bound_to[server] = connection
        return connection

    def _relay(self, server: str) -> Callable[[Any], None]:
        def relay(note: Any) -> None:
            # Called on the event loop by the connection's reader, which must not wait: the
            # notification is sent to the host from a task of its own.
            if note.method == "notifications/prompts/list_changed":
                self.upstreams.forget_prompts(server)
            elif note.method == "notifications/resources/list_changed":
                self.upstreams.routes.forget(server)
            params = note.params if isinstance(note.params, dict) else None
            if params and self.untrusted is not None:  # an updated resource's URI is the server's text
                self.untrusted.returned(server, "", via=note.method)
            task = asyncio.get_running_loop().create_task(self.host.notify(note.method, params))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

        return relay

    def _warn(self, line: str) -> None:
        self._write_stderr(operator_text.operator_line(line))
