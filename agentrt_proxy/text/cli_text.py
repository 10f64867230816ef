"""What the command line itself says: the scope statement, the usage, how to run this program again."""

from __future__ import annotations

import os
import sys

from agentrt_proxy.canonical.message_size import MAX_MESSAGE_VALUES

PROGRAM = "agentrt-proxy"

SCOPE = f"""\
agentrt-proxy: a local MCP proxy that puts a durable, audited gate in front of MCP servers.

What it does not do:
  It governs only the calls that go through it. If the host gives the model a shell, file
  access or tools of its own, the model can go around the proxy, and it can approve its own
  request with the operator command or by editing the database. Use it with hosts that give
  the model no such tools, keep them behind the host's own prompts, or run the host in a
  sandbox whose only way out is the proxy.
  It is for one person who is both the host's user and the operator. It does not separate them.
  The servers run as you. None may reach the configuration, the manifests or the database: a
  server that can write them can rewrite the policy or forge an approval. The proxy refuses a
  stdio server whose arguments name one of those files or a directory above one; that check
  is a guard against a mistake, not a boundary.
  It never sees model calls, so it sets no token or cost limits, and never sees the prompt.
  Each call is a separate run, so there are no limits or policy over a conversation's history.
  The duplicate rule refuses a deliberate identical repeat of a call that changes something,
  inside the repeat window, as well as a retry.
  Results pass through as the server sent them, cut at max_result_bytes (a closing text
  block says what was left out). A message of more than {MAX_MESSAGE_VALUES:,} JSON values and keys is
  refused before it is read, whatever its size.
  The pin covers what a server presents, not what it does.

What it keeps:
  an approval bound by hash to the exact request, durable across restarts, with the policy
  evaluated again when the request is collected; a call that changes something and whose
  outcome is unknown (cut off, timed out, unanswered) is not run again without an operator,
  and other such calls to its tool wait until an operator decides; the audit record is
  committed with each state change; tools are pinned and classified by the operator; an
  identical call that changes something is not executed twice within the repeat window.
"""

USAGE = f"""\
usage:
  {PROGRAM} serve -config FILE       serve one MCP host over stdin and stdout (the default)
  {PROGRAM} pin -config FILE [-override TOOL:RULE,...]
                                     pin each server's tools into its manifest
  {PROGRAM} pin -config FILE -review [-json]   what changed since each server's pin
  {PROGRAM} pin -config FILE -accept SERVER [-tools a,b] -expect FINGERPRINT
                                     pin exactly the changes the review showed
  {PROGRAM} check -config FILE [-json]   load everything as serving would and report what is offered
  {PROGRAM} scan [-json] (-config FILE | -tools FILE)
                                     scan tool definitions for poisoning (exit 1 on a hard finding)
  {PROGRAM} recheck -config FILE [-run ID | -session NAME] [-limit N] [-current-tools] [-json]
                                     re-check recorded calls under the policy as it is now
  {PROGRAM} runs (-config FILE | -db DB) [-json]         the runs, waiting ones first
  {PROGRAM} show (-config FILE | -db DB) RUN [-json]     one run: steps, events, its request
  {PROGRAM} approve (-config FILE | -db DB) RUN [-approval ID] [-yes]
  {PROGRAM} reject (-config FILE | -db DB) RUN [-approval ID] -note TEXT
  {PROGRAM} budget release (-config FILE | -db DB) RUN -note TEXT [-by WHO]
                                     give back what an ended run kept spent (a call that may have paid)
  {PROGRAM} verify (-config FILE | -db DB) [-head SEQ:HASH]   the audit chain, and the state against it
  {PROGRAM} watch (-config FILE | -db DB) [-json] [-notify] [-exec CMD]   the waiting approvals, live
  {PROGRAM} console -config FILE [-port N] [-no-browser] [-by WHO]
                                     the approvals and runs in a browser, on 127.0.0.1 only
  {PROGRAM} export (-config FILE | -db DB) [-since TIME] [-format jsonl|csv] [-o FILE]
  {PROGRAM} verify -file EXPORT [-head SEQ:HASH]   an export checked on its own, offline
  {PROGRAM} login -config FILE SERVER [-no-browser]
                                     fetch an OAuth server's token (docs/oauth.md)
  {PROGRAM} logout -config FILE SERVER   delete a server's OAuth token
  {PROGRAM} demo [-keep]             a scripted walk through everything, no model needed
  {PROGRAM} --version

A host starts it as a stdio server: {{"command": "python3", "args": ["/path/agentrt-proxy.pyz",
"serve", "-config", "/path/proxy.json"]}}. Standard output carries only the protocol; the
operator's lines go to standard error, which the host keeps in its log.
"""

