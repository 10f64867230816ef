"""The operator's subcommands over the database: runs, show, approve, reject, verify.

Each takes the arguments after its name and returns the exit code (0 success, 1 failure,
2 usage). Every argument is checked before the database is opened; the database is never
created or migrated here: runs, show and verify read it read-only, approve and reject
open a writer only to decide. A refusal to open (missing, locked, newer schema, insecure
mode, symbolic link) is one line on standard error and exit 1.

A decision is bound to the hash of the approval row that was printed: the store's
``approve_shown``/``reject_shown`` refuse it if the row changed in between.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, TextIO

from agentrt_proxy.canonical.encoder import go_json
from agentrt_proxy.cli import flags, task_views, verify_state, who
from agentrt_proxy.cli import operator_views as views
from agentrt_proxy.cli.flags import Flags, UsageError
from agentrt_proxy.cli.late_outcomes import late_outcome_lines
from agentrt_proxy.config import ConfigError, check_database_file, load_config
from agentrt_proxy.errors import AgentrtError
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
    SchemaVersionError,
    Store,
    StoreError,
    StoreLocked,
    StoreUnavailable,
)
from agentrt_proxy.text import escaping, operator_text
from agentrt_proxy.text.cli_text import program_invocation

BUSY_WAIT = "5s"  # the store's busy timeout, said in the "locked" line
RUNS_LIMIT = 100
RUNS_PAGE = 500
EVENTS_PAGE = 500
JSON_EVENTS = 1000


class OperatorError(AgentrtError):
    """A refusal the operator reads as one line; exit 1 (the cause, when there is one, is a
    configuration or store error this wraps with the words the operator should read)."""


# --------------------------------------------------------------------------- arguments


def _parse(argv: list[str], options: tuple[str, ...], switches: tuple[str, ...] = ("json",)) -> Flags:
    return flags.parse(argv, options=("db", "config", *options), switches=switches)


@dataclass(frozen=True)
class Source:
    """Where the database is named: -db FILE, or -config FILE's ``database``."""

    db: str | None
    config: str | None

    def path(self) -> str:
        """The database path; reading the configuration is the first file touched."""
        if self.db is not None:
            return self.db
        try:
            # expand_env off: the operator's shell need not hold the servers' tokens.
            return str(load_config(self.config or "", expand_env=False).database)
        except ConfigError as err:
            raise OperatorError(str(err)) from None


def _database(fl: Flags) -> Source:
    """Exactly one of -db and -config (checked before anything is read)."""
    db, config = fl.get("db"), fl.get("config")
    if (db is None) == (config is None):
        raise UsageError(operator_text.OP_NEED_DATABASE if db is None else operator_text.OP_BOTH_DATABASE)
    if not (db or config):
        raise UsageError(operator_text.OP_NEED_DATABASE)
    return Source(db, config)


def _no_positionals(fl: Flags) -> None:
    if fl.positionals:
        raise UsageError(f"unexpected argument {escaping.go_quote(escaping.clean(fl.positionals[0], 100))}")


def _one_run(fl: Flags) -> str:
    if len(fl.positionals) != 1 or not fl.positionals[0]:
        raise UsageError(operator_text.OP_NEED_RUN)
    return fl.positionals[0]


def _non_negative(fl: Flags, name: str, default: int) -> int:
    value = fl.integer(name, default)
    if value < 0:
        raise UsageError(operator_text.OP_NEGATIVE.format(name=name))
    return value


# --------------------------------------------------------------------------- opening


def _describe_open_failure(path: str, err: BaseException) -> str:
    detail = str(err).removeprefix("agentrt: ")
    if isinstance(err, ConfigError):
        return str(err)
    if isinstance(err, NotFound):
        return operator_text.OP_DB_MISSING.format(path=path)
    if isinstance(err, SchemaVersionError):
        return operator_text.OP_DB_SCHEMA.format(path=path, detail=detail)
    if isinstance(err, StoreLocked):
        return operator_text.OP_DB_LOCKED.format(path=path, wait=BUSY_WAIT)
    if isinstance(err, StoreUnavailable):
        return operator_text.OP_DB_UNREADABLE.format(path=path, detail=detail)
    return operator_text.OP_DB_REFUSED.format(path=path, detail=detail)


