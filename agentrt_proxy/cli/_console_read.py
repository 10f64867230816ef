"""What the console's pages show, read through the same store readers and views as ``runs``,
``show`` and ``verify``: every value here is sanitized and bounded as those commands print it
(``operator_views``); the page builder only HTML-escapes it.
"""

from __future__ import annotations

import datetime
import re
from dataclasses import dataclass
from typing import Any

from agentrt_proxy.canonical import durations
from agentrt_proxy.cli import _operator_frame as operator_frame
from agentrt_proxy.cli import _operator_views as views
from agentrt_proxy.cli import _task_views as task_views
from agentrt_proxy.cli import _verify_chain as verify_chain
from agentrt_proxy.cli import _verify_state as verify_state
from agentrt_proxy.cli._late_outcomes import late_outcome_lines
from agentrt_proxy.cli._watch_feed import waited
from agentrt_proxy.config import Config
from agentrt_proxy.gate import INTERRUPTED_SIDE_EFFECT, KIND_INTERRUPTED, approvals
from agentrt_proxy.store import (
    APPROVAL_PENDING,
    CANCELLED,
    FAILED,
    STEP_INTERRUPTED,
    WAITING,
    Approval,
    NotFound,
    RunSummary,
    Store,
    WithheldTool,
    pending_approvals,
)
from agentrt_proxy.store import reads as store_reads
from agentrt_proxy.text import console_text, escaping, operator_text
from agentrt_proxy.text.cli_text import program_invocation
from agentrt_proxy.upstream import ManifestError, read_manifest

RUNS_READ = 500  # the newest runs a filter searches
WITHHELD_DETAIL_BYTES = 600  # a withheld tool's detail as the page shows it (the rest counted)
SHOW_EVENTS = 1000
PAYEE = re.compile(
    r"(^|_)(to|payee|recipient|beneficiary|account|iban|dest|destination|email|address|user)($|_)", re.IGNORECASE
)
DAY = re.compile(r"\d{4}-\d{2}-\d{2}")
# the console's run filters (a page's ?status=): not statuses of a run or a step
FILTER_ALL, FILTER_WAITING, FILTER_UNKNOWN = "all", "waiting", "unknown"
FILTER_FAILED = "failed"  # FAILED or CANCELLED
RUN_FILTERS = (FILTER_ALL, FILTER_WAITING, FILTER_UNKNOWN, FILTER_FAILED)


@dataclass(frozen=True)
class Card:
    """One waiting approval as the hash binds it."""

    approval: Approval
    server: str
    tool: str
    offered: str
    kind: str
    waited: str
    expires: str
    arguments: list[tuple[str, int, str]]
    presentation: list[tuple[str, int, str]]
    unread: str
    reason: str
    known: list[str]
    payees: list[str]  # "name: value" of the payee-like fields, for the confirmation


def _capability(approval: Approval) -> dict[str, Any]:
    tree = views.loads(approval.capability_json)
    return tree if isinstance(tree, dict) else {}


def card(store: Store, approval: Approval) -> Card:
    cap = _capability(approval)
    request, unread = views.literal_tree(approval.request_json)
    presentation, unread_p = views.literal_tree(approval.presentation_json)
    arguments = views.field_rows(request.get("args") if isinstance(request, dict) else None)
    presentation_rows = views.field_rows(presentation)
    reason = store_reads.approval_reason(store, approval)
    if isinstance(presentation, dict) and "reason" in presentation:
        reason = ""  # shown among the presentation's fields already, as show does
    return Card(
        approval=approval,
        server=escaping.clean(str(cap.get("server", "")), views.KEY_BYTES),
        tool=escaping.clean(str(cap.get("tool", "")), views.KEY_BYTES),
        offered=escaping.clean(views.approval_tool(approval), views.KEY_BYTES),
        kind=console_text.KIND_RUN_AGAIN if approval.kind == INTERRUPTED_SIDE_EFFECT else console_text.KIND_NEW,
        waited=waited(approval),
        expires=views.local_time(approval.expires_at) if approval.expires_at else console_text.FIELD_NEVER,
        arguments=arguments,
        presentation=presentation_rows,
        unread=escaping.clean(unread or unread_p, 500),
        reason=views.capped(reason) if reason else "",
        known=late_outcome_lines(store, approval),
        payees=[f"{name}: {shown}" for name, _, shown in arguments if PAYEE.search(name)],
    )


def waiting_cards(store: Store) -> list[Card]:
    return [card(store, a) for a in pending_approvals(store)]