# verify's state check (cli/_verify_state.py): the state tables held against the chain.
STATE_AGREES = (
    "state: {runs} run(s), {approvals} approval(s), {calls} call(s): every row agrees with the chain, as do "
    "{steps} step(s), {specs} tool spec(s), {holds} budget reservation(s) and {tasks} task(s)"
)
STATE_UNVERIFIED_HOLDS = (
    "state: {count} budget reservation(s) were made before the chain recorded reservations: they were not checked"
)
STATE_DISAGREES = (
    "state: {count} finding(s): rows the chain does not explain (changed, added or removed without their events)"
)
STATE_MORE = "  … and {count} more"
STATE_UNVERIFIED = (
    "state: {count} call(s) were begun before the chain recorded which call a run is for: "
    "their rows were held only to their runs' outcomes"
)
STATE_UNBEGUN = "state: {count} call(s) name a run that never began: they say nothing ran"
STATE_SKIPPED_RANGE = "state: not checked: -from and -to cover part of the chain, and the state is the whole chain's"
STATE_SKIPPED_BROKEN = "state: not checked: the chain it would be held to is broken"


def program_invocation() -> str:
    """How the operator runs this same program, for lines that say what to type next."""
    argv0 = sys.argv[0] if sys.argv else ""
    if argv0.endswith(".pyz"):
        import shlex

        return f"python3 {shlex.quote(os.path.abspath(argv0))}"
    return PROGRAM


def review_command(config: str) -> str:
    """The command that shows what changed since each server's pin, for the lines that say so."""
    return f"{program_invocation()} pin -config {config} -review"


def repin_refused(server: str) -> str:
    """A bare ``pin`` that found changes and was not told to take them (decision 0018)."""
    from agentrt_proxy.text.escaping import go_quote, sanitize

    return sanitize(
        f"{PROGRAM}: error: server {go_quote(server)} changed since its pin and was not pinned again: "
        "read the review above, then pin exactly what it showed with the -accept line it printed"
    )


def refused_by_scan(server: str, refused: dict[str, list[str]], *, accepted: bool = False) -> str:
    """``pin`` (or ``pin -accept``) left tools out for their hard findings: each tool and its rules."""
    from agentrt_proxy.text.escaping import go_quote, sanitize

    names = "; ".join(f"{go_quote(tool)} ({', '.join(rules)})" for tool, rules in sorted(refused.items()))
    which = "the accepted tool(s)" if accepted else "the tool(s)"
    return sanitize(
        f"{PROGRAM}: error: server {go_quote(server)}: the scan refused {which} {names}: they are not "
        "pinned and never offered; the findings and the -override that would take them are printed above"
    )


def no_command() -> str:
    """The program run with nothing: what to do, then the usage."""
    return f"{PROGRAM}: name a command, or serve with -config FILE\n\n{USAGE}"


def unknown_command(name: str) -> str:
    return f'{PROGRAM}: unknown command "{name}"\n\n{USAGE}'


def damaged_copy(name: str, err: object) -> str:
    """A command whose module is missing: every command ships in the package, so the copy is damaged."""
    return f"{PROGRAM}: {name}: this copy of the program is damaged ({err}); reinstall it\n"


SERVE_NEED_CONFIG = "-config <file> is required and nothing follows it"


def help_text() -> str:
    return SCOPE + "\n" + USAGE