@contextmanager
def _opened(path: str, *, writer: bool) -> Iterator[Store]:
    if not os.path.lexists(path):
        raise OperatorError(operator_text.OP_DB_MISSING.format(path=path))
    try:
        check_database_file(path)
        store = Store.open_existing(path) if writer else Store.open_readonly(path)
    except (ConfigError, StoreError) as err:
        raise OperatorError(_describe_open_failure(path, err)) from None
    try:
        yield store
    finally:
        store.close()


def _guarded(command: str, source: Source, body: Callable[[str], int]) -> int:
    """Resolve the database and run ``body`` on it; every refusal becomes one line on
    standard error and exit 1. Usage errors pass through to the command frame (exit 2)."""
    path = source.db or source.config or ""
    try:
        path = source.path()
        return body(path)
    except OperatorError as err:
        sys.stderr.write(operator_text.operator_command_error(command, str(err)))
    except (StoreError, ConfigError) as err:
        sys.stderr.write(operator_text.operator_command_error(command, _describe_open_failure(path, err)))
    return 1


def _emit(lines: list[str], out: TextIO | None = None) -> None:
    (out or sys.stdout).write("".join(line + "\n" for line in lines))


def _emit_json(value: Any) -> None:
    sys.stdout.write(go_json(value) + "\n")


# --------------------------------------------------------------------------- runs


def runs_command(argv: list[str]) -> int:
    fl = _parse(argv, ("limit", "offset"))
    _no_positionals(fl)
    limit = _non_negative(fl, "limit", RUNS_LIMIT)
    offset = _non_negative(fl, "offset", 0)
    source = _database(fl)
    return _guarded("runs", source, lambda path: _runs(path, limit, offset, fl.on("json")))


def _runs(path: str, limit: int, offset: int, as_json: bool) -> int:
    with _opened(path, writer=False) as store:
        total = store.count_runs()
        summaries = views.read_runs(store, limit, offset, RUNS_PAGE)
        holds = store.holds.every()
        budgets = views.budget_lines(holds)
        tasks = store.tasks.of_runs([s.run.id for s in summaries])  # the runs a host follows as tasks
    # Waiting runs first within what was read; the store lists newest first.
    summaries = views.waiting_first(summaries)
    remaining = max(0, total - offset - len(summaries))
    if as_json:
        out: dict[str, Any] = {
            "runs": [task_views.with_task(views.run_json(s.run, s.pending_approval_id), tasks.get(s.run.id))
                     for s in summaries],
            "total": total,
            "limit": limit,
            "offset": offset,
        }
        if remaining:
            out["truncated"] = True
        if holds:
            out["budgets"] = views.budget_json(holds)
        _emit_json(out)
        return 0
    if not summaries:
        _emit([operator_text.OP_NO_RUNS])
        return 0
    lines = views.runs_table(summaries, tasks)
    if remaining:
        lines.append(operator_text.op_more_runs(remaining, offset + len(summaries)))
    _emit(lines + (["", *budgets] if budgets else []))
    return 0


# --------------------------------------------------------------------------- show


def show_command(argv: list[str]) -> int:
    fl = _parse(argv, ())
    run_id = _one_run(fl)
    source = _database(fl)
    return _guarded("show", source, lambda path: _show(path, run_id, fl.on("json")))


