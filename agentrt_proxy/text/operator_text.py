"""What the operator reads: the proxy's standard-error lines and the subcommands' words."""

from __future__ import annotations

from agentrt_proxy.text.escaping import go_quote, sanitize
from agentrt_proxy.text.model_text import ENDED_HOW

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
        f"  decide with: {program} watch -db {go_quote(database)}   or exactly: "
        f"{program} approve -db {go_quote(database)} {run_id} -approval {approval_id}   (or reject)"
    )


def operator_cut_off(run_id: str, tool: str) -> str:
    return operator_line(f"run {run_id}: a call to {tool} was cut off while executing; its outcome is unknown")


def operator_unknown(run_id: str, tool: str, ended: str) -> str:
    how = ENDED_HOW.get(ended, ENDED_HOW["no_answer"])
    return operator_line(f"run {run_id}: a call to {tool} {how}; its outcome is unknown")


# What became of a call whose outcome the database refused (proxy/_execute.py, _not_recorded).
NOT_RECORDED_EXECUTED = "executed (its server answered)"
NOT_RECORDED_MAYBE = "may have executed (no answer came back)"
NOT_RECORDED_NOT_SENT = "was never sent to its server"


def outcome_not_recorded(run_id: str, tool: str, detail: str, became: str = NOT_RECORDED_MAYBE) -> str:
    """The text of an error line: a call ended and the database refused its outcome until the
    lease ran out. ``became``: what the proxy knows of it (one of ``NOT_RECORDED_*``)."""
    return (
        f"run {run_id}: a call to {tool} {became}, and its outcome could not be recorded ({detail}); the proxy "
        "keeps it and records it on the run as a late outcome once the database takes writes again; once the "
        "run's lease expires, the next call to it takes the run over and asks an operator"
    )


def late_outcome_recorded(run_id: str, tool: str, summary: str) -> str:
    """The line once an outcome the database refused is recorded on its run, late."""
    return f"run {run_id}: the outcome of the call to {tool} is recorded now, as a late outcome: {summary}"


def operator_cut_off_answered(run_id: str, tool: str, summary: str) -> str:
    """A take-over of a run whose call's outcome the proxy kept and recorded late: not unknown."""
    return operator_line(
        f"run {run_id}: a call to {tool} was cut off before its outcome was recorded, but its server had "
        f"answered (recorded late: {summary}): it executed"
    )


def could_not_take_over(run_id: str, tool: str, detail: str) -> str:
    """The text of an error line: a call found run ``run_id`` of ``tool`` left executing by a call that
    is gone, and the database refused the take-over; the new call executed nothing."""
    return (
        f"the database refused to record the take-over of run {run_id} (a call to {tool} left executing by a "
        f"call that is gone): {detail}; the new call was not executed"
    )


# A step of a call's handling that failed, said on an error line (``operator_error``): the run, what
# the proxy was doing, and the store's or the gate's reason (proxy/_begin, execute, settling).
REOPEN_NOT_FINISHED = "run {run_id}: asking again about an unknown outcome: the request's run {run_id} has not finished"
REOPEN_NO_APPROVAL = "run {run_id}: asking again about an unknown outcome: no approval was opened"
READING_ATTEMPT_FAILED = "run {run_id}: reading the attempt: {detail}"
CLOSING_FAILED = "run {run_id}: closing: {detail}"


def not_recorded(goal: str, detail: str) -> str:
    """A resource read, a prompt or a relayed request whose record the database refused: its
    answer is withheld (proxy/_passthrough, proxy/_forwarding)."""
    return operator_line(f"{goal}: not recorded: {detail}")


# The proxy could not open (upstreams, store, the rules' import), when no failure says more.
COULD_NOT_OPEN = "the proxy could not open"

# An invariant of the code broken: a bug, never an input's fault. The one frame in cli/main.py
# shows it on one line and writes the traceback to a file (proxy/_calls, proxy/_reading, gate/_model).
BUG_UNAPPLIED_ACTION = "the rules answered an action nothing applies: {action!r}"
BUG_ROWS_WITHOUT_KEY = "a request with no key has no rows: the rules begin it at once"
BUG_UNKNOWN_READ = "no such read of the index: {which}"
BUG_NOT_AN_OUTCOME = "not a tool outcome: {type}"


def unpriced_budget(budget: str, tool: str, server: str, remote: str) -> str:
    """The loud line at every start (serve, check, each process) for a budget over an unpriced tool."""
    return operator_line(
        f"WARNING: budget {budget!r} covers tool {tool}, whose rule declares no amount field, so EVERY call to "
        f'it is refused; add "amount_field": "<argument name or /json/pointer>" to the rule of tool {remote!r} '
        f"on server {server!r}"
    )


