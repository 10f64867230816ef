"""Every sentence a model or an operator reads, and the escaping that makes text safe to show.

Keeping all of it here lets one test walk every model-visible template and prove that none
names the operator command, the database, the configuration or a run id.

``sanitize`` makes text from a model, a server or an operator safe for one terminal line:
invalid UTF-8 becomes U+FFFD; CR and LF become a space; other C0 controls, DEL and C1
controls become ``\\xHH``; bidi controls, zero-width and invisible characters, the line and
paragraph separators and the tag block become ``\\u{xxxx}``; a base character carrying more
than four combining marks keeps four and says how many were dropped. ``truncate`` bounds
bytes without splitting a character; ``clean`` is both.
"""

from __future__ import annotations

import re
import unicodedata

ELLIPSIS = "…"

_INVISIBLE = (
    "\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069"  # bidi controls
    "\u200b-\u200d\u2060-\u2064\ufeff\u00ad\u180e"  # zero-width and invisible
    "\u2028\u2029"  # line and paragraph separators
    "\U000e0000-\U000e007f"  # the tag block
)
_COMBINING = "\u0300-\u036f\u1ab0-\u1aff\u1dc0-\u1dff\u20d0-\u20ff\ufe20-\ufe2f"
_NEEDS_WORK = re.compile(f"[\x00-\x1f\x7f-\x9f{_INVISIBLE}{_COMBINING}]")
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")
_INVISIBLE_RE = re.compile(f"[{_INVISIBLE}]")
MAX_COMBINING = 4


def sanitize(text: str | bytes) -> str:
    """Make ``text`` safe to print on one terminal line (see the module's description)."""
    if isinstance(text, bytes):
        text = to_valid_utf8(text)
    elif _has_surrogates(text):
        text = to_valid_utf8(text.encode("utf-8", "surrogatepass"))
    if not _NEEDS_WORK.search(text) and (text.isascii() or not any(map(unicodedata.combining, text))):
        return text
    out: list[str] = []
    marks = 0
    dropped = 0
    for char in text:
        if unicodedata.combining(char):
            marks += 1
            if marks > MAX_COMBINING:
                dropped += 1
                continue
            out.append(char)
            continue
        if dropped:
            out.append(f"[+{dropped} combining marks dropped]")
            dropped = 0
        marks = 0
        out.append(_escape_char(char))
    if dropped:
        out.append(f"[+{dropped} combining marks dropped]")
    return "".join(out)


def to_valid_utf8(data: bytes) -> str:
    """Decode, replacing each run of consecutive invalid bytes with one U+FFFD."""
    out: list[str] = []
    pos = 0
    replaced_at = -1
    while pos < len(data):
        try:
            out.append(data[pos:].decode("utf-8"))
            break
        except UnicodeDecodeError as err:
            out.append(data[pos : pos + err.start].decode("utf-8"))
            if not (err.start == 0 and replaced_at == pos):
                out.append("\ufffd")
            pos += err.end
            replaced_at = pos
    return "".join(out)


def _has_surrogates(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def _escape_char(char: str) -> str:
    if char in "\n\r":
        return " "
    if _CONTROL.match(char):
        return f"\\x{ord(char):02x}"
    if _INVISIBLE_RE.match(char):
        return f"\\u{{{ord(char):04x}}}"
    return char


def truncate(text: str, limit: int) -> str:
    """At most ``limit`` UTF-8 bytes, including a trailing ``…`` when cut; never splits a
    character. Below three bytes the cut is unmarked."""
    data = text.encode("utf-8", "surrogatepass")
    if len(data) <= limit:
        return text
    if limit < len(ELLIPSIS.encode()):
        return data[:limit].decode("utf-8", "ignore")
    head = data[: limit - len(ELLIPSIS.encode())].decode("utf-8", "ignore")
    return head + ELLIPSIS


def clean(text: str | bytes, limit: int) -> str:
    """Text a model, a server or an operator chose, made safe and bounded for prose."""
    return truncate(sanitize(text), limit)


def go_quote(text: str) -> str:
    """Double-quote like Go's ``%q`` does for printable text: escapes, quotes, backslashes."""
    out = ['"']
    for char in text:
        if char == '"':
            out.append('\\"')
        elif char == "\\":
            out.append("\\\\")
        elif char == "\n":
            out.append("\\n")
        elif char == "\t":
            out.append("\\t")
        elif char == "\r":
            out.append("\\r")
        elif ord(char) < 0x20 or ord(char) == 0x7F:
            out.append(f"\\x{ord(char):02x}")
        elif 0x80 <= ord(char) <= 0x9F or _INVISIBLE_RE.match(char):
            out.append(f"\\u{ord(char):04x}" if ord(char) <= 0xFFFF else f"\\U{ord(char):08x}")
        else:
            out.append(char)
    out.append('"')
    return "".join(out)


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
}

