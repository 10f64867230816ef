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
from agentrt_proxy.config import _messages as T
from agentrt_proxy.config._env_refs import EnvReferenceError, expand
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
    where = T.AUTH_WHERE.format(q_server=go_quote(server))
    if not http:
        fail(T.AUTH_HTTP_ONLY.format(where=where))
    if not isinstance(value, dict):
        fail(T.AUTH_NOT_OBJECT.format(where=where))
    for name in value:
        if name not in _FIELDS:
            fail(T.UNKNOWN_FIELD.format(q_name=go_quote(name), where=T.UNKNOWN_FIELD_IN.format(where=where)))
    kind = value.get("type")
    if kind != "oauth":
        shown = kind if isinstance(kind, str) else ""
        fail(T.AUTH_TYPE.format(where=where, q_kind=go_quote(shown)))
    client_id = _string(value, "client_id", where, fail)
    secret = _secret(value, "client_secret", where, environ, fail)
    private_key = _secret(value, "private_key", where, environ, fail)
    grant = _string(value, "grant", where, fail) or AUTHORIZATION_CODE
    if grant not in OAUTH_GRANTS:
        fail(T.AUTH_GRANT.format(where=where, q_grant=go_quote(grant)))
    if grant == CLIENT_CREDENTIALS and (client_id is None or not ({"client_secret", "private_key"} & set(value))):
        fail(T.AUTH_CREDENTIALS_NEED.format(where=where))
    for name in ("client_secret", "private_key"):
        if name in value and client_id is None:
            fail(T.AUTH_NEEDS_CLIENT_ID.format(where=where, name=name))
    if "client_secret" in value and "private_key" in value:
        fail(T.AUTH_TWO_WAYS.format(where=where))
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
        fail(T.AUTH_NOT_STRING.format(where=where, name=name))
    return text


def _secret(value: dict[str, Any], name: str, where: str, environ: Mapping[str, str] | None, fail: Fail) -> str | None:
    text = value.get(name)
    if text is None:
        return None
    # The value itself is never echoed: it may be the secret, written where it must not be.
    if not isinstance(text, str) or isinstance(text, Number) or not _WHOLE_REFERENCE.fullmatch(text):
        fail(T.AUTH_SECRET_FROM_ENV.format(where=where, name=name))
    try:
        return expand(text, environ)
    except EnvReferenceError as err:
        fail(T.AUTH_SECRET_UNREAD.format(where=where, name=name, error=err))


def _scopes(value: Any, where: str, fail: Fail) -> tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(s, str) and not isinstance(s, Number) for s in value):
        fail(T.AUTH_SCOPES.format(where=where))
    for scope in value:
        if not _SCOPE.fullmatch(scope):
            fail(T.AUTH_SCOPE_BAD.format(where=where, q_scope=go_quote(scope)))
    return tuple(value)


def _port(value: Any, where: str, fail: Fail) -> int | None:
    if value is None:
        return None
    if not isinstance(value, Number) or not value.is_integer_literal() or not 1 <= int(value) <= 65535:
        fail(T.AUTH_PORT.format(where=where))
    return int(value)


def _check_metadata_url(url: str, where: str, fail: Fail) -> None:
    parts = urllib.parse.urlsplit(url)
    loopback = parts.hostname in ("127.0.0.1", "localhost", "::1")
    if parts.scheme != "https" and not (parts.scheme == "http" and loopback):
        fail(T.AUTH_METADATA_HTTPS.format(where=where, q_url=go_quote(url)))
    if not parts.hostname or parts.path in ("", "/"):
        fail(T.AUTH_METADATA_DOCUMENT.format(where=where, q_url=go_quote(url)))