def operator_error(text: str) -> str:
    return operator_line(f"error: {text}")


def group_commit_lost(units: int, error: str) -> str:
    return operator_line(
        f"error: the database did not commit the records of {units} write(s) of the calls in flight ({error}); "
        "stopping now, as a kill would: a restart carries on from what the database holds"
    )


def operator_serving(session: str, database: str) -> str:
    return operator_line(f"serving session {session} on database {database}")


def operator_tools_changed(server: str) -> str:
    """A server said its tool list changed (``notifications/tools/list_changed``)."""
    return operator_line(
        f"server {go_quote(server)}: tools changed; the offered tools stay as pinned; run pin to review"
    )


# Servers that go down and come back (upstream/supervisor.py): one line per change, naming the
# server. ``how`` is the wire's phrase for an exit ("exited with status 1", "was killed by
# signal 9 (SIGKILL)") or how a connection ended; ``delay`` a Go duration.
NOTHING_SENT = "its tools answer that nothing was sent"


def server_went_down(server: str, how: str, delay: str) -> str:
    return operator_line(f"server {go_quote(server)} is down: it {how}; {NOTHING_SENT}; starting it again in {delay}")


def server_did_not_start(server: str, error: str, tools: int, delay: str) -> str:
    return operator_line(
        f"server {go_quote(server)} is down at start-up: {error}; its {tools} pinned tool(s) are offered from its "
        f"manifest and answer that nothing was sent until it is up; starting it again in {delay}"
    )


def server_up(server: str, tries: int, again: bool) -> str:
    state = "started again" if again else "is up"
    return operator_line(f"server {go_quote(server)} {state} (try {tries}); its pin is checked as at start-up")


def server_given_up(server: str, tries: int, last: str) -> str:
    return operator_line(
        f"server {go_quote(server)} is down: giving up after {tries} tries to start it (the last: {last}); "
        f"{NOTHING_SENT} until the proxy is restarted"
    )


def tool_off_pin(server: str, remote: str, reason: str) -> str:
    return operator_line(
        f"server {go_quote(server)}: tool {go_quote(remote)} no longer matches its pin ({reason}); it answers that "
        "nothing was sent until the server offers it as pinned"
    )


def tool_changed_held(server: str, remote: str, reason: str, review_command: str) -> str:
    """A server changed a tool while serving (decision 0018): it is no longer offered."""
    review = f"; review it with: {review_command}" if review_command else "; review it with pin -review"
    return operator_line(
        f"server {go_quote(server)}: tool {go_quote(remote)} changed while serving ({reason}); it is no longer "
        f"offered and its calls are refused, nothing sent{review}"
    )


def relist_failed(server: str, why: str) -> str:
    return operator_line(
        f"server {go_quote(server)}: its tools changed but could not be listed again ({why}); what is offered "
        "stays as it was checked"
    )


def tool_on_pin(server: str, remote: str) -> str:
    return operator_line(f"server {go_quote(server)}: tool {go_quote(remote)} matches its pin again and is served")


def withheld_not_recorded(server: str, why: str) -> str:
    """Serving could not write which of a server's tools it withholds (the console reads it)."""
    return operator_line(
        f"server {go_quote(server)}: which of its tools are withheld could not be recorded in the database "
        f"({why}); serving goes on, and the console's Tools page may be behind until the next check"
    )


def server_down_in_check(server: str, error: str) -> str:
    """For ``check`` (its own prefix): a server that did not answer, which serving would retry."""
    return f"server {go_quote(server)} is down: {error}"


# =============================================================================================
# The operator's subcommands: runs, show, approve, reject, verify (cli/operator.py).
# Error lines go to standard error as "agentrt-proxy: <command>: <sentence>". Values from
# the database are sanitized by the caller before they reach these templates.
# =============================================================================================


def operator_command_error(command: str, text: str) -> str:
    return f"{OPERATOR_PREFIX}{command}: {sanitize(text)}\n"


