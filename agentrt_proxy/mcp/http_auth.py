"""What the HTTP transport asks of whoever holds a server's credentials (MCP authorization).

The wire layer knows no OAuth: it asks its ``Authorizer`` for the headers of each request (a
bearer token, fetched or refreshed as its holder sees fit) and hands it the server's refusal
(401, or 403 with ``error="insufficient_scope"``). Both are called from the transport's worker
threads, so either may block on the network or a file lock. A refusal means the server did not
process the request: the transport writes it once more with fresh headers when the authorizer
says a new token may cure it, and otherwise fails it as not sent (``AuthorizationRefused``)
with the authorizer's sentence.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

__all__ = ["Authorizer", "challenge_params", "is_scope_challenge"]


class Authorizer(Protocol):
    def headers(self) -> dict[str, str]:
        """The credential headers for the next request (may be empty: no token yet)."""
        ...

    def rejected(self, status: int, challenge: str, sent: Mapping[str, str], *, final: bool) -> str | None:
        """The server refused a request sent with ``sent`` headers, challenging with
        ``challenge`` (its ``WWW-Authenticate``, or ""). None: try once more with fresh headers
        (never when ``final``: the retry was refused too); otherwise the sentence the request
        fails with."""
        ...


def challenge_params(header: str) -> dict[str, str]:
    """The parameters of a ``Bearer`` challenge (RFC 6750 §3): ``realm``, ``error``, ``scope``,
    ``resource_metadata``...; quoted strings unquoted. Parameters of other schemes are left out."""
    params: dict[str, str] = {}
    i, n = 0, len(header)
    in_bearer = False
    while i < n:
        while i < n and header[i] in " \t,":
            i += 1
        start = i
        while i < n and header[i] not in " \t,=":
            i += 1
        token = header[start:i]
        if not token:
            i += 1
            continue
        j = i
        while j < n and header[j] in " \t":
            j += 1
        if j < n and header[j] == "=" and not (j + 1 < n and header[j + 1] == "="):
            i = j + 1
            while i < n and header[i] in " \t":
                i += 1
            value, i = _value(header, i)
            if in_bearer:
                params[token.lower()] = value
            continue
        in_bearer = token.lower() == "bearer"  # a scheme's name (a token68 after one ends Bearer too)
    return params


def _value(header: str, i: int) -> tuple[str, int]:
    n = len(header)
    if i < n and header[i] == '"':
        out: list[str] = []
        i += 1
        while i < n and header[i] != '"':
            if header[i] == "\\" and i + 1 < n:
                i += 1
            out.append(header[i])
            i += 1
        return "".join(out), i + 1
    start = i
    while i < n and header[i] not in ",":
        i += 1
    return header[start:i].strip(), i


def is_scope_challenge(status: int, header: str) -> bool:
    """A 403 that asks for more scope (step-up), as against a plain refusal of the request."""
    return status == 403 and challenge_params(header).get("error") == "insufficient_scope"
