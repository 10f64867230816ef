"""What the client session needs from a transport (stdio child or streamable HTTP)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from agentrt_proxy.mcp._framing import Oversize

__all__ = ["Deliver", "OnClosed", "Transport"]

# One complete JSON-RPC message (a line or an SSE event), or what is kept of one past the bound.
Deliver = Callable[[bytes | Oversize], None]
OnClosed = Callable[[str], None]  # the session is dead, with the reason


class Transport(Protocol):
    async def start(self, deliver: Deliver, on_closed: OnClosed) -> None:
        """Begin; messages from the server are handed to ``deliver`` from the event loop."""

    async def send(self, data: bytes, *, expects_answer: bool, timeout: float | None) -> None:
        """Send one message. Raises ``TransportError`` when it could not be sent or answered."""

    async def aclose(self) -> None:
        """Release everything; safe twice and concurrently with ``send``."""

    async def failure_detail(self) -> str:
        """Extra text for a failed connect or listing (``; stderr: "<tail>"``), or ``""``."""
        ...
