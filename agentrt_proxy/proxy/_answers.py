"""The answers a host gets to ``tools/call``: every ``CallToolResult`` the proxy builds.

A tool's own result is its recorded content as the server sent it: every content block, its
structured content and its ``_meta`` (decision 0015), kept literally. Every other answer is one
text block and ``isError``. What the text says lives in ``text/model_text.py``; which of its
sentences a verdict of the gate gets is chosen here (``pending_text``, ``denied_text``).

The runtime imports this module before the gate has loaded (``runtime``: the gate is imported in
a worker thread while the upstreams connect), so the gate is imported only inside the two
functions that read its verdicts, by which time it has loaded, and its types only for mypy.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from agentrt_proxy import canonical
from agentrt_proxy.canonical.encoder import Raw
from agentrt_proxy.mcp.outcomes import CALL_TOOL_RESULT
from agentrt_proxy.mcp.shared_text import expand
from agentrt_proxy.text import model_text

if TYPE_CHECKING:
    from agentrt_proxy.gate import Verdict
    from agentrt_proxy.store import Approval


def text_result(text: str, *, is_error: bool, structured: str | None = None) -> dict[str, Any]:
    """A ``CallToolResult`` carrying one text block (and structured content, kept literally)."""
    result: dict[str, Any] = {"content": [{"type": "text", "text": text}], "isError": is_error}
    if structured is not None:
        result["structuredContent"] = Raw(structured)
    return result


# The ``_meta`` key that marks the proxy's own answers with their outcome (``PENDING_APPROVAL``,
# ``DENIED``, …, ``GATE_STATUS``), so a host can tell them from a server's result whose text
# happens to begin the same way. A tool's own result never carries it: a server's result
# ``_meta`` passes through without this one key (the record keeps what the server sent).
OUTCOME_META_KEY = "gate/outcome"
# The ``_meta`` key that marks a tool's result from a server the operator has not declared
# ``"trust": "trusted"`` (docs/decisions/0017), so a host can show it as untrusted content. Its
# value is ``true``. A server's own ``_meta`` never passes it through: it cannot vouch for itself.
UNTRUSTED_META_KEY = "gate/untrusted"
_OWN_KEYS = (OUTCOME_META_KEY, UNTRUSTED_META_KEY)


def prose(text: str) -> dict[str, Any]:
    """One of the proxy's own sentences; its prefix (``DENIED``, ``PENDING_APPROVAL``, …) says
    whether it is an error, and is the outcome its ``_meta`` carries."""
    prefix = text.split(":", 1)[0]
    result = text_result(text, is_error=model_text.IS_ERROR.get(prefix, True))
    if prefix in model_text.IS_ERROR:
        result["_meta"] = {OUTCOME_META_KEY: prefix}
    return result


def tool_result(content: Any, form: str = "", *, untrusted: bool = False) -> dict[str, Any]:
    """A tool's own result, passed back as recorded. In the ``CALL_TOOL_RESULT`` form: its blocks,
    structured content and ``_meta`` as the server sent them. A record made before that form
    (``form`` empty): its text, and an object as structured content. ``untrusted``: marked so in
    ``_meta`` (``UNTRUSTED_META_KEY``), the result itself unchanged."""
    if form == CALL_TOOL_RESULT and isinstance(content, dict):
        return _passed_through(content, untrusted)
    text = content if isinstance(content, str) else canonical.policy_text(content)
    structured = canonical.policy_text(content) if isinstance(content, dict) else None
    result = text_result(text, is_error=False, structured=structured)
    if untrusted:
        result["_meta"] = {UNTRUSTED_META_KEY: True}
    return result


def _passed_through(record: dict[str, Any], untrusted: bool = False) -> dict[str, Any]:
    # Written in the policy form (keys sorted, numbers as their literals), as a recorded result
    # has always been answered: the same record gives the host the same bytes.
    record = expand(record)  # a text the server sent twice is recorded once (mcp.shared_text)
    blocks = record.get("content")
    result: dict[str, Any] = {"content": Raw(canonical.policy_text(blocks if isinstance(blocks, list) else []))}
    if record.get("structuredContent") is not None:
        result["structuredContent"] = Raw(canonical.policy_text(record["structuredContent"]))
    result["isError"] = False
    meta = record.get("_meta")
    kept = {key: value for key, value in meta.items() if key not in _OWN_KEYS} if isinstance(meta, dict) else {}
    if untrusted:
        kept[UNTRUSTED_META_KEY] = True  # never the proxy's marks as the server wrote them
    if kept:
        result["_meta"] = Raw(canonical.policy_text(kept))
    return result


def marked_untrusted(result: dict[str, Any]) -> dict[str, Any]:
    """One of the proxy's answers that quotes an untrusted server's text (its error, a DUPLICATE
    quoting its result), marked as that server's result is (``UNTRUSTED_META_KEY``)."""
    meta = result.get("_meta")
    result["_meta"] = {**(meta if isinstance(meta, dict) else {}), UNTRUSTED_META_KEY: True}
    return result


