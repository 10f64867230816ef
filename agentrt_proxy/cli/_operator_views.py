"""What the operator's subcommands print: tables, the approval block, events, JSON shapes.

Everything here is a pure function of rows already read; nothing opens the database.
Every value that came from a model, a server or the database goes through ``escaping.sanitize``
before it is printed, and is bounded: table cells at 60 bytes, the goal and details at
4000, an event payload at 8000, one argument field at ``MAX_FIELD_BYTES`` (head…tail).
"""

from __future__ import annotations

import datetime
import json
from collections.abc import Iterable, Mapping, Sequence
from decimal import Decimal
from typing import Any

from agentrt_proxy import canonical
from agentrt_proxy.canonical import durations
from agentrt_proxy.canonical.encoder import Raw, go_json
from agentrt_proxy.cli import _task_views as task_views
from agentrt_proxy.store import (
    HOLD_RESERVED,
    HOLD_SPENT,
    WAITING,
    Approval,
    Event,
    Hold,
    Run,
    RunSummary,
    Step,
    TaskRow,
    runs_window,
)
from agentrt_proxy.text import escaping, operator_text

CELL_BYTES = 60
TEXT_BYTES = 4000
PAYLOAD_BYTES = 8000
MAX_FIELD_BYTES = 2000
KEY_BYTES = 200
MAX_PAGE_TEXT = 65536  # runtime-core §1.12: a JSON column longer than this is shown truncated
HASH_BYTES = 128
EVENT_TYPE_WIDTH = 22


# --------------------------------------------------------------------------- bounding


def _byte_len(text: str) -> int:
    return len(text.encode("utf-8", "surrogatepass"))


def cell(text: str) -> str:
    """One table cell: sanitized, at most 60 bytes (``…`` when cut)."""
    return escaping.clean(text, CELL_BYTES) or "-"


def capped(text: str, limit: int = TEXT_BYTES, more: Any = operator_text.op_more_bytes) -> str:
    """Sanitized text with the rest counted rather than shown."""
    safe = escaping.sanitize(text)
    size = _byte_len(safe)
    if size <= limit:
        return safe
    head = safe.encode("utf-8", "surrogatepass")[:limit].decode("utf-8", "ignore")
    return head + more(size - _byte_len(head))


def head_tail(text: str, limit: int = MAX_FIELD_BYTES) -> str:
    """Long values keep their beginning and their end: the part a model could bury in
    the middle of a long value is said to be there, with its size."""
    data = text.encode("utf-8", "surrogatepass")
    if len(data) <= limit:
        return text
    half = limit // 2
    head = data[:half].decode("utf-8", "ignore")
    tail = data[-half:].decode("utf-8", "ignore")
    omitted = len(data) - _byte_len(head) - _byte_len(tail)
    return head + operator_text.op_omitted(omitted) + tail


def short_hash(text: str) -> str:
    return escaping.clean(text, HASH_BYTES)


def local_time(at: str) -> str:
    """A stored RFC 3339 time as the operator's local time with milliseconds."""
    try:
        ns = durations.parse_time(at)
    except (ValueError, TypeError):
        return escaping.clean(at, 64)
    moment = datetime.datetime.fromtimestamp(ns / 1e9, tz=datetime.timezone.utc).astimezone()
    return moment.strftime("%Y-%m-%d %H:%M:%S.") + f"{moment.microsecond // 1000:03d}" + moment.strftime(" %z")


def table(headers: Sequence[str], rows: Iterable[Sequence[str]]) -> list[str]:
    """Columns padded like Go's tabwriter (two spaces between); the last is not padded."""
    body = [list(r) for r in rows]
    widths = [max(len(h), *(len(r[i]) for r in body)) if body else len(h) for i, h in enumerate(headers)]
    out = []
    for r in [list(headers), *body]:
        cells = [c.ljust(widths[i]) for i, c in enumerate(r[:-1])] + [r[-1]]
        out.append("  ".join(cells).rstrip())
    return out


# --------------------------------------------------------------------------- stored JSON


def loads(text: str) -> Any:
    try:
        return json.loads(text) if text else None
    except ValueError:
        return None


def json_column(text: str) -> Any:
    """A stored JSON column for -json output: verbatim when it parses, bounded (runtime-core §1.12)."""
    if not text:
        return None
    if len(text) > MAX_PAGE_TEXT:
        return {"truncated": True, "length": len(text), "head": text[:MAX_PAGE_TEXT]}
    return Raw(text) if loads(text) is not None or text == "null" else text


def _object(text: str) -> dict[str, Any]:
    value = loads(text)
    return value if isinstance(value, dict) else {}


# --------------------------------------------------------------------------- runs


