"""The one wall clock, and the shape every clock has, so tests can make time move.

Two readings of time are kept apart, as the runtime keeps them (runtime-core §1.11, §5.1):
``Now`` (a gate's ``clock``: what a run's events and approvals are stamped with) and the wall
clock (what alone stamps and judges leases, and what ids lead with). Both are a ``Clock``;
production passes ``WALL`` for both, a test passes a clock of its own for either.
"""

from __future__ import annotations

import time
from typing import Protocol


class Clock(Protocol):
    def now_ns(self) -> int:
        """Unix nanoseconds."""
        ...


class WallClock:
    """The system's wall clock (``time.time_ns``)."""

    def now_ns(self) -> int:
        return time.time_ns()


WALL: Clock = WallClock()
