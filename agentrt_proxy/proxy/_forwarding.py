"""A server's requests relayed to the host, for a server that opted in (docs/hosts.md, "forward").

A server whose configuration says ``"forward": ["sampling"]`` or ``["elicitation"]`` is told at
initialize that its client can sample or elicit (``mcp.spec.ServerSpec.forward``), and its
``sampling/createMessage`` or ``elicitation/create`` reaches this relay. The request goes to the
host only when the host declared that capability; otherwise the server gets an error naming it.
Either way the request is recorded before its answer goes back, as a passed-through read is
(decision 0013: one finished run, one ``passthrough.server_request`` event naming the server,
the method, the answer's size and any error, never the content); an answer that cannot be
recorded is withheld. A sampling request's messages are a server's text put before the host's
model: from an untrusted server they taint this process for clean-context tools, exactly as
that server's tool results do (``guarded.UntrustedSource``).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import anyio

from agentrt_proxy.canonical.clock import Clock
from agentrt_proxy.canonical.durations import format_time
from agentrt_proxy.mcp import FORWARDED_BY
from agentrt_proxy.proxy._guarded import UntrustedSource
from agentrt_proxy.proxy._host_link import HostLink
from agentrt_proxy.store import SERVER_REQUEST, PassthroughRead, Store, StoreError, record_passthrough
from agentrt_proxy.text import operator_text
from agentrt_proxy.text.record_text import FORWARD_NO_CAPABILITY, FORWARD_NOT_RECORDED

__all__ = ["Forwarding"]

SAMPLING = "sampling/createMessage"
HOST_ANSWER_SECONDS = 600.0  # a person may be answering an elicitation; the server's own call bounds it too
_METHOD_NOT_FOUND = -32601
_INTERNAL_ERROR = -32603


def _size(answer: dict[str, Any]) -> int:
    try:
        return len(json.dumps(answer, ensure_ascii=False, separators=(",", ":")).encode("utf-8", "replace"))
    except (TypeError, ValueError):
        return 0


class Forwarding:
    def __init__(
        self,
        session: str,
        store: Store,
        clock: Clock,
        host: HostLink,
        untrusted: UntrustedSource | None,
        write_stderr: Callable[[str], Any],
    ) -> None:
        self.session, self.store, self.clock, self.host = session, store, clock, host
        self.untrusted = untrusted
        self._write_stderr = write_stderr

    def install(self, server: str, forward: tuple[str, ...], handlers: dict[str, Any]) -> None:
        """Relay ``server``'s requests that ``forward`` names, through the connection's ``handlers``."""
        for method, capability in FORWARDED_BY.items():
            if capability in forward:
                handlers[method] = self._relay(server)

    def _relay(self, server: str) -> Any:
        async def relay(method: str, params: dict[str, Any] | None) -> dict[str, Any]:
            return await self.relay(server, method, params)

        return relay

    async def relay(self, server: str, method: str, params: dict[str, Any] | None) -> dict[str, Any]:
        """The answer the server gets: the host's, or an error naming why there is none."""
        capability = FORWARDED_BY[method]
        sent = self.host.declares(capability)
        if sent:
            answer = await self.host.request(method, params, HOST_ANSWER_SECONDS)
        else:
            message = FORWARD_NO_CAPABILITY.format(capability=capability, method=method)
            answer = {"error": {"code": _METHOD_NOT_FOUND, "message": message}}
        error = answer.get("error")
        detail = f"{error.get('code')}: {error.get('message')}" if isinstance(error, dict) else ""
        read = PassthroughRead(SERVER_REQUEST, server, method, _size(answer), detail)
        at = format_time(self.clock.now_ns())
        try:
            run_id = await anyio.to_thread.run_sync(record_passthrough, self.store, self.session, read, at)
        except StoreError as err:
            self._write_stderr(operator_text.not_recorded(read.goal, str(err)))
            return {"error": {"code": _INTERNAL_ERROR, "message": FORWARD_NOT_RECORDED}}
        if method == SAMPLING and sent and self.untrusted is not None:
            self.untrusted.returned(server, read.goal, run_id)  # its text went before the host's model
        return answer