OP_NEED_DATABASE = "name the database with -db FILE or the configuration with -config FILE"
OP_BOTH_DATABASE = "give -db or -config, not both"
OP_NEED_RUN = "name one run"
OP_NEED_BY = "say who decides with -by WHO ($USER is not set and the system names no account)"
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
OP_DB_LOCKED = "database {path} stayed locked by another process for {wait}: try again when the writer has finished"
OP_DB_REFUSED = "database {path}: {detail}"
OP_DB_SCHEMA = (
    "database {path}: {detail}; these commands never migrate a database: use the agentrt-proxy build that serves it"
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


def op_prompt(verb: str, approval_id: str, run_id: str) -> str:
    return f"{verb} approval {approval_id} of run {run_id}? [y/N] "


# budget release (gate/budget_release.py, cli/_budget.py)
ERR_RELEASE_OPEN_RUN = (
    "run {run_id} is {status}: only an ended run's reservation can be released "
    "(decide its approval or cancel it first)"
)
ERR_RELEASE_NONE = "run {run_id} holds no budget reservation"
ERR_RELEASE_ALREADY = "run {run_id}'s budget reservation is released already"
OP_BUDGET_SUBCOMMAND = "name what to do: budget release RUN -note TEXT"
OP_RELEASE_NEED_NOTE = "budget release needs -note TEXT: why nothing was paid, kept in the audit chain"


def op_released(run_id: str, budget: str, amount: str, was: str, by: str) -> str:
    """One released reservation (``budget release``)."""
    return f"budget {budget}: {amount} released from run {run_id} (it was {was}) by {by}"


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


def op_block_late_outcome(kind: str, summary: str, not_recorded: bool = False) -> str:
    """An interruption's earlier attempt whose server answered after the run was taken over, or
    (``not_recorded``) in time, while the database refused its outcome until the lease ran out."""
    what = "an error" if kind == "tool_error" else "a result"
    if not_recorded:
        return (
            f"the earlier attempt's server answered, with {what}, and the database refused to record it until the "
            f"run's lease ran out (recorded late): {summary}"
        )
    return f"the earlier attempt's server answered after the run was taken over, with {what}: {summary}"


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


def op_budget(budget: str, spent: str, reserved: str) -> str:
    """One budget's line in ``runs`` (every row) and ``show`` (the run's)."""
    return f"budget {budget}: {spent} spent, {reserved} reserved (an unknown outcome stays reserved until decided)"


def op_more_runs(count: int, next_offset: int) -> str:
    return f"... {count} more run(s); rerun with -offset {next_offset}"


OP_NO_STEPS = "no steps"


def op_model_usage(calls: int, input_tokens: int, output_tokens: int) -> str:
    """``show``'s line on what a run's model used (left out when it made no call)."""
    return f"model    {calls} call(s), {input_tokens} in, {output_tokens} out"


OP_NO_EVENTS = "no events"
OP_EVENTS = "events"

# A run that a host follows as an MCP task (proxy/_tasks.py): its line in show, its cell in runs.
OP_TASK_COLUMN = "TASK"
OP_TASK_RESULT_DROPPED = " (its result was dropped after its time to live; the run's record keeps what happened)"


def op_task(task_id: str, era: str, status: str, message: str) -> str:
    return f"task     {task_id} ({era}): {status} — {message}"


def op_task_executes(task_id: str) -> str:
    """After ``approve`` of a run a task waits on: no model call is needed, the proxy runs it."""
    return (
        f"task {task_id} waits on this run: the proxy that owns it executes the request once and the task "
        "completes with its result (no call from the model is needed)"
    )


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



# The proxy's own closing decisions for a run its call did not complete (a ``fail`` decision,
# origin operator): recorded as the run's reason detail, which ``show`` and ``runs`` print.
CLOSE_ERROR = "one call per run: the tool call returned an error"
CLOSE_DENIED = "one call per run: the request was denied"
CLOSE_INVALID = "one call per run: the request was invalid"
CLOSE_TAKEN_OVER = "one call per run: taken over after an interruption, with nothing left in it to execute"
CLOSE_NOT_SENT = "one call per run: nothing was sent to the server"
CLOSE_UNRECORDED = "one call per run: the tool call executed and its result could not be recorded"


# =============================================================================================
# The store's errors: the proxy logs them for the operator and answers the model UNAVAILABLE
# (or, for a bug, the host an internal error); no model reads them.
# =============================================================================================

MSG_RUN_NOT_FOUND = "agentrt: run {run_id} not found"
MSG_STEP_NOT_FOUND = "agentrt: step {step_id} not found"
ERR_NOT_SETTABLE = "not a settable column: {columns}"
MSG_CLAIM_LOST = "proxy: the open call for this request is {current}, not {prev}"

# A bug, never an answer: a compare-and-set asked for a move the state table (store/_states.py)
# does not hold. ``what`` is "run", "step <id>", "approval <id>" or "call <row id>".
ERR_ILLEGAL_MOVE = (
    "agentrt: illegal transition in run {run_id}: {what} {from_state} -> {to_state} is not an allowed move"
)
# The file at the database's path is no longer the one opened (deleted, or replaced by another):
# in WAL mode SQLite would go on writing to the unlinked file, so the store refuses instead.
ERR_STORE_GONE = "agentrt: the database {path} was deleted or replaced while it was open: nothing more is written to it"


# =============================================================================================
# What a scan finding asks of the model (decision 0022): one line per finding, beside its span.
# The scanner says it as a code (``Finding.ask``, listed in ``scan.ASKS``) and an object
# (a tool, an address, a parameter); these are its words.
# =============================================================================================

SCAN_ASKS: dict[str, str] = {
    "call_first": "tells the model to call {target} first",
    "call_after": "tells the model to call {target} after this tool",
    "call_with_output": "tells the model to call {target} and hand on what it returns",
    "use_instead": "tells the model to use {target} instead of this tool",
    "visit": "tells the model to request {target}",
    "send_to": "tells the model to send data to {target}",
    "steer_tool": "tells the model how another tool, {target}, must behave",
    "steer_any": "tells the model to change what other tools do",
    "conceal": "tells the model to keep something from the user",
    "override": "tells the model to drop its instructions and obey this text",
    "roleplay": "tells the model to take on another role or mode",
    "fake_turn": "writes conversation turns for the model to take as real",
    "structured": "hides a directive to the model in a data block",
    "hidden_tag": "wraps text in a tag that dresses it up as instructions",
    "directive": "addresses the model about when to use this tool",
    "urgency": "presses the model with stacked emphasis",
    "read_credential": "tells the model to read a credential file ({target}) and hand it on",
    "run_shell": "tells the model to run a shell command",
    "install": "tells the model to install a package",
    "prefer": "tells the model to prefer this tool over others",
    "ask_context": "asks the model, in parameter {target}, for its conversation, instructions, tools or identity",
    "ask_credential": "asks, in parameter {target}, for a credential this tool has no use for",
    "hidden": "holds characters a reviewer cannot see",
    "encoded": "hides text in an encoding",
    "secret": "carries what looks like a live credential",
    "shadow_name": "takes a name that reads as another server's tool",
    "names_other": "names {target}, a tool of another server",
}
# A soft finding of these mentions what a hard one tells the model to do.
SCAN_ASKS_SOFT: dict[str, str] = {
    "read_credential": "names a credential file ({target})",
    "send_to": "mentions sending data to {target}",
    "run_shell": "shows a shell command",
    "install": "shows a package install",
    "use_instead": "says it is deprecated in favour of {target}",
    "steer_any": "mentions calling other tools",
    "hidden_tag": "holds a comment a rendered description does not show",
}
SCAN_ASK_UNKNOWN = "matches rule {rule}"
SCAN_SOMEWHERE = "another address"  # a sending finding whose address is not in its span
SCAN_ANOTHER_TOOL = "another tool"


def scan_explanation(rule: str, severity: str, ask: str, target: str) -> str:
    """What a finding's text asks the model to do, in one line (the target already escaped)."""
    template = (SCAN_ASKS_SOFT.get(ask) if severity == "soft" else None) or SCAN_ASKS.get(ask)
    if template is None:
        return SCAN_ASK_UNKNOWN.format(rule=rule)
    if not target:
        target = SCAN_SOMEWHERE if ask in ("send_to", "visit") else SCAN_ANOTHER_TOOL
        shown = target
    else:
        shown = "`" + sanitize(target) + "`"
    return template.format(target=shown)


# OAuth servers (oauth/serving.py, cli/_pin.py's check): what the operator does about a token.
def oauth_login_needed(server: str, config: str, why: str) -> str:
    return operator_line(
        f"server {go_quote(server)} refused its OAuth token ({why}); its calls answer that nothing was sent "
        f"until you run: agentrt-proxy login -config {go_quote(config)} {server}"
    )


def oauth_no_token(server: str, config: str) -> str:
    return operator_line(
        f"server {go_quote(server)} needs OAuth and holds no token yet; its calls answer that nothing was sent "
        f"until you run: agentrt-proxy login -config {go_quote(config)} {server}"
    )


def oauth_scope_needed(server: str, scope: str, config: str) -> str:
    return operator_line(
        f"server {go_quote(server)} asks for scope {go_quote(scope)} the token does not hold; its calls that need it "
        f"answer that nothing was sent until you run: agentrt-proxy login -config {go_quote(config)} {server}"
    )


def oauth_token_state(server: str, state: str, scopes: str) -> str:
    """check's line on one OAuth server's token."""
    held = f"; scopes: {scopes}" if scopes else ""
    return f"server {go_quote(server)}: OAuth token {state}{held}"


def oauth_token_missing(server: str, config: str) -> str:
    return f"server {go_quote(server)}: no OAuth token: run agentrt-proxy login -config {go_quote(config)} {server}"


def lease_renewal_bug(err: BaseException, traceback_file: str | None) -> str:
    """A lease renewal that raised what no store error is: a bug, said in one line."""
    where = f"its traceback is in {traceback_file}" if traceback_file else "its traceback could not be written"
    what = f"{type(err).__name__}: {err}"
    return operator_line(f"a lease renewal failed unexpectedly ({what}); it is tried again; {where}")
