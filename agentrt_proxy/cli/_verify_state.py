"""What ``verify`` says of the state check: every row of runs, approvals, proxy_calls, steps,
tool_specs, budget_holds and proxy_tasks, and each run's lease, held against the chain
(``store/_replay.py``, ``store/_replay_rows.py``). Lines for the terminal, an object for ``-json``."""

from __future__ import annotations

from typing import Any

from agentrt_proxy.store import VerifyReport
from agentrt_proxy.text import cli_text, escaping

SHOWN = 20  # findings printed; -json carries every one the store kept


def state_lines(report: VerifyReport) -> list[str]:
    state = report.state
    if state is None:
        if report.state_skipped == "range":
            return [cli_text.STATE_SKIPPED_RANGE]
        return [cli_text.STATE_SKIPPED_BROKEN] if report.state_skipped else []
    if state.agrees:
        lines = [
            cli_text.STATE_AGREES.format(
                runs=state.runs,
                approvals=state.approvals,
                calls=state.calls,
                steps=state.steps,
                specs=state.specs,
                holds=state.holds,
                tasks=state.tasks,
            )
        ]
    else:
        lines = [cli_text.STATE_DISAGREES.format(count=state.total)]
        # Every value shown came from the database: made safe for one terminal line.
        lines += ["  " + escaping.clean(m.text(), 400) for m in state.mismatches[:SHOWN]]
        if state.total > SHOWN:
            lines.append(cli_text.STATE_MORE.format(count=state.total - SHOWN))
    if state.unverified_calls:
        lines.append(cli_text.STATE_UNVERIFIED.format(count=state.unverified_calls))
    if state.unbegun_calls:
        lines.append(cli_text.STATE_UNBEGUN.format(count=state.unbegun_calls))
    if state.unverified_holds:
        lines.append(cli_text.STATE_UNVERIFIED_HOLDS.format(count=state.unverified_holds))
    return lines


def state_json(report: VerifyReport) -> dict[str, Any]:
    state = report.state
    if state is None:
        return {"checked": False, "skipped": report.state_skipped}
    return {
        "checked": True,
        "agrees": state.agrees,
        "runs": state.runs,
        "approvals": state.approvals,
        "calls": state.calls,
        "steps": state.steps,
        "tool_specs": state.specs,
        "budget_holds": state.holds,
        "tasks": state.tasks,
        "findings": state.total,
        "mismatches": [
            {
                "table": m.table,
                "key": m.key,
                "column": m.column,
                "found": m.found,
                "expected": m.expected,
                "text": m.text(),
            }
            for m in state.mismatches
        ],
        "unverified_calls": state.unverified_calls,
        "unbegun_calls": state.unbegun_calls,
        "unverified_holds": state.unverified_holds,
    }
