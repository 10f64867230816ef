"""How to reach one upstream server, and the environment a stdio server is given."""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from agentrt_proxy.canonical.quoting import go_quote
from agentrt_proxy.mcp import _messages as M
from agentrt_proxy.mcp.errors import ServerSpecError

__all__ = [
    "DEFAULT_CONNECT_TIMEOUT_NS",
    "DEFAULT_MAX_CONTENT_BYTES",
    "DEFAULT_MAX_MESSAGE_BYTES",
    "MAX_RESPONSE_BODY_BYTES",
    "MAX_TOOLS",
    "MAX_TOOL_PAGES",
    "STDERR_TAIL_BYTES",
    "ServerSpec",
    "child_env",
]

DEFAULT_MAX_CONTENT_BYTES = 32 * 1024 * 1024  # a result's cap; the configuration's max_result_bytes default
MAX_TOOL_PAGES = 100
MAX_TOOLS = 1000
DEFAULT_CONNECT_TIMEOUT_NS = 30 * 1_000_000_000
DEFAULT_MAX_MESSAGE_BYTES = 80 << 20  # the configuration's max_message_bytes, by default
MAX_RESPONSE_BODY_BYTES = DEFAULT_MAX_MESSAGE_BYTES  # the HTTP transport's default body cap
STDERR_TAIL_BYTES = 4096
CLIENT_INFO = {"name": "agent-runtime", "version": "0.1.0"}
CLIENT_PROTOCOL_VERSION = "2025-11-25"

_BASE_UNIX = ("PATH", "HOME", "TMPDIR")
_BASE_WINDOWS = (
    "PATH", "PATHEXT", "SystemRoot", "SystemDrive", "ComSpec", "TEMP", "TMP",
    "USERPROFILE", "APPDATA", "LOCALAPPDATA", "HOME",
)  # fmt: skip


@dataclass(frozen=True)
class ServerSpec:
    """One upstream MCP server: exactly one of ``command`` (stdio) or ``endpoint`` (HTTP).

    ``headers`` are static HTTP headers (e.g. ``Authorization``); they are sent on
    every request and never logged or put into error text. ``max_message_bytes`` bounds one
    message from the server (a stdio line, an HTTP body): a larger one is refused, never held.
    ``forward`` names the server's requests the client declares and relays (``"sampling"``,
    ``"elicitation"``) to whoever set ``Connection.request_handlers``; every other is refused.
    """

    name: str
    command: Sequence[str] = ()
    endpoint: str | None = None
    env: Sequence[str] = ()
    inherit_env: Sequence[str] = ()
    headers: Mapping[str, str] = field(default_factory=dict)
    connect_timeout_ns: int = 0  # 0: DEFAULT_CONNECT_TIMEOUT_NS
    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES
    forward: Sequence[str] = ()

    # An HTTP server's authorizer (``mcp.http_auth.Authorizer``): its headers ride on every
    # request, and it judges a 401 or a 403 insufficient_scope. None: the static headers alone.
    auth: Any = field(default=None, compare=False)

    def validate(self) -> None:
        """Raise ``ServerSpecError`` with the original's wording for an unusable entry."""
        if not self.name:
            raise ServerSpecError(M.NAME_REQUIRED)
        q = go_quote(self.name)
        for name in self.inherit_env:
            if not name or "=" in name:
                raise ServerSpecError(M.INHERIT_ENV_BAD.format(q_server=q, q_name=go_quote(name)))
        for entry in self.env:
            if "=" not in entry or entry.startswith("="):
                raise ServerSpecError(M.ENV_BAD.format(q_server=q, q_entry=go_quote(entry)))
        if self.command and self.endpoint:
            raise ServerSpecError(M.COMMAND_AND_ENDPOINT.format(q_server=q))
        if not self.command and not self.endpoint:
            raise ServerSpecError(M.COMMAND_OR_ENDPOINT.format(q_server=q))
        if self.max_message_bytes <= 0:
            raise ServerSpecError(M.MAX_MESSAGE_BYTES_BAD.format(q_server=q, value=self.max_message_bytes))

    @property
    def effective_connect_timeout_ns(self) -> int:
        return self.connect_timeout_ns or DEFAULT_CONNECT_TIMEOUT_NS


def child_env(
    spec: ServerSpec, environ: Mapping[str, str] | None = None, *, windows: bool | None = None
) -> dict[str, str]:
    """The whole environment of a stdio server: base names, then ``inherit_env``, then ``env``.

    A later entry replaces an earlier one of the same name (case-insensitively on
    Windows, where the first occurrence's spelling and position are kept). Nothing
    else from the proxy's environment reaches the child.
    """
    environ = os.environ if environ is None else environ
    windows = sys.platform == "win32" if windows is None else windows
    out: dict[str, str] = {}
    canon: dict[str, str] = {}  # folded name -> the spelling stored in out

    def put(name: str, value: str) -> None:
        folded = name.upper() if windows else name
        out[canon.setdefault(folded, name)] = value

    def lookup(name: str) -> str | None:
        if not windows:
            return environ.get(name)
        for key, value in environ.items():
            if key.upper() == name.upper():
                return value
        return None

    for name in (*(_BASE_WINDOWS if windows else _BASE_UNIX), *spec.inherit_env):
        value = lookup(name)
        if value is not None:
            put(name, value)
    for entry in spec.env:
        name, _, value = entry.partition("=")
        put(name, value)
    return out
