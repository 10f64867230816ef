"""The OAuth client's pure parts, table by table: the ``auth`` field's refusals, the challenge's
parameters, where discovery looks and in which order, which scope is asked for, the PKCE pair,
and the callback's judgement of a redirect (issue 26)."""

from __future__ import annotations

import base64
import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from agentrt_proxy.config import ConfigError, load_config
from agentrt_proxy.config.model import OAuthConfig
from agentrt_proxy.mcp.http_auth import challenge_params, is_scope_challenge
from agentrt_proxy.oauth._callback import _judge
from agentrt_proxy.oauth._discovery import (
    AuthServer,
    Discovery,
    canonical_resource,
    metadata_urls,
    resource_metadata_urls,
)
from agentrt_proxy.oauth.login import choose_scope, pkce_pair
from agentrt_proxy.oauth.tokens import Token


def config_with(tmp_path: Path, auth: Any, **server: Any) -> Path:
    entry = {"name": "docs", "endpoint": "https://docs.example/mcp", "manifest": "m.json", "auth": auth, **server}
    path = tmp_path / "proxy.json"
    path.write_text(json.dumps({"database": "proxy.db", "session": "s", "servers": [entry]}))
    path.chmod(0o600)
    return path


REFUSED = [
    ({"type": "basic"}, 'type "basic" is not "oauth"'),
    ("oauth", "must be an object"),
    ({"type": "oauth", "client_secret": "s3cr3t-literal", "client_id": "a"}, 'client_secret must be "${env:NAME}"'),
    ({"type": "oauth", "client_secret": "${env:NOT_SET_HERE}", "client_id": "a"}, "NOT_SET_HERE is not set"),
    ({"type": "oauth", "client_secret": "${env:HOME}"}, "client_secret needs the client_id"),
    ({"type": "oauth", "grant": "client_credentials"}, "needs client_id and client_secret"),
    ({"type": "oauth", "grant": "password"}, 'grant "password" is not authorization_code or client_credentials'),
    ({"type": "oauth", "scopes": "read"}, "scopes must be an array of strings"),
    ({"type": "oauth", "scopes": ["read write"]}, "is not one OAuth scope"),
    ({"type": "oauth", "redirect_port": 70000}, "redirect_port must be a whole number from 1 to 65535"),
    ({"type": "oauth", "client_metadata_url": "http://client.example/meta.json"}, "must be an https:// URL"),
    ({"type": "oauth", "client_metadata_url": "https://client.example"}, "must name a document"),
    ({"type": "oauth", "token": "abc"}, 'unknown field "token" in server "docs": auth'),
    ({"type": "oauth", "client_id": "a", "private_key": "-----BEGIN"}, 'private_key must be "${env:NAME}"'),
    ({"type": "oauth", "private_key": "${env:HOME}"}, "private_key needs the client_id"),
    ({"type": "oauth", "client_id": "a", "private_key": "${env:HOME}", "client_secret": "${env:HOME}"}, "give one"),
]


@pytest.mark.parametrize(("auth", "message"), REFUSED)
def test_a_bad_auth_entry_is_refused_naming_the_field(tmp_path: Path, auth: Any, message: str) -> None:
    with pytest.raises(ConfigError) as refused:
        load_config(config_with(tmp_path, auth))
    assert message in str(refused.value)
    assert "s3cr3t-literal" not in str(refused.value)  # a secret written in the file is never echoed


def test_auth_on_a_stdio_server_is_refused(tmp_path: Path) -> None:
    path = config_with(tmp_path, {"type": "oauth"}, endpoint=None, command=["x"])
    text = json.loads(path.read_text())
    del text["servers"][0]["endpoint"]
    path.write_text(json.dumps(text))
    with pytest.raises(ConfigError, match="applies only to a streamable HTTP server"):
        load_config(path)


def test_a_full_auth_entry_loads_with_the_secret_read_from_the_environment(tmp_path: Path) -> None:
    auth = {
        "type": "oauth",
        "client_id": "proxy",
        "client_secret": "${env:DOCS_SECRET}",
        "scopes": ["docs:read", "docs:write"],
        "redirect_port": 8765,
        "grant": "client_credentials",
    }
    loaded = load_config(config_with(tmp_path, auth), environ={"DOCS_SECRET": "from-env"}).servers[0].auth
    assert loaded == OAuthConfig(
        token_file=tmp_path / "proxy.db.oauth-tokens.json",
        config_path=tmp_path / "proxy.json",
        client_id="proxy",
        client_secret="from-env",
        scopes=("docs:read", "docs:write"),
        redirect_port=8765,
        grant="client_credentials",
    )


