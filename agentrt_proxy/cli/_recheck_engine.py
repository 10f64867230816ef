"""Re-checking recorded decisions: each recorded ``step.policy`` rebuilt as it was handed then,
and answered by today's policy (proxy-and-mcp-module §2.11, §3; runtime-core §2.4–2.5, §8.4).

The request comes from the step's recorded arguments and the spec named by ``spec_hash`` (or,
with ``-current-tools``, the tool's spec as loaded now), the run from ``run.created`` and the
view's counts, the view's first steps and approvals with the status each approval had at the
event. The database is read only; nothing is written and no clock is read.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from agentrt_proxy import canonical
from agentrt_proxy.canonical import durations
from agentrt_proxy.canonical.encoder import go_json
from agentrt_proxy.cli._recheck_report import (
    DIFFERENT,
    NOT_A_POLICY_EVALUATION,
    SAME,
    Evaluation,
    RecheckReport,
)
from agentrt_proxy.config import Config
from agentrt_proxy.errors import AgentrtError
from agentrt_proxy.gate import (
    INTERRUPTED_SIDE_EFFECT,
    REQUIRE_APPROVAL,
    WAITING,
    Attempt,
    PolicyDecision,
    ProxyPolicy,
    RunView,
    ToolRequest,
    approval_hash,
)
from agentrt_proxy.store import (
    APPROVAL_PENDING,
    TERMINAL,
    Approval,
    Event,
    NotFound,
    Run,
    Step,
    Store,
    StoreError,
    StoreUnavailable,
)
from agentrt_proxy.text import recheck_text
from agentrt_proxy.upstream import ToolSpec
from agentrt_proxy.upstream.validation import schema_error

__all__ = ["Options", "Recheck", "recheck_run", "recheck_store", "run_ids"]


DEFAULT_LIMIT = 50
PAGE = 128
MAX_APPROVALS = 1024
MAX_PAGE_TEXT = 65536
POLICY_ERROR_PREFIX = "policy error: "
VIEW_COUNTS = (
    "step_count",
    "model_calls",
    "input_tokens",
    "output_tokens",
    "cached_input_tokens",
    "estimated_cost_micros",
    "active_ms",
    "steps",
    "approvals",
)


@dataclass(frozen=True)
class Options:
    run_id: str = ""
    session: str = ""
    limit: int = DEFAULT_LIMIT
    current_tools: bool = False


class Unrecheckable(AgentrtError):
    """One evaluation cannot be rebuilt from what the database recorded; the message is its detail."""


# ============================================================================ one run


@dataclass
class _Record:
    """Everything one run's re-check reads, read once."""

    run: Run
    events: list[Event]
    steps: list[Step]
    approvals: list[Approval]
    created: Event | None
    decided: dict[str, list[tuple[int, Event]]]


def _read_record(store: Store, run_id: str) -> _Record:
    with store.read():
        run = store.get_run(run_id)
        events: list[Event] = []
        while True:
            page = store.events_of(run_id, events[-1].seq if events else 0, PAGE)
            events += page
            if len(page) < PAGE:
                break
        steps = store.steps_of(run_id)
        approvals = store.approvals_of(run_id)
    created = next((e for e in events if e.type == "run.created"), None)
    decided: dict[str, list[tuple[int, Event]]] = {}
    for event in events:
        if event.type == "approval.decided":
            payload = _loads(event.payload_json)
            if isinstance(payload, dict) and isinstance(payload.get("approval_id"), str):
                decided.setdefault(payload["approval_id"], []).append((event.seq, event))
    return _Record(run, events, steps, approvals, created, decided)


def _loads(text: str) -> Any:
    try:
        return canonical.parse_strict(text) if text else None
    except canonical.JSONBoundaryError:
        return None


