"""What applying the rules' action came to, for ``calls.CallRules.handle``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from agentrt_proxy.gate import Session
from agentrt_proxy.store import Approval, ProxyCall


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