def is_marked_untrusted(result: Any) -> bool:
    """Whether an answer (a task's recorded one, decoded) carries the untrusted mark."""
    meta = result.get("_meta") if isinstance(result, dict) else None
    return isinstance(meta, dict) and meta.get(UNTRUSTED_META_KEY) is True


def outcome_of(result: dict[str, Any]) -> str | None:
    """The proxy's own outcome an answer carries (``PENDING_APPROVAL``, …), ``None`` for a tool's result."""
    meta = result.get("_meta")
    outcome = meta.get(OUTCOME_META_KEY) if isinstance(meta, dict) else None
    return outcome if isinstance(outcome, str) else None


def for_output_schema(result: dict[str, Any]) -> dict[str, Any]:
    """An answer to a tool that declares an ``outputSchema``: the proxy's own prose is an error.

    A host validating the schema (the MCP SDKs' clients do) refuses a result that is not an
    error and carries no structured content; only ``isError`` results are exempt. The proxy's
    own answers that are not errors (``PENDING_APPROVAL``, ``IN_PROGRESS``, ``INTERRUPTED``,
    ``UNKNOWN_OUTCOME``, ``UNRECORDED``) carry none, so toward such a tool they say
    ``isError: true``; their ``_meta`` still names the outcome. A tool's own result is untouched.
    """
    if outcome_of(result) is None or result.get("isError") is True:
        return result
    return {**result, "isError": True}


def tool_error(error: str) -> dict[str, Any]:
    """A tool's recorded error, escaped and bounded."""
    return text_result(model_text.error_result(error), is_error=True)


# --------------------------------------------------------------------- the gate's verdicts


def pending_text(approval: Approval) -> str:
    """PENDING_APPROVAL, or for an interruption INTERRUPTED / UNKNOWN_OUTCOME by how it ended."""
    from agentrt_proxy.gate import INTERRUPTED_SIDE_EFFECT, attempts  # loaded by now: see the top

    if approval.kind != INTERRUPTED_SIDE_EFFECT:
        return model_text.pending_approval(approval.id)
    attempt = attempts.interrupted_attempt(approval)
    if attempt is None or attempt.ended == "cut_off":
        return model_text.interrupted(approval.id)
    return model_text.unknown_outcome(attempt.ended, approval.id)


def denied_text(verdict: Verdict) -> str:
    """DENIED with the policy's reason, or INVALID with the validation error."""
    from agentrt_proxy.gate.guards import OVER_BUDGET_KIND  # loaded by now: see the top

    obs = verdict.observation
    content = obs.content if obs is not None and isinstance(obs.content, dict) else {}
    if obs is not None and obs.kind == "invalid_decision":
        return model_text.invalid(str(content.get("error", "")))
    if content.get("kind") == OVER_BUDGET_KIND:
        return model_text.over_budget(str(content.get("reason", "")))
    return model_text.denied(str(content.get("reason", "")))
