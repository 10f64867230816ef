"""What the runtime records and refuses: the policy's reasons, decisions, observations and the
gate's, the store's and the database checks' refusals. A policy's reason reaches the model, so the
leak test walks this module too.
"""

from __future__ import annotations

from agentrt_proxy.text.model_text import ENDED_HOW

# =============================================================================================
# The policy's reasons, questions and notices (gate/_policy.py)
# =============================================================================================

REASON_NO_POLICY = 'no policy for side effect "{cls}"'
REASON_CLASS = "side effect {cls} is {outcome} by policy"
REASON_RULE = "tool {name} is {outcome} by the operator's rule"
REASON_NOT_OFFERED = 'tool "{name}" is not offered'
REASON_UNKNOWN_OUTCOME = 'unknown outcome "{outcome}"'
REASON_INTERRUPTED = "interrupted while executing; outcome unknown"
QUESTION_ORDINARY = "May the model call {remote} on server {server} with these arguments?"
QUESTION_INTERRUPTED = "Run {remote} on server {server} again with these arguments?"
NOTICE_INTERRUPTED = (
    "An earlier attempt of this call, started at {started_at} in run {run_id}, {how}, so whether it took "
    "effect is unknown: it may have. Approving runs it again with these arguments once the model calls it "
    "again. Rejecting ends this request; an identical call later asks an operator again, whatever the policy."
)
HOW_ENDED = ENDED_HOW  # one wording of how an attempt ended, for the model and the operator alike
DETAIL_TOOL_GONE = "the tool is no longer offered"

# Budgets and untrusted output (gate/guards.py, docs/decisions/0017). The over-budget reason is
# what OVER_BUDGET says after its prefix: the budget, what remains, and when the window frees enough.
REASON_UNPRICED_BUDGET = (
    'budget "{budget}" covers tool {name}, whose rule declares no amount field, so every call to it is refused'
)
REASON_UNRESOLVED = 'the amount could not be resolved: the field "{field}" is {why}'
# why a declared amount or currency field resolves to nothing a budget can count (gate/_amounts.py)
WHY_ABSENT = "absent"
WHY_NOT_A_NUMBER = "not a JSON number"
WHY_NEGATIVE = "negative"
WHY_PAST_BOUND = "past the bound"
WHY_NOT_A_CURRENCY = "not a currency code (ISO 4217: three ASCII letters)"
REASON_UNCOVERED_CURRENCY = (
    'the amount could not be resolved: the field "{field}" names {currency}, which no budget of tool {name} counts'
)
REASON_NO_SPENDING = 'the spending of budget "{budget}" could not be read'
REASON_OVER_BUDGET = (
    'budget "{budget}" has {remaining} left of {limit}{per}; this call spends {amount}{frees}'
)
PER_WINDOW = " per {window}"
FREES_AT = "; enough frees up at {at}"
FREES_NEVER = "; it never frees enough for this call"
FREES_LIFETIME = "; it is a lifetime allowance and does not free up"
QUESTION_OVER_BUDGET = (
    "May {remote} on server {server} run with these arguments although it exceeds budget {budget} by {excess}?"
)
REASON_OVER_BUDGET_ASK = 'exceeds budget "{budget}" by {excess}'
REASON_CLEAN_CONTEXT = (
    "tool {name} requires a clean context, and this session already passed on content from untrusted "
    "server {server} ({what})"
)
QUESTION_CLEAN_CONTEXT = (
    "May {remote} on server {server} run with these arguments after the model read untrusted content from "
    "server {source_server} ({what})?"
)


def untrusted_what(tool: str, via: str) -> str:
    """Which of an untrusted server's texts the host was given: a tool call's (its result, error,
    progress, or a DUPLICATE quoting it), or another path's (``via``: the method that carried it)."""
    if via:
        return f"{via} of tool {tool}" if tool else via
    return f"tool {tool}"


