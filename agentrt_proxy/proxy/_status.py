"""The status tool: what became of the session's approvals, answered from the database only.

It never executes, decides or writes anything and is not recorded as a run. It reads the
index rows of the last hour (at most 200), every approval of the runs behind them, and the
tasks (proxy/_tasks.py) that follow them: given ``task_id`` it answers what the host's
``tasks/get`` would, and an approval a task waits on names the task.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from agentrt_proxy import canonical
from agentrt_proxy.canonical.durations import HOUR, SECOND, format_go, parse_time
from agentrt_proxy.config import READ_ONLY
from agentrt_proxy.errors import InvalidValue
from agentrt_proxy.gate import INTERRUPTED_SIDE_EFFECT, WAITING, attempts
from agentrt_proxy.proxy._rules import past_expiry
from agentrt_proxy.store import (
    APPROVAL_PENDING,
    END_APPROVAL_EXPIRED,
    END_OPERATOR_CANCELLED,
    EXPIRED,
    REJECTED,
    RUNNING,
    Approval,
    Event,
    NotFound,
    ProxyCall,
    Run,
    Step,
    Store,
    TaskRow,
)
from agentrt_proxy.text import model_text

RECENT_WINDOW = HOUR
RECENT_LIMIT = 200


class StatusArgumentsError(InvalidValue):
    """The status tool's arguments are not ``{}``, ``{"approval_id": "<string>"}``,
    ``{"task_id": "<string>"}`` or ``{"tool": "<string>"}``."""


def parse_arguments(arguments_text: str | None) -> str | None:
    """The approval id asked about, trimmed; ``None`` for a listing."""
    try:
        args = canonical.parse_strict(canonical.normalise_arguments(arguments_text))
    except canonical.JSONBoundaryError:
        raise StatusArgumentsError(model_text.STATUS_BAD_ARGUMENTS) from None
    if not isinstance(args, dict) or set(args) - {"approval_id"}:
        raise StatusArgumentsError(model_text.STATUS_BAD_ARGUMENTS)
    return _string(args, "approval_id")


def parse_tool(arguments_text: str | None) -> str | None:
    """The tool whose budgets the status tool is asked about (``{"tool": "<name>"}``), or None."""
    return _only(arguments_text, "tool")


def parse_task(arguments_text: str | None) -> str | None:
    """The task the status tool is asked about (``{"task_id": "<id>"}``), or None."""
    return _only(arguments_text, "task_id")


def _only(arguments_text: str | None, name: str) -> str | None:
    """``name``'s string when it is the one argument; None when the arguments are something else."""
    try:
        args = canonical.parse_strict(canonical.normalise_arguments(arguments_text))
    except canonical.JSONBoundaryError:
        return None
    if not isinstance(args, dict) or set(args) != {name}:
        return None
    value = _string(args, name)
    if value is None:
        raise StatusArgumentsError(model_text.STATUS_BAD_ARGUMENTS)
    return value


def _string(args: dict[str, Any], name: str) -> str | None:
    value = args.get(name)
    if value is None:
        return None
    if not isinstance(value, str) or isinstance(value, canonical.Number):
        raise StatusArgumentsError(model_text.STATUS_BAD_ARGUMENTS)
    return value.strip() or None


@dataclass
class _Entry:
    row: ProxyCall
    run: Run
    steps: list[Step]
    approvals: list[Approval]
    task: TaskRow | None = None  # the task that follows the run's request, when a host asked for one
    events: list[Event] | None = None


