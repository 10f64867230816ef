"""Requests the proxy sends its host: a server's sampling or elicitation, relayed (docs/hosts.md, "forward").

Only a handshake-era session sends any (the 2026-07-28 revision has no server-to-client requests
outside a call's own input requests, which the proxy does not make). The host's ``initialize``
says what it can answer (``capabilities.sampling``, ``capabilities.elicitation``); a request goes
only to a host that declared its capability. Each request gets an id of the proxy's own, a
string no host's request id can be confused with, and waits for the answer with that id; the
session hands every answer it reads to ``answered``.
"""

from __future__ import annotations

import itertools
from collections.abc import Awaitable, Callable
from typing import Any

import anyio

from agentrt_proxy.mcp import _messages as M
from agentrt_proxy.mcp import jsonrpc
from agentrt_proxy.mcp.jsonrpc import ErrorResponse, Response

__all__ = ["NO_ANSWER", "HostRequests"]

ID_PREFIX = "agentrt-proxy-"
NO_ANSWER = -32001  # the host did not answer in time (the code the SDKs use for a request timeout)


class HostRequests:
    def __init__(self, send: Callable[[Any], Awaitable[None]]) -> None:
        self._send = send
        self._ids = itertools.count(1)
        self._waiting: dict[str, tuple[anyio.Event, list[Response | ErrorResponse]]] = {}
        self.capabilities: dict[str, Any] = {}  # the host's, from its initialize

    def declares(self, capability: str) -> bool:
        """Whether the host's initialize declared ``capability`` (an object, as the schema says)."""
        return isinstance(self.capabilities.get(capability), dict)

    async def request(self, method: str, params: dict[str, Any] | None, timeout: float) -> dict[str, Any]:
        """Send ``method`` to the host and wait for its answer: ``{"result": ...}`` or
        ``{"error": {"code", "message"[, "data"]}}`` (``NO_ANSWER`` when none came in time)."""
        msg_id = f"{ID_PREFIX}{next(self._ids)}"
        done, box = anyio.Event(), list[Response | ErrorResponse]()
        self._waiting[msg_id] = (done, box)
        try:
            await self._send(jsonrpc.request(msg_id, method, params))
            with anyio.move_on_after(timeout):
                await done.wait()
        finally:
            self._waiting.pop(msg_id, None)
        if not box:
            return {
                "error": {"code": NO_ANSWER, "message": M.HOST_DID_NOT_ANSWER.format(method=method, timeout=timeout)}
            }
        answer = box[0]
        if isinstance(answer, Response):
            return {"result": answer.result}
        error: dict[str, Any] = {"code": answer.code, "message": answer.message}
        if answer.data is not None:
            error["data"] = answer.data
        return {"error": error}

    def answered(self, msg: Response | ErrorResponse) -> bool:
        """Hand the host's answer to the request waiting for it; whether one was."""
        waiting = self._waiting.get(msg.id) if isinstance(msg.id, str) else None
        if waiting is None or waiting[1]:
            return False
        waiting[1].append(msg)
        waiting[0].set()
        return True