# =============================================================================================
# The operator's decisions refused (gate/approvals.py)
# =============================================================================================

ERR_NOT_WAITING = "agentrt: run {run_id} is not waiting for approval"
ERR_NOT_FOUND = "agentrt: approval {id} not found in run {run_id}"
ERR_NOT_PENDING = "agentrt: approval {id} is already decided ({status})"
ERR_EXPIRED = "agentrt: approval {id} expired"
ERR_NO_HASH = "agentrt: approval {id}: no hash was shown"
ERR_CHANGED = "agentrt: approval {id} changed since it was shown (shown {shown}, stored {stored})"
ERR_HASH = "agentrt: approval {id}: its stored fields no longer hash to its hash"
ERR_CANNOT_CANCEL = "agentrt: run {run_id} is {status} and cannot be cancelled"


# =============================================================================================
# The runtime's decisions, observations and run details (gate/_model.py)
# =============================================================================================

ERR_NO_KIND = "decision has no kind"
ERR_NO_TOOL = "tool_call without a tool name"
ERR_UNKNOWN_TOOL = 'unknown tool "{name}"'
ERR_UNKNOWN_KIND = 'unknown decision kind "{kind}"'
ERR_UNKNOWN_ORIGIN = 'unknown decision origin "{origin}"'
ERR_ARGS_UNUSABLE = "arguments are not usable JSON: {reason}"
ERR_ARGS_SCHEMA = "arguments do not match schema: {error}"
SUMMARY_INVALID = "invalid decision: {error}"
SUMMARY_INVALID_RESUME = "invalid decision on resume: {error}"
SUMMARY_DENIED = "denied: {reason}"
SUMMARY_ABORTED = "aborted: {reason}"
SUMMARY_DENIED_RESUME = "denied on resume: {reason}"
SUMMARY_ABORTED_RESUME = "aborted on resume: {reason}"
SUMMARY_REJECTED = "approval rejected: {note}"
# A task withdrawn before its approval was decided (proxy/_tasks.py): the approval is rejected
# in the host's name, and the record says why.
WITHDRAWN_BY_HOST = "host:tasks/cancel"
WITHDRAWN_BY_TTL = "host:task-ttl"
NOTE_WITHDRAWN_BY_HOST = "withdrawn: the host cancelled its task before a decision"
NOTE_WITHDRAWN_TTL = "withdrawn: its task's time to live passed before a decision"
SUMMARY_TOOL_ERROR = "{tool} {failure}: {error}"
SUMMARY_INVALID_CONTENT = "{tool} returned content is not usable JSON: {reason}"
SUMMARY_CANCELLED = "{tool} was cancelled and its outcome is unknown: {error}"
SUMMARY_PANIC = "{tool} panicked"
SUMMARY_INTERRUPTED = "step interrupted while {status}"
SUMMARY_OPERATOR_CANCEL = "cancelled by operator: {note}"
DETAIL_STEP_LIMIT = "step limit {n} reached"
DETAIL_FAILURES = "{n} consecutive failed steps"
DETAIL_LOOP = "{tool} produced the same observation {n} times in a row"
DETAIL_EXPIRED = "approval {id} expired"
DETAIL_POLICY_ERROR = "policy error: {error}"
DETAIL_POLICY_RUN = "policy: {error}"
DETAIL_UNKNOWN_OUTCOME = 'unknown policy outcome "{outcome}"'
DETAIL_CONFLICT = (
    "step {n} was interrupted while executing a tool call whose outcome is unknown, and it cannot wait for an "
    "operator: {detail}"
)
ERR_RPC = "{tool}: the server answered with JSON-RPC error {code}: {message}"
ERR_NO_ANSWER = "{tool}: no answer from the server ({kind}): {detail}"
# The server refused a request it was sent whole with an HTTP error status: it may have acted first.
ERR_HTTP_STATUS = "{tool}: the server refused the request: {detail}"
# A request that provably never reached its server (the wire's NotSent): a known failure.
ERR_NOT_SENT = "{tool}: nothing was sent to the server: {detail}"


