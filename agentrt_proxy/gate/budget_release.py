"""The operator's ``budget release`` (decision 0017): a reservation an outcome that may have taken
effect kept spent is given back, once the operator knows nothing was paid.

The proxy itself releases only what it knows was never executed (a refusal, nothing sent, the
server's own error). Everything else stays counted: a rejected re-run question, an UNRECORDED
answer, a cut-off call. This is the one way back, and it is written in the audit chain: the
rows move to released and a ``budget.released`` event naming each (budget, currency, amount,
the state it had), who released it and why, commit in one transaction. Only a run that has
ended can be released: a live run's reservation is what keeps its own call inside the budget.
"""

from __future__ import annotations

from agentrt_proxy.canonical.clock import WALL
from agentrt_proxy.errors import AgentrtError
from agentrt_proxy.gate._model import fmt
from agentrt_proxy.store import TERMINAL, Hold, RunStateError, Store, holds
from agentrt_proxy.store.holds import RELEASED_EVENT
from agentrt_proxy.text.operator_text import ERR_RELEASE_ALREADY, ERR_RELEASE_NONE, ERR_RELEASE_OPEN_RUN


class NothingToRelease(AgentrtError):
    """The run holds no reservation, or every one it held is released already."""


def release(store: Store, run_id: str, by: str, note: str, now_ns: int | None = None) -> list[Hold]:
    """Release every reserved or spent row of ``run_id``; the rows as they were. ``NotFound``
    for an unknown run, ``RunStateError`` for one still open, ``NothingToRelease`` otherwise."""
    now = WALL.now_ns() if now_ns is None else now_ns
    at = fmt(now)
    with store.write() as tx:
        run = tx.run(run_id)
        if run.status not in TERMINAL:
            raise RunStateError(ERR_RELEASE_OPEN_RUN.format(run_id=run_id, status=run.status))
        released = holds.release_live(tx, run_id, now)
        if not released:
            had = store.holds.of_run(run_id)
            raise NothingToRelease((ERR_RELEASE_ALREADY if had else ERR_RELEASE_NONE).format(run_id=run_id))
        entries = [{"budget": h.budget, "currency": h.currency, "amount": h.amount, "was": h.state} for h in released]
        payload = {"by": by, "note": note, "holds": entries, "settled_at": now}  # verify replays the rows from it
        tx.append(run_id, "", at, RELEASED_EVENT, payload)
    return released
