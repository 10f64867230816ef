"""The run's limits, judged when a step starts (runtime-core §5.4): steps, then consecutive
failures, then a loop. A limit reached ends the run FAILED in the caller's transaction."""

from __future__ import annotations

import json
from typing import Any

from agentrt_proxy import canonical
from agentrt_proxy.gate import attempts
from agentrt_proxy.gate._model import Limits
from agentrt_proxy.gate._transitions import finish_run
from agentrt_proxy.store import (
    END_LIMIT_STEPS,
    END_LOOP_DETECTED,
    END_REPEATED_TOOL_FAILURES,
    FAILED,
    RUNNING,
    Run,
    Step,
    Tx,
)
from agentrt_proxy.text.record_text import DETAIL_FAILURES, DETAIL_LOOP, DETAIL_STEP_LIMIT


def limit_reached(tx: Tx, run: Run, steps: list[Step], limits: Limits, *, owner: str, at: str) -> bool:
    """Whether a limit ends ``run`` now; if one does, its events and the run's end are written."""
    found: tuple[str, str] | None = None
    if run.step_count >= limits.max_steps:
        found = (END_LIMIT_STEPS, DETAIL_STEP_LIMIT.format(n=limits.max_steps))
    elif trailing_failures(steps) >= limits.max_consecutive_tool_failures:
        found = (END_REPEATED_TOOL_FAILURES, DETAIL_FAILURES.format(n=trailing_failures(steps)))
    if found is not None:
        tx.append(run.id, "", at, "limit.exceeded", {"reason": found[0], "detail": found[1]})
        finish_run(tx, run.id, expect=RUNNING, owner=owner, status=FAILED, reason=found[0], detail=found[1], at=at)
        return True
    repeated = loop(steps, limits.loop_threshold)
    if repeated is not None:
        tx.append(run.id, "", at, "loop.detected", repeated)
        finish_run(tx, run.id, expect=RUNNING, owner=owner, status=FAILED, reason=END_LOOP_DETECTED,
                   detail=DETAIL_LOOP.format(tool=repeated["tool"], n=repeated["repeats"]), at=at)
        return True
    return False


def _observation(step: Step) -> dict[str, Any]:
    # Only string fields are read here (kind, content_hash): plain json, which is ~3x faster
    # than the strict boundary's parse on a path every step takes.
    try:
        v = json.loads(step.observation_json) if step.observation_json else {}
    except ValueError:
        return {}
    return v if isinstance(v, dict) else {}


def trailing_failures(steps: list[Step]) -> int:
    """Trailing steps whose observation is a failure (a step with none breaks the run)."""
    n = 0
    for s in reversed(steps):
        kind = _observation(s).get("kind")
        if not kind or kind == "tool_result":
            break
        n += 1
    return n


def loop(steps: list[Step], threshold: int) -> dict[str, Any] | None:
    """Trailing tool calls with the same tool, arguments and observation (runtime-core §5.4)."""
    sig = None
    n = 0
    for s in reversed(steps):
        obs = _observation(s)
        if obs.get("kind") == "invalid_decision":
            break  # judged before the decision is read: that one may be huge, and is never a loop
        # The stored column parsed once for every reader of this run (attempts.loads).
        d = attempts.loads(s.decision_json) if s.decision_json else {}
        if not isinstance(d, dict) or d.get("kind") != "tool_call" or "invalid_args" in d:
            break
        args = d.get("args", {})
        this = (d.get("tool", ""), canonical.sha256_hex(canonical.canonical_bytes(args)), obs.get("content_hash", ""))
        if sig is None:
            sig = this
        elif this != sig:
            break
        n += 1
    if sig is None or n < threshold:
        return None
    return {"repeats": n, "tool": sig[0], "args_hash": sig[1], "observation_hash": sig[2]}
