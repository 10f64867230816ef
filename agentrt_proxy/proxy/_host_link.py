"""The proxy's way to tell the host something nobody asked for: a notification, or a server's
request relayed to it (``declares``, ``request``: a server's ``forward``).

Upstream servers send notifications of their own (log messages, resource updates, changed
lists) at any time, and the proxy relays some of them to its host. The host's session is
made by ``session.run_session`` while the runtime is opened elsewhere, so the runtime holds
this link, which the session is bound to once it runs. Before that, and once the host is
gone, a notification goes nowhere: a notification is never worth blocking a call for.
"""

from __future__ import annotations

from typing import Any, Protocol


class _Asks(Protocol):
    def declares(self, capability: str) -> bool: ...

    async def request(self, method: str, params: dict[str, Any] | None, timeout: float) -> dict[str, Any]: ...


class _Sends(Protocol):
    @property
    def host_requests(self) -> _Asks: ...

    async def notify(self, method: str, params: dict[str, Any] | None = None) -> None: ...


class HostLink:
    def __init__(self) -> None:
        self._session: _Sends | None = None

    def bind(self, session: _Sends) -> None:
        self._session = session

    @property
    def bound(self) -> bool:
        return self._session is not None

    async def notify(self, method: str, params: dict[str, Any] | None = None) -> None:
        """Send one notification to the host, or nothing when there is no host to send to."""
        if self._session is not None:
            await self._session.notify(method, params)

    def declares(self, capability: str) -> bool:
        """Whether the host declared ``capability`` (``sampling``, ``elicitation``) at initialize."""
        return self._session is not None and self._session.host_requests.declares(capability)

    async def request(self, method: str, params: dict[str, Any] | None, timeout: float) -> dict[str, Any]:
        """Ask the host (a server's request, relayed): its answer's ``result`` or ``error`` member.
        Only after ``declares`` said yes, so a session is bound."""
        assert self._session is not None
        return await self._session.host_requests.request(method, params, timeout)
