"""What the scanner reads and what it finds: texts of one definition, and findings.

A ``Definition`` is one thing a model reads from a server: a tool, a prompt, or the server's
``instructions``. It is a list of ``Text`` fields (the field's path and its text), so the rules
never walk JSON themselves.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

__all__ = ["HARD", "SOFT", "Definition", "Finding", "Listing", "Match", "Text"]

HARD = "hard"  # refuses the pin unless overridden by name
SOFT = "soft"  # printed for the operator's review


@dataclass(frozen=True)
class Text:
    """One field a model reads: ``path`` names it (``description``,
    ``inputSchema.properties.city.description``), ``kind`` says what sort of text it is
    (``name``, ``prose`` or ``value``): names are split into words before phrase rules run."""

    path: str
    text: str
    kind: str = "prose"


@dataclass(frozen=True)
class Definition:
    """One tool, prompt or server instructions as the model would read it."""

    name: str  # the tool's, prompt's or resource's name; instructions: "(instructions)"
    kind: str  # "tool", "prompt", "resource", "instructions"
    texts: tuple[Text, ...]


@dataclass(frozen=True)
class Listing:
    """One server's definitions; the cross-server rules compare listings."""

    server: str
    definitions: tuple[Definition, ...] = ()

    def tool_names(self) -> list[str]:
        return [d.name for d in self.definitions if d.kind == "tool"]


@dataclass(frozen=True, order=True)
class Finding:
    """One rule's finding; ``span`` is already escaped for display (hidden characters as
    ``\\u{xxxx}``), so it may be printed or put into JSON as it is."""

    server: str
    tool: str
    rule: str
    severity: str
    field: str
    span: str
    detail: str = dataclasses.field(default="", compare=False)
    # What the text asks the model to do, as a code (``call_first``, ``visit``...: see
    # ``rules.ASKS``) and its object (a tool's name, an address), for the operator's sentence,
    # which ``text/`` writes: the scanner holds no prose of its own.
    ask: str = dataclasses.field(default="", compare=False)
    target: str = dataclasses.field(default="", compare=False)

    def as_json(self) -> dict[str, str]:
        return {"tool": self.tool, "rule": self.rule, "severity": self.severity, "field": self.field, "span": self.span}

    @property
    def hard(self) -> bool:
        return self.severity == HARD


@dataclass(frozen=True)
class Match:
    """One rule's match in one normalised text, before it becomes a finding."""

    rule: str
    severity: str
    start: int
    end: int
    text: str  # the matched text, from the text that was matched
    lift: bool = True  # a soft match its sentence's context may raise to hard
    quiet: bool = False  # reported only when lifted to hard
    ask: str = ""
    target: str = ""
