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


# The ``_meta`` key that marks the proxy's own answers with their outcome (``PENDING_APPROVAL``,
# ``DENIED``, …, ``GATE_STATUS``), so a host can tell them from a server's result whose text
# happens to begin the same way. A tool's own result never carries it: the proxy builds every
# result it returns afresh from the recorded content, and no server's ``_meta`` passes through.
OUTCOME_META_KEY = "gate/outcome"


def prose(text: str) -> dict[str, Any]:
    """One of the proxy's own sentences; its prefix (``DENIED``, ``PENDING_APPROVAL``, …) says
    whether it is an error, and is the outcome its ``_meta`` carries."""
    prefix = text.split(":", 1)[0]
    result = text_result(text, is_error=model_text.IS_ERROR.get(prefix, True))
    if prefix in model_text.IS_ERROR:
        result["_meta"] = {OUTCOME_META_KEY: prefix}
    return result


def tool_result(content: Any) -> dict[str, Any]:
    """A tool's own result, passed back as recorded: its text, and an object as structured content."""
    text = content if isinstance(content, str) else canonical.policy_text(content)
    structured = canonical.policy_text(content) if isinstance(content, dict) else None
    return text_result(text, is_error=False, structured=structured)


def tool_error(error: str) -> dict[str, Any]:
    """A tool's recorded error, escaped and bounded."""
    return text_result(model_text.error_result(error), is_error=True)
