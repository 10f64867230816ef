"""The classified outcome of one upstream ``tools/call``.

Shared by the wire (``mcp/``), which produces it, and the gate, which records it.
See docs/design.md, "Outcome of an upstream call".
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

NoAnswerKind = Literal["timeout", "dropped", "protocol"]


@dataclass(frozen=True)
class Result:
    """The server answered with a ``CallToolResult`` (``isError`` or not).

    ``content`` is the recorded value as a literal-keeping tree (a ``str`` for text
    content, any JSON tree for structured content); ``text`` is that content as text
    (a JSON string's contents, or the JSON text of anything else); ``summary`` is
    ``<server>/<remote>: <n> bytes[, truncated][, structured content of <m> bytes
    dropped for the text]``.
    """

    content: object
    text: str
    summary: str
    is_error: bool
    truncated: bool

    @property
    def error_text(self) -> str:
        """The text an ``isError`` result is recorded with: ``<summary>, error: <text>``."""
        return f"{self.summary}, error: {self.text}"


@dataclass(frozen=True)
class RpcError:
    """The server answered with a JSON-RPC error."""

    code: int
    message: str
    data: object = None


@dataclass(frozen=True)
class NoAnswer:
    """No answer arrived; the call may still have taken effect upstream."""

    kind: NoAnswerKind
    detail: str


@dataclass(frozen=True)
class Refused:
    """The server answered, but its answer failed the strict JSON boundary."""

    reason: str
    raw: bytes


@dataclass(frozen=True)
class NotSent:
    """The request provably never reached the server (``errors.NotSentError``): a known
    failure that executed nothing. ``detail`` names the server and why."""

    detail: str


ToolOutcome = Result | RpcError | NoAnswer | Refused | NotSent

__all__ = ["NoAnswer", "NoAnswerKind", "NotSent", "Refused", "Result", "RpcError", "ToolOutcome"]