class Recheck:
    """Re-checks runs of one store under one policy; ``tools_now`` is set with current tools."""

    def __init__(self, store: Store, policy: ProxyPolicy, tools_now: Mapping[str, ToolSpec] | None = None) -> None:
        self.store = store
        self.policy = policy
        self.tools_now = tools_now
        self.source = "current" if tools_now is not None else "recorded"
        self._specs: dict[str, ToolSpec | str] = {}

    def run(self, run_id: str) -> RecheckReport:
        rec = _read_record(self.store, run_id)
        report = RecheckReport(run_id, rec.run.status, self.policy.policy_id(), self.source)
        for index, event in enumerate(rec.events):
            if event.type == "step.policy":
                report.evaluations.append(self._evaluation(rec, event))
            elif event.type == "step.failed":
                self._policy_failure(rec, index, report)
        report.notes = self._notes(rec, report)
        return report

    # -------------------------------------------------------------------- bookkeeping
    def _notes(self, rec: _Record, report: RecheckReport) -> list[str]:
        notes = []
        if rec.run.status not in TERMINAL:
            notes.append(recheck_text.RECHECK_NOTE_OPEN.format(status=rec.run.status))
        if any(e.detail == recheck_text.RECHECK_PRE_VIEW for e in report.evaluations):
            notes.append(recheck_text.RECHECK_NOTE_OLD)
        if not report.evaluations:
            notes.append(recheck_text.RECHECK_NOTE_NONE)
        return notes

    def _policy_failure(self, rec: _Record, index: int, report: RecheckReport) -> None:
        event = rec.events[index]
        payload = _loads(event.payload_json)
        detail = payload.get("detail") if isinstance(payload, dict) else None
        if not isinstance(detail, str) or not detail.startswith(POLICY_ERROR_PREFIX):
            return
        error = detail[len(POLICY_ERROR_PREFIX) :]
        before = rec.events[index - 1] if index > 0 else None
        last = report.evaluations[-1] if report.evaluations else None
        if (
            before is not None
            and before.type == "step.policy"
            and before.step_id == event.step_id
            and last is not None
            and last.seq == before.seq
        ):
            _recorded_invalid(last, error)
            return
        step = _step(rec, event.step_id)
        ev = Evaluation(step.idx if step else -1, event.step_id, event.seq, _tool(step))
        report.evaluations.append(ev.skip(recheck_text.RECHECK_POLICY_FAILED.format(error=error)))

    # -------------------------------------------------------------------- one evaluation
    def _evaluation(self, rec: _Record, event: Event) -> Evaluation:
        step = _step(rec, event.step_id)
        ev = Evaluation(step.idx if step else -1, event.step_id, event.seq, _tool(step))
        payload = _loads(event.payload_json)
        if not isinstance(payload, dict):
            return ev.skip(recheck_text.RECHECK_UNREADABLE.format(what="event"))
        ev.recorded = _summary(payload)
        ev.policy_id = payload.get("policy_id", "") if isinstance(payload.get("policy_id"), str) else ""
        view, spec_hash = payload.get("view"), payload.get("spec_hash") or ""
        if view is None:
            if not spec_hash:
                return ev.skip(recheck_text.RECHECK_PRE_VIEW)
            return ev.skip(recheck_text.RECHECK_NOT_A_POLICY, NOT_A_POLICY_EVALUATION)
        if isinstance(view, dict):
            ev.on_resume = view.get("status") == WAITING
        try:
            self._recheck(rec, event, payload, step, ev)
        except Unrecheckable as err:
            ev.rechecked = None
            return ev.skip(str(err))
        return ev

    def _recheck(self, rec: _Record, event: Event, payload: dict[str, Any], step: Step | None, ev: Evaluation) -> None:
        if not payload.get("spec_hash"):
            raise Unrecheckable(recheck_text.RECHECK_NO_SPEC)
        if step is None or _decision(step).get("kind") != "tool_call":
            raise Unrecheckable(recheck_text.RECHECK_STEP_MISSING)
        _check_size(event, step)
        view = _rebuilt_view(rec, event, payload["view"], step)
        recorded_spec = self._spec(str(payload["spec_hash"]))
        args = _decision(step).get("args")
        args = {} if args is None else args
        recorded_request = ToolRequest(rec.run.id, step.id, recorded_spec, args)
        request = self._request(recorded_request, ev)
        if request is None:
            return
        ev.spec_source = self.source
        new = self._evaluate(request, view, rec, event, step)
        _compare(ev, payload, recorded_request, new, request)

    def _request(self, recorded: ToolRequest, ev: Evaluation) -> ToolRequest | None:
        """The request handed now: the recorded spec, or the tool's spec as loaded now
        (a missing tool or arguments its schema refuses are a difference)."""
        if self.tools_now is None:
            return recorded
        spec = self.tools_now.get(recorded.spec.name)
        mismatch = "" if spec is None else schema_error(spec.input_schema, recorded.args)
        if spec is None or mismatch:
            ev.result, ev.spec_source = DIFFERENT, self.source
            ev.detail = (
                recheck_text.RECHECK_TOOL_GONE.format(name=recorded.spec.name)
                if spec is None
                else recheck_text.RECHECK_ARGS_NOW.format(error=mismatch)
            )
            ev.rechecked = {"outcome": "nothing"}
            return None
        return replace(recorded, spec=spec)

    def _evaluate(
        self, request: ToolRequest, view: RunView, rec: _Record, event: Event, step: Step
    ) -> PolicyDecision | Exception:
        """Today's policy, with the re-run named by the run's next recorded interruption
        approval of this step (proxy-and-mcp-module §2.10), never by memory."""
        attempt = _next_interruption(rec, step, view)
        if attempt is not None:
            self.policy.mark_rerun(rec.run.id, attempt)
        try:
            return self.policy.evaluate(request, view)
        except Exception as err:  # a policy error is a difference, never a traceback
            return err
        finally:
            if attempt is not None:
                self.policy.forget_rerun(rec.run.id)

    def _spec(self, spec_hash: str) -> ToolSpec:
        found = self._specs.get(spec_hash)
        if found is None:
            found = _read_spec(self.store, spec_hash)
            self._specs[spec_hash] = found
        if isinstance(found, str):
            raise Unrecheckable(found)
        return found


