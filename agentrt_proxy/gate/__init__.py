"""The gate: one tool step per run. The session, approvals and their hash, attempts, argument
validation, the policy and its identity. The states and their allowed moves are the store's
(``store/_states.py``, next to the compare-and-set that consults them); the names the gate's users
need are re-exported here. Code outside the package imports these names from here.

A module whose name begins with an underscore is the package's own (as h11 marks its modules):
nothing outside ``gate`` imports it; callers import the names below from ``gate``, or a public
module (``approvals``, ``attempts``, ``budgets``…) by its name.
"""

from agentrt_proxy.canonical.clock import Clock, WallClock
from agentrt_proxy.gate._execution import LATE_OUTCOME_EVENT, OutcomeNotRecorded
from agentrt_proxy.gate._gate import Gate
from agentrt_proxy.gate._model import (
    ALLOWED,
    DENIED,
    DENY,
    ENDED,
    PENDING,
    REQUIRE_APPROVAL,
    Decision,
    Limits,
    Observation,
    OfferedTool,
    PolicyDecision,
    PreparedDecision,
    RunView,
    ToolRequest,
    Verdict,
    proxy_limits,
)
from agentrt_proxy.gate._policy import ProxyPolicy, SideEffectPolicy, default_policy, offered_tools_from_config
from agentrt_proxy.gate._session import Session, SessionEnded
from agentrt_proxy.gate.approvals import (
    approval_hash,
    approve_shown,
    stored_hash,
)
from agentrt_proxy.gate.attempts import (
    INTERRUPTED_SIDE_EFFECT,
    KIND_INTERRUPTED,
    Attempt,
    LastAttempt,
)
from agentrt_proxy.store import (
    OUTCOME_KNOWN,
    OUTCOME_NONE,
    OUTCOME_UNKNOWN,
    TERMINAL,
    WAITING,
)

__all__ = [
    "ALLOWED",
    "DENIED",
    "DENY",
    "ENDED",
    "INTERRUPTED_SIDE_EFFECT",
    "KIND_INTERRUPTED",
    "LATE_OUTCOME_EVENT",
    "OUTCOME_KNOWN",
    "OUTCOME_NONE",
    "OUTCOME_UNKNOWN",
    "PENDING",
    "REQUIRE_APPROVAL",
    "TERMINAL",
    "WAITING",
    "Attempt",
    "Clock",
    "Decision",
    "Gate",
    "LastAttempt",
    "Limits",
    "Observation",
    "OfferedTool",
    "OutcomeNotRecorded",
    "PolicyDecision",
    "PreparedDecision",
    "ProxyPolicy",
    "RunView",
    "Session",
    "SessionEnded",
    "SideEffectPolicy",
    "ToolRequest",
    "Verdict",
    "WallClock",
    "approval_hash",
    "approve_shown",
    "default_policy",
    "offered_tools_from_config",
    "proxy_limits",
    "stored_hash",
]
