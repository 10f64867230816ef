"""What an upstream server asks of its client, and what it tells it unasked.

This client declares no client capabilities (but those a server's ``forward`` names, relayed by
``request_handlers``: docs/hosts.md, "forward") and offers none of them: there is no model to
sample, no user to ask and no roots behind the proxy. Every request is answered at once (a
server waiting on its client would hold the call that made it ask until that call timed out),
but one the server's ``forward`` names while a relay is set: that one waits for the host.
"""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable, Collection
from typing import Any

from agentrt_proxy.mcp import _messages as M
from agentrt_proxy.mcp import jsonrpc
from agentrt_proxy.mcp.errors import TransportError
from agentrt_proxy.mcp.jsonrpc import METHOD_NOT_FOUND, Notification, Request

__all__ = ["FORWARDED_BY", "NOT_OFFERED", "RequestHandler", "ServerAsks"]

NOT_OFFERED = ("sampling/createMessage", "elicitation/create", "roots/list")
# The capability a server's request needs, as ``forward`` and the client's capabilities name it.
FORWARDED_BY = {"sampling/createMessage": "sampling", "elicitation/create": "elicitation"}
# A relay of a server's request: (server's method, its params) -> the answer's ``result`` or
# ``error`` member, as a dict ({"result": ...} or {"error": {"code", "message"}}).
RequestHandler = Callable[[str, dict[str, Any] | None], Awaitable[dict[str, Any]]]
Send = Callable[[bytes], Awaitable[None]]  # one message to the server, no answer awaited


class ServerAsks:
    """The server's requests answered and its notifications handed to the layers above."""

    def __init__(self, forward: Collection[str], send: Send) -> None:
        self._forward = forward
        self._send = send
        # What the layers above do with the server's other notifications, by method (a log
        # message, a changed list, a resource update); called on the event loop, must not block.
        self.notification_handlers: dict[str, Callable[[Notification], None]] = {}
        # Who relays the server's requests its ``forward`` names, by method (shared across
        # restarts like the notification handlers); a request with none is refused.
        self.request_handlers: dict[str, RequestHandler] = {}

    def notified(self, note: Notification) -> None:
        handler = self.notification_handlers.get(note.method)
        if handler is not None:
            handler(note)

    async def answer(self, req: Request) -> None:
        relay = self.request_handlers.get(req.method) if FORWARDED_BY.get(req.method) in self._forward else None
        if req.method == "ping":
            answer = jsonrpc.result(req.id, {})
        elif relay is not None:  # waits on the host: the server asked for exactly that
            relayed = await relay(req.method, req.params)
            answer = {"jsonrpc": "2.0", "id": req.id, **relayed}
        elif req.method in NOT_OFFERED:
            answer = jsonrpc.error(req.id, METHOD_NOT_FOUND, M.NOT_OFFERED.format(method=req.method), req.method)
        else:
            answer = jsonrpc.error(req.id, METHOD_NOT_FOUND, jsonrpc.error_message(METHOD_NOT_FOUND), req.method)
        with contextlib.suppress(TransportError):
            await self._send(jsonrpc.encode(answer))
