"""Serving's record of the pinned tools it withholds: every check a supervisor makes of a server's
listing against its pins, written to the database (``store/_withheld.py``) in a worker thread, so
the operator's console, a process of its own, shows what is withheld now and what came back."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import anyio

from agentrt_proxy.canonical.clock import WALL
from agentrt_proxy.store import Store
from agentrt_proxy.upstream.supervisor import Recorder
from agentrt_proxy.upstream.withholding import Withholding


def withheld_recorder(store: Store, session: str) -> Recorder:
    """What ``Supervision.record`` awaits: one transaction per check. A store error is raised to
    the supervisor, which tells the operator and goes on serving."""

    async def record(server: str, checked: Sequence[str], withheld: Mapping[str, Withholding]) -> None:
        facts = {tool: (w.reason, w.detail) for tool, w in withheld.items()}
        now = WALL.now_ns()
        await anyio.to_thread.run_sync(
            lambda: store.withheld.observe(server, checked, facts, session=session, now_ns=now)
        )

    return record
