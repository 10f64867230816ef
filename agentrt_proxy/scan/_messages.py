"""What the scanner says: what each rule catches, and the details its findings carry.

These belong with the other sentences in ``agentrt_proxy/text/``, but ``scan`` may import only
``canonical`` and ``errors`` (the import contracts), so its words live here, in one module
(tests/architecture/test_text_in_one_place.py lets no other module of scan hold any). A
finding's detail is a ``str.format`` template; the operator reads it beside the finding. What a
finding asks of the model is worded in ``text.operator_text`` (by its ``ask`` code), not here.
"""

from __future__ import annotations

# What each rule catches (``rules.RULES``; the scan command's list of rules), by rule id.
RULE_CATCHES: dict[str, str] = {
    "unicode.hidden": "zero-width, bidi controls, the tag block, smuggling variation selectors, private use, controls",
    "injection.override": (
        "ignore previous instructions, new instructions, role markers, CRITICAL SYSTEM, notes to the AI"
    ),
    "injection.concealment": "do not tell the user, without informing, keep it secret, silently send",
    "injection.roleplay": (
        "ACT AS, pretend you are, your role has changed, admin mode enabled, fake User:/Assistant: turns, system: lines"
    ),
    "injection.structured": (
        'directives in JSON or YAML: "_system_injection", system_override:, a {"role": "system"} message that directs'
    ),
    "injection.hidden_tag": "<IMPORTANT>, <secret>, <system> wrappers (hard); HTML comments with prose (soft)",
    "directive.imperative": "before using this tool, otherwise it will not work, always use this tool instead",
    "directive.urgency": "stacked emphasis: VERY VERY IMPORTANT, !!!",
    "exfil.credential": (
        "credential paths (~/.ssh, .env, ~/.aws, browser profiles, MCP configs): hard when told to read and hand on"
    ),
    "exfil.send": (
        "data sent to a literal address: hard for sensitive data on the model's say-so, markdown images, query strings"
    ),
    "exec.shell": "curl|sh, rm -rf /, shell rc writes, reverse shells, chmod 777 ~ (hard); sudo, chmod (soft)",
    "exec.install": "packages installed on a directive or from a custom index (hard); install commands (soft)",
    "crosstool.directive": "another tool's calls or arguments changed (hard); call ordering naming a tool (soft)",
    "redirect.tool": (
        "this tool deprecated, moved or disabled and the model sent to another for all requests (a plain "
        "note is silent)"
    ),
    "crosstool.dependency": (
        "another tool to be called before or after this one, its output handed on, or mandatory for compliance"
    ),
    "network.request": (
        "the model told to visit, fetch, post or send to a literal address (documented examples are not findings)"
    ),
    "preference.manipulation": "superlatives aimed at the model's choice: the best tool, always choose it first",
    "param.out_of_scope": (
        "a parameter asking for the conversation, the system prompt, the model's name, its tools, or "
        "unrelated credentials"
    ),
    "shadowing.cross_server": "a description naming another server's tool: hard when it steers it",
    "shadowing.name": (
        "a name reading as another server's tool (look-alikes), or mixing scripts (hard); same or one edit away (soft)"
    ),
    "payload.encoded": (
        "base64, hex or percent runs decoding to commands, addresses or findings (hard), or to hidden prose (soft)"
    ),
    "secret.embedded": "cloud keys, tokens, private key blocks, connection strings; placeholders ignored",
}

# ---------------------------------------------------------------- shadowing (_shadowing.py)
READS_AS = "reads as {server}'s {tool}"
ONE_EDIT_FROM = "one edit from {server}'s {tool}"
NAMES_OTHER = "names {tool}, a tool of another server"
