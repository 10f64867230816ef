"""A decision from the console, through the code ``approve`` and ``reject`` run.

``deciding.select_approval`` reads the approval and its run whole and refuses one that is not
pending or whose run does not wait; ``deciding.decide_shown`` decides it bound to the hash the
page showed (``gate.approvals.approve_shown``/``reject_shown``: the store's conditional UPDATE),
so of two consoles, or a console and the command line, deciding at once exactly one wins and the
other is told what happened instead. The decider is recorded as ``NAME (console)``.
"""

from __future__ import annotations

from dataclasses import replace

from agentrt_proxy.cli import _console_pages as pages
from agentrt_proxy.cli import _console_read as read
from agentrt_proxy.cli import _deciding as deciding
from agentrt_proxy.cli import _operator_frame as operator_frame
from agentrt_proxy.cli._console_context import Console
from agentrt_proxy.store import NotFound, StoreError
from agentrt_proxy.text import console_text as T
from agentrt_proxy.text import escaping, operator_text

NOTE_BYTES = 4000


def decide(console: Console, form: dict[str, str], csrf: str) -> tuple[int, str]:
    """(HTTP status, page) for a POSTed decision whose session and CSRF token were checked."""
    verb, run_id = form.get("verb", ""), form.get("run", "")
    approval_id, shown = form.get("approval", ""), form.get("hash", "")
    note = form.get("note", "").strip() if verb == "reject" else ""
    missing = [name for name, value in (("run", run_id), ("approval", approval_id), ("hash", shown)) if not value]
    if verb not in ("approve", "reject"):
        missing.append("verb")
    if verb == "reject" and not note:
        missing.append(T.REJECT_NOTE)
    if missing:
        return 400, pages.message_page(
            T.STALE_TITLE, [T.BAD_FORM.format(detail=", ".join(missing)), T.REFUSED_NOTHING_CHANGED], "refused"
        )
    if len(note.encode()) > NOTE_BYTES:
        too_long = T.BAD_FORM.format(detail=T.BAD_NOTE_SIZE.format(limit=NOTE_BYTES))
        return 400, pages.message_page(T.STALE_TITLE, [too_long, T.REFUSED_NOTHING_CHANGED], "refused")
    by = T.DECIDED_BY.format(name=console.by)
    if form.get("confirmed") != "yes":  # a decision is confirmed first, always
        try:
            with operator_frame.opened(console.database, writer=False) as store:
                return 200, pages.confirm_page(read.card(store, store.get_approval(approval_id)), verb, csrf)
        except (operator_frame.OperatorError, StoreError) as err:
            return 409, _stale(console, approval_id, str(err))
    args = deciding.DecideArgs(verb, run_id, approval_id, by, note, True, False)
    try:
        with operator_frame.opened(console.database, writer=True) as store:
            current = deciding.select_approval(store, run_id, approval_id)
            decided = deciding.decide_shown(store, args, replace(current, hash=shown))
            run = store.get_run(run_id)
    except (operator_frame.OperatorError, StoreError) as err:
        return 409, _stale(console, approval_id, str(err))
    lines = [
        T.DECIDED.format(approval=decided.id, status=decided.status, by=escaping.clean(by, 200)),
        T.RUN_AFTER.format(
            run=run.id, status=operator_text.op_run_after(run.id, run.status, run.reason).split(": ", 1)[-1]
        ),
    ]
    return 200, pages.message_page(T.DECIDED_TITLE, lines, "decided")


def _stale(console: Console, approval_id: str, detail: str) -> str:
    lines = [T.STALE.format(detail=escaping.sanitize(detail).rstrip("."))]
    try:
        with operator_frame.opened(console.database, writer=False) as store:
            lines.append(read.what_happened(store.get_approval(approval_id)))
    except (operator_frame.OperatorError, StoreError, NotFound):
        pass
    return pages.message_page(T.STALE_TITLE, lines, "refused")
