"""Every rule the scanner has: its id, the severities it reports, and what it catches."""

from __future__ import annotations

__all__ = ["RULES"]

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