def what_happened(approval: Approval) -> str:
    """A decided (or expired) approval in one sentence, for a stale page."""
    by = console_text.WHAT_BY.format(by=escaping.clean(approval.decided_by, 200)) if approval.decided_by else ""
    note = console_text.WHAT_NOTE.format(note=escaping.clean(approval.note, 500)) if approval.note else ""
    return console_text.WHAT_HAPPENED.format(
        approval=escaping.sanitize(approval.id), status=escaping.clean(approval.status, 40), by=by, note=note
    )


def gone_sentence(approval: Approval) -> str:
    by = console_text.WHAT_BY.format(by=escaping.clean(approval.decided_by, 200)) if approval.decided_by else ""
    return console_text.GONE.format(
        approval=escaping.sanitize(approval.id), status=escaping.clean(approval.status, 40), by=by
    )


# --------------------------------------------------------------------------- runs


@dataclass(frozen=True)
class RunFilter:
    status: str = FILTER_ALL
    tool: str = ""
    day: str = ""


@dataclass(frozen=True)
class RunRow:
    cells: list[str]
    run_id: str


def _step_tools_and_unknown(store: Store, run_id: str) -> tuple[list[str], bool]:
    tools, unknown = [], False
    for step in store.steps_of(run_id):
        decision = views.loads(step.decision_json)
        if isinstance(decision, dict) and isinstance(decision.get("tool"), str):
            tools.append(decision["tool"])
        observation = views.loads(step.observation_json)
        if step.status == STEP_INTERRUPTED or (
            isinstance(observation, dict) and observation.get("kind") == KIND_INTERRUPTED
        ):
            unknown = True
    return tools, unknown


def _matches(s: RunSummary, f: RunFilter, tools: list[str], unknown: bool) -> bool:
    run = s.run
    if f.status == FILTER_WAITING and run.status != WAITING:
        return False
    if f.status == FILTER_FAILED and run.status not in (FAILED, CANCELLED):
        return False
    if f.status == FILTER_UNKNOWN and not unknown:
        return False
    if f.tool and f.tool not in tools:
        return False
    return not f.day or _utc_day(run.created_at) == f.day


def _utc_day(at: str) -> str:
    try:
        moment = datetime.datetime.fromisoformat(at.replace("Z", "+00:00"))
    except ValueError:
        return at[:10]
    return moment.astimezone(datetime.timezone.utc).strftime("%Y-%m-%d")


def runs(store: Store, f: RunFilter) -> tuple[list[RunRow], int, int]:
    """(the matching runs, waiting first, how many were searched, how many there are)."""
    summaries = views.waiting_first(views.read_runs(store, RUNS_READ, 0, RUNS_READ))
    rows = []
    for s in summaries:
        tools, unknown = _step_tools_and_unknown(store, s.run.id)
        interrupted = s.pending_approval_id and any(
            a.kind == INTERRUPTED_SIDE_EFFECT and a.status == APPROVAL_PENDING for a in store.approvals_of(s.run.id)
        )
        if not _matches(s, f, tools, unknown or bool(interrupted)):
            continue
        r = s.run
        cells = [
            views.cell(r.id),
            views.cell(r.status),
            views.cell(r.reason),
            str(r.step_count),
            views.cell(r.created_at),
            views.cell(s.pending_approval_id),
            views.cell(", ".join(tools)),
            views.cell(r.goal),
        ]
        rows.append(RunRow(cells, r.id))
    return rows, len(summaries), store.count_runs()


def show_lines(store: Store, path: str, run_id: str) -> tuple[list[str], bool]:
    """The run as ``show`` prints it (its first ``SHOW_EVENTS`` events), and whether more follow."""
    run = operator_frame.read_run(store, run_id)
    task = store.tasks.of_runs([run_id]).get(run_id)
    lines = views.run_header(run) + task_views.task_lines(task) + views.budget_lines(store.holds.of_run(run_id))
    for a in store.approvals_of(run_id):
        if a.status == APPROVAL_PENDING:
            reason, known = store_reads.approval_reason(store, a), late_outcome_lines(store, a)
            lines += ["", *views.approval_block(a, reason, program_invocation(), path, known)]
    lines += ["", *views.steps_table(store.steps_of(run_id)), "", operator_text.OP_EVENTS]
    events = store.events_of(run_id, 0, SHOW_EVENTS + 1)
    lines += [views.event_line(e) for e in events[:SHOW_EVENTS]] or [operator_text.OP_NO_EVENTS]
    return lines, len(events) > SHOW_EVENTS


# --------------------------------------------------------------------------- the rest


