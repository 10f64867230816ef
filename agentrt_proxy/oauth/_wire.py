"""The OAuth client's HTTP requests, on the standard library (``urllib.request``).

Redirects are never followed: a metadata document or a token endpoint that redirects is
refused, so a credential is sent only to the URL discovery named. Bodies are capped. An error
answer is described by its status and, for a token endpoint, its ``error`` and
``error_description`` fields (escaped), never by its body: a body may echo what was sent.
"""

from __future__ import annotations

import base64
import json
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from agentrt_proxy.canonical.quoting import go_escape, go_quote
from agentrt_proxy.errors import UpstreamError
from agentrt_proxy.text import oauth_text

__all__ = ["HttpAnswer", "OAuthError", "get", "post_form", "post_json"]

TIMEOUT = 30.0
MAX_BODY = 1 << 20  # a metadata document or a token answer is a few hundred bytes
USER_AGENT = "agentrt-proxy-oauth"


class OAuthError(UpstreamError):
    """Discovery, registration, authorization or a token request failed; the message names the
    URL or the server and what failed, never a token or a secret."""


@dataclass(frozen=True)
class HttpAnswer:
    status: int
    headers: Mapping[str, str]
    body: bytes

    def json(self) -> Any:
        try:
            return json.loads(self.body)
        except ValueError:
            return None

    def header(self, name: str) -> str:
        for key, value in self.headers.items():
            if key.lower() == name.lower():
                return value
        return ""


class _NoRedirects(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None  # the 3xx itself is the answer: its target is never contacted


_OPENER = urllib.request.build_opener(_NoRedirects)


def _send(request: urllib.request.Request) -> HttpAnswer:
    request.add_header("User-Agent", USER_AGENT)
    try:
        with _OPENER.open(request, timeout=TIMEOUT) as resp:
            return HttpAnswer(resp.status, dict(resp.headers.items()), _read(resp))
    except urllib.error.HTTPError as err:
        try:
            body = _read(err)
        finally:
            err.close()
        return HttpAnswer(err.code, dict(err.headers.items()) if err.headers else {}, body)
    except (urllib.error.URLError, OSError, ValueError) as err:
        reason = getattr(err, "reason", err)
        raise OAuthError(f"{request.get_method()} {go_quote(request.full_url)}: {go_escape(str(reason))}") from None


def _read(resp: Any) -> bytes:
    body = resp.read(MAX_BODY + 1)
    if len(body) > MAX_BODY:
        raise OAuthError(oauth_text.ANSWER_TOO_LONG.format(q_url=go_quote(resp.geturl()), most=MAX_BODY))
    return bytes(body)


def get(url: str, headers: Mapping[str, str] | None = None) -> HttpAnswer:
    return _send(urllib.request.Request(url, headers=dict(headers or {}), method="GET"))


def post_json(url: str, document: Any, headers: Mapping[str, str] | None = None) -> HttpAnswer:
    data = json.dumps(document).encode("utf-8")
    all_headers = {"Content-Type": "application/json", "Accept": "application/json", **(headers or {})}
    return _send(urllib.request.Request(url, data=data, headers=all_headers, method="POST"))


def post_form(url: str, fields: Mapping[str, str], basic: tuple[str, str] | None = None) -> HttpAnswer:
    """A form POST (a token request); ``basic``: client_secret_basic (RFC 6749 §2.3.1)."""
    headers = {"Content-Type": "application/x-www-form-urlencoded", "Accept": "application/json"}
    if basic is not None:
        pair = f"{urllib.parse.quote(basic[0], safe='')}:{urllib.parse.quote(basic[1], safe='')}"
        headers["Authorization"] = "Basic " + base64.b64encode(pair.encode("utf-8")).decode("ascii")
    data = urllib.parse.urlencode(fields).encode("ascii")
    return _send(urllib.request.Request(url, data=data, headers=headers, method="POST"))


def error_of(answer: HttpAnswer) -> str:
    """An error answer as the operator reads it: the status and the OAuth error, if one."""
    text = f"HTTP {answer.status}"
    document = answer.json()
    if isinstance(document, dict) and isinstance(document.get("error"), str):
        text += f": {go_escape(document['error'][:100])}"
        description = document.get("error_description")
        if isinstance(description, str) and description:
            text += f" ({go_escape(description[:200])})"
    return text