def runs_table(summaries: Sequence[RunSummary], tasks: Mapping[str, TaskRow] | None = None) -> list[str]:
    """The runs; a TASK column before GOAL only when a listed run is a task (``task_views``), so a
    table of plain runs keeps the classic columns."""
    tasks = tasks or {}
    rows = [
        [
            cell(s.run.id),
            cell(s.run.status),
            cell(s.run.reason),
            str(s.run.step_count),
            cell(s.run.created_at),
            cell(s.pending_approval_id),
            *([task_views.task_cell(tasks.get(s.run.id))] if tasks else []),
            cell(s.run.goal),
        ]
        for s in summaries
    ]
    task_column = [operator_text.OP_TASK_COLUMN] if tasks else []
    return table(["RUN", "STATUS", "REASON", "STEPS", "CREATED", "APPROVAL", *task_column, "GOAL"], rows)


def run_json(run: Run, pending_approval_id: str = "") -> dict[str, Any]:
    """One run as runtime-core §7.3's summary: empty fields are left out."""
    out: dict[str, Any] = {"id": run.id, "goal": capped(run.goal, MAX_PAGE_TEXT), "status": run.status}
    if run.reason:
        out["reason"] = run.reason
    if run.reason_detail:
        out["reason_detail"] = capped(run.reason_detail, MAX_PAGE_TEXT)
    out["steps"] = run.step_count
    out["created_at"] = run.created_at
    if run.finished_at:
        out["finished_at"] = run.finished_at
    if pending_approval_id:
        out["pending_approval_id"] = pending_approval_id
    if run.model_calls:
        out["model_calls"] = run.model_calls
    if run.input_tokens or run.output_tokens or run.cached_input_tokens:
        out["usage"] = {
            "input_tokens": run.input_tokens,
            "output_tokens": run.output_tokens,
            "cached_input_tokens": run.cached_input_tokens,
        }
    if run.estimated_cost_micros:
        out["estimated_cost_micros"] = run.estimated_cost_micros
    return out


def waiting_first(summaries: Sequence[RunSummary]) -> list[RunSummary]:
    """Waiting runs first, each group newest first (the order they were read in)."""
    return sorted(summaries, key=lambda s: s.run.status != WAITING)


# --------------------------------------------------------------------------- show


def run_header(run: Run) -> list[str]:
    status = f"{run.status} ({run.reason})" if run.reason else run.status
    if run.reason_detail:
        status += ": " + capped(run.reason_detail)
    times = f"created  {escaping.sanitize(run.created_at)}"
    if run.finished_at:
        times += f"  finished {escaping.sanitize(run.finished_at)}"
    lines = [
        f"run      {escaping.sanitize(run.id)}",
        f"goal     {capped(run.goal)}",
        f"status   {escaping.sanitize(status)}",
        f"steps    {run.step_count}",
        times,
    ]
    if run.model_calls:
        lines.append(operator_text.op_model_usage(run.model_calls, run.input_tokens, run.output_tokens))
    return lines


def step_cells(step: Step) -> list[str]:
    decision, policy, obs = _object(step.decision_json), _object(step.policy_json), _object(step.observation_json)
    policy_text = str(policy.get("outcome", ""))
    if policy.get("kind"):
        policy_text += f" ({policy['kind']})"
    return [
        str(step.idx),
        cell(str(decision.get("tool", ""))),
        cell(str(decision.get("kind", ""))),
        cell(step.status),
        cell(policy_text),
        cell(str(obs.get("kind", ""))),
        cell(str(obs.get("summary", ""))),
    ]


def steps_table(steps: Sequence[Step]) -> list[str]:
    if not steps:
        return [operator_text.OP_NO_STEPS]
    return table(
        ["STEP", "TOOL", "DECISION", "STATUS", "POLICY", "OBSERVATION", "SUMMARY"], [step_cells(s) for s in steps]
    )


def step_json(step: Step) -> dict[str, Any]:
    decision, obs = _object(step.decision_json), _object(step.observation_json)
    out: dict[str, Any] = {"index": step.idx, "id": step.id}
    if decision.get("tool"):
        out["tool"] = decision["tool"]
    if step.decision_json:
        out["decision"] = json_column(step.decision_json)
    out["status"] = step.status
    if step.policy_json:
        out["policy"] = json_column(step.policy_json)
    if step.observation_json:
        out["observation"] = json_column(step.observation_json)
    if obs.get("summary"):
        out["summary"] = obs["summary"]
    return out


def event_line(ev: Event) -> str:
    """Local time, two spaces, the type padded to 22, the sanitized payload (8000 bytes)."""
    kind = escaping.clean(ev.type, 64).ljust(EVENT_TYPE_WIDTH)
    return f"{local_time(ev.at)}  {kind} {capped(ev.payload_json, PAYLOAD_BYTES, operator_text.op_more_payload)}"


def event_json(ev: Event) -> dict[str, Any]:
    out: dict[str, Any] = {"seq": ev.seq, "run_id": ev.run_id}
    if ev.step_id:
        out["step_id"] = ev.step_id
    out.update({"at": ev.at, "type": ev.type, "payload": json_column(ev.payload_json)})
    return out


# --------------------------------------------------------------------------- the approval block


