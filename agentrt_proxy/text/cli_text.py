"""What the command line itself says: the scope statement, the usage, how to run this program again."""

from __future__ import annotations

import os
import sys

PROGRAM = "agentrt-proxy"

SCOPE = """\
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
  Results are capped and flattened.
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
  {PROGRAM} check -config FILE       load everything as serving would and report what is offered
  {PROGRAM} scan [-json] (-config FILE | -tools FILE)
                                     scan tool definitions for poisoning (exit 1 on a hard finding)
  {PROGRAM} recheck -config FILE [-run ID | -session NAME] [-limit N] [-current-tools] [-json]
                                     re-check recorded calls under the policy as it is now
  {PROGRAM} runs (-config FILE | -db DB) [-json]         the runs, waiting ones first
  {PROGRAM} show (-config FILE | -db DB) RUN [-json]     one run: steps, events, its request
  {PROGRAM} approve (-config FILE | -db DB) RUN [-approval ID] [-yes]
  {PROGRAM} reject (-config FILE | -db DB) RUN [-approval ID] -note TEXT
  {PROGRAM} verify (-config FILE | -db DB) [-head SEQ:HASH]   the audit chain, and the state against it
  {PROGRAM} demo [-keep]             a scripted walk through everything, no model needed
  {PROGRAM} --version

A host starts it as a stdio server: {{"command": "python3", "args": ["/path/agentrt-proxy.pyz",
"serve", "-config", "/path/proxy.json"]}}. Standard output carries only the protocol; the
operator's lines go to standard error, which the host keeps in its log.
"""

# verify's state check (cli/verify_state.py): the state tables held against the chain.
STATE_AGREES = "state: {runs} run(s), {approvals} approval(s), {calls} call(s): every row agrees with the chain"
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


def help_text() -> str:
    return SCOPE + "\n" + USAGE
