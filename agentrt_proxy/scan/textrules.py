"""The phrase rules applied to one text: matches, lifted by their sentence's context.

A soft match is raised to hard when what surrounds it makes it an instruction to the model:
a credential path in a sentence that tells the model to read it and hand it on, a shell
command or a package install in a sentence that tells the model to run it, data sent to a
literal address in a sentence that names what is sensitive and tells the model to do it, and
anything inside a hidden region (an ``<IMPORTANT>`` wrapper, an HTML comment, text spelled
in tag characters). A field that conceals (a hard concealment or override finding) lifts
the credential and sending matches in it too: those are the attacks' payloads.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from agentrt_proxy.scan import phrases as P
from agentrt_proxy.scan.model import HARD, SOFT
from agentrt_proxy.scan.normal import sentences

__all__ = ["HIDDEN_TAGS", "Match", "match_text"]

# The wrappers that are a finding by themselves (a ``<note>`` is only a hidden region).
HIDDEN_TAGS = {
    "important",
    "secret",
    "system",
    "hidden",
    "instructions",
    "instruction",
    "admin",
    "override",
    "critical",
    "mandatory",
    "urgent",
    "sys",
    "ai",
    "assistant",
}
_QUANTIFIED = re.compile(
    r"\b(?:also|additionally|always|every|each|all|copy|bcc|cc|too|as well|secretly|silently)\b", re.I
)
_NAME_CONTENT = re.compile(r"\b(?:content|contents|data|text|value|dump|body)\b", re.I)
_LIFTS_BY_FIELD = ("exfil.credential", "exfil.send", "exec.shell", "exec.install", "crosstool.directive")


@dataclass(frozen=True)
class Match:
    rule: str
    severity: str
    start: int
    end: int
    text: str  # the matched text, from the text that was matched
    phrase: P.Phrase | None = None


def _sentence_at(spans: list[tuple[int, str]], offset: int) -> str:
    for start, sentence in spans:
        if start <= offset < start + len(sentence):
            return sentence
    return ""


def _regions(text: str) -> tuple[list[tuple[int, int]], list[Match]]:
    """The hidden regions of ``text`` and the findings their wrappers are."""
    regions: list[tuple[int, int]] = []
    found: list[Match] = []
    for match in P.HIDDEN_REGION.finditer(text):
        regions.append((match.start(), match.end()))
        tag = (match.group(1) or "").lower()
        if tag in HIDDEN_TAGS:
            opening = text[match.start() : match.start() + 40].split(">", 1)[0] + ">"
            found.append(Match("injection.hidden_tag", HARD, match.start(), match.end(), opening))
        elif match.group(3) is not None and len((match.group(3) or "").split()) >= 3:
            found.append(Match("injection.hidden_tag", SOFT, match.start(), match.end(), match.group(0)))
    return regions, found


def _lift(match: Match, sentence: str, field_conceals: bool) -> str:
    if match.rule == "exfil.credential":
        if P.FLOW.search(sentence) or (P.CONTEXT.search(sentence) and P.READ_VERB.search(sentence)):
            return HARD
    elif match.rule == "exfil.send":
        if P.SENSITIVE.search(sentence) and (
            P.CONTEXT.search(sentence) or _QUANTIFIED.search(sentence) or P.FLOW.search(sentence)
        ):
            return HARD
    elif match.rule in ("exec.shell", "exec.install") and P.CONTEXT.search(sentence):
        return HARD
    if field_conceals and match.rule in _LIFTS_BY_FIELD:
        return HARD
    return match.severity


def match_text(text: str, *, kind: str = "prose", hidden: bool = False, directives: bool = True) -> Iterator[Match]:
    """Every phrase finding in ``text`` (already normalised). ``hidden``: the whole text was
    hidden (decoded from tag characters or selectors), so every finding in it is hard.
    ``directives=False`` (a server's instructions, which are written to the model) skips the
    soft directive rules."""
    regions, wrappers = _regions(text)
    yield from wrappers
    raw: list[Match] = []
    for phrase in P.PHRASES:
        if not directives and phrase.addresses_model:
            continue
        for found in phrase.pattern.finditer(text):
            if found.end() > found.start():
                raw.append(Match(phrase.rule, phrase.severity, found.start(), found.end(), found.group(0), phrase))
    conceals = (
        hidden
        or any(m.severity == HARD and m.rule in ("injection.concealment", "injection.override") for m in raw)
        or any(w.severity == HARD for w in wrappers)
    )
    spans = sentences(text)
    for match in raw:
        severity = match.severity
        phrase_lifts = match.phrase is None or match.phrase.lift
        if severity == SOFT and phrase_lifts:
            inside = hidden or any(start <= match.start < end for start, end in regions)
            severity = HARD if inside else _lift(match, _sentence_at(spans, match.start), conceals)
            if kind == "name" and match.rule == "exfil.credential" and _NAME_CONTENT.search(text):
                severity = HARD  # a parameter named for a credential file's contents
        if severity == SOFT and match.phrase is not None and match.phrase.quiet:
            continue
        yield Match(match.rule, severity, match.start, match.end, match.text)
