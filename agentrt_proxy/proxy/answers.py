"""The answers a host gets to ``tools/call``: every ``CallToolResult`` the proxy builds.

One text block, ``isError`` and, for a tool's own result that is a JSON object, its
structured content kept literally. What the text says lives in ``text/model_text.py``.
"""

from __future__ import annotations

from typing import Any

from agentrt_proxy import canonical
from agentrt_proxy.gate import INTERRUPTED_SIDE_EFFECT, Verdict, attempts
from agentrt_proxy.mcp import RawJSON
from agentrt_proxy.store import Approval
from agentrt_proxy.text import model_text


def text_result(text: str, *, is_error: bool, structured: str | None = None) -> dict[str, Any]:
    """A ``CallToolResult`` carrying one text block (and structured content, kept literally)."""
    result: dict[str, Any] = {"content": [{"type": "text", "text": text}], "isError": is_error}
    if structured is not None:
        result["structuredContent"] = RawJSON(structured)
    return result


def prose(text: str) -> dict[str, Any]:
    """One of the proxy's own sentences; its prefix (``DENIED``, ``PENDING_APPROVAL``, …) says
    whether it is an error."""
    prefix = text.split(":", 1)[0]
    return text_result(text, is_error=model_text.IS_ERROR.get(prefix, True))


def tool_result(content: Any) -> dict[str, Any]:
    """A tool's own result, passed back as recorded: its text, and an object as structured content."""
    text = content if isinstance(content, str) else canonical.policy_text(content)
    structured = canonical.policy_text(content) if isinstance(content, dict) else None
    return text_result(text, is_error=False, structured=structured)


def tool_error(error: str) -> dict[str, Any]:
    """A tool's recorded error, escaped and bounded."""
    return text_result(model_text.error_result(error), is_error=True)


def pending_text(approval: Approval) -> str:
    """PENDING_APPROVAL, or for an interruption INTERRUPTED / UNKNOWN_OUTCOME by how it ended."""
    if approval.kind != INTERRUPTED_SIDE_EFFECT:
        return model_text.pending_approval(approval.id)
    attempt = attempts.interrupted_attempt(approval)
    if attempt is None or attempt.ended == "cut_off":
        return model_text.interrupted(approval.id)
    return model_text.unknown_outcome(attempt.ended, approval.id)


def denied_text(verdict: Verdict) -> str:
    """DENIED with the policy's reason, or INVALID with the validation error."""
    obs = verdict.observation
    content = obs.content if obs is not None and isinstance(obs.content, dict) else {}
    if obs is not None and obs.kind == "invalid_decision":
        return model_text.invalid(str(content.get("error", "")))
    return model_text.denied(str(content.get("reason", "")))
