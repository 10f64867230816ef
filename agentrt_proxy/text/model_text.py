"""What a model reads: every answer other than a returned result, and the status tool's words.

Nothing here names the operator command, the database, the configuration or a run id (a test walks
every template in this module for that); approval ids are shown so the model can ask about them.
"""

from __future__ import annotations

import re

from agentrt_proxy.canonical.durations import format_go
from agentrt_proxy.text.escaping import clean, go_quote

# =============================================================================================
# What the model is told. Every answer other than a returned result is one text block that
# starts with a fixed prefix and ": ". Nothing here names the operator command, the database,
# the configuration or a run id; approval ids are shown so the model can ask about them.
# =============================================================================================

PENDING_APPROVAL = "PENDING_APPROVAL"
IN_PROGRESS = "IN_PROGRESS"
INTERRUPTED = "INTERRUPTED"
UNKNOWN_OUTCOME = "UNKNOWN_OUTCOME"
UNRECORDED = "UNRECORDED"
DENIED = "DENIED"
INVALID = "INVALID"
REJECTED = "REJECTED"
EXPIRED = "EXPIRED"
DUPLICATE = "DUPLICATE"
BLOCKED = "BLOCKED"
UNAVAILABLE = "UNAVAILABLE"
GATE_STATUS = "GATE_STATUS"
OVER_BUDGET = "OVER_BUDGET"  # out of allowance, not "not permitted": docs/decisions/0017
WITHDRAWN = "WITHDRAWN"  # a task cancelled, or past its time to live, before its approval: decision 0020

# Whether each prefix is an error result (isError) for the host.
IS_ERROR: dict[str, bool] = {
    PENDING_APPROVAL: False,
    IN_PROGRESS: False,
    INTERRUPTED: False,
    UNKNOWN_OUTCOME: False,
    UNRECORDED: False,
    DENIED: True,
    INVALID: True,
    REJECTED: True,
    EXPIRED: True,
    DUPLICATE: True,
    BLOCKED: True,
    UNAVAILABLE: True,
    GATE_STATUS: False,
    OVER_BUDGET: True,
    WITHDRAWN: True,
}

REASON_BOUND = 500
SCHEMA_ERROR_BOUND = 1000
QUOTED_RESULT_BOUND = 64 * 1024

# How an attempt whose outcome is unknown ended.
ENDED_HOW = {
    "timed_out": "timed out before the server answered",
    "no_answer": "failed without an answer from the server",
    "refused": "was refused by the server with an HTTP error status, and the server may have acted on it first",
    "cut_off": "was cut off before its outcome was recorded",
}

_DO_NOT_CALL_AGAIN = (
    "Do not call this tool again until you have been told the operator decided, and do not try another tool "
    "to achieve the same thing. Tell the user. If you are told it was approved, call this tool again with "
    "exactly the same arguments."
)
_SCHEMA_URL = re.compile(r" with '[a-z]+://tools/[^']*'")


def pending_approval(approval_id: str) -> str:
    return (
        f"{PENDING_APPROVAL}: this request is waiting for an operator's approval (approval {approval_id}). "
        "Nothing has been executed. Do not call this tool again until you have been told it was approved, do not "
        "try another tool to achieve the same thing, and do not ask the user to approve it: the operator decides "
        "elsewhere. Tell the user it is waiting. After approval, call this tool again with exactly the same "
        "arguments to run it and get the result."
    )


def interrupted(approval_id: str) -> str:
    return (
        f"{INTERRUPTED}: an earlier attempt of this exact request was cut off and its outcome is unknown; an "
        f"operator must decide whether it runs again (approval {approval_id}); nothing further has been executed. "
        "Do not call this tool again until you have been told the operator decided, and do not try another tool "
        "to achieve the same thing. Tell the user. If you are told it was approved, call this tool again with "
        "exactly the same arguments."
    )


def unknown_outcome(ended: str, approval_id: str | None, error: str | None = None) -> str:
    how = ENDED_HOW.get(ended, ENDED_HOW["no_answer"])
    detail = f" ({clean(error, REASON_BOUND)})" if error else ""
    if approval_id:
        next_step = f"An operator must decide whether it runs again (approval {approval_id})."
    else:
        next_step = "An identical call will wait for an operator to decide whether it runs again."
    return (
        f"{UNKNOWN_OUTCOME}: an attempt of this exact request {how}{detail}, so whether it took effect is unknown: "
        f"it may have. {next_step} Nothing further has been executed. {_DO_NOT_CALL_AGAIN}"
    )


