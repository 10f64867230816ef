"""Finding a server's authorization server and its endpoints (MCP authorization, discovery).

In order: the 401's ``WWW-Authenticate`` (its ``resource_metadata`` and ``scope``); else the
protected resource metadata at the well-known URIs (RFC 9728: the path-aware one first, then the
root); then the authorization server's metadata, RFC 8414 and OpenID Connect discovery, with
the path-insertion variants for an issuer with a path. A server that publishes no resource
metadata is a 2025-03-26 server: its authorization server is its own origin, whose metadata is
at the root, and with none there the default ``/authorize``, ``/token`` and ``/register``.
"""

from __future__ import annotations

import json
import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from agentrt_proxy.canonical.quoting import go_quote
from agentrt_proxy.mcp.http_auth import challenge_params
from agentrt_proxy.oauth import _wire as wire
from agentrt_proxy.oauth._wire import OAuthError
from agentrt_proxy.text import oauth_text

__all__ = ["AuthServer", "Discovery", "canonical_resource", "discover"]

PRM_PATH = "/.well-known/oauth-protected-resource"
AS_PATH = "/.well-known/oauth-authorization-server"
OIDC_PATH = "/.well-known/openid-configuration"
PROBE_VERSION = "2025-11-25"


@dataclass(frozen=True)
class AuthServer:
    """What the client needs of an authorization server; ``from_metadata`` False: the
    2025-03-26 default endpoints, with nothing advertised."""

    issuer: str
    authorization_endpoint: str
    token_endpoint: str
    registration_endpoint: str | None = None
    code_challenge_methods: tuple[str, ...] = ()
    scopes_supported: tuple[str, ...] = ()
    grant_types: tuple[str, ...] = ()
    auth_methods: tuple[str, ...] = ()
    iss_parameter: bool = False
    client_metadata_documents: bool = False
    from_metadata: bool = True


@dataclass(frozen=True)
class Discovery:
    resource: str  # the RFC 8707 resource parameter: the server's canonical URI
    server: AuthServer
    challenge_scope: str | None = None
    resource_scopes: tuple[str, ...] = ()


def _origin(url: str) -> str:
    parts = urllib.parse.urlsplit(url)
    return f"{parts.scheme.lower()}://{parts.netloc.lower()}"


def canonical_resource(endpoint: str) -> str:
    """The server's canonical URI (RFC 8707; MCP: lower-case scheme and host, no fragment, no
    trailing slash for the root)."""
    parts = urllib.parse.urlsplit(endpoint)
    path = parts.path if parts.path not in ("", "/") else ""
    query = f"?{parts.query}" if parts.query else ""
    return f"{_origin(endpoint)}{path}{query}"


def probe(endpoint: str, headers: Mapping[str, str]) -> wire.HttpAnswer:
    """An ``initialize`` without a token: a server behind authorization answers 401 with its
    challenge."""
    message = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": PROBE_VERSION,
            "capabilities": {},
            "clientInfo": {"name": "agentrt-proxy", "version": "login"},
        },
    }
    all_headers = {**headers, "Accept": "application/json, text/event-stream", "MCP-Protocol-Version": PROBE_VERSION}
    return wire.post_json(endpoint, message, all_headers)


def _document(url: str) -> dict[str, Any] | None:
    answer = wire.get(url, {"Accept": "application/json"})
    if answer.status != 200:
        return None
    try:
        document = json.loads(answer.body)
    except ValueError:
        return None
    return document if isinstance(document, dict) else None


def _strings(document: Mapping[str, Any], name: str) -> tuple[str, ...]:
    value = document.get(name)
    if not isinstance(value, list):
        return ()
    return tuple(item for item in value if isinstance(item, str))


def resource_metadata_urls(endpoint: str, challenge_url: str | None) -> list[str]:
    """Where the protected resource metadata may be, in the order they are tried."""
    urls = [challenge_url] if challenge_url else []
    path = urllib.parse.urlsplit(endpoint).path.rstrip("/")
    if path:
        urls.append(_origin(endpoint) + PRM_PATH + path)
    urls.append(_origin(endpoint) + PRM_PATH)
    return urls


def metadata_urls(issuer: str) -> list[str]:
    """Where an issuer's metadata may be: RFC 8414 then OpenID Connect, path-inserted first."""
    origin, path = _origin(issuer), urllib.parse.urlsplit(issuer).path.rstrip("/")
    if not path:
        return [origin + AS_PATH, origin + OIDC_PATH]
    return [origin + AS_PATH + path, origin + OIDC_PATH + path, origin + path + OIDC_PATH]


