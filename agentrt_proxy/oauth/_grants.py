"""Token requests: the authorization code exchange, a refresh, and the client credentials grant.

Each carries the RFC 8707 ``resource``. The client authenticates as its registration says, or
as the authorization server offers: ``client_secret_basic`` by preference, ``client_secret_post``,
or ``none`` (a public client with PKCE) when it holds no secret; with a private key instead of
a secret, a signed JWT assertion (``private_key_jwt``, ES256: ``jwt_assertion``).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from typing import Any

from agentrt_proxy.canonical.quoting import go_quote
from agentrt_proxy.oauth import _wire as wire
from agentrt_proxy.oauth._discovery import AuthServer
from agentrt_proxy.oauth._wire import OAuthError
from agentrt_proxy.oauth.tokens import Token
from agentrt_proxy.text import oauth_text

__all__ = ["Client", "RefreshRefused", "auth_method", "client_credentials", "exchange_code", "refresh"]

BASIC, POST, NONE, JWT = "client_secret_basic", "client_secret_post", "none", "private_key_jwt"


class RefreshRefused(OAuthError):
    """The authorization server refused the refresh token (revoked, expired, spent): only a new
    ``login`` brings a token."""


@dataclass(frozen=True)
class Client:
    client_id: str
    client_secret: str | None = None
    auth_method: str = NONE
    private_key: str | None = None  # a PEM, for private_key_jwt


def auth_method(server: AuthServer, secret: str | None, registered: str | None = None, *, key: bool = False) -> str:
    """How a client with ``secret`` (or none, or a private ``key``) authenticates at ``server``'s token endpoint."""
    if key:
        return JWT
    if registered in (BASIC, POST, NONE):
        return registered
    if secret is None:
        return NONE
    if server.auth_methods and BASIC not in server.auth_methods and POST in server.auth_methods:
        return POST
    return BASIC


def _request(endpoint: str, fields: dict[str, str], client: Client, audience: str) -> dict[str, Any]:
    basic = None
    if client.auth_method == JWT and client.private_key is not None:
        from agentrt_proxy.oauth._jwt_assertion import ASSERTION_TYPE, assertion, private_scalar

        fields["client_id"] = client.client_id
        fields["client_assertion_type"] = ASSERTION_TYPE
        fields["client_assertion"] = assertion(client.client_id, audience, private_scalar(client.private_key))
    elif client.auth_method == BASIC and client.client_secret is not None:
        basic = (client.client_id, client.client_secret)
    else:
        fields["client_id"] = client.client_id
        if client.auth_method == POST and client.client_secret is not None:
            fields["client_secret"] = client.client_secret
    answer = wire.post_form(endpoint, fields, basic)
    document = answer.json()
    if answer.status != 200:
        error = document.get("error") if isinstance(document, dict) else None
        message = oauth_text.TOKEN_ENDPOINT_ANSWERED.format(q_endpoint=go_quote(endpoint), error=wire.error_of(answer))
        if (
            fields.get("grant_type") == "refresh_token"
            and answer.status in (400, 401)
            and error
            in (
                "invalid_grant",
                "invalid_client",
                "unauthorized_client",
                None,
            )
        ):
            raise RefreshRefused(message)
        raise OAuthError(message)
    if not isinstance(document, dict) or not isinstance(document.get("access_token"), str):
        raise OAuthError(oauth_text.TOKEN_ENDPOINT_NO_TOKEN.format(q_endpoint=go_quote(endpoint)))
    kind = document.get("token_type")
    if isinstance(kind, str) and kind.lower() != "bearer":
        raise OAuthError(
            oauth_text.TOKEN_ENDPOINT_NOT_BEARER.format(q_endpoint=go_quote(endpoint), q_kind=go_quote(kind))
        )
    return document


def _expiry(document: dict[str, Any], now: float) -> float | None:
    seconds = document.get("expires_in")
    if isinstance(seconds, bool) or not isinstance(seconds, int | float) or seconds < 0:
        return None
    return now + float(seconds)


def _token(
    document: dict[str, Any],
    server_name: str,
    server: AuthServer,
    resource: str,
    client: Client,
    grant: str,
    asked_scope: str,
    now: float,
) -> Token:
    refresh_token = document.get("refresh_token")
    scope = document.get("scope")
    return Token(
        server=server_name,
        issuer=server.issuer,
        resource=resource,
        client_id=client.client_id,
        access_token=document["access_token"],
        token_endpoint=server.token_endpoint,
        refresh_token=refresh_token if isinstance(refresh_token, str) and refresh_token else None,
        expires_at=_expiry(document, now),
        issued_at=now,
        scope=scope if isinstance(scope, str) else asked_scope,
        auth_method=client.auth_method,
        grant=grant,
    )


def exchange_code(
    server_name: str,
    server: AuthServer,
    client: Client,
    code: str,
    verifier: str,
    redirect_uri: str,
    resource: str,
    scope: str,
) -> Token:
    fields = {
        "grant_type": "authorization_code",
        "code": code,
        "redirect_uri": redirect_uri,
        "code_verifier": verifier,
        "resource": resource,
    }
    now = time.time()
    document = _request(server.token_endpoint, fields, client, server.issuer)
    return _token(document, server_name, server, resource, client, "authorization_code", scope, now)


def client_credentials(server_name: str, server: AuthServer, client: Client, resource: str, scope: str) -> Token:
    fields = {"grant_type": "client_credentials", "resource": resource}
    if scope:
        fields["scope"] = scope
    now = time.time()
    document = _request(server.token_endpoint, fields, client, server.issuer)
    return _token(document, server_name, server, resource, client, "client_credentials", scope, now)


def refresh(token: Token, secret: str | None, private_key: str | None = None) -> Token:
    """A fresh access token for ``token``: with its refresh token, or (client credentials) anew.
    A refresh token the server did not rotate stays the one held."""
    client = Client(
        token.client_id, secret if secret is not None else token.client_secret, token.auth_method, private_key
    )
    fields = {"resource": token.resource}
    if token.grant == "client_credentials":
        fields["grant_type"] = "client_credentials"
    elif token.refresh_token is None:
        raise RefreshRefused(oauth_text.NO_REFRESH_TOKEN)
    else:
        fields.update(grant_type="refresh_token", refresh_token=token.refresh_token)
    if token.scope and token.grant == "client_credentials":
        fields["scope"] = token.scope
    now = time.time()
    document = _request(token.token_endpoint, fields, client, token.issuer)
    new_refresh = document.get("refresh_token")
    scope = document.get("scope")
    return replace(
        token,
        access_token=document["access_token"],
        refresh_token=new_refresh if isinstance(new_refresh, str) and new_refresh else token.refresh_token,
        expires_at=_expiry(document, now),
        issued_at=now,
        scope=scope if isinstance(scope, str) else token.scope,
    )