class StatusReader:
    def __init__(self, store: Store, session: str, grant_ttl: int, is_known_answer: Any) -> None:
        self.store = store
        self.session = session
        self.grant_ttl = grant_ttl
        self.is_known_answer = is_known_answer  # (tool name, error text) -> bool
        # Called with (tool name, run id) as an answer quotes the error that tool's server
        # recorded: its text is the server's, and taints as that error did (the runtime sets it).
        self.quoted: Callable[[str, str], object] = lambda _tool, _run: None

    def answer(self, approval_id: str | None, now_ns: int) -> str:
        entries = self._entries(now_ns)
        if approval_id is None:
            waiting = [
                self._describe(entry, approval, entries, now_ns)
                for entry in reversed(entries)
                for approval in entry.approvals
                if approval.status == APPROVAL_PENDING and not past_expiry(approval, now_ns)
            ]
            return model_text.status_list(waiting)
        for entry in entries:
            for approval in entry.approvals:
                if approval.id == approval_id:
                    return model_text.status_one(self._describe(entry, approval, entries, now_ns))
        return model_text.status_unknown_id(approval_id)

    def task(self, task_id: str, now_ns: int) -> str:
        """The status tool given ``task_id``: what ``tasks/get`` says of a task of this session."""
        task = self.store.tasks.get(task_id)
        if task is None or task.session != self.session:
            return model_text.status_unknown_task(task_id)
        approval = None
        if task.approval_id:
            entries = self._entries(now_ns)
            for entry in entries:
                for candidate in entry.approvals:
                    if candidate.id == task.approval_id:
                        approval = self._describe(entry, candidate, entries, now_ns, name_task=False)
        return model_text.status_task(task.id, task.status, task.status_message, task.terminal, task.expired,
                                      approval)

    def _entries(self, now_ns: int) -> list[_Entry]:
        entries = []
        for row in self.store.index.recent(self.session, now_ns - RECENT_WINDOW, RECENT_LIMIT):
            try:
                run = self.store.get_run(row.run_id)
            except NotFound:
                continue
            entries.append(_Entry(row, run, self.store.steps_of(run.id), self.store.approvals_of(run.id)))
        tasks = self.store.tasks.of_runs([entry.run.id for entry in entries])
        for entry in entries:
            entry.task = tasks.get(entry.run.id)
        return entries

    # ------------------------------------------------------------------------- describing

    def _describe(self, entry: _Entry, approval: Approval, entries: list[_Entry], now_ns: int,
                  name_task: bool = True) -> str:
        request = attempts.loads(approval.request_json)
        request = request if isinstance(request, dict) else {}
        spec = request.get("spec")
        if not isinstance(spec, dict):
            spec = {}
        tool = str(spec.get("name", entry.row.tool))
        args = request.get("args", {})
        subject = model_text.status_subject(approval.id, tool, canonical.policy_text(args))
        text = subject + self._state(entry, approval, tool, entries, now_ns)
        task = entry.task
        if name_task and task is not None and task.approval_id == approval.id:
            text += model_text.status_task_follows(task.id, task.status)
        return text

    def _state(self, entry: _Entry, approval: Approval, tool: str, entries: list[_Entry], now_ns: int) -> str:
        age = format_go(max(0, now_ns - parse_time(approval.created_at)) // SECOND * SECOND)
        if approval.status == APPROVAL_PENDING:
            if past_expiry(approval, now_ns):
                return model_text.STATUS_EXPIRED_UNDECIDED
            if approval.kind == INTERRUPTED_SIDE_EFFECT:
                return model_text.status_waiting_interruption(age)
            return model_text.status_waiting(age)
        if approval.status == REJECTED:
            return model_text.status_rejected(approval.note)
        if approval.status == EXPIRED:
            return model_text.STATUS_EXPIRED
        return self._approved(entry, approval, tool, entries)

    def _approved(self, entry: _Entry, approval: Approval, tool: str, entries: list[_Entry]) -> str:
        step = next((s for s in entry.steps if s.id == approval.step_id), None)
        if step is not None and self._executed_under(entry, approval):
            return self._executed(entry, step, tool, entries)
        latest = attempts.latest_approval(entry.approvals)
        if latest is not None and latest.id != approval.id:
            return model_text.status_superseded(latest.id)
        if entry.run.status == WAITING and entry.task is not None and not entry.task.terminal:
            return model_text.STATUS_TASK_EXECUTING  # its owner collects it: the model calls nothing
        if entry.run.status == WAITING:
            return model_text.status_awaiting_collection(tool)
        if entry.run.status == RUNNING:
            return model_text.STATUS_EXECUTING
        return model_text.status_not_executed(_why_not_executed(entry.run, step))

    def _executed_under(self, entry: _Entry, approval: Approval) -> bool:
        """Whether a tool start was recorded under this approval (``step.tool_started`` names it)."""
        if entry.events is None:
            entry.events = self.store.events_of(entry.run.id, 0, 1000)
        for event in entry.events:
            if event.type == "step.tool_started" and approval.id in event.payload_json:
                payload = attempts.loads(event.payload_json)
                if isinstance(payload, dict) and payload.get("approval_id") == approval.id:
                    return True
        return False

    def _executed(self, entry: _Entry, step: Step, tool: str, entries: list[_Entry]) -> str:
        read_only = entry.row.side_effect == READ_ONLY
        last = attempts.last_attempt(
            entry.run.id,
            [s for s in entry.steps if s.idx <= step.idx],
            entry.approvals,
            read_only=read_only,
            tool_offered=True,
            is_known_answer=lambda text: self.is_known_answer(tool, text),
        )
        obs = attempts.observation(step)
        if last.unknown and last.attempt is not None:
            waiting = self._waiting_interruption(entry.row.request_key, entries)
            return model_text.status_executed_unknown(last.attempt.ended, waiting)
        if obs.get("kind") == "tool_result":
            return model_text.STATUS_EXECUTED_OK
        content = obs.get("content")
        if not isinstance(content, dict):
            content = {}
        if attempts.carries_server_text(obs):
            self.quoted(tool, entry.run.id)
        if content.get("failure") == "invalid_content":
            return model_text.status_executed_unrecorded(attempts.error_text(obs))
        return model_text.status_executed_failed(attempts.error_text(obs))

    def _waiting_interruption(self, request_key: str, entries: list[_Entry]) -> str | None:
        for entry in entries:
            if entry.row.request_key != request_key:
                continue
            for approval in reversed(entry.approvals):
                if approval.kind == INTERRUPTED_SIDE_EFFECT and approval.status == APPROVAL_PENDING:
                    return approval.id
        return None


def _why_not_executed(run: Run, step: Step | None) -> str:
    obs = attempts.observation(step) if step is not None else {}
    kind = obs.get("kind")
    if kind == "policy_denied":
        return model_text.NOT_EXECUTED_DENIED
    if kind == "invalid_decision":
        return model_text.NOT_EXECUTED_INVALID
    if run.reason == END_OPERATOR_CANCELLED:
        return model_text.NOT_EXECUTED_CANCELLED
    if run.reason == END_APPROVAL_EXPIRED:
        return model_text.NOT_EXECUTED_EXPIRED
    return model_text.not_executed_run_ended(run.reason or run.status)
