"""What a run's last attempt at its tool call came to, read from its recorded steps.

The rules across calls never trust the proxy's index for what happened: they read the run.
An attempt is *known* (a result, an error the server returned, or an answer the boundary
refused), *unknown* (cut off while executing, timed out, or no answer: it may have taken
effect), or there was *none* (nothing ran: denied, invalid, never approved, cut off before
the tool started).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from agentrt_proxy import canonical
from agentrt_proxy.mcp.outcomes import CALL_TOOL_RESULT
from agentrt_proxy.mcp.results import recorded_text
from agentrt_proxy.store import (
    EXECUTING,
    OUTCOME_KNOWN,
    OUTCOME_NONE,
    OUTCOME_UNKNOWN,
    STEP_INTERRUPTED,
    Approval,
    Step,
)

# The approval kind of a re-run of an attempt whose outcome is unknown (runtime-core §3.1).
INTERRUPTED_SIDE_EFFECT = "interrupted_side_effect"
Ended = str  # "cut_off", "timed_out", "refused" or "no_answer"
NOT_SENT = "not_sent"  # the failure recorded for a request that never reached its server (_model.py)
HTTP_STATUS = "http_status"  # the server refused the request with an HTTP error status (_model.py)
FAILURE_CANCELLED = "cancelled"  # the failure of a call cancelled here (not an MCP task status)
KIND_INTERRUPTED = "interrupted"  # the kind of an observation whose step was cut off (not a step status)


@dataclass(frozen=True)
class Attempt:
    """An earlier attempt whose outcome is unknown, as an interruption approval names it."""

    run_id: str
    step_id: str
    started_at: str
    ended: Ended

    def tree(self) -> dict[str, Any]:
        return {"run_id": self.run_id, "step_id": self.step_id, "started_at": self.started_at, "ended": self.ended}

    @classmethod
    def from_tree(cls, value: Any) -> Attempt | None:
        if not isinstance(value, dict):
            return None
        run_id, step_id, started_at, ended = (value.get(k) for k in ("run_id", "step_id", "started_at", "ended"))
        if not isinstance(run_id, str) or not isinstance(step_id, str):
            return None
        if not isinstance(started_at, str) or not isinstance(ended, str):
            return None
        return cls(run_id, step_id, started_at, ended)


@dataclass(frozen=True)
class LastAttempt:
    outcome: int  # OUTCOME_NONE, OUTCOME_KNOWN or OUTCOME_UNKNOWN
    attempt: Attempt | None = None  # set when unknown
    step: Step | None = None  # the step that decided it

    @property
    def known(self) -> bool:
        return self.outcome == OUTCOME_KNOWN

    @property
    def unknown(self) -> bool:
        return self.outcome == OUTCOME_UNKNOWN


NONE = LastAttempt(OUTCOME_NONE)


# The rules read a run's steps many times while deciding one call (is it a tool call, what came
# of it, which arguments): a large column is parsed once and its tree kept here, newest last.
# Readers never change a tree they get (they read it, or encode it afresh).
_LARGE_COLUMN = 4096
_KEPT_COLUMNS = 8
_parsed: dict[str, Any] = {}
_parsed_lock = threading.Lock()


def loads(text: str) -> Any:
    """Read a stored JSON column keeping number literals; ``None`` when empty or unreadable.
    The tree may be shared with other readers of the same text: never change it."""
    if not text:
        return None
    if len(text) < _LARGE_COLUMN:
        return _parse_column(text)
    with _parsed_lock:
        if text in _parsed:
            return _parsed[text]
    value = _parse_column(text)
    with _parsed_lock:
        _parsed[text] = value
        while len(_parsed) > _KEPT_COLUMNS:
            del _parsed[next(iter(_parsed))]
    return value


def keep(text: str) -> None:
    """Parse a column that ``loads`` keeps (a large one) now, outside any transaction, so its
    readers find the tree kept; a small one is not kept, so parsing it now would be thrown away."""
    if len(text) >= _LARGE_COLUMN:
        loads(text)


def _parse_column(text: str) -> Any:
    try:
        return canonical.parse_strict(text)
    except canonical.JSONBoundaryError:
        try:
            return json.loads(text)
        except ValueError:
            return None


def observation(step: Step) -> dict[str, Any]:
    value = loads(step.observation_json)
    return value if isinstance(value, dict) else {}


def decision(step: Step) -> dict[str, Any]:
    value = loads(step.decision_json)
    return value if isinstance(value, dict) else {}


def is_tool_call(step: Step) -> bool:
    return decision(step).get("kind") == "tool_call"


def not_sent(obs: dict[str, Any]) -> bool:
    """A tool error whose request provably never reached the server: nothing ran."""
    content = obs.get("content")
    return obs.get("kind") == "tool_error" and isinstance(content, dict) and content.get("failure") == NOT_SENT


# The failures whose recorded text is the proxy's own, never a server's: nothing reached it, the
# call's time ran out, or the call was cancelled here.
_OWN_TEXT_FAILURES = (NOT_SENT, "timeout", FAILURE_CANCELLED)


def carries_server_text(obs: dict[str, Any]) -> bool:
    """Whether a recorded outcome holds text its server chose: a result, a tool's error
    (``isError``), a JSON-RPC error's message, an answer the boundary refused, or a failure whose
    detail may quote the server (an HTTP status with its body). Untrusted when the server is."""
    kind = obs.get("kind")
    if kind == "tool_result":
        return True
    content = obs.get("content")
    failure = content.get("failure") if isinstance(content, dict) else None
    return kind == "tool_error" and failure not in _OWN_TEXT_FAILURES


def executed(step: Step) -> bool:
    """The step's tool ran and its outcome was recorded (a result or an error that came back
    from it); a request that never reached the server did not run."""
    obs = observation(step)
    return obs.get("kind") in ("tool_result", "tool_error") and not not_sent(obs)


def error_text(obs: dict[str, Any]) -> str:
    content = obs.get("content")
    if isinstance(content, dict):
        return str(content.get("error", ""))
    return ""


def classify_tool_error(obs: dict[str, Any], read_only: bool, is_known_answer: Callable[[str], bool]) -> Ended | None:
    """``None`` for a known failure; how it ended when its outcome is unknown (proxy-and-mcp-module §2.7.2)."""
    if read_only:
        return None  # a read has no effect to repeat
    content = obs.get("content")
    failure = content.get("failure") if isinstance(content, dict) else None
    if failure == "timeout":
        return "timed_out"
    if failure == HTTP_STATUS:
        return "refused"  # the server refused it, and may have acted on it first
    if failure in ("invalid_content", NOT_SENT):
        return None
    if is_known_answer(error_text(obs)):
        return None
    return "no_answer"


def last_attempt(
    run_id: str,
    steps: Sequence[Step],
    approvals: Sequence[Approval],
    *,
    read_only: bool,
    tool_offered: bool,
    is_known_answer: Callable[[str], bool],
) -> LastAttempt:
    """Scan the run's tool-call steps from the last: what did its last attempt come to?"""
    for step in reversed(steps):
        if not is_tool_call(step):
            continue
        obs = observation(step)
        kind = obs.get("kind")
        if step.status == STEP_INTERRUPTED or kind == KIND_INTERRUPTED:
            content = obs.get("content")
            if not isinstance(content, dict):
                content = {}
            cut_while_executing = (
                content.get("previous_status") == EXECUTING or content.get("failure") == FAILURE_CANCELLED
            )
            if cut_while_executing:
                return LastAttempt(OUTCOME_UNKNOWN, Attempt(run_id, step.id, step.started_at, "cut_off"), step)
            continue  # cut off before its tool started, or cancelled by an operator: nothing ran
        if kind == "tool_result":
            return LastAttempt(OUTCOME_KNOWN, None, step)
        if not_sent(obs):
            continue  # never reached the server: nothing ran, nothing to repeat or ask about
        if kind == "tool_error":
            ended: Ended | None
            ended = (
                "no_answer"
                if not tool_offered and not read_only
                else classify_tool_error(obs, read_only, is_known_answer)
            )
            if ended is None:
                return LastAttempt(OUTCOME_KNOWN, None, step)
            return LastAttempt(OUTCOME_UNKNOWN, Attempt(run_id, step.id, step.started_at, ended), step)
        latest = latest_approval_of_step(approvals, step.id)
        if latest is not None and latest.kind == INTERRUPTED_SIDE_EFFECT:
            named = interrupted_attempt(latest)
            if named is None:
                named = Attempt(run_id, step.id, step.started_at, "cut_off")
            return LastAttempt(OUTCOME_UNKNOWN, named, step)
    return NONE