# ============================================================================ rebuilding


def _step(rec: _Record, step_id: str) -> Step | None:
    return next((s for s in rec.steps if s.id == step_id), None) if step_id else None


def _decision(step: Step | None) -> dict[str, Any]:
    value = _loads(step.decision_json) if step is not None else None
    return value if isinstance(value, dict) else {}


def _tool(step: Step | None) -> str:
    name = _decision(step).get("tool", "")
    return name if isinstance(name, str) else ""


def _summary(payload: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {"outcome": payload.get("outcome", "")}
    for name in ("kind", "reason"):
        if payload.get(name):
            out[name] = payload[name]
    return out


def _check_size(event: Event, step: Step) -> None:
    if len(event.payload_json) > MAX_PAGE_TEXT:
        raise Unrecheckable(recheck_text.RECHECK_TOO_LARGE.format(what="event", limit=MAX_PAGE_TEXT))
    if any(len(text) > MAX_PAGE_TEXT for text in (step.decision_json, step.policy_json, step.observation_json)):
        raise Unrecheckable(recheck_text.RECHECK_TOO_LARGE.format(what="step", limit=MAX_PAGE_TEXT))


def _read_spec(store: Store, spec_hash: str) -> ToolSpec | str:
    """The spec stored under ``spec_hash``, or why it cannot be used."""
    text = store.tool_spec(spec_hash)
    if text is None:
        return recheck_text.RECHECK_SPEC_MISSING.format(hash=spec_hash)
    tree = _loads(text)
    try:
        spec = ToolSpec(
            str(tree["name"]),
            str(tree["description"]),
            tree["input_schema"],
            str(tree["side_effect"]),
            int(tree["timeout"]),
            bool(tree.get("terminal", False)),
        )
    except (TypeError, KeyError, ValueError):
        return recheck_text.RECHECK_UNREADABLE.format(what="tool spec")
    if spec.spec_hash() != spec_hash:
        return recheck_text.RECHECK_SPEC_BROKEN.format(hash=spec_hash)
    return spec


def _rebuilt_run(rec: _Record, view: Mapping[str, Any]) -> Run:
    """The run as the step started: run.created's goal, limits and time, the view's counts."""
    created = rec.created
    payload = _loads(created.payload_json) if created is not None else None
    if created is None or not isinstance(payload, dict) or not isinstance(payload.get("goal", ""), str):
        raise Unrecheckable(recheck_text.RECHECK_CREATED_MISSING)
    limits = payload.get("limits")
    counts = {name: _count(view, name) for name in VIEW_COUNTS}
    status = view.get("status")
    if not isinstance(status, str):
        raise Unrecheckable(recheck_text.RECHECK_COUNTS)
    return Run(
        id=rec.run.id,
        goal=payload.get("goal", ""),
        status=status,
        reason="",
        reason_detail="",
        limits_json=go_json(limits) if limits is not None else "",
        step_count=counts["step_count"],
        created_at=created.at,
        started_at=created.at,
        finished_at="",
        result_json="",
        model_calls=counts["model_calls"],
        input_tokens=counts["input_tokens"],
        output_tokens=counts["output_tokens"],
        cached_input_tokens=counts["cached_input_tokens"],
        estimated_cost_micros=counts["estimated_cost_micros"],
        active_ms=counts["active_ms"],
        lease_owner="",
        lease_expires_at="",
    )


def _count(view: Mapping[str, Any], name: str) -> int:
    value = view.get(name, 0)
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise Unrecheckable(recheck_text.RECHECK_COUNTS)
    try:
        number = int(value)
    except ValueError:
        raise Unrecheckable(recheck_text.RECHECK_COUNTS) from None
    if number < 0:
        raise Unrecheckable(recheck_text.RECHECK_COUNTS)
    return number


def _rebuilt_view(rec: _Record, event: Event, view: Any, step: Step) -> RunView:
    if not isinstance(view, dict):
        raise Unrecheckable(recheck_text.RECHECK_COUNTS)
    run = _rebuilt_run(rec, view)
    n_steps, n_approvals = _count(view, "steps"), _count(view, "approvals")
    if n_approvals > MAX_APPROVALS:
        raise Unrecheckable(recheck_text.RECHECK_TOO_MANY_APPROVALS.format(count=n_approvals, limit=MAX_APPROVALS))
    earlier = sorted((s for s in rec.steps if s.idx < step.idx), key=lambda s: s.idx)
    if n_steps > len(earlier) or n_approvals > len(rec.approvals):
        raise Unrecheckable(recheck_text.RECHECK_COUNTS)
    approvals = [_as_at(a, event, rec.decided.get(a.id, [])) for a in rec.approvals[:n_approvals]]
    context = view.get("context")  # budgets' spending and untrusted content, as read then
    return RunView(run, earlier[:n_steps], approvals, step, context if isinstance(context, dict) else None)


def _as_at(approval: Approval, event: Event, decided: list[tuple[int, Event]]) -> Approval:
    """The approval with the status it had when ``event`` was written."""
    if decided:
        before = [e for seq, e in decided if seq < event.seq]
        if not before:
            return _pending(approval)
        payload = _loads(before[-1].payload_json)
        status = payload.get("status") if isinstance(payload, dict) else None
        return replace(approval, status=status) if isinstance(status, str) else approval
    if approval.decided_at and _at_or_before(approval.decided_at, event.at):
        return approval
    return _pending(approval) if approval.status != APPROVAL_PENDING else approval


def _pending(approval: Approval) -> Approval:
    return replace(approval, status=APPROVAL_PENDING, decided_at="", decided_by="", note="")


def _at_or_before(first: str, second: str) -> bool:
    try:
        return durations.parse_time(first) <= durations.parse_time(second)
    except ValueError:
        return False


def _next_interruption(rec: _Record, step: Step, view: RunView) -> Attempt | None:
    """The attempt named by the run's next recorded interruption approval of the step, when it
    names another step (the re-run the proxy registered in memory as it proposed)."""
    for approval in rec.approvals[len(view.approvals) :]:
        if approval.step_id != step.id or approval.kind != INTERRUPTED_SIDE_EFFECT:
            continue
        capability = _loads(approval.capability_json)
        attempt = Attempt.from_tree(capability.get("interrupted") if isinstance(capability, dict) else None)
        if attempt is not None and attempt.step_id != step.id:
            return attempt
        return None
    return None


# ============================================================================ comparing


def _compare(
    ev: Evaluation,
    payload: Mapping[str, Any],
    recorded_request: ToolRequest,
    new: PolicyDecision | Exception,
    request: ToolRequest,
) -> None:
    recorded_outcome = ev.recorded.get("outcome")
    if isinstance(new, Exception):
        ev.rechecked = {"outcome": "policy error"}
        ev.result, ev.detail = DIFFERENT, recheck_text.RECHECK_POLICY_ERROR.format(error=new)
        return
    ev.rechecked = _summary(new.tree())
    if new.outcome != recorded_outcome:
        ev.result = DIFFERENT
        return
    ev.result = SAME
    if new.outcome != REQUIRE_APPROVAL:
        return
    ev.recorded_hash = approval_hash(
        str(payload.get("kind", "")), payload.get("capability"), payload.get("presentation"), recorded_request.tree()
    )
    ev.rechecked_hash = approval_hash(new.kind, new.capability, new.presentation, request.tree())
    if new.kind != payload.get("kind", ""):
        ev.result, ev.detail = DIFFERENT, recheck_text.RECHECK_KIND.format(new=new.kind, old=payload.get("kind", ""))
    elif ev.recorded_hash != ev.rechecked_hash:
        spec_changed = request.spec.spec_hash() != recorded_request.spec.spec_hash()
        ev.result, ev.detail = (
            DIFFERENT,
            recheck_text.RECHECK_HASH_SPEC if spec_changed else recheck_text.RECHECK_HASH,
        )


def _recorded_invalid(ev: Evaluation, reason: str) -> None:
    """The recorded decision was refused as invalid: the same refusal now is "same"."""
    now_reason = ev.detail[len(POLICY_ERROR_PREFIX) :] if ev.detail.startswith(POLICY_ERROR_PREFIX) else ""
    if ev.result == DIFFERENT and now_reason == reason:
        ev.result, ev.detail = SAME, recheck_text.RECHECK_RECORDED_INVALID.format(reason=reason)
    elif ev.result == SAME:
        ev.result, ev.detail = DIFFERENT, recheck_text.RECHECK_NOW_VALID.format(reason=reason)


# ============================================================================ many runs


def run_ids(store: Store, session: str, limit: int) -> list[str]:
    try:
        found = store.index.run_ids(session, limit)
    except StoreUnavailable as err:
        raise StoreError(recheck_text.RECHECK_NO_INDEX.format(error=err)) from None
    return list(dict.fromkeys(found))


def recheck_run(
    store: Store, run_id: str, policy: ProxyPolicy, tools_now: Mapping[str, ToolSpec] | None = None
) -> RecheckReport:
    return Recheck(store, policy, tools_now).run(run_id)


def recheck_store(
    store: Store, config: Config, options: Options, policy: ProxyPolicy, tools_now: Mapping[str, ToolSpec] | None
) -> list[RecheckReport]:
    checker = Recheck(store, policy, tools_now)
    if options.run_id:
        try:
            return [checker.run(options.run_id)]
        except NotFound as err:
            raise StoreError(recheck_text.RECHECK_RUN_ERROR.format(run_id=options.run_id, error=err)) from None
    reports = []
    for run_id in run_ids(store, options.session or config.session, options.limit):
        try:
            reports.append(checker.run(run_id))
        except NotFound:
            continue  # a run that never began
    return reports
