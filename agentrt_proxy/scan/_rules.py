"""Every rule the scanner has: its id, the severities it reports, and what it catches."""

from __future__ import annotations

from agentrt_proxy.scan._messages import RULE_CATCHES

__all__ = ["ASKS", "RULES"]

# id -> its severities. Hard refuses the pin unless overridden; soft is printed.
SEVERITIES: dict[str, str] = {
    "unicode.hidden": "hard|soft",
    "injection.override": "hard",
    "injection.concealment": "hard",
    "injection.roleplay": "hard",
    "injection.structured": "hard",
    "injection.hidden_tag": "hard|soft",
    "directive.imperative": "soft",
    "directive.urgency": "soft",
    "exfil.credential": "hard|soft",
    "exfil.send": "hard|soft",
    "exec.shell": "hard|soft",
    "exec.install": "hard|soft",
    "crosstool.directive": "hard|soft",
    "redirect.tool": "hard",
    "crosstool.dependency": "hard",
    "network.request": "hard",
    "preference.manipulation": "soft",
    "param.out_of_scope": "soft",
    "shadowing.cross_server": "hard|soft",
    "shadowing.name": "hard|soft",
    "payload.encoded": "hard|soft",
    "secret.embedded": "soft",
}

# id -> (severities, what it catches, in ``messages.RULE_CATCHES``).
RULES: dict[str, tuple[str, str]] = {rule: (severity, RULE_CATCHES[rule]) for rule, severity in SEVERITIES.items()}

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
