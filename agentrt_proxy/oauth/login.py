"""``login``: fetch a server's first token, as the MCP authorization specification lays out.

Discovery (``discovery``), then the client's identity in the specification's order of
preference: the operator's pre-registered ``client_id``; a client ID metadata document the
operator hosts (``client_metadata_url``), when the authorization server accepts them; dynamic
client registration (RFC 7591). Then the authorization code flow with PKCE S256 (a server whose
metadata does not list S256 is refused), ``resource`` (RFC 8707) on the authorization and token
requests, and the redirect to a loopback listener (``callback``); or, for machine-to-machine
use, the client credentials grant. The token goes into the token file beside the database.

The scope asked for: the operator's ``scopes``, else the challenge's ``scope``, else the
resource's ``scopes_supported``, else none at all; with whatever a 403 asked for since (step-up)
and the token's earlier scopes, and ``offline_access`` when the authorization server offers it.
"""

from __future__ import annotations

import base64
import hashlib
import os
import secrets
import sys
import urllib.parse
from collections.abc import Callable
from dataclasses import replace

from agentrt_proxy.canonical.quoting import go_quote
from agentrt_proxy.config.model import CLIENT_CREDENTIALS, OAuthConfig, ServerConfig
from agentrt_proxy.oauth import _wire as wire
from agentrt_proxy.oauth._callback import Callback
from agentrt_proxy.oauth._discovery import AuthServer, Discovery, discover
from agentrt_proxy.oauth._grants import NONE, Client, auth_method, client_credentials, exchange_code
from agentrt_proxy.oauth._wire import OAuthError
from agentrt_proxy.oauth.tokens import Token, TokenFile
from agentrt_proxy.text import oauth_text

__all__ = ["choose_scope", "login", "pkce_pair"]

LOGIN_WAIT = 300.0  # seconds the operator has to authorize in the browser
OFFLINE_ACCESS = "offline_access"
CLIENT_NAME = "agentrt-proxy"

Say = Callable[[str], None]


def pkce_pair() -> tuple[str, str]:
    """A code verifier (RFC 7636: 43 to 128 characters) and its S256 challenge."""
    verifier = secrets.token_urlsafe(48)
    digest = hashlib.sha256(verifier.encode("ascii")).digest()
    return verifier, base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")


def choose_scope(auth: OAuthConfig, found: Discovery, held: Token | None) -> str:
    if auth.scopes:
        scopes = list(auth.scopes)
    elif found.challenge_scope:
        scopes = found.challenge_scope.split()
    else:
        scopes = list(found.resource_scopes)
    if held is not None:
        scopes += held.scope.split() + held.step_up.split()
    if (
        scopes
        and auth.grant != CLIENT_CREDENTIALS
        and OFFLINE_ACCESS in found.server.scopes_supported
        and OFFLINE_ACCESS not in scopes
    ):
        scopes.append(OFFLINE_ACCESS)
    return " ".join(dict.fromkeys(scopes))


def _register(server: AuthServer, redirect_uri: str) -> Client:
    """Dynamic client registration (RFC 7591): a public client using PKCE."""
    assert server.registration_endpoint is not None
    metadata = {
        "client_name": CLIENT_NAME,
        "redirect_uris": [redirect_uri],
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        "token_endpoint_auth_method": NONE,
    }
    answer = wire.post_json(server.registration_endpoint, metadata)
    document = answer.json()
    if (
        answer.status not in (200, 201)
        or not isinstance(document, dict)
        or not isinstance(document.get("client_id"), str)
    ):
        raise OAuthError(
            oauth_text.REGISTRATION_ANSWERED.format(
                q_endpoint=go_quote(server.registration_endpoint), error=wire.error_of(answer)
            )
        )
    secret = document.get("client_secret")
    secret = secret if isinstance(secret, str) and secret else None
    method = document.get("token_endpoint_auth_method")
    return Client(
        document["client_id"], secret, auth_method(server, secret, method if isinstance(method, str) else None)
    )


def identify(name: str, auth: OAuthConfig, server: AuthServer, redirect_uri: str) -> tuple[Client, bool]:
    """The client's identity, in the specification's order; and whether registration issued it."""
    if auth.client_id is not None:
        method = auth_method(server, auth.client_secret, key=auth.private_key is not None)
        return Client(auth.client_id, auth.client_secret, method, auth.private_key), False
    if auth.client_metadata_url is not None and server.client_metadata_documents:
        return Client(auth.client_metadata_url), False
    if server.registration_endpoint is not None:
        return _register(server, redirect_uri), True
    raise OAuthError(
        oauth_text.NO_REGISTRATION.format(
            q_server=go_quote(name),
            q_issuer=go_quote(server.issuer),
            nor_metadata=oauth_text.NOR_METADATA_DOCUMENT if auth.client_metadata_url else "",
        )
    )


def authorization_url(
    server: AuthServer, client: Client, redirect_uri: str, challenge: str, state: str, resource: str, scope: str
) -> str:
    params = {
        "response_type": "code",
        "client_id": client.client_id,
        "redirect_uri": redirect_uri,
        "code_challenge": challenge,
        "code_challenge_method": "S256",
        "state": state,
        "resource": resource,
    }
    if scope:
        params["scope"] = scope
    joiner = "&" if urllib.parse.urlsplit(server.authorization_endpoint).query else "?"
    return server.authorization_endpoint + joiner + urllib.parse.urlencode(params, quote_via=urllib.parse.quote)


def open_browser(url: str) -> bool:
    """Open ``url`` in a graphical browser where there is one; never a terminal one."""
    if sys.platform.startswith("linux") and not (os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")):
        return False
    import webbrowser

    try:
        return bool(webbrowser.open(url))
    except webbrowser.Error:
        return False


def login(server: ServerConfig, *, show_url: Say, browser: bool, wait: float = LOGIN_WAIT) -> Token:
    """Fetch ``server``'s token and keep it in the token file; ``show_url`` prints the URL."""
    auth = server.auth
    assert auth is not None and server.endpoint is not None
    store = TokenFile(auth.token_file)
    held = store.find(server.name)
    found = discover(server.endpoint, server.headers)
    scope = choose_scope(auth, found, held)
    if auth.grant == CLIENT_CREDENTIALS:
        client, _ = identify(server.name, auth, found.server, "")
        token = client_credentials(server.name, found.server, client, found.resource, scope)
    else:
        token = _authorize(server.name, auth, found, scope, show_url, browser, wait)
    with store.locked():
        store.put(token)
    return token


def _authorize(
    name: str, auth: OAuthConfig, found: Discovery, scope: str, show_url: Say, browser: bool, wait: float
) -> Token:
    server = found.server
    if server.from_metadata and "S256" not in server.code_challenge_methods:
        raise OAuthError(oauth_text.NO_PKCE.format(q_server=go_quote(name), q_issuer=go_quote(server.issuer)))
    callback = Callback(auth.redirect_port)
    try:
        client, registered = identify(name, auth, server, callback.redirect_uri)
        verifier, challenge = pkce_pair()
        state = secrets.token_urlsafe(32)
        url = authorization_url(server, client, callback.redirect_uri, challenge, state, found.resource, scope)
        show_url(url)
        if browser:
            open_browser(url)
        code = callback.wait(state, server.issuer, server.iss_parameter, wait)
    finally:
        callback.close()
    token = exchange_code(name, server, client, code, verifier, callback.redirect_uri, found.resource, scope)
    return replace(token, client_secret=client.client_secret if registered else None)
