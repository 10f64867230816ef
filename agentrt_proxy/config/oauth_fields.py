"""A server's ``auth`` field: ``{"type": "oauth", ...}``, the proxy as the OAuth client of an HTTP
server (docs/oauth.md).

The secret is the one value here that is a credential, so it may only be read from the proxy's
environment (``"client_secret": "${env:NAME}"``, the whole value): a secret written into the file
would sit in every copy of it. The tokens themselves are never configured: ``login`` fetches them
into the token file beside the database.
"""

from __future__ import annotations

import re
import urllib.parse
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, NoReturn

from agentrt_proxy.canonical import Number
from agentrt_proxy.canonical.quoting import go_quote
from agentrt_proxy.config.env_refs import EnvReferenceError, expand
from agentrt_proxy.config.model import (
    AUTHORIZATION_CODE,
    CLIENT_CREDENTIALS,
    OAUTH_GRANTS,
    TOKEN_FILE_SUFFIX,
    OAuthConfig,
)

_WHOLE_REFERENCE = re.compile(r"\$\{env:[A-Za-z_][A-Za-z0-9_]*\}")
_SCOPE = re.compile(r"[\x21\x23-\x5b\x5d-\x7e]+")  # RFC 6749 §3.3 scope-token
_FIELDS = (
    "type",
    "client_id",
    "client_secret",
    "private_key",
    "scopes",
    "client_metadata_url",
    "redirect_port",
    "grant",
)

Fail = Callable[[str], NoReturn]


def token_file(database: Path) -> Path:
    """Where the OAuth tokens of a configuration live: one file beside its database."""
    return database.with_name(database.name + TOKEN_FILE_SUFFIX)


def auth(
    server: str,
    value: Any,
    *,
    http: bool,
    database: Path,
    config_path: Path,
    environ: Mapping[str, str] | None,
    fail: Fail,
) -> OAuthConfig | None:
    """The server's ``auth`` entry, checked; None when it has none."""
    if value is None:
        return None
    where = f"server {go_quote(server)}: auth"
    if not http:
        fail(f"{where} applies only to a streamable HTTP server (endpoint); a stdio server reads its environment")
    if not isinstance(value, dict):
        fail(f'{where} must be an object such as {{"type": "oauth"}}')
    for name in value:
        if name not in _FIELDS:
            fail(f"unknown field {go_quote(name)} in {where}")
    kind = value.get("type")
    if kind != "oauth":
        shown = kind if isinstance(kind, str) else ""
        fail(f'{where}: type {go_quote(shown)} is not "oauth" (the one kind of auth there is)')
    client_id = _string(value, "client_id", where, fail)
    secret = _secret(value, "client_secret", where, environ, fail)
    private_key = _secret(value, "private_key", where, environ, fail)
    grant = _string(value, "grant", where, fail) or AUTHORIZATION_CODE
    if grant not in OAUTH_GRANTS:
        fail(f"{where}: grant {go_quote(grant)} is not authorization_code or client_credentials")
    if grant == CLIENT_CREDENTIALS and (client_id is None or not ({"client_secret", "private_key"} & set(value))):
        fail(f"{where}: the client_credentials grant needs client_id and client_secret (or private_key)")
    for name in ("client_secret", "private_key"):
        if name in value and client_id is None:
            fail(f"{where}: {name} needs the client_id it belongs to")
    if "client_secret" in value and "private_key" in value:
        fail(f"{where}: client_secret and private_key are two ways to authenticate the client: give one")
    metadata_url = _string(value, "client_metadata_url", where, fail)
    if metadata_url is not None:
        _check_metadata_url(metadata_url, where, fail)
    return OAuthConfig(
        token_file=token_file(database),
        config_path=config_path,
        client_id=client_id,
        client_secret=secret,
        private_key=private_key,
        scopes=_scopes(value.get("scopes"), where, fail),
        client_metadata_url=metadata_url,
        redirect_port=_port(value.get("redirect_port"), where, fail),
        grant=grant,
    )


def _string(value: dict[str, Any], name: str, where: str, fail: Fail) -> str | None:
    text = value.get(name)
    if text is None:
        return None
    if not isinstance(text, str) or isinstance(text, Number) or not text:
        fail(f"{where}: {name} must be a non-empty string")
    return text


def _secret(value: dict[str, Any], name: str, where: str, environ: Mapping[str, str] | None, fail: Fail) -> str | None:
    text = value.get(name)
    if text is None:
        return None
    # The value itself is never echoed: it may be the secret, written where it must not be.
    if not isinstance(text, str) or isinstance(text, Number) or not _WHOLE_REFERENCE.fullmatch(text):
        fail(f'{where}: {name} must be "${{env:NAME}}" (read from the environment), never the secret itself')
    try:
        return expand(text, environ)
    except EnvReferenceError as err:
        fail(f"{where}: {name}: {err}")


def _scopes(value: Any, where: str, fail: Fail) -> tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(s, str) and not isinstance(s, Number) for s in value):
        fail(f"{where}: scopes must be an array of strings")
    for scope in value:
        if not _SCOPE.fullmatch(scope):
            fail(f"{where}: scopes: {go_quote(scope)} is not one OAuth scope (no spaces, quotes or backslashes)")
    return tuple(value)


def _port(value: Any, where: str, fail: Fail) -> int | None:
    if value is None:
        return None
    if not isinstance(value, Number) or not value.is_integer_literal() or not 1 <= int(value) <= 65535:
        fail(f"{where}: redirect_port must be a whole number from 1 to 65535")
    return int(value)


def _check_metadata_url(url: str, where: str, fail: Fail) -> None:
    parts = urllib.parse.urlsplit(url)
    loopback = parts.hostname in ("127.0.0.1", "localhost", "::1")
    if parts.scheme != "https" and not (parts.scheme == "http" and loopback):
        fail(f"{where}: client_metadata_url {go_quote(url)} must be an https:// URL")
    if not parts.hostname or parts.path in ("", "/"):
        fail(f"{where}: client_metadata_url {go_quote(url)} must name a document (a URL with a path)")
