"""The loopback listener a ``login`` waits on for the authorization server's redirect.

It listens on ``127.0.0.1`` only, lives only while the login waits, and takes exactly one
callback: the first whose ``state`` is the login's own. A request with another state (a stale
tab, or someone else's link) is answered 400 and the wait goes on, so it can neither complete
the login nor end it. The matching callback ends the wait whatever it carries: a code, the
server's error, or an ``iss`` that is not the issuer's (RFC 9207: a mix-up, so the login fails).
"""

from __future__ import annotations

import hmac
import http.server
import time
import urllib.parse
from dataclasses import dataclass
from typing import Any

from agentrt_proxy.canonical.quoting import go_escape, go_quote
from agentrt_proxy.oauth._wire import OAuthError
from agentrt_proxy.text import oauth_text

__all__ = ["Callback"]

PATH = "/callback"
REQUEST_TIMEOUT = 10.0  # one connection may not hold the listener longer than this
PAGE_DONE = b"<!doctype html><title>agentrt-proxy</title><p>Authorized. You may close this window.</p>\n"
PAGE_FAILED = b"<!doctype html><title>agentrt-proxy</title><p>Authorization failed; see the terminal.</p>\n"
PAGE_NOT_OURS = b"<!doctype html><title>agentrt-proxy</title><p>This is not the callback this login waits for.</p>\n"


@dataclass
class _CallbackOutcome:
    code: str | None = None
    failure: str | None = None


class _Server(http.server.HTTPServer):
    expected_state: str = ""
    issuer: str = ""
    iss_required: bool = False
    outcome: _CallbackOutcome | None = None
    refused: int = 0


class _Handler(http.server.BaseHTTPRequestHandler):
    server: _Server
    timeout = REQUEST_TIMEOUT

    def log_message(self, format: str, *args: Any) -> None:
        return  # the query holds the code: never written anywhere

    def do_GET(self) -> None:
        parts = urllib.parse.urlsplit(self.path)
        query = urllib.parse.parse_qs(parts.query, keep_blank_values=True)
        one = {name: values[0] for name, values in query.items() if len(values) == 1}
        state = one.get("state", "")
        if parts.path != PATH or not hmac.compare_digest(state.encode(), self.server.expected_state.encode()):
            self.server.refused += 1
            self._page(400, PAGE_NOT_OURS)
            return
        outcome = _judge(one, self.server.issuer, self.server.iss_required)
        self.server.outcome = outcome
        self._page(200 if outcome.code else 400, PAGE_DONE if outcome.code else PAGE_FAILED)

    def _page(self, status: int, body: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.end_headers()
        self.wfile.write(body)


def _judge(query: dict[str, str], issuer: str, iss_required: bool) -> _CallbackOutcome:
    iss = query.get("iss")
    if iss is not None and iss != issuer:
        return _CallbackOutcome(
            failure=oauth_text.CALLBACK_WRONG_ISSUER.format(q_iss=go_quote(iss), q_issuer=go_quote(issuer))
        )
    if iss is None and iss_required:
        return _CallbackOutcome(failure=oauth_text.CALLBACK_NO_ISSUER.format(q_issuer=go_quote(issuer)))
    if "error" in query:
        description = query.get("error_description", "")
        detail = (
            oauth_text.CALLBACK_ERROR_DETAIL.format(description=go_escape(description[:200])) if description else ""
        )
        failure = oauth_text.CALLBACK_ERROR.format(error=go_escape(query["error"][:100]), detail=detail)
        return _CallbackOutcome(failure=failure)
    code = query.get("code")
    if not code:
        return _CallbackOutcome(failure=oauth_text.CALLBACK_NO_CODE)
    return _CallbackOutcome(code=code)


class Callback:
    def __init__(self, port: int | None) -> None:
        try:
            self._server = _Server(("127.0.0.1", port or 0), _Handler)
        except OSError as err:
            raise OAuthError(oauth_text.CALLBACK_CANNOT_LISTEN.format(port=port or 0, error=err.strerror)) from None
        self.port = int(self._server.server_address[1])

    @property
    def redirect_uri(self) -> str:
        return f"http://127.0.0.1:{self.port}{PATH}"

    def wait(self, state: str, issuer: str, iss_required: bool, seconds: float) -> str:
        """The code of the one callback carrying ``state``; ``OAuthError`` when it fails or none comes."""
        server = self._server
        server.expected_state, server.issuer, server.iss_required = state, issuer, iss_required
        deadline = time.monotonic() + seconds
        while server.outcome is None:
            left = deadline - time.monotonic()
            if left <= 0:
                raise OAuthError(oauth_text.CALLBACK_TIMED_OUT.format(seconds=int(seconds)))
            server.timeout = min(left, 1.0)
            server.handle_request()
        outcome = server.outcome
        if outcome.code is None:
            raise OAuthError(outcome.failure or "the callback failed")
        return outcome.code

    @property
    def refused(self) -> int:
        """How many requests that were not the login's callback were refused."""
        return self._server.refused

    def close(self) -> None:
        self._server.server_close()