def _matches(resource: str, endpoint: str) -> bool:
    """The metadata's resource is this server (RFC 9728 §3.3), or a prefix of its path."""
    if _origin(resource) != _origin(endpoint):
        return False
    want = urllib.parse.urlsplit(resource).path.rstrip("/")
    have = urllib.parse.urlsplit(endpoint).path.rstrip("/")
    return have == want or have.startswith(want + "/") or not want


def auth_server(issuer: str, *, fallback: bool) -> AuthServer:
    for url in metadata_urls(issuer):
        document = _document(url)
        if document is None:
            continue
        if not isinstance(document.get("authorization_endpoint"), str) or not isinstance(
            document.get("token_endpoint"), str
        ):
            raise OAuthError(oauth_text.SERVER_METADATA_NO_ENDPOINTS.format(q_url=go_quote(url)))
        named = document.get("issuer")
        # RFC 8414 §3.3: the issuer the resource named must be the one that answers. A 2025-03-26
        # server named none (its origin's metadata is read), so its metadata's issuer is taken as said.
        if isinstance(named, str) and named.rstrip("/") != issuer.rstrip("/") and not fallback:
            raise OAuthError(
                oauth_text.SERVER_METADATA_OTHER_ISSUER.format(
                    q_url=go_quote(url), q_named=go_quote(named), q_issuer=go_quote(issuer)
                )
            )
        registration = document.get("registration_endpoint")
        return AuthServer(
            issuer=named if isinstance(named, str) else issuer,
            authorization_endpoint=document["authorization_endpoint"],
            token_endpoint=document["token_endpoint"],
            registration_endpoint=registration if isinstance(registration, str) else None,
            code_challenge_methods=_strings(document, "code_challenge_methods_supported"),
            scopes_supported=_strings(document, "scopes_supported"),
            grant_types=_strings(document, "grant_types_supported"),
            auth_methods=_strings(document, "token_endpoint_auth_methods_supported"),
            iss_parameter=document.get("authorization_response_iss_parameter_supported") is True,
            client_metadata_documents=document.get("client_id_metadata_document_supported") is True,
        )
    if not fallback:
        raise OAuthError(
            oauth_text.SERVER_METADATA_NONE.format(q_issuer=go_quote(issuer), tried=", ".join(metadata_urls(issuer)))
        )
    base = _origin(issuer)
    return AuthServer(
        issuer=base,
        authorization_endpoint=base + "/authorize",
        token_endpoint=base + "/token",
        registration_endpoint=base + "/register",
        from_metadata=False,
    )


def discover(endpoint: str, headers: Mapping[str, str], challenge: str | None = None) -> Discovery:
    """Everything ``login`` needs to know of the server at ``endpoint`` and its authorization server."""
    asked = True
    if challenge is None:
        answer = probe(endpoint, headers)
        asked = answer.status in (401, 403)
        challenge = answer.header("WWW-Authenticate") if asked else ""
    params = challenge_params(challenge)
    scope = params.get("scope") or None
    for url in resource_metadata_urls(endpoint, params.get("resource_metadata")):
        document = _document(url)
        if document is None:
            continue
        servers = _strings(document, "authorization_servers")
        if not servers:
            raise OAuthError(oauth_text.RESOURCE_METADATA_NO_SERVER.format(q_url=go_quote(url)))
        resource = document.get("resource")
        if not isinstance(resource, str) or not _matches(resource, endpoint):
            shown = resource if isinstance(resource, str) else ""
            raise OAuthError(
                oauth_text.RESOURCE_METADATA_OTHER.format(
                    q_url=go_quote(url), q_resource=go_quote(shown), q_endpoint=go_quote(endpoint)
                )
            )
        return Discovery(
            resource, auth_server(servers[0], fallback=False), scope, _strings(document, "scopes_supported")
        )
    if not asked:
        raise OAuthError(oauth_text.NEEDS_NO_LOGIN.format(q_endpoint=go_quote(endpoint)))
    # No resource metadata: a 2025-03-26 server, its own origin the authorization server.
    return Discovery(canonical_resource(endpoint), auth_server(_origin(endpoint), fallback=True), scope)