def unrecorded(reason: str, window_ns: int) -> str:
    duplicate = f" An identical call within {format_go(window_ns)} is refused as a duplicate." if window_ns > 0 else ""
    return (
        f"{UNRECORDED}: the server answered this request, so it executed, but its answer could not be recorded "
        f"({clean(reason, REASON_BOUND)}). What it did is not known here: it may have taken effect. Do not call "
        f"this tool again to retry it.{duplicate} Tell the user."
    )


def in_progress() -> str:
    return (
        f"{IN_PROGRESS}: this exact request is already being executed, or the outcome of an attempt of it is not "
        "yet known. Nothing new was started. Wait a little, then call this tool again with exactly the same "
        "arguments to learn its outcome."
    )


def denied(reason: str) -> str:
    return f"{DENIED}: the policy does not allow this request: {clean(reason, REASON_BOUND)}. Nothing was executed."


def over_budget(reason: str) -> str:
    return (
        f"{OVER_BUDGET}: {clean(reason, REASON_BOUND)}. Nothing was executed. The request is permitted but "
        "out of allowance: calling again before the budget has room is refused the same way."
    )


def invalid(reason: str) -> str:
    reason = _SCHEMA_URL.sub("", reason)
    return (
        f"{INVALID}: the arguments do not match the tool's input schema: {clean(reason, SCHEMA_ERROR_BOUND)}. "
        "Nothing was executed. Correct the arguments and call again."
    )


def _note(note: str) -> str:
    if not note.strip():
        return ""
    return f" The operator's note: {go_quote(clean(note, REASON_BOUND))}."


def rejected(approval_id: str, note: str, until: str) -> str:
    return (
        f"{REJECTED}: an operator rejected this exact request (approval {approval_id}).{_note(note)} It was not "
        f"executed. An identical request is refused until {until}; do not ask for it again, and tell the user."
    )


def cancelled(note: str, until: str) -> str:
    return (
        f"{REJECTED}: an operator cancelled this exact request.{_note(note)} Nothing further was executed. An "
        f"identical request is refused until {until}; do not ask for it again, and tell the user."
    )


def expired(approval_id: str, until: str) -> str:
    return (
        f"{EXPIRED}: the approval for this exact request (approval {approval_id}) expired before it was used. It "
        f"was not executed. An identical request is refused until {until}; tell the user."
    )


def duplicate_succeeded(result_text: str) -> str:
    return f"it succeeded, with this result: {clean(result_text, QUOTED_RESULT_BOUND)}"


def duplicate_unrecorded(error: str) -> str:
    return f"the server answered, but its result could not be recorded: {clean(error, REASON_BOUND)}"


def duplicate_failed(error: str) -> str:
    return f"it failed, with this error: {clean(error, QUOTED_RESULT_BOUND)}"


def duplicate(finished_at: str, window: str, outcome: str) -> str:
    return (
        f"{DUPLICATE}: this exact request already executed at {finished_at} and is not executed again: an "
        f"identical call to this tool within {window} of an earlier one is refused, whether it is a retry or meant "
        f"as a new one. Its outcome was: {outcome}"
    )


def blocked_unknown(tool: str, approval_id: str) -> str:
    return (
        f"{BLOCKED}: an earlier call to {tool} may have taken effect and its outcome is unknown (approval "
        f"{approval_id}), so no other call to {tool} that changes anything runs until an operator decides it. "
        "Nothing was executed. Tell the user."
    )


def blocked_cap(max_pending: int) -> str:
    return (
        f"{BLOCKED}: {max_pending} requests are already waiting for an operator's approval, the most this session "
        "allows. Nothing was executed and no approval was requested. Tell the user, and wait for the waiting "
        "requests to be decided."
    )