def latest_approval_of_step(approvals: Sequence[Approval], step_id: str) -> Approval | None:
    latest = None
    for approval in approvals:  # insertion order: the last one wins
        if approval.step_id == step_id:
            latest = approval
    return latest


def latest_approval(approvals: Sequence[Approval]) -> Approval | None:
    return approvals[-1] if approvals else None


def interrupted_attempt(approval: Approval) -> Attempt | None:
    """The earlier attempt an interruption approval's capability names, if it names one."""
    capability = loads(approval.capability_json)
    if not isinstance(capability, dict):
        return None
    return Attempt.from_tree(capability.get("interrupted"))


def executed_step(steps: Sequence[Step]) -> Step | None:
    """The last step of a run whose tool ran and whose outcome was recorded."""
    for step in reversed(steps):
        if is_tool_call(step) and executed(step):
            return step
    return None


def result_text(obs: dict[str, Any]) -> str:
    """A recorded result's short text (DUPLICATE quotes it): for a result recorded as the server
    sent it (``form``), its text blocks joined and every other block a placeholder
    (``mcp.results.recorded_text``); for an older record, a JSON string's contents, else JSON text."""
    content = obs.get("content")
    if obs.get("form") == CALL_TOOL_RESULT:
        return recorded_text(content)
    if isinstance(content, str):
        return content
    return canonical.policy_text(content)


def last_interrupted_while_executing(steps: list[Step]) -> Step | None:
    """The last step a takeover found executing (and marked interrupted): its tool may have
    taken effect (runtime-core §3.7)."""
    for step in reversed(steps):
        if step.status != STEP_INTERRUPTED:
            continue
        try:
            obs = json.loads(step.observation_json or "{}")
        except ValueError:
            continue
        content = obs.get("content") if isinstance(obs, dict) else None
        if isinstance(content, dict) and content.get("previous_status") == EXECUTING:
            return step
    return None
