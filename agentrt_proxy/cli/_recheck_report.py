"""What a re-check found, run by run: the report, its JSON and its text (runtime-core §8.4).

One ``Evaluation`` per recorded ``step.policy`` (and per policy failure that recorded
none); a ``RecheckReport`` per run. ``RecheckReport.json_tree()`` is the ``-json`` shape, ``render()``
the text the operator reads, every value sanitized and cut at 240 bytes.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from agentrt_proxy.text import escaping, recheck_text

SAME = "same"
DIFFERENT = "different"
NOT_A_POLICY_EVALUATION = "not_a_policy_evaluation"
NOT_RECHECKABLE = "not_recheckable"

MARKS = {DIFFERENT: "DIFFERENT", SAME: "same", NOT_RECHECKABLE: "skipped", NOT_A_POLICY_EVALUATION: "skipped"}


@dataclass
class Evaluation:
    """One recorded evaluation and what re-checking it gave."""

    step_index: int
    step_id: str
    seq: int
    tool: str
    result: str = NOT_RECHECKABLE
    recorded: dict[str, Any] = field(default_factory=dict)  # {outcome, kind?, reason?}
    policy_id: str = ""
    on_resume: bool = False
    rechecked: dict[str, Any] | None = None
    recorded_hash: str = ""
    rechecked_hash: str = ""
    detail: str = ""
    spec_source: str = ""

    def skip(self, detail: str, result: str = NOT_RECHECKABLE) -> Evaluation:
        self.result, self.detail = result, detail
        return self

    def json_tree(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "step_index": self.step_index,
            "step_id": self.step_id,
            "seq": self.seq,
            "tool": self.tool,
        }
        if self.on_resume:
            out["on_resume"] = True
        out["result"] = self.result
        out["recorded"] = self.recorded
        if self.rechecked is not None:
            out["rechecked"] = self.rechecked
        for name in ("recorded_hash", "rechecked_hash", "detail", "spec_source"):
            if getattr(self, name):
                out[name] = getattr(self, name)
        out["policy_id"] = self.policy_id
        return out

    def line(self) -> str:
        c = _cut
        mark = MARKS.get(self.result, "skipped")
        where = recheck_text.recheck_where(mark, self.step_index, self.seq, c(self.tool))
        if self.on_resume:
            where += " (on resume)"
        if self.result == SAME:
            return f"{where}: {c(_outcome(self.rechecked))}" + (f": {c(self.detail)}" if self.detail else "")
        if self.result == DIFFERENT:
            why = self.detail or str((self.rechecked or {}).get("reason", ""))
            text = f"{where}: {c(_outcome(self.recorded))} -> {c(_outcome(self.rechecked))}"
            return text + (f": {c(why)}" if why else "")
        return f"{where}: {c(self.detail)}"


def _outcome(decision: dict[str, Any] | None) -> str:
    if not decision:
        return "nothing"
    return str(decision.get("outcome") or "nothing")


def _cut(value: str) -> str:
    return escaping.clean(value, recheck_text.RECHECK_MAX_TEXT)


@dataclass
class RecheckReport:
    run_id: str
    run_status: str
    policy_id: str
    spec_source: str
    evaluations: list[Evaluation] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    # counts --------------------------------------------------------------------------
    @property
    def differences(self) -> int:
        return sum(1 for e in self.evaluations if e.result == DIFFERENT)

    @property
    def rechecked(self) -> int:
        return sum(1 for e in self.evaluations if e.result in (SAME, DIFFERENT))

    @property
    def not_recheckable(self) -> int:
        return sum(1 for e in self.evaluations if e.result == NOT_RECHECKABLE)

    @property
    def same(self) -> bool:
        """No differences (a report that re-checked nothing is "same")."""
        return self.differences == 0

    @property
    def complete(self) -> bool:
        return self.not_recheckable == 0

    # identity ------------------------------------------------------------------------
    def recorded_ids(self) -> list[str]:
        ids: list[str] = []
        for e in self.evaluations:
            if e.result in (SAME, DIFFERENT) and e.policy_id not in ids:
                ids.append(e.policy_id)
        return ids

    @property
    def identity(self) -> str:
        ids = self.recorded_ids()
        if not ids or not self.policy_id or "" in ids:
            return "unknown"
        return "unchanged" if ids == [self.policy_id] else "changed"

    # output --------------------------------------------------------------------------
    def json_tree(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "run_status": self.run_status,
            "policy_id": self.policy_id,
            "identity": self.identity,
            "spec_source": self.spec_source,
            "notes": list(self.notes),
            "evaluations": [e.json_tree() for e in self.evaluations],
            "same": self.same,
            "differences": self.differences,
            "rechecked": self.rechecked,
            "not_recheckable": self.not_recheckable,
            "complete": self.complete,
        }

    def render(self) -> str:
        c = _cut
        changed = [i for i in self.recorded_ids() if i != self.policy_id]
        identity = recheck_text.recheck_identity(self.identity, c(self.policy_id), [c(i) for i in changed])
        lines = [
            recheck_text.recheck_header(
                c(self.run_id), c(self.run_status), self.differences, self.rechecked, identity, self.spec_source
            )
        ]
        ordered = [e for e in self.evaluations if e.result == DIFFERENT]
        ordered += [e for e in self.evaluations if e.result != DIFFERENT]
        lines += [e.line() for e in ordered]
        lines += [f"note: {c(n)}" for n in self.notes]
        return "\n".join(lines) + "\n"


def reports_json(reports: list[RecheckReport]) -> str:
    """The ``-json`` output: one array indented two spaces (``[]`` when none)."""
    if not reports:
        return "[]\n"
    return json.dumps([r.json_tree() for r in reports], indent=2, ensure_ascii=False, default=str) + "\n"


def summary(reports: list[RecheckReport], policy_id: str) -> str:
    rechecked = sum(r.rechecked for r in reports)
    skipped = sum(r.not_recheckable for r in reports)
    differ = sum(1 for r in reports if not r.same)
    return recheck_text.recheck_summary(len(reports), policy_id, rechecked, skipped, differ)