# export and verify -file (cli/_export.py, cli/_verify_file.py): the audit trail as a file.
EXPORT_BAD_FORMAT = "-format must be jsonl or csv, not {text}"
EXPORT_BAD_SINCE = "-since must be a time (2025-01-31T00:00:00Z) or a duration ago (24h), not {text}"
EXPORT_WROTE = "export: {count} event(s), seq {first}..{last}, written to {path}; head {head_seq}:{head_hash}"
EXPORT_WROTE_NONE = "export: no event at or after -since; nothing written to {path}"
EXPORT_CANNOT_WRITE = "cannot write the export {path}: {detail}"
VERIFY_FILE_CANNOT_READ = "cannot read the export {path}: {detail}"
VERIFY_FILE_WITH_DB = "-file checks an export on its own: give it without -db and -config"
VERIFY_FILE_BAD_LINE = "export line {line}: {detail}"
VERIFY_FILE_EMPTY = "export: no events in {path}"
VERIFY_FILE_INTACT = "export: intact, {count} event(s) checked, seq {first}..{last}; last hash {hash}"
VERIFY_FILE_FROM_MIDDLE = (
    "export: it begins at seq {seq}, so the hash before it ({prev}) is taken as written: "
    "hold it to a head you kept with -head"
)
VERIFY_FILE_BROKEN = "export: BROKEN at seq {seq}: {detail}"
VERIFY_FILE_GAP = "the seq after {prev} is {seq}: events are missing or reordered"
VERIFY_FILE_PREV = "its prev_hash is not the hash of seq {prev}: an event was removed, added or changed before it"
VERIFY_FILE_HASH = "its hash does not match its contents: the event was changed"
VERIFY_FILE_FIRST = "the first event, seq 1, must have an empty prev_hash"
VERIFY_FILE_HEAD_MATCHES = "kept head: seq {seq} matches"
VERIFY_FILE_HEAD_MISSING = "kept head: seq {seq} is not in the export"
VERIFY_FILE_HEAD_CHANGED = "kept head: seq {seq} is {found} in the export, not {kept}: the trail was rewritten"
VERIFY_FILE_NEED_PATH = "-file needs the path of an export"

# watch (cli/_watch*.py): the operator's inbox.
WATCH_NO_NOTIFIER = "watch: no {tool} on this machine: no desktop notifications; the view goes on"
WATCH_NO_NOTIFIER_PLATFORM = "watch: no desktop notifier is known on this platform; the view goes on"
WATCH_NOTIFY_TITLE = "agentrt-proxy: an approval waits"
WATCH_NOTIFY_BODY = "{tool} ({kind}): {summary}"
# osascript's one line: AppleScript showing the notification (body and title already quoted for it).
WATCH_APPLESCRIPT = "display notification {body} with title {title}"
WATCH_NOTIFY_CONSOLE = "{body}; decide at {url}"  # a console runs for this database (cli/_console_beacon.py)
WATCH_EXEC_EMPTY = "-exec needs a command"
WATCH_EXEC_FAILED = "watch: -exec {command}: {detail}; the view goes on"
WATCH_NOTIFY_FAILED = "watch: {tool}: {detail}; the view goes on"
WATCH_JSON_AND_SCREEN = "watch: standard output is not a terminal: one JSON line per change"
WATCH_TITLE = "agentrt-proxy watch  {database}"
WATCH_KEYS = "a approve  r reject  enter show  up/down select  q quit"
WATCH_WAITING_HEAD = "WAITING ({count})"
WATCH_NONE_WAITING = "  nothing waits for you"
WATCH_RECENT_HEAD = "RECENT"
WATCH_RUN_FINISHED = "{when}  run {run} finished {status}"
WATCH_NONE_RECENT = "  nothing decided since watch started"
WATCH_CONFIRM = "{verb} {approval} of run {run}? [y/N] "
WATCH_NOTE = "note for the model (empty to cancel): "
WATCH_DONE = "{approval}: {status} by {by}"
WATCH_NOT_DONE = "not decided: {detail}"
WATCH_CANCELLED = "not decided"
WATCH_MORE = "-- more: space/down for more, q to go back --"
WATCH_END = "-- end: q to go back --"
WATCH_TOO_SMALL = "watch needs at least 40x10"


def usage_hint(command: str) -> str:
    """A usage error's hint: the command's own usage line(s) and where the rest is."""
    mine = [line.strip() for line in USAGE.splitlines() if line.startswith(f"  {PROGRAM} {command} ")]
    shown = "".join(f"usage: {line}\n" for line in mine) or "usage:\n"
    return shown + f"run {PROGRAM} -help for every command\n"


def unexpected_error(command: str, err: BaseException, traceback_file: str | None) -> str:
    """What a bug costs the operator: one line naming it, and where its traceback went."""
    what = " ".join(str(err).split()) or "no message"
    where = f"its traceback is in {traceback_file}" if traceback_file else "its traceback could not be written"
    return (
        f"{PROGRAM}: {command}: unexpected error ({type(err).__name__}: {what}); this is a bug in "
        f"{PROGRAM}, not in your input; {where}\n"
    )