# What UNAVAILABLE says could not be done.
COULD_NOT_READ = "the gate could not read its records, and nothing was executed"
COULD_NOT_COLLECT = "the gate could not collect the approved request, and nothing was executed"
COULD_NOT_RECOVER = "the gate could not recover an earlier attempt of this request, and nothing was executed"
COULD_NOT_RECORD = "the gate could not record this request, and nothing was executed"
# A store failure while the rules moved another call's run (a take-over) before this one began.
COULD_NOT_WRITE = "the gate could not write its records, and nothing was executed"
COULD_NOT_START = "the gate could not start this request, and nothing was executed"
COULD_NOT_ASK = (
    "the gate could not ask an operator about an earlier call to this tool whose outcome is unknown, and nothing "
    "was executed"
)
OUTCOME_NOT_RECORDED = "the call's outcome was not recorded"
# A call that ended while the database refused every write until its lease ran out.
ANSWERED_NOT_RECORDED = "the server answered, and its result could not be recorded; the call executed"
MAYBE_EXECUTED_NOT_RECORDED = (
    "the call may have executed (no answer came back), and what came of it could not be recorded"
)
NOT_SENT_NOT_RECORDED = "nothing was executed (the request never reached the server), and that could not be recorded"
STATUS_COULD_NOT_READ = "the gate could not read its records"


def unavailable(what: str) -> str:
    return f"{UNAVAILABLE}: {what}. Tell the user."


def error_result(error_text: str) -> str:
    """An upstream tool's error, as recorded, escaped and bounded."""
    return clean(error_text, QUOTED_RESULT_BOUND)


def not_sent_approval_stands(error_text: str, approval_id: str, until: str) -> str:
    """A granted request that reached no server (down, restarting, refusing the connection):
    nothing ran, and the operator's approval still stands (``until``: empty when it never
    expires)."""
    by = f" until {until}" if until else ""
    return (
        f"{error_result(error_text)} Nothing was executed. The operator's approval of this exact request "
        f"(approval {approval_id}) still stands{by}: once the server is back, the identical call (exactly the same "
        "arguments) executes it once, without asking again."
    )


SHUTTING_DOWN = "the proxy is shutting down"
NOT_STARTED = "the proxy could not start; its log says why"

# =============================================================================================
# The status tool.
# =============================================================================================

STATUS_DESCRIPTION = (
    "Report the requests in this session that are waiting for an operator's approval, or, given approval_id, what "
    "became of that one: pending, approved, executed, rejected, or expired; given task_id, the state of that task. "
    "This tool only reports; it never runs or approves anything."
)
STATUS_SCHEMA_TEXT = (
    '{"type":"object","properties":{"approval_id":{"type":"string","description":"The approval id a pending '
    'result named."},"task_id":{"type":"string","description":"The id of a task a call was answered with."},'
    '"tool":{"type":"string","description":"A tool whose spending budgets to report: what remains of each."}},'
    '"additionalProperties":false}'
)
STATUS_BAD_ARGUMENTS = "the only arguments are approval_id, task_id or tool, one of them, a string"


def status_budgets(tool: str, lines: list[str]) -> str:
    """What remains of the budgets covering ``tool`` (the status tool given ``tool``)."""
    if not lines:
        return f"{GATE_STATUS}: no spending budget covers tool {clean(tool, 100)}."
    return f"{GATE_STATUS}: tool {clean(tool, 100)}: " + "; ".join(lines) + "."


def status_budget_line(budget: str, remaining: str, limit: str, per: str) -> str:
    return f"budget {go_quote(budget)} has {remaining} of {limit} left{per}"


def status_unknown_id(approval_id: str) -> str:
    return f"{GATE_STATUS}: no approval {clean(approval_id, 100)} is known in this session from the last hour."


def status_list(descriptions: list[str]) -> str:
    if not descriptions:
        return f"{GATE_STATUS}: no request in this session is waiting for an operator's approval."
    if len(descriptions) == 1:
        head = f"{GATE_STATUS}: 1 request in this session is waiting for an operator's approval."
    else:
        head = f"{GATE_STATUS}: {len(descriptions)} requests in this session are waiting for an operator's approval."
    return head + "".join(f"\n- {d}" for d in descriptions)


def status_one(description: str) -> str:
    return f"{GATE_STATUS}: {description}"


def status_subject(approval_id: str, tool: str, args_text: str) -> str:
    return f"approval {approval_id} for {clean(tool, 64)} {clean(args_text, 200)}: "


def status_waiting_interruption(age: str) -> str:
    return (
        f"OUTCOME UNKNOWN, waiting {age} for an operator to decide whether it runs again; an earlier attempt may "
        "have taken effect. Nothing further has been executed."
    )


def status_waiting(age: str) -> str:
    return (
        f"PENDING for {age}. Nothing has been executed; the operator decides elsewhere. Do not call the tool again "
        "until it is approved."
    )


STATUS_EXPIRED_UNDECIDED = "EXPIRED without a decision. It was not executed."
STATUS_EXPIRED = "EXPIRED. It was not executed."


