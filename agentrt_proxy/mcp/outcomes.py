"""The classified outcome of one upstream ``tools/call``.

Shared by the wire (``mcp/``), which produces it, and the gate, which records it.
See docs/design.md, "Outcome of an upstream call".
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

NoAnswerKind = Literal["timeout", "dropped", "protocol"]

# The form of a recorded result that passes through as the server sent it (docs/decisions/0015):
# ``content`` is ``{"content": [...], "structuredContent"?: ..., "_meta"?: {...}}``. Records
# made before it carry no form: their content is the text (a string) or the structured content.
CALL_TOOL_RESULT = "call_tool_result"


@dataclass(frozen=True)
class Result:
    """The server answered with a ``CallToolResult`` (``isError`` or not).

    ``content`` is the recorded value as a literal-keeping tree: for a result that is not an
    error, in the ``CALL_TOOL_RESULT`` form (``form`` says so), the server's own fields; for
    an error, its text. ``text`` is the short text of it (text blocks joined, every other
    block a placeholder); ``summary`` is ``<server>/<remote>: <n> bytes[, truncated]``, ``n``
    the recorded size (records made before 0015 may also say ``, structured content of <m>
    bytes dropped for the text``).
    """

    content: object
    text: str
    summary: str
    is_error: bool
    truncated: bool
    form: str = ""

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


@dataclass(frozen=True)
class HttpStatus:
    """The HTTP server answered the request, sent whole, with an error status and no JSON-RPC
    answer (``errors.HTTPStatusError``): the server refused it, and may have acted on it first.
    Never ``NotSent``: a mutation's outcome is unknown. ``detail`` names the server, the status
    and the start of its body."""

    status: int
    detail: str


ToolOutcome = Result | RpcError | NoAnswer | Refused | NotSent | HttpStatus

__all__ = [
    "CALL_TOOL_RESULT",
    "HttpStatus",
    "NoAnswer",
    "NoAnswerKind",
    "NotSent",
    "Refused",
    "Result",
    "RpcError",
    "ToolOutcome",
]