# =============================================================================================
# The gate's refusals (gate/_session.py)
# =============================================================================================

ERR_SESSION_CLOSED = "agentrt: the session is closed"
ERR_OPEN_STEP = "agentrt: run {run_id} already has an open step"
ERR_NO_STEP = "agentrt: run {run_id} has no open step to decide"
ERR_NOT_ALLOWED = "agentrt: run {run_id} has no allowed request to execute"
ERR_LEASE_EXPIRED = "agentrt: the lease on run {run_id} expired at {at}"
ERR_LEASE_OTHER = "agentrt: run {run_id} is no longer leased by this gate"
ERR_LIMITS = "agentrt: limits need max_steps, max_consecutive_tool_failures and loop_threshold above zero"


# =============================================================================================
# Collection and takeover refusals (gate/_attach.py)
# =============================================================================================

ERR_TERMINAL = "agentrt: run {run_id} is {status} and cannot be resumed"
ERR_NO_AWAITING = "agentrt: run {run_id} has no step awaiting approval"
ERR_NOT_APPROVED = "agentrt: approval {id} of run {run_id} is {status}, not approved"
ERR_TOOL_GONE = "agentrt: tool {name} of run {run_id} is no longer registered"
ERR_APPROVAL_HASH = "agentrt: approval {id}: its stored fields no longer hash to its hash"
DETAIL_SCHEMA = "its arguments do not match the current schema: {error}"


# =============================================================================================
# The store's refusals and the chain's findings (store/_store.py)
# =============================================================================================

MSG_RUN_STATE = "agentrt: run {run_id} is not {expected}"
EXPECTED_RUNNING_LEASED = "RUNNING under this lease"  # MSG_RUN_STATE's expected: a step claimed under a lease
MSG_RUN_LEASED = "agentrt: run {run_id} is leased by {owner} until {until}"
MSG_SEQ_GAP = "seq {seq} follows {prev}: an event is missing"
MSG_FIRST_GAP = "the first event is seq {seq}: an event is missing"
MSG_HASH_MISMATCH = "the stored hash is not the one the event's fields and the previous event's hash give"
ERR_TX_FAILED = "agentrt: the write transaction was rolled back: a write inside it failed"
MSG_RUN_ID_TAKEN = "proxy: run id {run_id} is another call's: drawing a new one"

# The state rows held against the chain (store/_replay.py): "<table> <key>: ...".
STATE_ROW_FIELD = "{table} {key_or_run_id}: {column} is {found}; the chain says {expected}"
STATE_ROW_MISSING = "{table} {key_or_run_id}: no row; the chain says {expected}"
STATE_ROW_UNEXPLAINED = "{table} {key_or_run_id}: no event in the chain explains this row"
STATE_NO_RUN = "its run never began"
STATE_RUN_CREATED = "the run was created at seq {seq}"
STATE_CALL_BEGUN = "the proxy began this run for a call of {tool} at seq {seq}"
STATE_APPROVAL_REQUESTED = "what approval.requested at seq {seq} recorded"
STATE_REQUEST_HASH = "a request hashing to {hash}…"
STATE_AT_SEQ = "(approval.requested at seq {seq})"
STATE_OUTCOME_OPEN_RUN = "its run is {status}: no outcome is settled before the run ends"
STATE_OUTCOME_KNOWN = "no outcome of its run's tool was recorded (known needs one)"
STATE_OUTCOME_UNKNOWN = "its run's tool never began and no interruption was asked about (unknown needs one)"
STATE_OUTCOME_SUCCEEDED = "its run's tool returned a result (none means nothing ran)"
STATE_OUTCOME_SENT = "its run's tool was sent the request and failed (none means nothing ran)"
STATE_STEP_STARTED = "step.started at seq {seq} began this step"
STATE_STEP_EXECUTING = "its tool started and no outcome was recorded: executing"
STATE_STEP_ENDED = "its step ended (an outcome, a failure or an interruption was recorded)"
STATE_SPEC_HASH = "a spec hashing to {hash}…"
STATE_SPEC_NAMED = "step.policy at seq {seq} decided under this tool spec"
STATE_HOLD_RESERVED = "budget.reserved at seq {seq} reserved {amount}"
STATE_LEASE_HELD = "its run is {status}: an ended or waiting run holds no lease"
STATE_TASK_APPROVAL = "that approval is not one the chain gives the task's run"
STATE_A_TIME = "a time"


