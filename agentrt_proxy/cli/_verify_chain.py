"""``verify -db FILE``: walk the event chain, check a kept head, and replay the state rows
against the chain (``verify_state`` words the last). Exit 0 when everything holds, else 1.

``verify FILE.jsonl`` (an export, offline) is ``verify_file``; both read ``-head SEQ:HASH`` here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from agentrt_proxy.cli import _flags as flags
from agentrt_proxy.cli import _operator_frame as frame
from agentrt_proxy.cli import _operator_views as views
from agentrt_proxy.cli import _verify_state as verify_state
from agentrt_proxy.cli._flags import Flags, UsageError
from agentrt_proxy.gate import approvals
from agentrt_proxy.text import escaping, operator_text


@dataclass(frozen=True)
class VerifyArgs:
    from_seq: int
    to_seq: int
    head: tuple[int, str] | None
    as_json: bool


def verify_command(argv: list[str]) -> int:
    fl = frame.parse(argv, ("from", "to", "head"))
    frame.no_positionals(fl)
    args = _verify_args(fl)
    source = frame.database(fl)
    return frame.guarded("verify", source, lambda path: _verify(path, args))


def _verify_args(fl: Flags) -> VerifyArgs:
    from_seq = frame.non_negative(fl, "from", 0)
    to_seq = frame.non_negative(fl, "to", 0)
    if to_seq and to_seq < from_seq:
        raise UsageError(operator_text.OP_TO_BEFORE_FROM.format(to=to_seq, from_=from_seq))
    head = parse_head(fl.get("head"))
    if head is not None and ((to_seq and head[0] > to_seq) or head[0] < from_seq):
        raise UsageError(operator_text.OP_HEAD_OUTSIDE.format(seq=head[0], from_=from_seq, to=to_seq or "head"))
    return VerifyArgs(from_seq, to_seq, head, fl.on("json"))


def parse_head(text: str | None) -> tuple[int, str] | None:
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
    with frame.opened(path, writer=False) as store:
        report = store.verify(args.from_seq, args.to_seq, args.head, approval_hash=approvals.stored_hash)
        # A kept head that is there with another hash: say what is there now.
        found = store.event_hash(args.head[0]) or "" if args.head and report.kept_head_found else ""
    ok = report.intact  # the chain, a kept head, and the state rows against the chain
    if args.as_json:
        frame.emit_json({**_verify_json(report, args, ok), "state": verify_state.state_json(report)})
    else:
        frame.emit(verify_lines(report, args, found) + verify_state.state_lines(report))
    return 0 if ok else 1


def verify_lines(report: Any, args: VerifyArgs, found_head_hash: str) -> list[str]:
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
