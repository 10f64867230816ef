"""What the operator reads in the console (cli/_console*.py): its terminal lines and its pages.

Every value filled in here was sanitized (``escaping``) by the caller and is HTML-escaped by the
page builder; these are the console's own words only.
"""

from __future__ import annotations

# ------------------------------------------------------------------ the terminal
CONSOLE_OPEN = "console: open {url}   (the link works once; Ctrl-C stops the console)"
CONSOLE_BROWSER = "console: opening it in the browser"
CONSOLE_STOPPED = "console: stopped"
CONSOLE_BAD_ADDRESS = "-address must be 127.0.0.1: the console listens on this machine's loopback only, not {text}"
CONSOLE_BAD_PORT = "-port must be 0 (any free port) or 1..65535, not {port}"
CONSOLE_CANNOT_LISTEN = "cannot listen on 127.0.0.1:{port}: {detail}"
CONSOLE_NEED_CONFIG = "console needs -config FILE"
CONSOLE_REQUEST_FAILED = "console: a request from {client} failed: {detail}; the console goes on"


def opener_page(url: str) -> str:
    """The local file the browser is started with; ``url`` is HTML-escaped by the caller."""
    return (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="refresh" content="0;url={url}"><title>agentrt-proxy console</title></head>'
        f'<body><p><a href="{url}">Open the agentrt-proxy console</a></p></body></html>'
    )


# ------------------------------------------------------------------ refusals (a page each, nothing changed)
REFUSED_TITLE = "Refused"
REFUSED_NOTHING_CHANGED = "Nothing was changed."
REFUSED_NO_SESSION = (
    "This browser has no console session. Open the link the console printed in the terminal "
    "(it works once), or start the console again for a new one."
)
REFUSED_TOKEN = (
    "That link was already used or is not this console's. A link works once: start the console again "
    "for a new one, or go on in the browser that opened it."
)
REFUSED_HOST = "The request named the host {host}, not this console's own address {expected}."
REFUSED_ORIGIN = "The request came from the page of another site ({origin}), not from this console."
REFUSED_CSRF = "The form did not carry this session's token: it was not sent from a page of this console."
REFUSED_METHOD = "This address does not take that kind of request."
NOT_FOUND = "There is no such page in the console."
BAD_FORM = "The form was incomplete: {detail}."
BAD_NOTE_SIZE = "the note is over {limit} bytes"
BAD_LENGTH = "no Content-Length, or one over {limit} bytes"
BAD_ENCODING = "not a form in UTF-8"
STATUS_GONE = "gone from the database"
ON_SERVER = "on {server}"
DB_TROUBLE = "The database could not be read: {detail}"

# ------------------------------------------------------------------ the pages
TITLE = "agentrt-proxy console"
NAV = (
    ("/", "Approvals"),
    ("/runs", "Runs"),
    ("/budgets", "Budgets"),
    ("/tasks", "Tasks"),
    ("/tools", "Tools"),
    ("/verify", "Audit chain"),
)
CONTINUE = "Open the console"
SKIP_LINK = "Skip to the content"
APPROVALS_HEAD = "Waiting approvals ({count})"
APPROVALS_NONE = "Nothing waits for you."
LIVE_ON = "This page updates itself as approvals are decided or arrive."
LIVE_OFF = "Reload the page to see approvals decided or arrived since."
NEW_ARRIVED = "A new approval waits: reload to see it."
KIND_NEW = "a new request"
KIND_RUN_AGAIN = "run again? the earlier call's outcome is unknown"
FIELD_SERVER = "server"
FIELD_TOOL = "upstream tool"
FIELD_OFFERED = "offered as"
FIELD_KIND = "kind"
FIELD_RUN = "run"
FIELD_WAITED = "waited"
FIELD_EXPIRES = "expires at"
FIELD_NEVER = "never"
ARGUMENTS_HEAD = "Arguments, as the hash binds them"
ARGUMENTS_NONE = "(no arguments)"
ARG_NAME, ARG_BYTES, ARG_VALUE = "field", "bytes", "value (compact JSON, escapes shown)"
PRESENTATION_HEAD = "What the policy presented (possibly chosen by the model: do not trust it over the arguments)"
KNOWN_HEAD = "What is known of the earlier attempt"
REASON = "policy's reason: {reason}"
APPROVE = "Approve…"
REJECT = "Reject…"
CONFIRM_TITLE = "Approve this call?"
CONFIRM_TEXT = "Approve {tool} on server {server} with:"
CONFIRM_NO_PAYEE = "(no payee-like field)"
CONFIRM_YES = "Yes, approve {tool}"
CANCEL = "Cancel"
REJECT_TITLE = "Reject this call?"
REJECT_TEXT = "Reject {tool} on server {server}. The model reads your note."
REJECT_NOTE = "Note for the model (required)"
REJECT_YES = "Reject {tool}"
DECIDED_TITLE = "Decided"
DECIDED = "Approval {approval}: {status} by {by}."
RUN_AFTER = "Run {run} is now {status}."
STALE_TITLE = "Not decided"
STALE = "Not decided: {detail}."
WHAT_HAPPENED = "What happened to approval {approval}: {status}{by}{note}."
WHAT_BY = ", by {by}"
WHAT_NOTE = ", note “{note}”"
BACK = "Back to the waiting approvals"
GONE = "Decided elsewhere: approval {approval} is now {status}{by}."
DECIDED_BY = "{name} (console)"  # recorded as the decider: who, and that it came from the console