def _show(path: str, run_id: str, as_json: bool) -> int:
    with _opened(path, writer=False) as store:
        run = _read_run(store, run_id)
        steps = store.steps_of(run_id)
        approvals_ = store.approvals_of(run_id)
        pending = [a for a in approvals_ if a.status == APPROVAL_PENDING]
        task = store.tasks.of_runs([run_id]).get(run_id)
        if as_json:
            _emit_json(_show_json(store, run, steps, approvals_, pending, task))
            return 0
        lines = views.run_header(run) + task_views.task_lines(task) + views.budget_lines(store.holds.of_run(run_id))
        for a in pending:
            reason, known = _approval_reason(store, a), late_outcome_lines(store, a)
            block = views.approval_block(a, reason, program_invocation(), os.path.abspath(path), known)
            lines += ["", *block]
        lines += ["", *views.steps_table(steps), "", operator_text.OP_EVENTS]
        _emit(lines)
        _stream_events(store, run_id)
    return 0


def _show_json(
    store: Store, run: Any, steps: list[Any], approvals_: list[Approval], pending: list[Approval], task: Any
) -> dict[str, Any]:
    events = store.events_of(run.id, 0, JSON_EVENTS + 1)
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
    after, printed = 0, 0
    while True:
        page = store.events_of(run_id, after, EVENTS_PAGE)
        _emit([views.event_line(e) for e in page])
        printed += len(page)
        if len(page) < EVENTS_PAGE:
            break
        after = page[-1].seq
    if not printed:
        _emit([operator_text.OP_NO_EVENTS])


def _read_run(store: Store, run_id: str) -> Any:
    try:
        return store.get_run(run_id)
    except NotFound:
        raise OperatorError(operator_text.OP_UNKNOWN_RUN.format(run=escaping.clean(run_id, 100))) from None


def _approval_reason(store: Store, approval: Approval) -> str:
    """The policy's reason, from the approval.requested event that asked (runtime-core §7.5)."""
    after = 0
    while True:
        page = store.events_of(approval.run_id, after, EVENTS_PAGE)
        for ev in page:
            if ev.type == "approval.requested":
                payload = views.loads(ev.payload_json)
                if isinstance(payload, dict) and payload.get("approval_id") == approval.id:
                    return str(payload.get("reason", ""))
        if len(page) < EVENTS_PAGE:
            return ""
        after = page[-1].seq


# --------------------------------------------------------------------------- approve / reject


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
    fl = _parse(argv, ("approval", "by", "note"), switches=("json", "yes"))
    args = _decide_args(verb, fl)
    source = _database(fl)
    return _guarded(verb, source, lambda path: _decide(path, args))


def _decide_args(verb: str, fl: Flags) -> DecideArgs:
    run_id = _one_run(fl)
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
    with _opened(path, writer=True) as store:
        approval = _select_approval(store, args.run_id, args.approval_id)
        if not args.as_json:
            write_approval_block(store, approval, path)
        if not args.consent and not _confirmed(args.verb, approval.id, args.run_id):
            raise OperatorError(operator_text.OP_DECLINED)
        decided = _decide_shown(store, args, approval)
        run = store.get_run(args.run_id)
        task = store.tasks.of_runs([run.id]).get(run.id)
    if args.as_json:
        _emit_json({"run": task_views.with_task(views.run_json(run), task), "approval": views.approval_json(decided)})
        return 0
    lines = [
        operator_text.op_decided(decided.id, decided.status, escaping.clean(args.by, 200)),
        operator_text.op_run_after(run.id, run.status, run.reason),
    ]
    if decided.status == APPROVED and run.status == WAITING:  # a task's owner runs it; else the model
        lines += task_views.after_approval(task) or [operator_text.OP_STAYS_WAITING]
    _emit(lines)
    return 0


def write_approval_block(store: Store, approval: Approval, path: str) -> None:
    """Print the block the operator decides on; a test may wrap this to change the row
    between what was shown and the decision."""
    reason = _approval_reason(store, approval)
    known = late_outcome_lines(store, approval)
    _emit(views.approval_block(approval, reason, program_invocation(), os.path.abspath(path), known))
    sys.stdout.flush()


