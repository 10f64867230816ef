"""A registered tool: what the host sees, what the gate records, and how a call goes out.

A call refuses what the operator forbids (a denied or fixed parameter, arguments that are not
an object) before anything is sent, injects the fixed values and calls the server. A recorded
error text that is an answer (the server's, or such a refusal) is told apart from silence by the
tool's known-answer pattern (proxy-and-mcp-module §2.7.2).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from agentrt_proxy import canonical
from agentrt_proxy.canonical import JSONBoundaryError, Number
from agentrt_proxy.mcp.outcomes import Result, ToolOutcome
from agentrt_proxy.mcp.results import InputRequired
from agentrt_proxy.text import escaping, load_text, record_text
from agentrt_proxy.upstream._display import ToolDisplay
from agentrt_proxy.upstream._spec import ToolSpec

__all__ = ["CallRefused", "LoadedTool", "OnProgress", "Upstream", "is_known_answer", "known_answer_pattern"]

# The server's progress for one call as (progress, total, message), called on the event loop by
# the wire's reader (``mcp.client.ProgressCallback``, spelled here so this module stays light).
OnProgress = Callable[[float, float | None, str | None], None]


class Requested(Protocol):
    """A request the gate allowed (``gate.ToolRequest``): its arguments as recorded."""

    @property
    def args(self) -> Any: ...


class Upstream(Protocol):
    """The part of an upstream connection a loaded tool calls through: once opened, its server's
    supervisor (``upstream.supervisor``), which outlives every connection to the server."""

    async def call_tool(
        self, name: str, arguments_text: str, timeout_ns: int, *, on_progress: OnProgress | None = None
    ) -> ToolOutcome: ...


@dataclass(frozen=True)
class CallRefused(Result):
    """A call refused before anything was sent: an answered, known failure whose recorded
    error text is exactly the refusal (it matches the tool's known-answer pattern)."""

    @property
    def error_text(self) -> str:
        return self.text


def _refusal(message: str) -> CallRefused:
    return CallRefused(content=message, text=message, summary=message, is_error=True, truncated=False)


@dataclass
class LoadedTool:
    """A registered tool: what the host sees, what the gate records, how a call goes out."""

    name: str
    server: str
    remote: str
    side_effect: str
    spec: ToolSpec  # input_schema: the restricted schema as a literal-keeping tree; terminal
    schema_text: str  # the restricted schema in the canonical schema form, as the host sees it
    validator: Any  # a jsonschema validator for the restricted schema
    fixed: dict[str, Any]
    deny: tuple[str, ...]
    outcome: str | None
    repeat_window: int
    hint_mismatch: str
    known_answer: re.Pattern[str]
    upstream: Upstream | None = None
    display: ToolDisplay = field(default_factory=ToolDisplay)  # from the live listing (``upstream._display``)

    @property
    def description(self) -> str:
        return self.spec.description

    @property
    def timeout(self) -> int:
        return self.spec.timeout

    @property
    def output_schema(self) -> str | None:
        """The server's ``outputSchema`` as shown to the host (its canonical schema form), if any."""
        return self.display.output_schema

    def prepare(self, arguments_text: str | bytes | None) -> str | CallRefused:
        """The arguments text to send upstream, or the refusal that sends nothing."""
        normalised = canonical.normalise_arguments(arguments_text)
        try:
            arguments = canonical.parse_strict(normalised)
        except JSONBoundaryError as err:
            return _refusal(record_text.ARGUMENTS_NOT_OBJECT.format(name=self.name, reason=err.reason))
        return self._checked(arguments)

    def _checked(self, arguments: Any) -> str | CallRefused:
        """Parsed arguments (a tree this call may change) as ``prepare`` sends them, or its refusal."""
        if not isinstance(arguments, dict):
            return _refusal(record_text.ARGUMENTS_NOT_OBJECT_GOT.format(name=self.name, kind=_json_kind(arguments)))
        for parameter in self.deny:
            if parameter in arguments:
                return _refusal(
                    record_text.PARAMETER_DENIED.format(name=self.name, parameter=escaping.go_quote(parameter))
                )
        for parameter in sorted(self.fixed):
            if parameter in arguments:
                return _refusal(
                    record_text.PARAMETER_FIXED.format(name=self.name, parameter=escaping.go_quote(parameter))
                )
        arguments.update(self.fixed)
        return canonical.policy_text(arguments)

    async def call_request(self, request: Requested, on_progress: OnProgress | None = None) -> ToolOutcome:
        """The request the gate allowed, called as recorded (its arguments in the policy's form):
        the gate calls this itself (``Session.execute``), what executes is never the call's bytes."""
        # The recorded tree was parsed at the boundary already: checked as it is (a copy of its
        # top level takes the fixed values), not written out and parsed again.
        # (None: no arguments, as ``prepare`` reads "null".)
        args = {} if request.args is None else request.args
        return await self._send(self._checked(dict(args) if isinstance(args, dict) else args), on_progress)

    async def call(self, arguments_text: str | bytes | None, on_progress: OnProgress | None = None) -> ToolOutcome:
        """Refuse what the operator forbids, inject the fixed values, call the server (asking it
        for progress, to ``on_progress``, when one is given)."""
        return await self._send(self.prepare(arguments_text), on_progress)

    async def _send(self, prepared: str | CallRefused, on_progress: OnProgress | None) -> ToolOutcome:
        if isinstance(prepared, CallRefused):
            return prepared
        if self.upstream is None:
            raise RuntimeError(load_text.NO_CONNECTION.format(name=self.name, server=self.server))
        if on_progress is None:  # named only when given: an upstream that reports no progress need not take it
            outcome = await self.upstream.call_tool(self.remote, prepared, self.spec.timeout)
        else:
            outcome = await self.upstream.call_tool(self.remote, prepared, self.spec.timeout, on_progress=on_progress)
        if isinstance(outcome, InputRequired):  # an answer this adapter cannot complete: a known failure
            return _refusal(f"{self.name}: {outcome.reason}")
        return outcome


def _json_kind(value: Any) -> str:
    if isinstance(value, list):
        return "an array"
    if isinstance(value, Number):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, bool):
        return "a boolean"
    return "something else"


def known_answer_pattern(server: str, remote: str, name: str) -> re.Pattern[str]:
    """The recorded error texts that are answers, not silence (proxy-and-mcp-module §2.7.2)."""
    result = (
        rf"{re.escape(server)}/{re.escape(remote)}: \d+ bytes(?:, truncated)?"
        r"(?:, structured content of \d+ bytes dropped for the text)?, error: "
    )
    refusal = (
        rf"{re.escape(name)}: (?:arguments are not a JSON object|parameter \".*\" is denied by the operator"
        r"|parameter \".*\" is fixed by the operator|the server asked for more input)"
    )
    return re.compile(f"(?:{result}|{refusal})")


def is_known_answer(tool: LoadedTool, error_text: str) -> bool:
    """Whether a recorded error text is the server's answer or a refusal before sending."""
    return tool.known_answer.match(error_text) is not None
