"""Operator-facing errors of the upstream clients."""

from __future__ import annotations

from agentrt_proxy.errors import (
    ConfigurationError,
    UpstreamDropped,
    UpstreamError,
    UpstreamNotSent,
    UpstreamProtocolError,
)

__all__ = [
    "AuthorizationRefused",
    "ConnectError",
    "McpError",
    "MessageTooLarge",
    "NotSentError",
    "ServerSpecError",
    "SessionClosed",
    "SessionExpired",
    "TransportError",
]


class McpError(UpstreamError):
    """An upstream failure; ``str()`` is the complete operator-facing sentence."""


class ServerSpecError(ConfigurationError):
    """A server entry that cannot be used (malformed env, both command and endpoint…): the
    configuration's fault, found before anything starts."""


class ConnectError(McpError, UpstreamNotSent):
    """Connecting, the handshake or the first listing failed (names server and phase): no tool
    call was sent on the connection, so nothing can have executed. ``authorization``: the
    server refused the credentials, and this is the authorizer's sentence for it."""

    def __init__(self, message: str, *, authorization: str | None = None) -> None:
        super().__init__(message)
        self.authorization = authorization


class TransportError(UpstreamError):
    """A transport-level failure; the session wraps it into a sentence naming the server. Its kind
    is the client's to judge (a failed call without an answer is recorded as a protocol failure),
    except for ``SessionClosed``."""


class SessionClosed(TransportError, UpstreamDropped):
    """The session is gone for good (process exited, HTTP session expired): a request written
    before it ended has an unknown outcome."""


class NotSentError(TransportError, UpstreamNotSent):
    """The request provably never reached the server: spawning failed, the child had already
    exited, connecting was refused, nothing could be written, or the HTTP session was gone and
    could not be renewed. A call that fails so is a known failure (seed: "a refusal before
    anything was sent is known"): it never counts as executed."""


class MessageTooLarge(TransportError, UpstreamProtocolError):
    """A message from the server is longer than ``max_message_bytes``: it was not read, and its
    connection was dropped. ``answered``: it was certainly the request's own answer (an
    ``application/json`` body to its POST), so the server answered, and the call is refused
    like an answer that broke the boundary; otherwise it is a protocol failure of the call."""

    def __init__(self, message: str, *, answered: bool = False) -> None:
        super().__init__(message)
        self.answered = answered


class SessionExpired(NotSentError):
    """The HTTP server answered 404 (or the npm servers' 400 "No valid session ID") to a request
    carrying ``session_id``: it no longer knows the session and did not process the request. The
    session starts a new one and sends the request once more; unrenewed, it stays not sent. The
    same answer to the request sent again in the new session is an ``HTTPStatusError``: a server
    that forgets a session it has just begun is not keeping the promise this rests on."""

    def __init__(self, message: str, session_id: str, status: int = 404) -> None:
        super().__init__(message)
        self.session_id = session_id
        self.status = status


class HTTPStatusError(TransportError, UpstreamProtocolError):
    """The HTTP server answered a request it was sent whole with an error status (4xx, 5xx) and
    no JSON-RPC answer: the server refused it, and only the server knows whether it acted on it
    first. Never "not sent"; a mutation's outcome is unknown."""

    def __init__(self, message: str, status: int) -> None:
        super().__init__(message)
        self.status = status


class AuthorizationRefused(NotSentError):
    """The HTTP server refused the request's credentials (401, or 403 ``insufficient_scope``) and
    no fresh token could cure it: the server did not process the request, so nothing was sent.
    The message is the authorizer's sentence (it names the server and what the operator does)."""