CHALLENGES = [
    ('Bearer resource_metadata="https://a/.well-known/x", scope="read write"',
     {"resource_metadata": "https://a/.well-known/x", "scope": "read write"}),
    ('Bearer error="insufficient_scope", scope="files:write", error_description="needs \\"more\\""',
     {"error": "insufficient_scope", "scope": "files:write", "error_description": 'needs "more"'}),
    ("Bearer error=invalid_token", {"error": "invalid_token"}),
    ('Basic realm="old", Bearer realm="new"', {"realm": "new"}),
    ('Basic realm="only basic"', {}),
    ("", {}),
]  # fmt: skip


@pytest.mark.parametrize(("header", "params"), CHALLENGES)
def test_a_bearer_challenge_reads_as_its_parameters(header: str, params: dict[str, str]) -> None:
    assert challenge_params(header) == params


def test_only_a_403_asking_for_scope_is_a_step_up() -> None:
    assert is_scope_challenge(403, 'Bearer error="insufficient_scope", scope="x"')
    assert not is_scope_challenge(403, 'Bearer error="invalid_token"')
    assert not is_scope_challenge(401, 'Bearer error="insufficient_scope"')


def test_resource_metadata_is_looked_for_at_the_challenge_then_path_aware_then_root() -> None:
    assert resource_metadata_urls("https://h.example/v1/mcp", "https://m.example/prm") == [
        "https://m.example/prm",
        "https://h.example/.well-known/oauth-protected-resource/v1/mcp",
        "https://h.example/.well-known/oauth-protected-resource",
    ]
    assert resource_metadata_urls("https://h.example/", None) == [
        "https://h.example/.well-known/oauth-protected-resource"
    ]


@pytest.mark.parametrize(
    ("issuer", "urls"),
    [
        ("https://as.example", ["https://as.example/.well-known/oauth-authorization-server",
                                "https://as.example/.well-known/openid-configuration"]),
        ("https://as.example/tenant1/", ["https://as.example/.well-known/oauth-authorization-server/tenant1",
                                         "https://as.example/.well-known/openid-configuration/tenant1",
                                         "https://as.example/tenant1/.well-known/openid-configuration"]),
    ],
)  # fmt: skip
def test_authorization_server_metadata_is_looked_for_with_path_insertion_first(issuer: str, urls: list[str]) -> None:
    assert metadata_urls(issuer) == urls


def test_the_canonical_resource_lowers_scheme_and_host_and_drops_a_root_slash() -> None:
    assert canonical_resource("HTTPS://Docs.Example/MCP#x") == "https://docs.example/MCP"
    assert canonical_resource("https://docs.example/") == "https://docs.example"


def _found(challenge: str | None, resource_scopes: tuple[str, ...], offered: tuple[str, ...] = ()) -> Discovery:
    server = AuthServer("https://as", "https://as/a", "https://as/t", scopes_supported=offered)
    return Discovery("https://r/mcp", server, challenge, resource_scopes)


def _auth(*scopes: str) -> OAuthConfig:
    return OAuthConfig(token_file=Path("t"), config_path=Path("c"), scopes=scopes)


HELD = Token("docs", "https://as", "https://r/mcp", "c", "at", "https://as/t", scope="read", step_up="read write")

SCOPES = [
    (_auth(), _found("read", ("read", "write")), None, "read"),
    (_auth(), _found(None, ("read", "write")), None, "read write"),
    (_auth(), _found(None, ()), None, ""),
    (_auth(), _found(None, (), ("offline_access",)), None, ""),  # nothing named: nothing asked, not even offline
    (_auth(), _found("read", (), ("offline_access",)), None, "read offline_access"),
    (_auth("admin"), _found("read", ("read",)), None, "admin"),
    (_auth(), _found("read", ()), HELD, "read write"),  # step-up: what a 403 asked for since
]


@pytest.mark.parametrize(("auth", "found", "held", "scope"), SCOPES)
def test_the_scope_asked_for(auth: OAuthConfig, found: Discovery, held: Token | None, scope: str) -> None:
    assert choose_scope(auth, found, held) == scope


def test_the_pkce_challenge_is_the_s256_of_the_verifier() -> None:
    verifier, challenge = pkce_pair()
    assert 43 <= len(verifier) <= 128
    assert challenge == base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
    assert pkce_pair()[0] != verifier


CALLBACKS = [
    ({"code": "c1", "iss": "https://as"}, True, "c1", None),
    ({"code": "c1"}, False, "c1", None),
    ({"code": "c1"}, True, None, "carries no iss"),
    ({"code": "c1", "iss": "https://evil"}, False, None, "is not the issuer"),
    ({"error": "access_denied", "error_description": "no"}, False, None, "answered access_denied (no)"),
    ({}, False, None, "carries no code"),
]


@pytest.mark.parametrize(("query", "iss_required", "code", "failure"), CALLBACKS)
def test_the_matching_callback_is_judged(query: dict[str, str], iss_required: bool, code: str | None,
                                         failure: str | None) -> None:  # fmt: skip
    outcome = _judge(query, "https://as", iss_required)
    assert outcome.code == code
    assert (failure is None and outcome.failure is None) or (failure and failure in (outcome.failure or ""))
