"""What an upstream server says unasked: its log messages go to the host, its changed tool list
to the operator.

``ServerNotes.attach(server, connection)`` registers the handlers on one connection. Whoever
opens a connection to a server (at start-up, and again after a restart) calls it, so every
connection relays as the first one did.

A log message reaches the host as ``notifications/message`` with its level and data as the
server sent them and its logger prefixed with the server's name (``<server>`` or
``<server>/<logger>``), so a host can tell its servers apart behind the one proxy. Its text is
the server's and stays data for the host: it never enters what the proxy tells the model. The
host's ``logging/setLevel`` is applied by the host session (``mcp.server``) to every message
the proxy sends; it is not passed on to the servers, which keep their own default level.

A changed tool list is handed to ``on_tools_changed`` (serving lists the server again at once and
withholds what no longer matches its pin: ``Supervisor.relist``); with no one to hand it to, the
operator gets one line naming the server, to review with ``pin``.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque
from collections.abc import Callable
from typing import Any, Protocol

from agentrt_proxy.mcp.levels import is_level
from agentrt_proxy.text import operator_text

__all__ = ["LOG_METHOD", "TOOLS_CHANGED_METHOD", "ServerNotes", "host_log_params"]

LOG_METHOD = "notifications/message"
TOOLS_CHANGED_METHOD = "notifications/tools/list_changed"
MAX_QUEUED = 1024  # a host that reads slower than the servers log loses the oldest messages


class Host(Protocol):
    async def notify(self, method: str, params: dict[str, Any] | None = None) -> None: ...


class _Notification(Protocol):
    @property
    def params(self) -> dict[str, Any] | None: ...


class _Notifying(Protocol):
    notification_handlers: dict[str, Callable[[Any], None]]


def host_log_params(server: str, params: Any) -> dict[str, Any] | None:
    """The host's ``notifications/message`` params for one a server sent, or ``None`` for one
    no client could read (no valid level, no data)."""
    if not isinstance(params, dict) or not is_level(params.get("level")) or "data" not in params:
        return None
    logger = params.get("logger")
    name = f"{server}/{logger}" if isinstance(logger, str) and logger else server
    return {"level": params["level"], "logger": name, "data": params["data"]}


class ServerNotes:
    """The proxy's relay of every server's notifications (one per serving proxy)."""

    def __init__(self, host: Host, write_stderr: Callable[[str], Any]) -> None:
        self._host = host
        self._write_stderr = write_stderr
        self._queue: deque[dict[str, Any]] = deque(maxlen=MAX_QUEUED)
        self._writer: asyncio.Task[None] | None = None
        # Serving sets it: a server's changed list is listed again at once (decision 0018).
        self.on_tools_changed: Callable[[str], None] | None = None
        # Serving sets it: called with the server's name as its log message is queued for the
        # host, whose model may read it (its text is the server's: it taints, docs/decisions/0017).
        self.on_relayed: Callable[[str], object] | None = None

    def attach(self, server: str, connection: _Notifying) -> None:
        """Relay ``server``'s notifications on ``connection`` (called for every new connection)."""
        handlers = connection.notification_handlers
        handlers[LOG_METHOD] = lambda note: self._log(server, note)
        handlers[TOOLS_CHANGED_METHOD] = lambda _note: self._tools_changed(server)

    def _log(self, server: str, note: _Notification) -> None:
        params = host_log_params(server, note.params)
        if params is None:
            return
        self._queue.append(params)
        if self.on_relayed is not None:
            self.on_relayed(server)
        # Called by the wire's reader on the event loop: it must not wait for the host's writer,
        # so one task writes what is queued and ends when the queue is empty.
        if self._writer is None or self._writer.done():
            self._writer = asyncio.get_running_loop().create_task(self._write())

    async def _write(self) -> None:
        while self._queue:
            params = self._queue.popleft()
            # A value JSON cannot carry (a number decoded to infinity) drops that message alone.
            with contextlib.suppress(ValueError):
                await self._host.notify(LOG_METHOD, params)

    def _tools_changed(self, server: str) -> None:
        if self.on_tools_changed is not None:
            self.on_tools_changed(server)
            return
        self._write_stderr(operator_text.operator_tools_changed(server))

    async def aclose(self) -> None:
        """Stop writing (the host is gone or the proxy closes); what is queued is dropped."""
        self._queue.clear()
        if self._writer is not None and not self._writer.done():
            self._writer.cancel()
            await asyncio.wait([self._writer])  # waits for it to end, raising nothing of its own
