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

from agentrt_proxy.scan import _addressing as addressing
from agentrt_proxy.scan import _phrases as P
from agentrt_proxy.scan._model import HARD, SOFT, Match
from agentrt_proxy.scan._normal import sentences
from agentrt_proxy.scan._roleplay import roleplay_matches
from agentrt_proxy.scan._rules import ASKS
from agentrt_proxy.scan._soft_classes import preference_matches
from agentrt_proxy.scan._steering import TOOLREF, steering_matches

__all__ = ["HIDDEN_TAGS", "match_text"]

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

# A tag name followed by these words is being named ("hidden <IMPORTANT> tags"), not used.
_NAMED_TAG = re.compile(r"\s*(?:tags?|wrappers?|blocks?|markers?|elements?)\b", re.I)
# Commands a description names as refused or as examples ("commands such as `rm -rf /` are refused").
_REFUSED = re.compile(
    r"\b(?:such as|like|e\.g\.|refused|blocked|denied|rejected|forbidden|not allowed|prevented|disallowed)\b", re.I
)


def _sentence_at(spans: list[tuple[int, str]], offset: int) -> str:
    for start, sentence in spans:
        if start <= offset < start + len(sentence):
            return sentence
    return ""


def _regions(text: str) -> tuple[list[tuple[int, int]], list[Match]]:
    """The hidden regions of ``text`` and the findings their wrappers are."""
    regions: list[tuple[int, int]] = []
    found: list[Match] = []
    quoted = addressing.cited_spans(text)
    for match in P.HIDDEN_REGION.finditer(text):
        opening = text[match.start() : match.start() + 40].split(">", 1)[0] + ">"
        if match.group(1) and (
            _NAMED_TAG.match(text, match.start() + len(opening))
            or addressing.cited(quoted, match.start(), match.start() + len(opening))
        ):
            continue
        regions.append((match.start(), match.end()))
        tag = re.split(r"[_\-]", (match.group(1) or "").lower())[0]
        if tag in HIDDEN_TAGS:
            found.append(Match("injection.hidden_tag", HARD, match.start(), match.end(), opening, ask="hidden_tag"))
        elif match.group(3) is not None and len((match.group(3) or "").split()) >= 3:
            found.append(
                Match("injection.hidden_tag", SOFT, match.start(), match.end(), match.group(0), ask="hidden_tag")
            )
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


def _cited(match: Match, text: str, quoted: list[tuple[int, int]], spans: list[tuple[int, str]]) -> bool:
    """A match that names a phrase rather than says it: inside an explained quotation, or a
    command in backticks that its sentence lists as refused or as an example."""
    if addressing.cited(quoted, match.start, match.end):
        return True
    if match.rule == "exec.shell" and "`" in text[max(0, match.start - 1) : match.start + 1]:
        return bool(_REFUSED.search(_sentence_at(spans, match.start)))
    return False


_ROLE_MARKER = re.compile(r"\s*(?:<\||\[/?INST\]|<</?SYS>>|#|Human:|Assistant:|System:)")


def _token_at(text: str, start: int, end: int) -> str:
    """The whole path a match stands in (``~/.cursor/mcp.json`` around ``.cursor/``)."""
    while start > 0 and not text[start - 1].isspace() and text[start - 1] not in "`'\"(":
        start -= 1
    while end < len(text) and not text[end].isspace() and text[end] not in "`'\"),;":
        end += 1
    return text[start:end].rstrip(".?!:")


def _target(rule: str, shown: str) -> str:
    """What a phrase match names: the credential file, the address data goes to, the tool steered."""
    if rule == "exfil.credential":
        return shown.strip(" `'\"(=:")
    if rule in ("exfil.send", "crosstool.directive"):
        found = (P.DESTINATION if rule == "exfil.send" else TOOLREF).search(shown)
        return found.group(0).strip("`'\"") if found else ""
    return ""


def _phrase_matches(text: str, directives: bool) -> Iterator[Match]:
    for phrase in P.PHRASES:
        if (not directives and phrase.addresses_model) or (phrase.gate is not None and not phrase.gate.search(text)):
            continue
        for found in phrase.pattern.finditer(text):
            if found.end() > found.start():
                shown = found.group(0)
                named = _token_at(text, found.start(), found.end()) if phrase.rule == "exfil.credential" else shown
                yield Match(
                    phrase.rule,
                    phrase.severity,
                    found.start(),
                    found.end(),
                    shown,
                    lift=phrase.lift,
                    quiet=phrase.quiet,
                    ask="fake_turn" if _ROLE_MARKER.match(shown) else ASKS.get(phrase.rule, ""),
                    target=_target(phrase.rule, named),
                )


def match_text(
    text: str, *, kind: str = "prose", hidden: bool = False, directives: bool = True, own: str = ""
) -> Iterator[Match]:
    """Every phrase finding in ``text`` (already normalised). ``hidden``: the whole text was
    hidden (decoded from tag characters or selectors), so every finding in it is hard.
    ``directives=False`` (a server's instructions, which are written to the model) skips the
    soft directive rules. ``own``: the name of the tool the text belongs to (a text naming its
    own tool steers nothing)."""
    regions, wrappers = _regions(text)
    yield from wrappers
    spans = sentences(text)
    quoted = addressing.cited_spans(text)
    raw: list[Match] = list(_phrase_matches(text, directives))
    if kind != "name":
        raw.extend(steering_matches(spans, text, own))
        raw.extend(roleplay_matches(text))
        raw.extend(preference_matches(text))
    raw = [m for m in raw if not _cited(m, text, quoted, spans)]
    conceals = (
        hidden
        or any(m.severity == HARD and m.rule in ("injection.concealment", "injection.override") for m in raw)
        or any(w.severity == HARD for w in wrappers)
    )
    for match in raw:
        severity = match.severity
        if severity == SOFT and match.lift:
            inside = hidden or any(start <= match.start < end for start, end in regions)
            severity = HARD if inside else _lift(match, _sentence_at(spans, match.start), conceals)
            if kind == "name" and match.rule == "exfil.credential" and _NAME_CONTENT.search(text):
                severity = HARD  # a parameter named for a credential file's contents
        if severity == SOFT and match.quiet:
            continue
        yield Match(match.rule, severity, match.start, match.end, match.text, ask=match.ask, target=match.target)
