"""What the rules across calls answer (``rules.decide``): an action, and the settlements found;
and what applying an action came to (``Applied``).

Small frozen values, applied by ``calls.CallRules`` and its parts: an answer, an approval to
wait on, an effect on a run (then the rules decide again), asking again about an unknown
outcome, or a new run; and the index rows found finished and unsettled on the way. Applying
one (``attaching``, ``begin``) comes to a finished answer, a run to execute, an approval to
hold the call on, or a lost race to decide again after.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from agentrt_proxy.gate import Attempt, Session
from agentrt_proxy.proxy._view import Read
from agentrt_proxy.store import Approval, ProxyCall
from agentrt_proxy.text import model_text


@dataclass(frozen=True)
class InProgress:
    """Another call (here or in another process) is executing this request, or just moved it."""

    text: str = field(default_factory=model_text.in_progress)


@dataclass(frozen=True)
class Refuse:
    """Rule 4: REJECTED, EXPIRED or cancelled within the window."""

    text: str


@dataclass(frozen=True)
class Duplicate:
    """Rule 5: this request executed with a known outcome within the window. ``quotes_server``:
    the text quotes what the server answered (its result or error) in run ``run_id``."""

    text: str
    run_id: str = ""
    quotes_server: bool = False


@dataclass(frozen=True)
class Blocked:
    """Another request to this tool has an unknown outcome an operator is asked about, or
    the session's pending approvals are at the cap."""

    text: str


@dataclass(frozen=True)
class AwaitApproval:
    """Rule 1: this request's run waits on a pending approval."""

    approval: Approval


@dataclass(frozen=True)
class Collect:
    """Rule 1: this request's approval was granted; the gate attaches and judges it again."""

    run_id: str
    grant: Approval  # as rule 1 read it; the gate reads it again and judges its age as it attaches

    @property
    def of_this_request(self) -> bool:
        return True  # rule 1 collects only this request's own run


@dataclass(frozen=True)
class TakeOver:
    """Rule 3 (``of_this_request``), or a run of this tool left running by a call that is gone."""

    run_id: str
    of_this_request: bool


@dataclass(frozen=True)
class Expire:
    """An approval past its expiry: attaching expires it and ends its run."""

    run_id: str
    of_this_request: bool


@dataclass(frozen=True)
class AskUnknown:
    """Another request to this tool has an unknown outcome nothing asks about: ask again in a
    fresh run of that request, and answer BLOCKED naming the question."""

    request_key: str
    args_text: str
    attempt: Attempt


@dataclass(frozen=True)
class Begin:
    """Rule 7: a new run. ``prior``: rule 6's unknown attempt this one re-runs; ``reuse``: the
    open row whose run never began; ``prev``: the finished open row the claim closes."""

    prior: Attempt | None = None
    reuse: ProxyCall | None = None
    prev: ProxyCall | None = None


Answering = InProgress | Refuse | Duplicate | Blocked
Effect = Collect | TakeOver | Expire
Action = Answering | AwaitApproval | Effect | AskUnknown | Begin


@dataclass(frozen=True)
class Settle:
    """Cache a finished run's last attempt on its index row."""

    row_id: int
    outcome: int


@dataclass(frozen=True)
class SettleEmpty:
    """Settle a row whose run does not exist (the store checks that again as it writes)."""

    row_id: int


Settlement = Settle | SettleEmpty


@dataclass(frozen=True)
class NextStep:
    action: Action | Read
    settle: tuple[Settlement, ...] = ()  # written before the action is applied or the read made


# ------------------------------------------------------------- what applying one came to


@dataclass(frozen=True)
class Answer:
    """A finished answer for the host: a ``CallToolResult``."""

    result: dict[str, Any]


@dataclass(frozen=True)
class Execute:
    """A run whose proposal the gate allowed: execute it, outside the lock."""

    session: Session
    row: ProxyCall | None = None  # a new run's index row as its begin transaction left it (unsettled)


@dataclass(frozen=True)
class Pending:
    """The request waits on this approval: hold the call, then answer pending."""

    approval: Approval


@dataclass(frozen=True)
class Retry:
    """The call lost a race: decide again. ``id_taken``: what it lost was only its run id
    (another call drew the same one), so the same step with a new id can go on."""

    id_taken: bool = False


@dataclass(frozen=True)
class DecideAgain:
    """An effect changed what the next read sees, and answered nothing: decide again."""


Applied = Answer | Execute | Pending | Retry
