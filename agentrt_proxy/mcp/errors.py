"""Operator-facing errors of the upstream clients, and the quoting they use."""

from __future__ import annotations

from agentrt_proxy.errors import ConfigurationError, UpstreamDropped, UpstreamError, UpstreamNotSent

__all__ = ["ConnectError", "McpError", "ServerSpecError", "SessionClosed", "TransportError", "escape", "go_quote"]


class McpError(UpstreamError):
    """An upstream failure; ``str()`` is the complete operator-facing sentence."""


class ServerSpecError(ConfigurationError):
    """A server entry that cannot be used (malformed env, both command and endpoint…): the
    configuration's fault, found before anything starts."""


class ConnectError(McpError, UpstreamNotSent):
    """Connecting, the handshake or the first listing failed (names server and phase): no tool
    call was sent on the connection, so nothing can have executed."""


class TransportError(UpstreamError):
    """A transport-level failure; the session wraps it into a sentence naming the server. Its kind
    is the client's to judge (a failed call without an answer is recorded as a protocol failure),
    except for ``SessionClosed``."""


class SessionClosed(TransportError, UpstreamDropped):
    """The session is gone for good (process exited, HTTP session expired): a request written
    before it ended has an unknown outcome."""


_SIMPLE = {"\a": "\\a", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t", "\v": "\\v"}


def escape(text: str, *, quote: bool = False) -> str:
    """Make server-chosen text safe for one log line: Go ``%q`` rules, quotes optional."""
    out: list[str] = []
    for ch in text:
        if ch in _SIMPLE:
            out.append(_SIMPLE[ch])
        elif ch == "\\" and quote:
            out.append("\\\\")
        elif ch == '"' and quote:
            out.append('\\"')
        elif "\ud800" <= ch <= "\udfff":
            out.append("\\ufffd")
        elif ch.isprintable() or ch == " ":
            out.append(ch)
        elif ord(ch) < 0x80:
            out.append(f"\\x{ord(ch):02x}")
        elif ord(ch) <= 0xFFFF:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(f"\\U{ord(ch):08x}")
    body = "".join(out)
    return f'"{body}"' if quote else body


def go_quote(text: str) -> str:
    """Go's ``%q`` of a string."""
    return escape(text, quote=True)