def budgets(store: Store, config: Config) -> list[list[str]]:
    """Spent and reserved as ``runs`` sums them, beside each configured limit and window."""
    sums = {b["budget"]: b for b in views.budget_json(store.holds.every())}
    out = []
    for budget in config.budgets:
        found = sums.pop(budget.name, {"spent": "0", "reserved": "0"})
        window = f"{budget.window // 1_000_000_000}s" if budget.window else console_text.BUDGET_LIFETIME
        limit = format(budget.limit, "f") + (f" {budget.currency}" if budget.currency else "")
        out.append([escaping.clean(budget.name, 200), found["spent"], found["reserved"], limit, window])
    for name, found in sums.items():  # reserved under a budget since removed from the configuration
        out.append([escaping.clean(name, 200), found["spent"], found["reserved"], console_text.BUDGET_UNCONFIGURED, ""])
    return out


def tasks(store: Store, session: str, limit: int = 200) -> list[list[str]]:
    return [
        [
            escaping.sanitize(t.id),
            escaping.clean(t.status, 40),
            escaping.clean(t.tool, 200),
            escaping.sanitize(t.run_id),
            escaping.clean(t.status_message, task_views.MESSAGE_BYTES),
        ]
        for t in store.tasks.page(session, None, limit)
    ]


CLEARED_SHOWN = 50  # the most recently cleared withholdings the Tools page lists


def _at(ns: int) -> str:
    return views.local_time(durations.format_time(ns))


def _withheld_cells(w: WithheldTool, *times: int) -> list[str]:
    detail = views.capped(w.detail, WITHHELD_DETAIL_BYTES)
    cells = [escaping.clean(w.server, 200), escaping.clean(w.tool, 200), escaping.clean(w.reason, 40), detail]
    return cells + [_at(at) for at in times]


def withheld_now(store: Store) -> list[list[str]]:
    """(server, tool, reason, detail, first seen, last seen, session) per tool serving withholds now."""
    return [
        [*_withheld_cells(w, w.first_seen, w.last_seen), escaping.clean(w.session, 200)] for w in store.withheld.now()
    ]


def withheld_cleared(store: Store) -> list[list[str]]:
    """(server, tool, reason, detail, withheld from, cleared at) per withholding since cleared, newest first."""
    return [_withheld_cells(w, w.first_seen, w.cleared_at) for w in store.withheld.cleared(CLEARED_SHOWN)]


def refused_tools(config: Config) -> tuple[list[list[str]], list[str]]:
    """(server, tool, rule, where) per finding that refused a tool at the pin; unreadable manifests."""
    rows, trouble = [], []
    for server in config.servers:
        try:
            manifest = read_manifest(server.manifest)
        except ManifestError as err:
            trouble.append(
                console_text.TOOLS_UNREADABLE.format(
                    server=escaping.clean(server.name, 200), detail=escaping.clean(str(err), 500)
                )
            )
            continue
        refused = manifest.scan.refused if manifest.scan is not None else {}
        for tool, findings in sorted(refused.items()):
            for f in findings:
                rows.append(
                    [
                        escaping.clean(server.name, 200),
                        escaping.clean(tool, 200),
                        escaping.clean(f.get("rule", ""), 100),
                        escaping.clean(f"{f.get('field', '')}: {f.get('span', '')}", 500),
                    ]
                )
    return rows, trouble


def verify_lines(store: Store) -> tuple[bool, list[str]]:
    """``verify``'s verdict, head and state lines, through its own code."""
    report = store.verify(0, 0, None, approval_hash=approvals.stored_hash)
    args = verify_chain.VerifyArgs(0, 0, None, False)
    return report.intact, verify_chain.verify_lines(report, args, "") + verify_state.state_lines(report)


# --------------------------------------------------------------------------- the live update


@dataclass
class PendingWatch:
    """What changed in the waiting approvals since the page was drawn, asked of the chain head
    (every decision, arrival and expiry is an event) so an idle stream reads one row a poll."""

    store: Store
    shown: set[str]
    head: int = -1

    def poll(self) -> dict[str, Any] | None:
        head = self.store.chain_head()[0]
        if head == self.head:
            return None
        first = self.head < 0
        self.head = head
        pending = [a.id for a in pending_approvals(self.store)]
        gone: dict[str, str] = {}
        for approval_id in sorted(self.shown - set(pending)):
            try:
                gone[approval_id] = gone_sentence(self.store.get_approval(approval_id))
            except NotFound:
                gone[approval_id] = console_text.GONE.format(
                    approval=escaping.sanitize(approval_id), status=console_text.STATUS_GONE, by=""
                )
        arrived = set(pending) - self.shown
        self.shown = set(pending)
        if not (first or gone or arrived):
            return None
        return {"pending": pending, "gone": gone}
