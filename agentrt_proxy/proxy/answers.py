"""The answers a host gets to ``tools/call``: every ``CallToolResult`` the proxy builds.

One text block, ``isError`` and, for a tool's own result that is a JSON object, its
structured content kept literally. What the text says lives in ``text/model_text.py``; the
texts of the gate's verdicts are in ``verdict_text`` (this module stays free of the gate, so
the runtime can import it before the gate has loaded).
"""

from __future__ import annotations

from typing import Any

from agentrt_proxy import canonical
from agentrt_proxy.mcp import RawJSON
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