def status_rejected(note: str) -> str:
    return f"REJECTED by the operator.{_note(note)} It was not executed; do not ask for it again."


STATUS_EXECUTED_OK = "APPROVED and executed, and it succeeded."


def status_executed_unrecorded(error: str) -> str:
    return (
        f"APPROVED and executed, and the server answered, but its result could not be recorded "
        f"({clean(error, REASON_BOUND)}); it may have taken effect."
    )


def status_executed_failed(error: str) -> str:
    return f"APPROVED and executed, and the server reported a failure: {clean(error, REASON_BOUND)}."


def status_executed_unknown(ended: str, next_approval: str | None) -> str:
    how = ENDED_HOW.get(ended, ENDED_HOW["no_answer"])
    if next_approval:
        tail = f"Approval {next_approval} now waits for an operator to decide whether it runs again."
    else:
        tail = "No approval to run it again is waiting now."
    return f"APPROVED and executed, but it {how}, so whether it took effect is unknown: it may have. {tail}"


def status_superseded(latest: str) -> str:
    return f"APPROVED, and then a different approval was asked for the same call (approval {latest})."


def status_awaiting_collection(tool: str) -> str:
    return (
        f"APPROVED, awaiting collection. Call {clean(tool, 64)} again with exactly the same arguments to run it and "
        "get the result."
    )


STATUS_EXECUTING = "APPROVED and executing now."
STATUS_TASK_EXECUTING = "APPROVED; the proxy is executing it for its task now."
NOT_EXECUTED_DENIED = "the policy denied it when it was collected"
NOT_EXECUTED_INVALID = "its arguments no longer matched the tool's schema when it was collected"
NOT_EXECUTED_CANCELLED = "an operator cancelled it"
NOT_EXECUTED_EXPIRED = "the approval expired before it was collected"


def not_executed_run_ended(reason: str) -> str:
    return f"its run ended ({clean(reason, 64)})"


def status_not_executed(why: str) -> str:
    return f"APPROVED but not executed: {why}."


def status_unknown_task(task_id: str) -> str:
    return f"{GATE_STATUS}: no task {clean(task_id, 100)} is known in this session."


def status_task(task_id: str, status: str, message: str, terminal: bool, dropped: bool,
                description: str | None) -> str:
    """The status tool given ``task_id``: the task's status and status message (what the host's
    ``tasks/get`` says), then what became of the approval it waits on, when it waits on one."""
    said = clean(message, 1000)
    text = f"{GATE_STATUS}: task {clean(task_id, 100)} is {clean(status, 40)}: {said.removesuffix('.')}."
    if dropped:
        text += " " + STATUS_TASK_DROPPED
    elif terminal:
        text += " " + STATUS_TASK_ENDED
    if description:
        text += f" Its {description}"  # the approval's status line, built by status_subject and the rest
    return text


STATUS_TASK_ENDED = "The host receives its answer from the task; do not call the tool again."
STATUS_TASK_DROPPED = (
    "Its answer was dropped when the task's time to live passed; what the request did stays recorded under its "
    "approval id."
)


def status_task_follows(task_id: str, status: str) -> str:
    """Added to an approval's status when a task follows its request (the host polls the task)."""
    return (
        f" Task {clean(task_id, 100)} ({clean(status, 40)}) follows this request: the host receives its result from "
        "the task, so do not call the tool again."
    )


def progress_waiting() -> str:
    return "waiting for an operator's approval"


# ---------------------------------------------------------------------------------------------
# Calls answered as MCP tasks (proxy/_tasks.py, docs/decisions/0020): a task's status message,
# the answer of a task withdrawn before its approval, and the JSON-RPC errors of tasks/*.
# ---------------------------------------------------------------------------------------------

TASK_STARTED = "the request is going through the gate"


def task_waiting(approval_id: str) -> str:
    return (
        f"waiting for an operator's approval (approval {approval_id}); nothing has been executed. The operator "
        "decides elsewhere: once approved, the request executes once and this task completes with its result; "
        "a rejection or an expiry completes it with REJECTED or EXPIRED. Do not call the tool again."
    )


TASK_DONE = "the request's answer is recorded"
TASK_MESSAGE_BOUND = 2048  # a task's status message, repeated in every poll and notification


