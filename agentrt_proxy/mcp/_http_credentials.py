"""A request's credentials, and what a refusal of them means (``http_auth``'s ``Authorizer``).

Every request carries the authorizer's headers, taken in the worker thread just before it is
written. A 401, or a 403 asking for more scope, means the server did not process the request:
it goes once more with fresh headers when the authorizer says a new token may cure it, and
otherwise fails as not sent (``AuthorizationRefused``), never as an unknown outcome.
"""

from __future__ import annotations

from collections.abc import Callable

from agentrt_proxy.canonical.quoting import go_escape
from agentrt_proxy.mcp import _messages as M
from agentrt_proxy.mcp._http_pool import describe
from agentrt_proxy.mcp.errors import AuthorizationRefused, NotSentError, TransportError
from agentrt_proxy.mcp.http_auth import Authorizer

__all__ = ["Challenged", "Credentials"]


class Challenged(TransportError):
    """The server refused the request's credentials (401, or 403 insufficient_scope): it did not
    process the request. Caught by ``Credentials.post``, which asks the authorizer what to do."""

    def __init__(self, status: int, reason: str, challenge: str) -> None:
        super().__init__(M.ANSWERED_HTTP.format(status=status, q_reason=go_escape(reason)))
        self.status, self.challenge = status, challenge


class Credentials:
    """The authorizer's headers on each request, and its verdict on a refusal."""

    def __init__(self, auth: Authorizer | None) -> None:
        self._auth = auth

    @property
    def source(self) -> Callable[[], dict[str, str]] | None:
        """Where a long-lived stream takes fresh headers from (None: no authorization)."""
        return self._auth.headers if self._auth is not None else None

    def authorized(self, headers: dict[str, str]) -> dict[str, str]:
        """``headers`` with the authorizer's credentials (in a worker thread: it may refresh)."""
        if self._auth is None:
            return headers
        try:
            credentials = self._auth.headers()
        except Exception as exc:  # the authorizer's own failure: nothing was written yet
            raise NotSentError(M.NO_CREDENTIALS.format(detail=describe(exc))) from exc
        return {**headers, **credentials}

    def post(self, post_once: Callable[[dict[str, str]], None], headers: dict[str, str]) -> None:
        """``post_once`` with ``headers`` and credentials; a refusal of the credentials is judged
        by the authorizer: written once more with fresh headers, or failed as not sent."""
        sent = self.authorized(headers)
        try:
            post_once(sent)
            return
        except Challenged as refusal:
            verdict = self._verdict(refusal, sent, final=False)
        if verdict is not None:
            raise AuthorizationRefused(verdict)
        sent = self.authorized(headers)
        try:
            post_once(sent)
        except Challenged as refusal:
            raise AuthorizationRefused(self._verdict(refusal, sent, final=True) or str(refusal)) from None

    def _verdict(self, refusal: Challenged, sent: dict[str, str], *, final: bool) -> str | None:
        if self._auth is None:
            return M.NEEDS_AUTHORIZATION.format(refusal=refusal)
        return self._auth.rejected(refusal.status, refusal.challenge, sent, final=final)
