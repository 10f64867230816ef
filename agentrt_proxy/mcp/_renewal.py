"""A request sent in a live session, and a new session when an HTTP server forgot the old one.

An HTTP server that no longer knows the session (``SessionExpired``: restarted, or it timed the
session out) did not process the request: a new session is initialized and the request goes
once more. If that fails, the request was not sent. One new session at a time, however many
requests found the old one gone.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import anyio

from agentrt_proxy.mcp import _messages as M
from agentrt_proxy.mcp._transport import Transport
from agentrt_proxy.mcp.errors import HTTPStatusError, NotSentError, SessionExpired, TransportError

__all__ = ["Renewal", "SendAttempt"]


class SendAttempt:
    """Whether a call's request may have reached the server yet: a call that times out while a
    new session is being started was never sent."""

    def __init__(self) -> None:
        self.out = False


class Renewal:
    """Sends a request in the current session, starting a new one when the server forgot it."""

    def __init__(
        self, transport: Transport, connect_timeout_ns: int, initialize: Callable[[], Awaitable[None]]
    ) -> None:
        self._transport = transport
        self._connect_timeout_ns = connect_timeout_ns
        self._initialize = initialize  # the new session's handshake: sent as it is, never renewed
        self._renewing = anyio.Lock()
        self._stale = False  # the server forgot the session and no new one could be started yet

    async def send(self, data: bytes, attempt: SendAttempt) -> None:
        """Send a request in a live session: a request the server refused for a session it no
        longer knows was not processed, so it goes once more, on a new session. The same refusal
        in the session just begun is the server's answer to a request it was sent whole twice
        (``HTTPStatusError``, never not-sent: a server that forgets a new session keeps no promise
        about what it processed); no loop."""
        if self._stale or self._renewing.locked():
            await self._renew(None)
        try:
            attempt.out = True
            await self._transport.send(data, expects_answer=True, timeout=None)
        except SessionExpired as exc:
            attempt.out = False
            await self._renew(exc.session_id)
            attempt.out = True
            try:
                await self._transport.send(data, expects_answer=True, timeout=None)
            except SessionExpired as again:
                raise HTTPStatusError(M.EXPIRED_AGAIN.format(refusal=again), again.status) from again

    async def _renew(self, expired: str | None) -> None:
        """Start a new session after the server forgot ``expired`` (None: wait for a renewal under
        way, or retry one that failed). Raises ``NotSentError`` when no new session could be had."""
        async with self._renewing:
            current = getattr(self._transport, "session_id", None)
            if not self._stale and (expired is None or current != expired):
                return  # another request renewed it meanwhile
            self._stale = True
            if hasattr(self._transport, "session_id"):
                self._transport.session_id = None  # type: ignore[attr-defined]  # the new initialize goes without it
                self._transport.protocol_version = None  # type: ignore[attr-defined]
            try:
                with anyio.fail_after(self._connect_timeout_ns / 1e9):
                    await self._initialize()
            except (TransportError, TimeoutError) as exc:
                detail = str(exc) or "timed out"
                raise NotSentError(M.NO_NEW_SESSION.format(detail=detail)) from exc
            self._stale = False