# login and logout (cli/_login.py, docs/oauth.md): an OAuth server's token.
LOGIN_OPEN = "open this URL in a browser to authorize server {server}:\n\n  {url}\n"
LOGIN_WAITING = "waiting up to {seconds}s for the authorization to come back to {redirect}"
LOGIN_DONE = "server {server}: logged in at {issuer}; {expiry}; scopes: {scopes}; the token is kept in {path}"
LOGIN_NOT_OAUTH = 'server {server} has no "auth": {{"type": "oauth"}} in the configuration, so it needs no login'
LOGIN_NO_SERVER = "the configuration has no server {server}"
LOGOUT_DONE = "server {server}: its token is deleted from {path}"
LOGOUT_NONE = "server {server}: no token was held in {path}"

# pin, its review and its scan (cli/_pin.py, cli/_pin_review.py, cli/_review_view.py, cli/_pin_scan.py).
NEEDS_CONFIG = "-config <file> is required and nothing follows it"
ACCEPT_NEEDS_EXPECT = "-accept SERVER needs -expect FINGERPRINT, the fingerprint its review printed"
EXPECT_NEEDS_ACCEPT = "-expect and -tools go with -accept SERVER"
REVIEW_OR_ACCEPT = "-review shows the changes and -accept pins them: one at a time"
PIN_THEN_CHECK = "classify the tools in the configuration's rules, then: {program} check -config {config}\n"
TOOLS_PINNED = "server {server}: {n} tools pinned in {manifest}, with the server's own hints, which classify nothing:\n"
PROMPTS_PINNED = "server {server}: {n} prompts pinned:\n"
PIN_ASK = "pin these changes to server {q_server}? [y/N] "
MATCHES_PIN = "server {q_server} matches its pin"
NO_CHANGE_TO_ACCEPT = "server {q_server}: no change to accept for tool(s) {tools}"
ACCEPT_NO_SERVER = "-accept {q_server}: the configuration has no such server"
ACCEPT_NOT_REVIEWED = (
    "server {q_server}: the definitions are not those the review showed "
    "(fingerprint {fingerprint}, not {expected}); nothing was pinned: review them again"
)
TOOLS_NEEDS_ONE = "-tools needs at least one tool name"
REVIEW_NEW = "new: not pinned, never offered until pinned"
REVIEW_GONE = "gone: pinned, no longer listed"
REVIEW_TEXT_ONLY = " (text only: read it, the structure is unchanged)"
REVIEW_ACCEPT_HINT = (
    "  to pin exactly these definitions: {program} pin -config {config} -accept {server} -expect {fingerprint}"
)
REVIEW_HEAD = "review of server {q_server} since its pin: {summary}; fingerprint {fingerprint}"
OVERRIDE_UNMATCHED = "server {server}: scan: -override {override} matches no hard finding\n"
HARD_FINDING_UNRECORDED = (
    "server {q_server}: {tool} has a hard {rule} finding the pin did not record; review it and pin again"
)

# The flags every subcommand parses (cli/_flags.py), in the words of Go's flag package.
FLAG_NOT_WHOLE = "invalid value {text!r} for flag -{name}: not a whole number"
FLAG_OUT_OF_RANGE = "invalid value {text!r} for flag -{name}: value out of range"
FLAG_NOT_BOOLEAN = "invalid boolean value {value!r} for -{name}"
FLAG_NEEDS_VALUE = "flag needs an argument: -{name}"
FLAG_UNKNOWN = "flag provided but not defined: -{name}"

# login's other words (cli/_login.py).
LOGIN_USAGE = "-config <file> and one SERVER name are required"
LOGIN_NO_EXPIRY = "the server gave no expiry"
LOGIN_EXPIRES = "it expires in {minutes} min"
LOGIN_LISTENER = "the proxy's loopback listener"

# scan (cli/_scan.py).
SCAN_UNREADABLE = "{file}: {error}"
SCAN_NOT_JSON = "{file}: not JSON: {error}"
SCAN_NOT_TOOLS = '{file}: expected a tools/list result ({{"tools": [...]}}) or an array of tool objects'
SCAN_SUMMARY = "scanned {tools} tools: {hard} hard, {soft} soft finding(s)\n"
SCAN_ONE_SOURCE = "give one of -config FILE or -tools FILE, and nothing else"

# verify -file (cli/_verify_file.py).
VERIFY_FILE_NOT_HEADER = "not an export's header"
VERIFY_FILE_NOT_RECORD = "not an export's record"