RUNS_HEAD = "Runs"
RUNS_FILTER = "Filter"
RUNS_STATUS = "show"
RUNS_STATUS_ALL = "every run"
RUNS_STATUS_WAITING = "waiting for approval"
RUNS_STATUS_UNKNOWN = "an outcome unknown"
RUNS_STATUS_FAILED = "failed or cancelled"
RUNS_TOOL = "tool"
RUNS_DAY = "day (YYYY-MM-DD, UTC)"
RUNS_APPLY = "Apply"
RUNS_NONE = "No run matches."
RUNS_READ = "The newest {read} of {total} run(s) were searched."
RUNS_COLUMNS = ("run", "status", "reason", "steps", "created", "approval", "tool", "goal")
RUN_HEAD = "Run {run}"
RUN_MORE_EVENTS = "… and more events: show prints them all."
BAD_DAY = "day must be YYYY-MM-DD, not {text}"

BUDGETS_HEAD = "Budgets"
BUDGETS_COLUMNS = ("budget", "spent", "reserved", "limit", "window")
BUDGETS_NONE = "No budget is configured and nothing was reserved."
BUDGET_LIFETIME = "lifetime"
BUDGET_UNCONFIGURED = "(not in the configuration)"

TASKS_HEAD = "Tasks the host follows (session {session})"
TASKS_COLUMNS = ("task", "status", "tool", "run", "message")
TASKS_NONE = "No task in this session."

TOOLS_HEAD = "Tools withheld"
WITHHELD_HEAD = "Withheld now"
WITHHELD_COLUMNS = ("server", "tool", "reason", "detail", "first seen", "last seen", "session")
WITHHELD_NONE = "Serving withholds no pinned tool now (as its latest check of each server found)."
CLEARED_HEAD = "Withheld, then back on the pin (the newest {count})"
CLEARED_COLUMNS = ("server", "tool", "reason", "detail", "withheld from", "cleared")
CLEARED_NONE = "No withheld tool has come back to its pin."
WITHHELD_ABOUT = (
    "Serving records these each time it checks a server's tools against the pin: at start-up, after "
    "the server is started again, and after the server says its tools changed. Reasons: "
    "changed-since-pin, removed-upstream (no longer listed), refused-by-check (another load check)."
)
PIN_HEAD = "Refused at the pin"
TOOLS_COLUMNS = ("server", "tool", "rule", "detail")
TOOLS_NONE = "No tool was refused at the pin."
TOOLS_UNREADABLE = "server {server}: its manifest cannot be read: {detail}"
TOOLS_CHANGED = (
    "To review what changed since a pin, which is read from the live server (the console never starts "
    "one): run {program} pin -config {config} -review"
)

# A withheld tool's detail (upstream/withholding), stored and shown on the Tools page.
WITHHELD_FIELDS = "differs in {fields}"
WITHHELD_MORE = " and {n} more"
WITHHELD_HASHES = "{what} sha256 pinned {pinned}…, seen {seen}…"
WITHHELD_NO_FORM = "(no canonical form)"
WITHHELD_GONE = "inputSchema sha256 pinned {pinned}…, not listed"

VERIFY_HEAD = "The audit chain"
VERIFY_INTACT = "Intact"
VERIFY_BROKEN = "Not intact"
