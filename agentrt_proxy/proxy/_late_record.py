"""An outcome the database refused until the run's lease ran out (``OutcomeNotRecorded``): kept,
and recorded on its run as a late outcome (``step.late_outcome``, gate/_execution.py) once the
database takes writes again (SECURITY.md, "true words under faults").

Past its lease the step is no longer this proxy's to settle: another proxy, or this one's next
call, takes the run over and asks an operator whether the request runs again. What the server
answered is not thrown away meanwhile: it is appended to the run's events (changing no row), as
a proxy whose run was taken over while its tool ran does, so the take-over and the operator's
``approve``/``show`` say the server answered and what, never that the outcome is unknown.
Best effort, in the background: tried again after a pause, doubling up to ``MAX_PAUSE_S``, for
``KEEP_S`` at most; a database that is gone or corrupt is not tried again.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from typing import Any

import anyio

from agentrt_proxy.canonical.clock import Clock
from agentrt_proxy.canonical.durations import format_time
from agentrt_proxy.gate import LATE_OUTCOME_EVENT, Observation
from agentrt_proxy.proxy._parts import OperatorLog
from agentrt_proxy.store import Store, StoreCorrupt, StoreError, StoreGone
from agentrt_proxy.text import escaping, operator_text

FIRST_PAUSE_S = 0.5
MAX_PAUSE_S = 5.0
KEEP_S = 600.0  # ten minutes: past that an operator has long been asked, and shown the stderr line
SUMMARY_BYTES = 300
EVENT_PAGE = 200


def late_summary(store: Store, run_id: str) -> str | None:
    """The summary of the last late outcome recorded on ``run_id``, or None (a read that fails
    is None too: the take-over then says what it always said)."""
    found: str | None = None
    after = 0
    try:
        while True:
            events = store.events_of(run_id, after, EVENT_PAGE)
            for event in events:
                if event.type == LATE_OUTCOME_EVENT:
                    found = _summary_of(event.payload_json)
            if len(events) < EVENT_PAGE:
                return found
            after = events[-1].seq
    except StoreError:
        return None


def _summary_of(payload_json: str) -> str:
    try:
        payload = json.loads(payload_json or "{}")
    except ValueError:
        return ""
    obs = payload.get("observation") if isinstance(payload, dict) else None
    summary = obs.get("summary", "") if isinstance(obs, dict) else ""
    return escaping.clean(str(summary), SUMMARY_BYTES)


class LateRecords:
    """The outcomes this process keeps until the database takes them (one task each)."""

    def __init__(self, store: Store, clock: Clock, log: OperatorLog) -> None:
        self.store = store
        self.clock = clock
        self.log = log
        self._tasks: set[asyncio.Task[None]] = set()

    def keep(self, run_id: str, step_id: str, tool: str, obs: Observation) -> None:
        """Record ``obs`` on the run as a late outcome once the database takes writes again."""
        task = asyncio.get_running_loop().create_task(self._record(run_id, step_id, tool, obs))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _record(self, run_id: str, step_id: str, tool: str, obs: Observation) -> None:
        payload: dict[str, Any] = {"tool": tool, "observation": obs.tree(), "not_recorded": True}
        pause, waited = FIRST_PAUSE_S, 0.0
        while waited < KEEP_S:
            await anyio.sleep(pause)
            waited += pause
            try:
                await anyio.to_thread.run_sync(self._append, run_id, step_id, payload)
            except (StoreGone, StoreCorrupt):
                return  # no database will ever take it: the stderr line said what came back
            except StoreError:
                pause = min(pause * 2, MAX_PAUSE_S)
                continue
            line = operator_text.late_outcome_recorded(run_id, tool, escaping.clean(obs.summary, SUMMARY_BYTES))
            self.log.write_stderr(operator_text.operator_line(line))
            return

    def _append(self, run_id: str, step_id: str, payload: dict[str, Any]) -> None:
        with self.store.write() as tx:
            tx.append(run_id, step_id, format_time(self.clock.now_ns()), LATE_OUTCOME_EVENT, payload)

    async def aclose(self) -> None:
        """Stop trying (the proxy closes): what is not recorded yet stays on stderr only."""
        for task in list(self._tasks):
            task.cancel()
        with contextlib.suppress(Exception):
            if self._tasks:
                await asyncio.wait(list(self._tasks))
