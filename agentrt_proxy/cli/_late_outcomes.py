"""What is known of an interruption's earlier attempt: an answer that came too late to record.

A proxy whose run was taken over while its tool ran still appends what the server answered
to the run's events (``step.late_outcome``, gate/_execution.py). The operator deciding whether
to run the request again is shown it, so a payment the server reported as made is not paid
again by mistake, and nothing that came back is called unknown without saying so.
"""

from __future__ import annotations

from agentrt_proxy.cli._operator_views import loads
from agentrt_proxy.gate import INTERRUPTED_SIDE_EFFECT, LATE_OUTCOME_EVENT
from agentrt_proxy.store import Approval, Store, event_payloads
from agentrt_proxy.text import escaping, operator_text

SUMMARY_BYTES = 500


def late_outcome_lines(store: Store, approval: Approval) -> list[str]:
    """One line per late answer recorded for the step an interruption approval names."""
    if approval.kind != INTERRUPTED_SIDE_EFFECT:
        return []
    capability = loads(approval.capability_json)
    named = capability.get("interrupted") if isinstance(capability, dict) else None
    run_id = named.get("run_id") if isinstance(named, dict) else None
    step_id = named.get("step_id") if isinstance(named, dict) else None
    if not isinstance(run_id, str) or not isinstance(step_id, str):
        run_id, step_id = approval.run_id, ""
    lines = []
    for payload in event_payloads(store, run_id, LATE_OUTCOME_EVENT, step_id):
        observation = payload.get("observation")
        obs = observation if isinstance(observation, dict) else {}
        summary = escaping.clean(str(obs.get("summary", "")), SUMMARY_BYTES)
        not_recorded = payload.get("not_recorded") is True  # proxy/_late_record.py: answered in time
        lines.append(operator_text.op_block_late_outcome(str(obs.get("kind", "")), summary, not_recorded))
    return lines
