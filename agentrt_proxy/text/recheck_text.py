"""What ``agentrt-proxy recheck`` tells the operator: its usage, its scope and each report line."""

from __future__ import annotations

from agentrt_proxy.text.escaping import go_quote

# What ``agentrt-proxy recheck`` tells the operator (runtime-core §8.4, proxy-and-mcp-module §2.11, §3).

RECHECK_MAX_TEXT = 240  # every value in a report line is sanitized and cut at this many bytes
RECHECK_SCOPE = (
    "covered: the gate's policy (policy map, each rule's outcome, fixed values, rename); not covered: the "
    "duplicate rule, repeat window, max_pending, rejected or expired approvals, calls refused before the gate, "
    "and without -current-tools any schema or denied-parameter change"
)
RECHECK_NO_INDEX = "recheck: the database has no index of proxy calls: {error}"
RECHECK_RUN_ERROR = "recheck run {run_id}: {error}"
RECHECK_USAGE_CONFIG = "-config <file> is required and nothing follows the flags"
RECHECK_USAGE_EXCLUSIVE = "-run and -session are exclusive"
RECHECK_USAGE_LIMIT = "-limit must be positive"
RECHECK_NO_RUN = 'recheck: no run of session "{session}" was found, so nothing was re-checked'
RECHECK_NOTHING = "recheck: no decision of the policy was re-checked ({skipped} not re-checkable)"


def recheck_where(mark: str, step_index: int, seq: int, tool: str) -> str:
    """The head of one re-checked decision's line: its mark, padded, then where it was decided."""
    return f"{mark:<9} step {step_index} seq {seq} {tool}"


RECHECK_NOTE_OPEN = "the run is {status}: re-checked up to its current state"
RECHECK_NOTE_OLD = "recorded before v0.5.0: its decisions recorded then cannot be re-checked"
RECHECK_NOTE_NONE = "no policy evaluation is recorded"
RECHECK_NOT_A_POLICY = "a pause written when the run was taken over, not a decision of the policy"
RECHECK_PRE_VIEW = "recorded before v0.5.0: no view and no spec hash"
RECHECK_NO_SPEC = "no tool spec was recorded with the decision"
RECHECK_SPEC_MISSING = "the tool spec {hash} is not stored"
RECHECK_SPEC_BROKEN = "the stored tool spec {hash} does not hash to its key"
RECHECK_STEP_MISSING = "the step is missing or not a tool call"
RECHECK_UNREADABLE = "the recorded {what} cannot be read"
RECHECK_CREATED_MISSING = "run.created is missing or cut"
RECHECK_COUNTS = "the view's counts do not match the run's steps and approvals"
RECHECK_TOO_MANY_APPROVALS = "the view held {count} approvals, more than {limit}"
RECHECK_TOO_LARGE = "the recorded {what} is longer than {limit} characters"
RECHECK_POLICY_FAILED = "policy failed; no evaluation recorded: {error}"
RECHECK_TOOL_GONE = 'tool "{name}" is not loaded now'
RECHECK_ARGS_NOW = "its recorded arguments do not match the current schema: {error}"
RECHECK_KIND = "the approval's kind would be {new} instead of {old}"
RECHECK_HASH_SPEC = "the approval would be another: the tool spec is not the one recorded"
RECHECK_HASH = "the approval would be another: its capability or presentation changed"
RECHECK_POLICY_ERROR = "policy error: {error}"
RECHECK_RECORDED_INVALID = "the recorded decision was refused as invalid: {reason}"
RECHECK_NOW_VALID = "the recorded decision was refused as invalid ({reason}); now it is valid"


def recheck_header(run_id: str, status: str, differ: int, rechecked: int, identity: str, source: str) -> str:
    return f"run {run_id} {status}: {differ} of {rechecked} re-checked evaluations differ; {identity}; {source} specs"


def recheck_identity(identity: str, given: str, recorded: list[str]) -> str:
    if identity == "unchanged":
        return f"policy unchanged: {go_quote(given)}"
    if identity == "changed":
        return "policy changed: recorded " + ", ".join(go_quote(r) for r in recorded) + f", given {go_quote(given)}"
    return "policy identity unknown"


def recheck_summary(runs: int, policy_id: str, rechecked: int, skipped: int, differ: int) -> str:
    return (
        f"{runs} run(s) re-checked under {policy_id}: {rechecked} decision(s) re-checked, "
        f"{skipped} not re-checkable and skipped; {differ} run(s) differ"
    )
