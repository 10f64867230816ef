"""What a decided step carries between the policy's verdict and its tool's start: shared by
the session (a proposal) and collection (a grant acted on)."""

from __future__ import annotations

from dataclasses import dataclass

from agentrt_proxy.gate.model import PolicyDecision, RunView, ToolRequest
from agentrt_proxy.store import Approval


@dataclass
class Proposal:
    request: ToolRequest
    decision: PolicyDecision
    view: RunView
    at_ns: int  # the Now it was decided at
    spec_hash: str
    grant: Approval | None = None  # the approval being acted on, when collected