def task_ended(answer: str) -> str:
    """The status message of a task that ended in one of the proxy's own answers (REJECTED and
    the operator's note, EXPIRED, DUPLICATE...) or an error: that answer, as a plain call reads
    it (2025-11-25 says a failed task's message carries what went wrong; a host that reports
    only the message still shows the model why)."""
    return clean(answer, TASK_MESSAGE_BOUND)
TASK_WITHDRAWN_BY_HOST = "cancelled by the host before an operator approved it; nothing was executed"
TASK_WITHDRAWN_TTL = "its time to live passed before an operator approved it; nothing was executed"


def withdrawn(why: str) -> str:
    return f"{WITHDRAWN}: this request was {why}. Nothing was executed."


TASK_NOT_FOUND = "Failed to retrieve task: Task not found"
TASK_EXPIRED = "Failed to retrieve task: Task has expired"
TASK_ID_REQUIRED = "params.taskId must be a non-empty string"
TASK_BAD_CURSOR = "the cursor is not one this server gave"


def task_cannot_cancel_terminal(status: str) -> str:
    return f"Cannot cancel task: already in terminal status '{status}'"


TASK_CANNOT_CANCEL_STARTED = (
    "Cannot cancel task: no approval of it is pending (it was approved, or needed none), so its execution has "
    "begun or is about to; its outcome will be recorded"
)



# ---------------------------------------------------------------------------------------------
# Resources, prompts and completion passed through to the servers that opted in: the JSON-RPC
# error messages the host reads (a URI or prompt name is the host's own, quoted).
# ---------------------------------------------------------------------------------------------

PASSTHROUGH_NOT_RECORDED = "the read could not be recorded, so its answer is withheld"
PASSTHROUGH_NEEDS_URI = "the request needs a uri, a string"
PASSTHROUGH_NEEDS_NAME = "the request needs a prompt name, a string"
PASSTHROUGH_NEEDS_REF = "the request needs a ref to a prompt or a resource"
PASSTHROUGH_NOT_CONNECTED = "the server is not connected"


def passthrough_unknown_uri(uri: str) -> str:
    return f"no server listed the resource {go_quote(uri)}, and no one server's template matches it"


def passthrough_ambiguous_uri(uri: str) -> str:
    return f"the resource {go_quote(uri)} matches the templates of more than one server"


def passthrough_unknown_prompt(name: str) -> str:
    return f"unknown prompt: {go_quote(name)}"


def passthrough_not_offered(server: str, what: str) -> str:
    return f"server {go_quote(server)} does not offer {what}"


def passthrough_failed(server: str, detail: str) -> str:
    return f"server {go_quote(server)}: {clean(detail, 512)}"


def passthrough_error(message: str) -> str:
    """The server's own JSON-RPC error message, escaped and bounded."""
    return clean(message, 1024)

# =============================================================================================
# Why nothing was sent to a server (upstream/supervisor.py): the detail of a not-sent failure,
# read by the model after "<tool>: nothing was sent to the server: ".
# =============================================================================================


def server_down(server: str) -> str:
    return f"server {go_quote(server)} is down; the proxy is starting it again, so a later call may succeed"


def server_stopped(server: str) -> str:
    return f"server {go_quote(server)} is down, and the proxy has stopped starting it again"


def tool_unpinned(server: str, remote: str, reason: str) -> str:
    return (
        f"server {go_quote(server)} no longer offers tool {go_quote(remote)} as it was pinned "
        f"({clean(reason, 160)}): the tool changed, and an operator must review the change before it "
        "can be called again"
    )


# An OAuth server that refuses the proxy's credentials (oauth/serving.py): the call is not sent.
def server_needs_login(server: str) -> str:
    return (
        f"server {go_quote(server)} refused the proxy's authorization and it could not be renewed, so nothing "
        "was sent: the server needs its operator to log in to it again (the login command)"
    )


def server_not_logged_in(server: str) -> str:
    return (
        f"server {go_quote(server)} needs authorization, and its operator has not logged in to it yet, so nothing "
        "was sent (the login command)"
    )


def server_needs_scope(server: str, scope: str) -> str:
    return (
        f"server {go_quote(server)} asks for authorization the proxy does not hold (scope {go_quote(scope)}), "
        "so nothing was sent: the server needs its operator to log in to it again (the login command asks for it)"
    )


def server_needs_auth(server: str, status: int) -> str:
    return (
        f"server {go_quote(server)} answered HTTP {status}: it needs authorization, and its entry has no auth "
        'field, so nothing was sent: its operator adds "auth": {"type": "oauth"} to it and logs in (the login command)'
    )