def approval_tool(approval: Approval) -> str:
    request = _object(approval.request_json)
    spec = request.get("spec")
    return str(spec.get("name", "")) if isinstance(spec, dict) else ""


def field_lines(tree: Any) -> list[str]:
    """One line per top-level field: its name, its own size as stored, its value as
    compact JSON (escapes visible), sanitized and bounded head…tail."""
    rows = field_rows(tree)
    if not rows:
        return [operator_text.OP_BLOCK_NO_FIELDS]
    return [f"  {key} ({size} bytes): {shown}" for key, size, shown in rows]


def field_rows(tree: Any) -> list[tuple[str, int, str]]:
    """(name, its own size in bytes as stored, its value as compact JSON, escapes visible,
    sanitized and bounded head…tail) per top-level field: ``show`` and the console print these."""
    if not isinstance(tree, dict):
        return []
    out = []
    for key, value in tree.items():
        text = go_json(value)
        out.append((escaping.clean(str(key), KEY_BYTES), _byte_len(text), escaping.sanitize(head_tail(text))))
    return out


def literal_tree(text: str) -> tuple[Any, str]:
    """The stored JSON as a literal-keeping tree, or the reason it could not be read."""
    try:
        return canonical.parse_strict(text), ""
    except canonical.JSONBoundaryError as err:
        return None, err.reason


def approval_block(
    approval: Approval, reason: str, program: str, database: str, known: Sequence[str] = ()
) -> list[str]:
    """runtime-core §7.2's block; the closing line comes last and holds no model-chosen text.
    ``known``: what is known of an interruption's earlier attempt (``late_outcomes``)."""
    tool = escaping.clean(approval_tool(approval), KEY_BYTES)
    lines = [
        operator_text.op_block_head(escaping.sanitize(approval.id)),
        f"kind     {escaping.clean(approval.kind, KEY_BYTES)}",
        f"tool     {tool}",
    ]
    if approval.expires_at:
        lines.append(f"expires  {escaping.sanitize(approval.expires_at)}")
    request, unread = literal_tree(approval.request_json)
    presentation, unread_p = literal_tree(approval.presentation_json)
    if unread or unread_p:
        lines.append(f"unread   {escaping.clean(unread or unread_p, 500)}")
    lines.append(operator_text.OP_BLOCK_ARGUMENTS)
    lines += field_lines(request.get("args") if isinstance(request, dict) else None)
    lines.append(operator_text.OP_BLOCK_PRESENTATION)
    lines += field_lines(presentation)
    if reason and not (isinstance(presentation, dict) and "reason" in presentation):
        lines.append(f"policy's reason: {capped(reason)}")
    lines += known
    lines.append(
        operator_text.op_block_decide_with(
            program, database, escaping.sanitize(approval.run_id), escaping.sanitize(approval.id)
        )
    )
    lines.append(operator_text.op_block_end(escaping.sanitize(approval.id), tool))
    return lines


def approval_json(approval: Approval) -> dict[str, Any]:
    out: dict[str, Any] = {
        "id": approval.id,
        "run_id": approval.run_id,
        "step_id": approval.step_id,
        "kind": approval.kind,
        "status": approval.status,
        "hash": approval.hash,
        "created_at": approval.created_at,
    }
    for name in ("decided_at", "decided_by", "note", "expires_at"):
        if getattr(approval, name):
            out[name] = getattr(approval, name)
    out["capability"] = json_column(approval.capability_json)
    out["presentation"] = json_column(approval.presentation_json)
    out["request"] = json_column(approval.request_json)
    return out


def _budget_sums(holds: Sequence[Hold]) -> dict[str, dict[str, Decimal]]:
    """Spent and reserved per budget (released rows count for nothing), summed exactly."""
    sums: dict[str, dict[str, Decimal]] = {}
    for hold in holds:
        by_state = sums.setdefault(hold.budget, {HOLD_SPENT: Decimal(0), HOLD_RESERVED: Decimal(0)})
        if hold.state in by_state:
            by_state[hold.state] += Decimal(hold.amount)
    return sums


def budget_lines(holds: Sequence[Hold]) -> list[str]:
    """What each budget has spent and holds reserved, over the rows given: a run's for ``show``,
    every row for ``runs``."""
    return [
        operator_text.op_budget(name, format(by_state[HOLD_SPENT], "f"), format(by_state[HOLD_RESERVED], "f"))
        for name, by_state in _budget_sums(holds).items()
    ]


def budget_json(holds: Sequence[Hold]) -> list[dict[str, str]]:
    """The same for ``-json``: exact decimals as strings, as the amounts are stored."""
    return [
        {"budget": name, "spent": format(by_state[HOLD_SPENT], "f"), "reserved": format(by_state[HOLD_RESERVED], "f")}
        for name, by_state in _budget_sums(holds).items()
    ]


# The console reads its runs under this name; the reader itself is the store's (``store.reads``).
read_runs = runs_window