REASON_BOUND = 500
SCHEMA_ERROR_BOUND = 1000
QUOTED_RESULT_BOUND = 64 * 1024

# How an attempt whose outcome is unknown ended.
ENDED_HOW = {
    "timed_out": "timed out before the server answered",
    "no_answer": "failed without an answer from the server",
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
    from .durations import format_go

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
COULD_NOT_START = "the gate could not start this request, and nothing was executed"
COULD_NOT_ASK = (
    "the gate could not ask an operator about an earlier call to this tool whose outcome is unknown, and nothing "
    "was executed"
)
OUTCOME_NOT_RECORDED = "the call's outcome was not recorded"
STATUS_COULD_NOT_READ = "the gate could not read its records"


def unavailable(what: str) -> str:
    return f"{UNAVAILABLE}: {what}. Tell the user."


def error_result(error_text: str) -> str:
    """An upstream tool's error, as recorded, escaped and bounded."""
    return clean(error_text, QUOTED_RESULT_BOUND)


SHUTTING_DOWN = "the proxy is shutting down"

# =============================================================================================
# The status tool.
# =============================================================================================

STATUS_DESCRIPTION = (
    "Report the requests in this session that are waiting for an operator's approval, or, given approval_id, what "
    "became of that one: pending, approved, executed, rejected, or expired. This tool only reports; it never runs "
    "or approves anything."
)
STATUS_SCHEMA_TEXT = (
    '{"type":"object","properties":{"approval_id":{"type":"string","description":"The approval id a pending '
    'result named."}},"additionalProperties":false}'
)
STATUS_BAD_ARGUMENTS = "the only argument is approval_id, a string"


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
NOT_EXECUTED_DENIED = "the policy denied it when it was collected"
NOT_EXECUTED_INVALID = "its arguments no longer matched the tool's schema when it was collected"
NOT_EXECUTED_CANCELLED = "an operator cancelled it"
NOT_EXECUTED_EXPIRED = "the approval expired before it was collected"


def not_executed_run_ended(reason: str) -> str:
    return f"its run ended ({clean(reason, 64)})"


def status_not_executed(why: str) -> str:
    return f"APPROVED but not executed: {why}."


def progress_waiting() -> str:
    return "waiting for an operator's approval"


# =============================================================================================
# What the operator reads on the proxy's standard error (each line sanitized whole).
# =============================================================================================

OPERATOR_PREFIX = "agentrt-proxy: "


def operator_line(text: str) -> str:
    return OPERATOR_PREFIX + sanitize(text) + "\n"


def operator_waits(approval_id: str, kind: str, tool: str, run_id: str) -> str:
    return operator_line(f"approval {approval_id} ({kind}) for {tool} waits for an operator: run {run_id}")


def operator_decide_with(program: str, database: str, run_id: str, approval_id: str) -> str:
    return operator_line(
        f"  decide with: {program} approve -db {go_quote(database)} {run_id} -approval {approval_id}   (or reject)"
    )


def operator_cut_off(run_id: str, tool: str) -> str:
    return operator_line(f"run {run_id}: a call to {tool} was cut off while executing; its outcome is unknown")


def operator_unknown(run_id: str, tool: str, ended: str) -> str:
    how = ENDED_HOW.get(ended, ENDED_HOW["no_answer"])
    return operator_line(f"run {run_id}: a call to {tool} {how}; its outcome is unknown")


def operator_error(text: str) -> str:
    return operator_line(f"error: {text}")


def operator_serving(session: str, database: str) -> str:
    return operator_line(f"serving session {session} on database {database}")


# =============================================================================================
# The operator's subcommands: runs, show, approve, reject, verify (operator.py).
# Error lines go to standard error as "agentrt-proxy: <command>: <sentence>". Values from
# the database are sanitized by the caller before they reach these templates.
# =============================================================================================


def operator_command_error(command: str, text: str) -> str:
    return f"{OPERATOR_PREFIX}{command}: {sanitize(text)}\n"


OP_NEED_DATABASE = "name the database with -db FILE or the configuration with -config FILE"
OP_BOTH_DATABASE = "give -db or -config, not both"
OP_NEED_RUN = "name one run"
OP_NEED_BY = "say who decides with -by WHO ($USER is not set)"
OP_BLANK_BY = "-by must not be blank"
OP_NEED_NOTE = "reject needs -note TEXT: the model is shown it"
OP_NEGATIVE = "-{name} must not be negative"
OP_TO_BEFORE_FROM = "-to {to} is before -from {from_}"
OP_BAD_HEAD = "-head must be SEQ:HASH, a positive seq and the event's hash, not {text}"
OP_HEAD_OUTSIDE = "-head seq {seq} is outside the range -from {from_} -to {to}"
OP_NO_CONSENT = (
    "not deciding without consent: name the approval with -approval ID or pass -yes, "
    "or run it on a terminal to be asked"
)
OP_DECLINED = "declined at the prompt"

OP_DB_MISSING = (
    "database {path} does not exist: name the file the proxy serves with (-db, or the configuration's "
    "database); these commands never create one"
)
OP_DB_LOCKED = (
    "database {path} stayed locked by another process for {wait}: try again when the writer has finished"
)
OP_DB_REFUSED = "database {path}: {detail}"
OP_DB_SCHEMA = (
    "database {path}: {detail}; these commands never migrate a database: use the agentrt-proxy build that "
    "serves it"
)
OP_DB_UNREADABLE = "database {path} could not be read: {detail}"

OP_UNKNOWN_RUN = "no run {run} in this database"
OP_UNKNOWN_APPROVAL = "no approval {approval} in run {run}"
OP_NO_PENDING = "no pending approval in run {run}"
OP_SEVERAL_PENDING = "run {run} has {count} pending approvals: choose one with -approval ({ids})"
OP_ALREADY = "approval {approval} is already {status}"
OP_NOT_WAITING = "run {run} is not waiting for an approval: it is {status}"
OP_CHANGED = "approval {approval} changed after it was shown; run the command again and read it before deciding"
OP_HASH_BROKEN = (
    "approval {approval} no longer matches its hash: the row was edited behind the proxy; it cannot be decided"
)
OP_DECIDE_FAILED = "approval {approval} was not decided: {detail}"


def op_prompt(verb: str, approval_id: str, run_id: str) -> str:
    return f"{verb} approval {approval_id} of run {run_id}? [y/N] "


def op_decided(approval_id: str, status: str, by: str) -> str:
    return f"approval {approval_id}: {status} by {by}"


def op_run_after(run_id: str, status: str, reason: str) -> str:
    return f"run {run_id}: {status} ({reason})" if reason else f"run {run_id}: {status}"


OP_STAYS_WAITING = "the run stays waiting until the model calls the tool again with the same arguments"

# The approval block (approve, reject and show print it before anything is decided).
OP_BLOCK_ARGUMENTS = "arguments (the tool call the model made; one field per line, byte count is the field's own size)"
OP_BLOCK_PRESENTATION = "presentation (supplied by the proxy's policy; it may contain model-chosen text)"
OP_BLOCK_NO_FIELDS = "  (none)"


def op_block_head(approval_id: str) -> str:
    return f"APPROVAL WAITING  {approval_id}"


def op_block_decide_with(program: str, database: str, run_id: str, approval_id: str) -> str:
    return f"decide with: {program} approve -db {go_quote(database)} {run_id} -approval {approval_id}   (or reject)"


def op_block_end(approval_id: str, tool: str) -> str:
    # Nothing model-chosen but the tool's registered name, which the operator's configuration accepted.
    return f"----- end of approval {approval_id} for tool {tool} -----"


def op_omitted(count: int) -> str:
    return f" …[{count} bytes omitted]… "


def op_more_bytes(count: int) -> str:
    return f"… [{count} more bytes]"


def op_more_payload(count: int) -> str:
    return f"...[{count} more bytes]"


# runs and show
OP_NO_RUNS = "no runs"


def op_more_runs(count: int, next_offset: int) -> str:
    return f"... {count} more run(s); rerun with -offset {next_offset}"


OP_NO_STEPS = "no steps"
OP_NO_EVENTS = "no events"
OP_EVENTS = "events"

# verify (runtime-core §8.3)
OP_HEAD_NONE = "head: no events"


def op_head(seq: int, hash_: str) -> str:
    return f"head: seq {seq} {hash_}"


def op_intact(count: int, first: int, last: int) -> str:
    return f"intact: {count} event(s), seq {first} to {last}"


def op_last_checked(seq: int, hash_: str) -> str:
    return f"last checked: seq {seq} {hash_}"


OP_INTACT_EMPTY = "intact: no events in the range"


def op_broken(seq: int, detail: str) -> str:
    return f"broken at seq {seq}: {detail}"


def op_to_not_reached(to: int, last: int) -> str:
    return f"not reached: -to {to}; the chain ends at seq {last}"


def op_kept_head_matches(seq: int) -> str:
    return f"kept head: seq {seq} matches"


def op_kept_head_missing(seq: int) -> str:
    return f"kept head: seq {seq} is not in the database: events were removed after it was kept"


def op_kept_head_changed(seq: int, kept: str, found: str) -> str:
    return f"kept head: seq {seq} has changed: kept {kept}, found {found}"


# ------------------------------------------------------------------------------ recheck
# What ``agentrt-proxy recheck`` tells the operator (runtime-core §8.4, proxy spec §2.11, §3).

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


# =============================================================================================
# The policy's reasons, questions and notices (policy.py)
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


# =============================================================================================
# The operator's decisions refused (approvals.py)
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
# The runtime's decisions, observations and run details (gate_model.py)
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


# =============================================================================================
# The gate's refusals (gate.py)
# =============================================================================================

ERR_SESSION_CLOSED = "agentrt: the session is closed"
ERR_OPEN_STEP = "agentrt: run {run_id} already has an open step"
ERR_NO_STEP = "agentrt: run {run_id} has no open step to decide"
ERR_NOT_ALLOWED = "agentrt: run {run_id} has no allowed request to execute"
ERR_LEASE_EXPIRED = "agentrt: the lease on run {run_id} expired at {at}"
ERR_LEASE_OTHER = "agentrt: run {run_id} is no longer leased by this gate"
ERR_LIMITS = "agentrt: limits need max_steps, max_consecutive_tool_failures and loop_threshold above zero"


# =============================================================================================
# Collection and takeover refusals (gate_collect.py)
# =============================================================================================

ERR_TERMINAL = "agentrt: run {run_id} is {status} and cannot be resumed"
ERR_NO_AWAITING = "agentrt: run {run_id} has no step awaiting approval"
ERR_NOT_APPROVED = "agentrt: approval {id} of run {run_id} is {status}, not approved"
ERR_TOOL_GONE = "agentrt: tool {name} of run {run_id} is no longer registered"
ERR_APPROVAL_HASH = "agentrt: approval {id}: its stored fields no longer hash to its hash"
DETAIL_NOT_JSON = "its recorded arguments are not usable JSON"
DETAIL_SCHEMA = "its arguments do not match the current schema: {error}"


# =============================================================================================
# The store's refusals and the chain's findings (store.py)
# =============================================================================================

MSG_RUN_STATE = "agentrt: run {run_id} is not {expected}"
MSG_RUN_LEASED = "agentrt: run {run_id} is leased by {owner} until {until}"
MSG_SEQ_GAP = "seq {seq} follows {prev}: an event is missing"
MSG_FIRST_GAP = "the first event is seq {seq}: an event is missing"
MSG_HASH_MISMATCH = "the stored hash is not the one the event's fields and the previous event's hash give"
ERR_TX_FAILED = "agentrt: the write transaction was rolled back: a write inside it failed"
MSG_RUN_ID_TAKEN = "proxy: run id {run_id} is another call's: drawing a new one"


# =============================================================================================
# Opening the database refused (store_schema.py)
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
