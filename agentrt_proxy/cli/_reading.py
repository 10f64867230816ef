"""``runs`` and ``show``: the operator reads the database, read-only.

``runs`` lists the runs (waiting ones first within what was read) with each budget's spent and
reserved; ``show RUN`` prints one run, its pending approvals as the block ``approve`` prints, its
steps and its events, a page at a time. The store's read queries (``store.reads``) fetch; the
views (``operator_views``) format; this module only puts the two together.
"""

from __future__ import annotations

import os
from typing import Any

from agentrt_proxy.cli import _operator_frame as frame
from agentrt_proxy.cli import _operator_views as views
from agentrt_proxy.cli import _task_views as task_views
from agentrt_proxy.cli._late_outcomes import late_outcome_lines
from agentrt_proxy.store import (
    APPROVAL_PENDING,
    Approval,
    Event,
    Run,
    Step,
    Store,
    TaskRow,
    approval_reason,
    run_event_pages,
    runs_window,
)
from agentrt_proxy.text import operator_text
from agentrt_proxy.text.cli_text import program_invocation

RUNS_LIMIT = 100
RUNS_PAGE = 500
EVENTS_PAGE = 500
JSON_EVENTS = 1000


# --------------------------------------------------------------------------- runs


def runs_command(argv: list[str]) -> int:
    fl = frame.parse(argv, ("limit", "offset"))
    frame.no_positionals(fl)
    limit = frame.non_negative(fl, "limit", RUNS_LIMIT)
    offset = frame.non_negative(fl, "offset", 0)
    source = frame.database(fl)
    return frame.guarded("runs", source, lambda path: _runs(path, limit, offset, fl.on("json")))


def _runs(path: str, limit: int, offset: int, as_json: bool) -> int:
    with frame.opened(path, writer=False) as store:
        total = store.count_runs()
        summaries = runs_window(store, limit, offset, RUNS_PAGE)
        holds = store.holds.every()
        budgets = views.budget_lines(holds)
        tasks = store.tasks.of_runs([s.run.id for s in summaries])  # the runs a host follows as tasks
    # Waiting runs first within what was read; the store lists newest first.
    summaries = views.waiting_first(summaries)
    remaining = max(0, total - offset - len(summaries))
    if as_json:
        out: dict[str, Any] = {
            "runs": [
                task_views.with_task(views.run_json(s.run, s.pending_approval_id), tasks.get(s.run.id))
                for s in summaries
            ],
            "total": total,
            "limit": limit,
            "offset": offset,
        }
        if remaining:
            out["truncated"] = True
        if holds:
            out["budgets"] = views.budget_json(holds)
        frame.emit_json(out)
        return 0
    if not summaries:
        frame.emit([operator_text.OP_NO_RUNS])
        return 0
    lines = views.runs_table(summaries, tasks)
    if remaining:
        lines.append(operator_text.op_more_runs(remaining, offset + len(summaries)))
    frame.emit(lines + (["", *budgets] if budgets else []))
    return 0


# --------------------------------------------------------------------------- show


def show_command(argv: list[str]) -> int:
    fl = frame.parse(argv, ())
    run_id = frame.one_run(fl)
    source = frame.database(fl)
    return frame.guarded("show", source, lambda path: _show(path, run_id, fl.on("json")))


def _show(path: str, run_id: str, as_json: bool) -> int:
    with frame.opened(path, writer=False) as store:
        run = frame.read_run(store, run_id)
        steps = store.steps_of(run_id)
        approvals_ = store.approvals_of(run_id)
        pending = [a for a in approvals_ if a.status == APPROVAL_PENDING]
        task = store.tasks.of_runs([run_id]).get(run_id)
        if as_json:
            frame.emit_json(_show_json(store, run, steps, approvals_, pending, task))
            return 0
        lines = views.run_header(run) + task_views.task_lines(task) + views.budget_lines(store.holds.of_run(run_id))
        for a in pending:
            reason, known = approval_reason(store, a), late_outcome_lines(store, a)
            block = views.approval_block(a, reason, program_invocation(), os.path.abspath(path), known)
            lines += ["", *block]
        lines += ["", *views.steps_table(steps), "", operator_text.OP_EVENTS]
        frame.emit(lines)
        _stream_events(store, run_id)
    return 0


def _show_json(
    store: Store,
    run: Run,
    steps: list[Step],
    approvals_: list[Approval],
    pending: list[Approval],
    task: TaskRow | None,
) -> dict[str, Any]:
    events: list[Event] = store.events_of(run.id, 0, JSON_EVENTS + 1)
    out: dict[str, Any] = {
        "run": task_views.with_task(views.run_json(run, pending[-1].id if len(pending) == 1 else ""), task),
        "steps": [views.step_json(s) for s in steps],
        "steps_total": len(steps),
    }
    if approvals_:
        out["approvals"] = [views.approval_json(a) for a in approvals_]
    out["approvals_total"] = len(approvals_)
    if pending:
        out["waiting_approval"] = views.approval_json(pending[-1])
    holds = store.holds.of_run(run.id)
    if holds:
        out["budgets"] = views.budget_json(holds)
    out["limit"], out["offset"] = 0, 0
    out["events"] = [views.event_json(e) for e in events[:JSON_EVENTS]]
    if len(events) > JSON_EVENTS:
        out["events_truncated"] = True
    return out


def _stream_events(store: Store, run_id: str) -> None:
    """The run's events a page at a time, so a long run never sits in memory whole."""
    printed = 0
    for page in run_event_pages(store, run_id, EVENTS_PAGE):
        frame.emit([views.event_line(e) for e in page])
        printed += len(page)
    if not printed:
        frame.emit([operator_text.OP_NO_EVENTS])
