"""``approve`` and ``reject``: the operator decides the approval a run waits on.

A decision is bound to the hash of the approval row that was printed: the store's
``approve_shown``/``reject_shown`` refuse it if the row changed in between. Without ``-approval``
or ``-yes`` only a person at a terminal can consent; ``reject`` needs a ``-note``.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass

from agentrt_proxy.cli import _operator_frame as frame
from agentrt_proxy.cli import _operator_views as views
from agentrt_proxy.cli import _task_views as task_views
from agentrt_proxy.cli import _who as who
from agentrt_proxy.cli._flags import Flags, UsageError
from agentrt_proxy.cli._late_outcomes import late_outcome_lines
from agentrt_proxy.gate import approvals
from agentrt_proxy.store import (
    APPROVAL_PENDING,
    APPROVED,
    EXPIRED,
    WAITING,
    Approval,
    ApprovalChanged,
    ApprovalExpired,
    ApprovalHashError,
    NotFound,
    NotPending,
    RunStateError,
    Store,
    approval_reason,
)
from agentrt_proxy.text import escaping, operator_text
from agentrt_proxy.text.cli_text import program_invocation


@dataclass(frozen=True)
class DecideArgs:
    verb: str  # "approve" or "reject"
    run_id: str
    approval_id: str | None
    by: str
    note: str
    consent: bool  # -approval named or -yes: no prompt
    as_json: bool


def approve_command(argv: list[str]) -> int:
    return _decide_command("approve", argv)


def reject_command(argv: list[str]) -> int:
    return _decide_command("reject", argv)


def _decide_command(verb: str, argv: list[str]) -> int:
    fl = frame.parse(argv, ("approval", "by", "note"), switches=("json", "yes"))
    args = _decide_args(verb, fl)
    source = frame.database(fl)
    return frame.guarded(verb, source, lambda path: _decide(path, args))


def _decide_args(verb: str, fl: Flags) -> DecideArgs:
    run_id = frame.one_run(fl)
    by = who.decider(fl.get("by"))  # -by, else $USER, the account's name, then the uid
    note = fl.get("note") or ""
    if verb == "reject" and not note.strip():
        raise UsageError(operator_text.OP_NEED_NOTE)
    approval_id = fl.get("approval")
    consent = approval_id is not None or fl.on("yes")
    # Without consent on the command line only a person at a terminal can give it.
    if not consent and (fl.on("json") or not _interactive()):
        raise UsageError(operator_text.OP_NO_CONSENT)
    return DecideArgs(verb, run_id, approval_id, by, note, consent, fl.on("json"))


def _interactive() -> bool:
    try:
        return sys.stdin.isatty()
    except (AttributeError, ValueError):
        return False


def _decide(path: str, args: DecideArgs) -> int:
    with frame.opened(path, writer=True) as store:
        approval = select_approval(store, args.run_id, args.approval_id)
        if not args.as_json:
            write_approval_block(store, approval, path)
        if not args.consent and not _confirmed(args.verb, approval.id, args.run_id):
            raise frame.OperatorError(operator_text.OP_DECLINED)
        decided = decide_shown(store, args, approval)
        run = store.get_run(args.run_id)
        task = store.tasks.of_runs([run.id]).get(run.id)
    if args.as_json:
        frame.emit_json(
            {"run": task_views.with_task(views.run_json(run), task), "approval": views.approval_json(decided)}
        )
        return 0
    lines = [
        operator_text.op_decided(decided.id, decided.status, escaping.clean(args.by, 200)),
        operator_text.op_run_after(run.id, run.status, run.reason),
    ]
    if decided.status == APPROVED and run.status == WAITING:  # a task's owner runs it; else the model
        lines += task_views.after_approval(task) or [operator_text.OP_STAYS_WAITING]
    frame.emit(lines)
    return 0


def write_approval_block(store: Store, approval: Approval, path: str) -> None:
    """Print the block the operator decides on; a test may wrap this to change the row
    between what was shown and the decision."""
    reason = approval_reason(store, approval)
    known = late_outcome_lines(store, approval)
    frame.emit(views.approval_block(approval, reason, program_invocation(), os.path.abspath(path), known))
    sys.stdout.flush()


def select_approval(store: Store, run_id: str, approval_id: str | None) -> Approval:
    """The approval to decide, read whole (the decision is bound to its hash)."""
    run = frame.read_run(store, run_id)
    if approval_id is not None:
        approval = _named_approval(store, run_id, approval_id)
    else:
        pending = [a for a in store.approvals_of(run_id) if a.status == APPROVAL_PENDING]
        if not pending:
            raise frame.OperatorError(operator_text.OP_NO_PENDING.format(run=run_id))
        if len(pending) > 1:
            raise frame.OperatorError(
                operator_text.OP_SEVERAL_PENDING.format(
                    run=run_id, count=len(pending), ids=", ".join(a.id for a in pending)
                )
            )
        approval = pending[0]
    if run.status != WAITING:
        raise frame.OperatorError(
            operator_text.OP_NOT_WAITING.format(run=run_id, status=_status_text(run.status, run.reason))
        )
    return approval


def _named_approval(store: Store, run_id: str, approval_id: str) -> Approval:
    try:
        approval = store.get_approval(approval_id)
    except NotFound:
        approval = None
    if approval is None or approval.run_id != run_id:
        raise frame.OperatorError(
            operator_text.OP_UNKNOWN_APPROVAL.format(
                approval=escaping.clean(approval_id, 100), run=escaping.clean(run_id, 100)
            )
        )
    if approval.status != APPROVAL_PENDING:
        raise frame.OperatorError(
            operator_text.OP_ALREADY.format(approval=approval.id, status=escaping.clean(approval.status, 40))
        )
    return approval


def _status_text(status: str, reason: str) -> str:
    return escaping.clean(f"{status} ({reason})" if reason else status, 200)


def _confirmed(verb: str, approval_id: str, run_id: str) -> bool:
    sys.stderr.write(operator_text.op_prompt(verb.capitalize(), approval_id, run_id))
    sys.stderr.flush()
    answer = sys.stdin.readline()
    if not answer:
        raise UsageError(operator_text.OP_NO_CONSENT)  # end of input before an answer
    return answer.strip().lower() in ("y", "yes")


def decide_shown(store: Store, args: DecideArgs, shown: Approval) -> Approval:
    """Decide through the store, bound to the hash of the row that was printed."""
    decide = approvals.approve_shown if args.verb == "approve" else approvals.reject_shown
    try:
        return decide(store, args.run_id, shown.id, shown.hash, args.by, args.note)
    except ApprovalChanged:
        raise frame.OperatorError(operator_text.OP_CHANGED.format(approval=shown.id)) from None
    except ApprovalHashError:
        raise frame.OperatorError(operator_text.OP_HASH_BROKEN.format(approval=shown.id)) from None
    except ApprovalExpired:
        raise frame.OperatorError(operator_text.OP_ALREADY.format(approval=shown.id, status=EXPIRED)) from None
    except NotPending:
        status = store.get_approval(shown.id).status
        raise frame.OperatorError(
            operator_text.OP_ALREADY.format(approval=shown.id, status=escaping.clean(status, 40))
        ) from None
    except RunStateError:
        _raise_decided_meanwhile(store, args.run_id, shown.id)
        raise


def _raise_decided_meanwhile(store: Store, run_id: str, approval_id: str) -> None:
    """The run left WAITING between the print and the decision: say why, most useful first."""
    approval = store.get_approval(approval_id)
    if approval.status != APPROVAL_PENDING:
        raise frame.OperatorError(
            operator_text.OP_ALREADY.format(approval=approval_id, status=escaping.clean(approval.status, 40))
        )
    run = store.get_run(run_id)
    raise frame.OperatorError(
        operator_text.OP_NOT_WAITING.format(run=run_id, status=_status_text(run.status, run.reason))
    )