# =============================================================================================
# Opening the database refused (store/_schema.py)
# =============================================================================================

MSG_SYMLINK = "agentrt: {path} is a symbolic link: refusing to open a database through a link"
MSG_NOT_REGULAR = "agentrt: {path} is not a regular file"
MSG_INSECURE = (
    "agentrt: {path} has mode {mode:04o}: group or others can write it, and whoever can write the "
    "database can forge approvals; fix it with: chmod 600 {path}"
)
MSG_SIDECAR_OWNER = "agentrt: {path} is owned by another user than the database beside it"
MSG_SCHEMA_NEWER = "agentrt: the database is at version {found}, this build writes {known}"
MSG_SCHEMA_OLDER = "agentrt: the database is at version {found}, this build writes {known}: open it for writing once"
MSG_UNSAFE = "agentrt: the database contains a {kind} ({name}); the runtime creates none, refusing to open it"
MSG_INDEX_NEWER = (
    "proxy: the database's call index is at version {found} and this build knows {known}: "
    "a newer agentrt-proxy migrated it"
)
MSG_MISSING = "agentrt: {path} does not exist"
MSG_NOT_WRITABLE = "agentrt: {path} cannot be written: {cause}; the proxy must record every call before it runs"


# =============================================================================================
# The store's and the gate's refusals, written where they are raised before (store/, gate/)
# =============================================================================================

MSG_APPROVAL_NOT_FOUND = "agentrt: approval {id} not found"
ERR_STORE_READ_ONLY = "agentrt: the store was opened read-only"
ERR_TOOL_NAMES = "agentrt: tool names must be non-empty and unique"
ERR_TOOL_TIMEOUT = "agentrt: tool {name}: timeout must be above zero"
ERR_DECIDED_MEANWHILE = "agentrt: approval {id} was decided meanwhile"
ERR_RESULT_UNUSABLE = "result is not usable JSON: {reason}"
ERR_NO_OUTCOME_WITHIN = "{tool}: no outcome within {seconds}s"
DETAIL_PANIC = "panic: {error}"
DETAIL_TOOL_UNREGISTERED = "the tool is no longer registered"
DETAIL_UNKNOWN_RECONCILIATION = "unknown reconciliation {action}"


# =============================================================================================
# A server's request relayed to the host (proxy/_forwarding): the answer the server gets, recorded
# =============================================================================================

FORWARD_NO_CAPABILITY = "the host declared no {capability} capability: {method} is refused"
# The goal of a server's request relayed to the host, as its record names it (store/_audit.py).
GOAL_RELAYED = "{target} from {server} to the host"
FORWARD_NOT_RECORDED = "the relayed request could not be recorded, so the host's answer is withheld"

# A call's arguments refused before anything is sent (upstream/loaded_tool.py).
ARGUMENTS_NOT_OBJECT = "{name}: arguments are not a JSON object: {reason}"
ARGUMENTS_NOT_OBJECT_GOT = "{name}: arguments are not a JSON object: got {kind}"
PARAMETER_DENIED = "{name}: parameter {parameter} is denied by the operator"
PARAMETER_FIXED = "{name}: parameter {parameter} is fixed by the operator"
SCHEMA_UNUSABLE = "the schema cannot be used: {error}"  # upstream/validation.py: the arguments' check