def _select_approval(store: Store, run_id: str, approval_id: str | None) -> Approval:
    """The approval to decide, read whole (the decision is bound to its hash)."""
    run = _read_run(store, run_id)
    if approval_id is not None:
        approval = _named_approval(store, run_id, approval_id)
    else:
        pending = [a for a in store.approvals_of(run_id) if a.status == APPROVAL_PENDING]
        if not pending:
            raise OperatorError(operator_text.OP_NO_PENDING.format(run=run_id))
        if len(pending) > 1:
            raise OperatorError(
                operator_text.OP_SEVERAL_PENDING.format(
                    run=run_id, count=len(pending), ids=", ".join(a.id for a in pending)
                )
            )
        approval = pending[0]
    if run.status != WAITING:
        raise OperatorError(
            operator_text.OP_NOT_WAITING.format(run=run_id, status=_status_text(run.status, run.reason))
        )
    return approval


def _named_approval(store: Store, run_id: str, approval_id: str) -> Approval:
    try:
        approval = store.get_approval(approval_id)
    except NotFound:
        approval = None
    if approval is None or approval.run_id != run_id:
        raise OperatorError(
            operator_text.OP_UNKNOWN_APPROVAL.format(
                approval=escaping.clean(approval_id, 100), run=escaping.clean(run_id, 100)
            )
        )
    if approval.status != APPROVAL_PENDING:
        raise OperatorError(
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


def _decide_shown(store: Store, args: DecideArgs, shown: Approval) -> Approval:
    """Decide through the store, bound to the hash of the row that was printed."""
    decide = approvals.approve_shown if args.verb == "approve" else approvals.reject_shown
    try:
        return decide(store, args.run_id, shown.id, shown.hash, args.by, args.note)
    except ApprovalChanged:
        raise OperatorError(operator_text.OP_CHANGED.format(approval=shown.id)) from None
    except ApprovalHashError:
        raise OperatorError(operator_text.OP_HASH_BROKEN.format(approval=shown.id)) from None
    except ApprovalExpired:
        raise OperatorError(operator_text.OP_ALREADY.format(approval=shown.id, status=EXPIRED)) from None
    except NotPending:
        status = store.get_approval(shown.id).status
        raise OperatorError(
            operator_text.OP_ALREADY.format(approval=shown.id, status=escaping.clean(status, 40))
        ) from None
    except RunStateError:
        _raise_decided_meanwhile(store, args.run_id, shown.id)
        raise


def _raise_decided_meanwhile(store: Store, run_id: str, approval_id: str) -> None:
    """The run left WAITING between the print and the decision: say why, most useful first."""
    approval = store.get_approval(approval_id)
    if approval.status != APPROVAL_PENDING:
        raise OperatorError(
            operator_text.OP_ALREADY.format(approval=approval_id, status=escaping.clean(approval.status, 40))
        )
    run = store.get_run(run_id)
    raise OperatorError(operator_text.OP_NOT_WAITING.format(run=run_id, status=_status_text(run.status, run.reason)))


# --------------------------------------------------------------------------- verify


@dataclass(frozen=True)
class VerifyArgs:
    from_seq: int
    to_seq: int
    head: tuple[int, str] | None
    as_json: bool


def verify_command(argv: list[str]) -> int:
    fl = _parse(argv, ("from", "to", "head"))
    _no_positionals(fl)
    args = _verify_args(fl)
    source = _database(fl)
    return _guarded("verify", source, lambda path: _verify(path, args))


def _verify_args(fl: Flags) -> VerifyArgs:
    from_seq = _non_negative(fl, "from", 0)
    to_seq = _non_negative(fl, "to", 0)
    if to_seq and to_seq < from_seq:
        raise UsageError(operator_text.OP_TO_BEFORE_FROM.format(to=to_seq, from_=from_seq))
    head = _parse_head(fl.get("head"))
    if head is not None and ((to_seq and head[0] > to_seq) or head[0] < from_seq):
        raise UsageError(operator_text.OP_HEAD_OUTSIDE.format(seq=head[0], from_=from_seq, to=to_seq or "head"))
    return VerifyArgs(from_seq, to_seq, head, fl.on("json"))


def _parse_head(text: str | None) -> tuple[int, str] | None:
    if text is None:
        return None
    seq_text, sep, hash_ = text.partition(":")
    if (
        not sep
        or not (seq_text.isascii() and seq_text.isdigit())
        or not hash_
        or len(hash_) > views.HASH_BYTES
        or any(c not in "0123456789abcdef" for c in hash_)
        or not 1 <= int(seq_text) <= flags.INT64_MAX
    ):
        raise UsageError(operator_text.OP_BAD_HEAD.format(text=escaping.go_quote(escaping.clean(text, 200))))
    return int(seq_text), hash_


def _verify(path: str, args: VerifyArgs) -> int:
    with _opened(path, writer=False) as store:
        report = store.verify(args.from_seq, args.to_seq, args.head, approval_hash=approvals.stored_hash)
        # A kept head that is there with another hash: say what is there now.
        found = store.event_hash(args.head[0]) or "" if args.head and report.kept_head_found else ""
    ok = report.intact  # the chain, a kept head, and the state rows against the chain
    if args.as_json:
        _emit_json({**_verify_json(report, args, ok), "state": verify_state.state_json(report)})
    else:
        _emit(_verify_lines(report, args, found) + verify_state.state_lines(report))
    return 0 if ok else 1


def _verify_lines(report: Any, args: VerifyArgs, found_head_hash: str) -> list[str]:
    h = views.short_hash
    lines = [
        operator_text.op_head(report.head_seq, h(report.head_hash)) if report.head_seq else operator_text.OP_HEAD_NONE
    ]
    if report.brk is not None:
        b = report.brk
        lines += [
            operator_text.op_broken(b.seq, escaping.sanitize(b.detail)),
            f"  expected: {h(b.expected)}",
            f"  found:    {h(b.found)}",
        ]
    elif report.checked:
        first = report.to_seq - report.checked + 1
        lines += [
            operator_text.op_intact(report.checked, first, report.to_seq),
            operator_text.op_last_checked(report.to_seq, h(report.hash)),
        ]
    else:
        lines.append(operator_text.OP_INTACT_EMPTY)
    if report.brk is None and not report.to_reached:
        lines.append(operator_text.op_to_not_reached(args.to_seq, report.head_seq))
    if args.head is not None:
        lines.append(_kept_head_line(args.head, report, found_head_hash))
    return lines


def _kept_head_line(head: tuple[int, str], report: Any, found: str) -> str:
    if report.kept_head_matches:
        return operator_text.op_kept_head_matches(head[0])
    if not report.kept_head_found:
        return operator_text.op_kept_head_missing(head[0])
    return operator_text.op_kept_head_changed(head[0], head[1], views.short_hash(found))


def _verify_json(report: Any, args: VerifyArgs, ok: bool) -> dict[str, Any]:
    out: dict[str, Any] = {
        "head": {"seq": report.head_seq, "hash": report.head_hash},
        "from": args.from_seq,
        "to": report.to_seq,
        "hash": report.hash,
        "checked": report.checked,
        "intact": ok,
    }
    if report.brk is not None:
        b = report.brk
        out["break"] = {"seq": b.seq, "expected": b.expected, "found": b.found, "detail": b.detail}
    if args.to_seq:
        out["requested"] = {"to": args.to_seq, "reached": report.to_reached}
    if args.head is not None:
        out["kept_head"] = {
            "seq": args.head[0],
            "hash": args.head[1],
            "found": bool(report.kept_head_found),
            "matches": bool(report.kept_head_matches),
        }
    return out
