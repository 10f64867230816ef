"""A server's credentials while the proxy uses it (``serve``, ``pin``, ``check``): the wire layer's
``Authorizer`` (``mcp.http_auth``).

Serving never opens a browser or a listener: it reads the token that ``login`` kept, sends it
on every request, refreshes it before it expires and once when the server refuses it (a
client credentials token is simply fetched again), and otherwise words the refusal: the call
answers that nothing was sent, naming the server and ``login``, and the operator gets one line
on standard error. A 403 ``insufficient_scope`` is kept in the token file as a step-up, so the
next ``login`` asks for that scope too.

A token is never part of a sentence: the lines say which server and what to run, never what
was sent.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import replace

from agentrt_proxy.config.model import ServerConfig
from agentrt_proxy.mcp.http_auth import challenge_params, is_scope_challenge
from agentrt_proxy.oauth import _grants as grants
from agentrt_proxy.oauth._wire import OAuthError
from agentrt_proxy.oauth.tokens import Token, TokenFile, TokenFileError
from agentrt_proxy.text import model_text, oauth_text, operator_text

__all__ = ["NoAuthorization", "OAuthAuthorizer", "authorizer_for", "token_state"]

REFRESH_MARGIN = 60.0  # seconds before expiry that a token is refreshed
BEARER = "Bearer "

Report = Callable[[str], None]

# The operator's lines already written, per token file and server, across the authorizers of
# one process: each new connection (the supervisor's next start) gets a new authorizer, and
# the operator is told once, not at every try. Emptied when a token works again.
_REPORTED: dict[tuple[str, str], set[str]] = {}


def _stderr(line: str) -> None:
    sys.stderr.write(line)
    sys.stderr.flush()


def margin(token: Token) -> float:
    """How long before its expiry a token is refreshed: a minute, or a tenth of a short life."""
    if token.expires_at is None or token.issued_at is None:
        return REFRESH_MARGIN
    return min(REFRESH_MARGIN, max(0.0, (token.expires_at - token.issued_at) / 10))


class NoAuthorization:
    """An HTTP server with static headers alone: a refusal says how to give it OAuth."""

    def __init__(self, server: str) -> None:
        self._server = server

    def headers(self) -> dict[str, str]:
        return {}

    def rejected(self, status: int, challenge: str, sent: Mapping[str, str], *, final: bool) -> str | None:
        return model_text.server_needs_auth(self._server, status)


class OAuthAuthorizer:
    def __init__(self, server: ServerConfig, report: Report = _stderr) -> None:
        assert server.auth is not None
        self._name = server.name
        self._secret = server.auth.client_secret
        self._private_key = server.auth.private_key
        self._config = str(server.auth.config_path)
        self._file = TokenFile(server.auth.token_file)
        self._report = report
        self._lock = threading.Lock()  # one refresh at a time in this process; the file lock across them
        self._token: Token | None = None
        self._reported = _REPORTED.setdefault((str(server.auth.token_file), server.name), set())

    # ------------------------------------------------------------------ the wire's questions

    def headers(self) -> dict[str, str]:
        with self._lock:
            token = self._token or self._load()
            if token is None:
                return {}
            if token.expires_within(margin(token), time.time()):
                token = self._refresh(token.access_token) or token  # the server judges a stale one
            return {"Authorization": BEARER + token.access_token}

    def rejected(self, status: int, challenge: str, sent: Mapping[str, str], *, final: bool) -> str | None:
        if is_scope_challenge(status, challenge):
            scope = challenge_params(challenge).get("scope", "")
            self._step_up(scope)
            self._once(operator_text.oauth_scope_needed(self._name, scope, self._config))
            return model_text.server_needs_scope(self._name, scope)
        used = next((v for k, v in sent.items() if k.lower() == "authorization"), "")
        used = used[len(BEARER) :] if used.startswith(BEARER) else ""
        why = "it answered HTTP 401"
        if not final:
            with self._lock:
                fresh = self._refresh(used) if used else self._load()
            if fresh is not None and fresh.access_token != used:
                return None
            if not used:  # no token was ever fetched (or logout deleted it)
                self._once(operator_text.oauth_no_token(self._name, self._config))
                return model_text.server_not_logged_in(self._name)
            why = oauth_text.UNAUTHORIZED_NOT_REFRESHED
        self._once(operator_text.oauth_login_needed(self._name, self._config, why))
        return model_text.server_needs_login(self._name)

    # ------------------------------------------------------------------ the token file

    def _load(self) -> Token | None:
        try:
            self._token = self._file.find(self._name)
        except TokenFileError as err:
            self._once(operator_text.operator_line(str(err)))
            self._token = None
        if self._token is not None and operator_text.oauth_no_token(self._name, self._config) in self._reported:
            self._reported.clear()  # a login since: a later failure is news again
        return self._token

    def _refresh(self, used: str) -> Token | None:
        """A fresh token in place of ``used``: another proxy's, if it refreshed meanwhile (read under
        the lock), or one fetched now. None when there is none to be had."""
        try:
            with self._file.locked():
                stored = self._file.find(self._name)
                if stored is None:
                    self._token = None
                    return None
                if stored.access_token != used and not stored.expires_within(margin(stored), time.time()):
                    self._token = stored
                    return stored
                fresh = grants.refresh(stored, self._secret, self._private_key)
                self._file.put(fresh)
        except grants.RefreshRefused:
            return None
        except (OAuthError, TokenFileError) as err:
            self._once(operator_text.operator_line(oauth_text.REFRESH_FAILED.format(server=self._name, error=err)))
            return None
        self._token = fresh
        self._reported.clear()  # a later failure is news again
        return fresh

    def _step_up(self, scope: str) -> None:
        if not scope:
            return
        try:
            with self._file.locked():
                stored = self._file.find(self._name)
                if stored is not None:
                    wanted = " ".join(dict.fromkeys(stored.step_up.split() + scope.split()))
                    self._file.put(replace(stored, step_up=wanted))
        except TokenFileError as err:
            self._once(operator_text.operator_line(str(err)))

    def _once(self, line: str) -> None:
        if line not in self._reported:
            self._reported.add(line)
            self._report(line)


def authorizer_for(server: ServerConfig) -> NoAuthorization | OAuthAuthorizer | None:
    """The authorizer of an HTTP server (None for a stdio one)."""
    if server.endpoint is None:
        return None
    if server.auth is None:
        return NoAuthorization(server.name)
    return OAuthAuthorizer(server)


def token_state(server: ServerConfig, now: float) -> tuple[str, str] | None:
    """What ``check`` says of an OAuth server's token: (state, scopes); None: no token held."""
    assert server.auth is not None
    token = TokenFile(server.auth.token_file).find(server.name)
    if token is None:
        return None
    renewable = token.refresh_token is not None or token.grant == "client_credentials"
    then = oauth_text.RENEWED_ON_USE if renewable else oauth_text.NOT_RENEWABLE
    if token.expires_at is None:
        state = oauth_text.HELD_NO_EXPIRY
    elif token.expires_at <= now:
        state = oauth_text.EXPIRED.format(then=then)
    elif token.expires_at - now <= max(REFRESH_MARGIN * 5, margin(token)):
        state = oauth_text.ABOUT_TO_EXPIRE.format(seconds=int(token.expires_at - now), then=then)
    else:
        state = oauth_text.HELD_EXPIRING.format(minutes=int(token.expires_at - now) // 60)
    return state, token.scope
