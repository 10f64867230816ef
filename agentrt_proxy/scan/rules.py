"""Every rule the scanner has: its id, the severities it reports, and what it catches."""

from __future__ import annotations

__all__ = ["ASKS", "RULES"]

# id -> (severities, what it catches). Hard refuses the pin unless overridden; soft is printed.
RULES: dict[str, tuple[str, str]] = {
    "unicode.hidden": (
        "hard|soft",
        "zero-width, bidi controls, the tag block, smuggling variation selectors, private use, controls",
    ),
    "injection.override": (
        "hard",
        "ignore previous instructions, new instructions, role markers, CRITICAL SYSTEM, notes to the AI",
    ),
    "injection.concealment": ("hard", "do not tell the user, without informing, keep it secret, silently send"),
    "injection.roleplay": (
        "hard",
        "ACT AS, pretend you are, your role has changed, admin mode enabled, fake User:/Assistant: turns, "
        "system: lines",
    ),
    "injection.structured": (
        "hard",
        'directives in JSON or YAML: "_system_injection", system_override:, a {"role": "system"} message that directs',
    ),
    "injection.hidden_tag": (
        "hard|soft",
        "<IMPORTANT>, <secret>, <system> wrappers (hard); HTML comments with prose (soft)",
    ),
    "directive.imperative": (
        "soft",
        "before using this tool, otherwise it will not work, always use this tool instead",
    ),
    "directive.urgency": ("soft", "stacked emphasis: VERY VERY IMPORTANT, !!!"),
    "exfil.credential": (
        "hard|soft",
        "credential paths (~/.ssh, .env, ~/.aws, browser profiles, MCP configs): hard when told to read and hand on",
    ),
    "exfil.send": (
        "hard|soft",
        "data sent to a literal address: hard for sensitive data on the model's say-so, markdown images, query strings",
    ),
    "exec.shell": (
        "hard|soft",
        "curl|sh, rm -rf /, shell rc writes, reverse shells, chmod 777 ~ (hard); sudo, chmod (soft)",
    ),
    "exec.install": (
        "hard|soft",
        "packages installed on a directive or from a custom index (hard); install commands (soft)",
    ),
    "crosstool.directive": (
        "hard|soft",
        "another tool's calls or arguments changed (hard); call ordering naming a tool (soft)",
    ),
    "redirect.tool": (
        "hard",
        "this tool deprecated, moved or disabled and the model sent to another for all requests "
        "(a plain note is silent)",
    ),
    "crosstool.dependency": (
        "hard",
        "another tool to be called before or after this one, its output handed on, or mandatory for compliance",
    ),
    "network.request": (
        "hard",
        "the model told to visit, fetch, post or send to a literal address (documented examples are not findings)",
    ),
    "preference.manipulation": (
        "soft",
        "superlatives aimed at the model's choice: the best tool, always choose it first",
    ),
    "param.out_of_scope": (
        "soft",
        "a parameter asking for the conversation, the system prompt, the model's name, its tools, "
        "or unrelated credentials",
    ),
    "shadowing.cross_server": ("hard|soft", "a description naming another server's tool: hard when it steers it"),
    "shadowing.name": (
        "hard|soft",
        "a name reading as another server's tool (look-alikes), or mixing scripts (hard); same or one edit away (soft)",
    ),
    "payload.encoded": (
        "hard|soft",
        "base64, hex or percent runs decoding to commands, addresses or findings (hard), or to hidden prose (soft)",
    ),
    "secret.embedded": ("soft", "cloud keys, tokens, private key blocks, connection strings; placeholders ignored"),
}

# What a finding's text asks of the model, as ``Finding.ask`` codes; ``text.operator_text``
# words each. A rule's findings use the codes given here unless a match names a better one.
ASKS: dict[str, str] = {
    "unicode.hidden": "hidden",
    "injection.override": "override",
    "injection.concealment": "conceal",
    "injection.roleplay": "roleplay",
    "injection.structured": "structured",
    "injection.hidden_tag": "hidden_tag",
    "directive.imperative": "directive",
    "directive.urgency": "urgency",
    "exfil.credential": "read_credential",
    "exfil.send": "send_to",
    "exec.shell": "run_shell",
    "exec.install": "install",
    "crosstool.directive": "steer_any",
    "redirect.tool": "use_instead",
    "crosstool.dependency": "call_first",
    "network.request": "visit",
    "preference.manipulation": "prefer",
    "param.out_of_scope": "ask_context",
    "shadowing.cross_server": "names_other",
    "shadowing.name": "shadow_name",
    "payload.encoded": "encoded",
    "secret.embedded": "secret",
}
