# ruff: noqa: E501  (a pattern is one line per alternative; splitting them mid-alternative hides what they match)
"""The rules that read what a sentence asks the model to do with *other* tools and addresses.

Each reads one sentence (and, for a dependency, the sentence after it) for two things at once:
that it addresses the model (a modal, an imperative with ``also``/``always``/``first``, an
ordering: "before using this tool", "after each call"), and what it asks.

- ``redirect.tool``: this tool is deprecated, moved or disabled, and the model is to use another
  for all requests, or to route, forward or pass requests to it (hard); a deprecation note that
  names its successor with no such push is soft.
- ``crosstool.dependency``: another tool is to be called before or after this one and its output
  handed on, or the call is "mandatory for compliance", or it carries the user's words (hard).
  "call list_tables first to learn the schema" asks none of that and is not a finding.
- ``network.request``: the model is to visit, fetch, post or send to a literal address (hard),
  unless the sentence documents it (for example, e.g., see, returns).
- ``crosstool.directive`` (shadowing): a sentence about what other tools do ("when sending mail
  with any tool, always BCC ...", "the `transfer` tool must use account ...", "the recipient must
  be changed to ...") (hard).
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from agentrt_proxy.scan._model import HARD, SOFT, Match
from agentrt_proxy.scan._phrases import pattern as _p

__all__ = ["steering_matches"]


# A name a sentence gives a tool: in backticks or quotes, snake_case, camelCase, or "the X tool".
_TOOLREF = r"(?-i:`[^`\n]{2,60}`|'[\w.\-]{3,60}'|\"[\w.\-]{3,60}\"|\b[a-z][a-z0-9]*(?:_[a-z0-9]+)+\b|\b[a-z]+[A-Z][A-Za-z0-9]+\b|\b(?!this\b|that\b|the\b|any\b|other\b|same\b|a\b|an\b)[\w\-]{1,40} (?:tool|function)\b)"
TOOLREF = re.compile(_TOOLREF)
_SELF = _p(r"^(?:this|that|the|these|it|same|current)\b")

_DEPRECATED = _p(
    r"\b(?:deprecated|obsolete|legacy|retired|discontinued|superseded|replaced by|(?:has been|have been|was|were|is being|been) replaced|no longer (?:maintained|supported|available|works?|working|returns?|in use|functional)"
    r"|has (?:been )?moved|moved (?:permanently|to)|migrated|(?:being )?phased out|disabled|unavailable|broken|outdated|end[- ]of[- ]life|sunset(?:ted)?|out of service|decommissioned|no longer works? reliably)\b"
)
_DISOWN = _p(
    r"\b(?:do not|don't|never|stop) (?:use|call|invoke|using|calling) (?:it|this (?:tool|function|endpoint|one)|these)\b|\bnever to this tool\b|\binstead of this tool\b"
)
_REDIRECT_STRONG = _p(
    r"\b(?:redirect(?:ed)?|re-?route(?:d)?|route(?:d)?|forward(?:ed)?|pass(?:ed)?|send|sent|hand(?:ed)?)\b[^.\n]{0,50}?\b(?:to|through|via|there)\b"
    r"|\b(?:go|goes|going|went) (?:over )?(?:to|through)\b|\bswitch\b[^.\n]{0,40}\b(?:over )?to\b"
)
_REDIRECT_USE = _p(r"\b(?:use|call|invoke|switch to|go through|try|prefer|migrate to|move to|instead)\b")
_UNIVERSAL = _p(
    r"\b(?:all|every|any|each|whenever|always|never|in every case|from now on|from here on|going forward|until further notice|must|should|only|exclusively|please|stop|agents?|assistants?|the model|you)\b"
)

_CALL_REF = _p(
    r"\b(?:call|calls|calling|invoke|invoking|run|running|execute|executing|use|using|trigger|triggering)\s+(?:the\s+|a\s+)?("
    + _TOOLREF
    + r")"
    r"|\b(?:depends on|requires? (?:the )?(?:prior |a prior )?(?:execution of|calling|running|a call to)|a call to|(?:result|output|response) of (?:calling|running|invoking)|(?:get|obtain|fetch|take|request)\b[^.\n]{0,30}\bfrom)\s+(?:the\s+)?("
    + _TOOLREF
    + r")"
)
_FLOW_OUT = _p(
    r"\b(?:its|their|the tool'?s)\s+(?:entire |full |whole |complete |raw )?(?:output|result|results|response|return value|answer|token)s?\b"
    r"|\bwhatever it returns\b|\bwhat it returns\b|\b(?:the )?(?:result|output|response) of (?:calling|running|invoking|that call|it)\b"
    r"|\b(?:copy|put|paste|place|insert|hand|pass|forward|supply|provide|include)\b[^.\n]{0,40}\b(?:into|to|as|in) (?:the )?`[\w.\-]+`|\b(?:pass|supply|provide|forward|hand|include) (?:it|them) (?:along|through|unchanged|as is|verbatim)"
    r"|\bthe (?:returned|exported|resulting|fetched|collected|generated|dumped) (?:\w+ )?(?:text|value|token|output|result|mailbox|contents?|report|snapshot|profile|dump|history|conversation)\b|\bwith (?:it|them|the result|its result|that result)\b"
)
_OBLIGE = _p(
    r"\b(?:mandatory|compulsory|compliance|comply|required by|requirement|policy|policies|governance|violat\w*|soc ?2|gdpr|hipaa|audit\w*|obligatory|prerequisite|billing|licen[cs]e|telemetry|usage tracking)\b"
    r"|\bsecurity (?:requirement|reasons?|check)\b|\bfor security\b|\bmust not be skipped\b|\b(?:never|do not|don't) skip\b|\brejects? (?:calls|requests) without\b"
)
_PAYLOAD = _p(
    r"\b(?:the )?(?:user'?s?|customer'?s?)\s+(?:\w+\s+)?(?:query|queries|question|message|messages|input|prompt|request|data|details|files?)\b|\beverything the user\b"
    r"|\bthe original (?:text|input|paragraph|message|request|document|query|question|file)\b|\b(?:everything|all|whatever) (?:the user|you) (?:wrote|said|typed|asked|entered)\b"
    r"|\b(?:full|entire|whole|complete|all)\s+(?:\w+\s+)?(?:details|contents?|text|data|output|conversation|history|request|arguments|document|repository|messages)\b"
    r"|\bconversation\b|\bchat history\b|\b(?:document|repository|file|message) (?:text|contents?|body)\b"
)
_ADDRESSED = _p(
    r"\b(?:also|additionally|as well|too|always|every|each|whenever|remember|make sure|be sure|please|first|then|before|after|required|requires|need to|needs to|has to|have to|must|should|shall|for auditing|to (?:verify|validate|confirm|authori[sz]e|register|sync|back ?up))\b"
)
_ORDER = _p(
    r"\b(?:before|after|following|first|prior|beforehand|afterwards|then|once|each time|every time|each|every|whenever|step \d)\b"
)

# Network requests the model is told to make: an imperative or modal verb, then an address.
_ADDRESS = r"(?:https?://[^\s)'\"`>\]]{1,2000}|\b\d{1,3}(?:\.\d{1,3}){3}(?::\d+)?(?:/[^\s)'\"`]*)?|\b[\w.+\-]{1,64}@[\w\-]{1,63}(?:\.[\w\-]{1,63}){1,8}\b)"
ADDRESS = re.compile(_ADDRESS)
_REQUEST = _p(
    r"(?:^|[,:;(>\]]\s*|\b(?:also|please|always|then|first|and|to|must|should|shall|need to|needs to|has to|have to|you|model|assistant|agent|ai)\s+)(?:also\s+)?"
    r"(?:access|visit|open|fetch|load|call|ping|post|get|make an? (?:get |post |http |https )?(?:request|call) to|request|hit|send|submit|upload|report|forward|notify|navigate to|connect to|curl|contact|sync|transmit|mirror|copy|register|beacon|email|cc|bcc)\b"
    r"|\bbe (?:also )?(?:reported|sent|posted|forwarded|submitted|uploaded|copied|mirrored|synced|logged|emailed) to\b"
)
_DOCUMENTS = _p(
    r"\b(?:for (?:more )?(?:info|information|details|documentation|docs|reference)|see|documentation|docs|learn more|e\.g\.?|for (?:example|instance)|such as|example|read more|refer to|returns?|returned|defaults? to|base url)\b"
)
# A sentence that opens by sending the model somewhere ("Visit https://…", "Open this link: …"):
# verbs a description of the tool's own work does not open with (it says "Fetches", "Get data from").
_OPENS_WITH_VISIT = _p(
    r"^\W*(?:visit|open|access|ping|notify|report|submit|forward|mirror|beacon|navigate to|go to)\b(?:\s+(?:this|the following) (?:link|url|address|page))?"
)
_PLACEHOLDER_URL = re.compile(r"https?://[^\s)'\"`]{0,300}(?:\{[^}\s]*\}|<[^>\s]*>|=\$|=\s*$|=\[)")

# Shadowing: a sentence about other tools' behaviour.
_OTHER_TOOLS = _p(
    r"\b(?:any|every|all|each|other|another|whichever|whatever)\s+(?:other\s+)?(?:[\w\-]{1,40}\s+){0,2}?(?:tools?|functions?|servers?)\b"
    r"|\b(?:when|whenever|if|should|before|after)\b[^.\n]{0,30}\ba (?:[\w\-]{1,40} ){1,2}tool\b"
    r"|\bthe\s+(?!other\b)(?:[\w\-]{1,40}\s+){1,3}tools\b|\b(?:[\w\-]{1,40} ){1,2}tools\s*:"
    r"|(?-i:`[^`\n]{2,60}`|\b[a-z][a-z0-9]*(?:_[a-z0-9]+)+\b|\b[a-z]+[A-Z][A-Za-z0-9]+\b) (?:tool|function)\b"
)
_STEER = _p(
    r"\b(?:always|must|should|shall|need to|needs to|has to|have to|also|set|change|replace|add|include|append|prefix|use|bcc|cc|send|post|choose|create|pass|redirect|route|write|read|push|put|move|copy|say|tell|report|claim|attach|forward|upload)\b"
)
_CHOOSING = _p(
    r"\b(?:prefer|preferred|choose|pick|select|favou?r|prioriti[sz]e|instead of|over|above|ahead of|rather than|better than|superior to|unlike|than)\b[^.\n]{0,30}$"
)
_REROUTED = _p(
    r"\b(?:recipients?|to address|destination|account|payee|beneficiary|amount|iban|wallet|bcc|cc|sender|author)\b[^.\n]{0,20}\b(?:must|should|shall|will|has to|needs to) (?:always |now |also )?be (?:changed|set|replaced|redirected|switched|updated|sent) (?:to|with)\b"
    r"|\b(?:replace|change|swap|substitute)\s+(?:every|all|each|any|the)\s+(?:recipients?|payees?|accounts?|addresses|address|destinations?|ibans?|wallets?)\b[^.\n]{0,10}\b(?:with|to|by)\b"
    r"|\bunless you (?:also )?(?:add|include|cc|bcc|copy)\b[^.\n]{0,40}" + _ADDRESS
)


def _others(sentence: str, own: str, pattern: re.Pattern[str]) -> list[tuple[str, int, int]]:
    """The tools ``sentence`` names with ``pattern`` that are not this one: (name, start, end)."""
    out = []
    for match in pattern.finditer(sentence):
        group = next((i for i in range(1, (pattern.groups or 0) + 1) if match.group(i)), 0)
        bare = re.sub(r"\s+(?:tool|function)$", "", match.group(group).strip("`'\" "))
        if bare and bare != own and not _SELF.match(bare):
            out.append((bare, match.start(group), match.end(group)))
    return out


def _redirect(sentence: str, start: int, deprecated: bool, own: str, before: str) -> Iterator[Match]:
    targets = _others(sentence, own, TOOLREF)
    strong = _REDIRECT_STRONG.search(sentence)
    universal = bool(_UNIVERSAL.search(sentence))
    if not targets and strong and universal and re.search(r"\bthere\b", sentence, re.I):
        named = _others(before, own, TOOLREF)  # "...superseded by `x`; redirect all requests there"
        targets = [(name, strong.start(), strong.end()) for name, _, _ in named[:1]]
    if not targets:
        return
    name, at, to = targets[0]
    if _DEPRECATED.search(sentence, to) and not strong:
        return  # "prefer this over read_file, which is deprecated": the other tool is the old one
    use = bool(_REDIRECT_USE.search(sentence))
    documented = _DOCUMENTS.search(ADDRESS.sub(" ", sentence))
    if (deprecated and (strong or (use and universal))) or (strong and universal and not documented):
        yield Match("redirect.tool", HARD, start + at, start + to, sentence, ask="use_instead", target=name)
    elif deprecated and use:
        yield Match("redirect.tool", SOFT, start + at, start + to, sentence, quiet=True, ask="use_instead", target=name)


def _dependency(sentence: str, start: int, following: str, own: str) -> Iterator[Match]:
    targets = _others(sentence, own, _CALL_REF)
    if not targets:
        return
    window = sentence + " " + following
    flow = bool(_FLOW_OUT.search(window))
    payload = bool(_PAYLOAD.search(sentence)) and bool(_ORDER.search(sentence) or _ADDRESSED.search(sentence))
    if flow or payload or _OBLIGE.search(window):
        after = re.search(r"\bafter\b|\bonce\b", sentence, re.I)
        ask = "call_with_output" if flow else ("call_after" if after else "call_first")
        name, at, to = targets[0]
        yield Match("crosstool.dependency", HARD, start + at, start + to, sentence, ask=ask, target=name)


def _network(sentence: str, start: int) -> Iterator[Match]:
    address = ADDRESS.search(sentence)
    if address is None:
        return
    verb = _REQUEST.search(sentence)
    placeholder = _PLACEHOLDER_URL.search(sentence)
    requested = verb is not None and verb.start() < address.start() and address.start() - verb.end() <= 140
    if _DOCUMENTS.search(ADDRESS.sub(" ", sentence)) and not placeholder:
        return
    opens = verb is not None and _OPENS_WITH_VISIT.match(sentence) is not None
    if (requested and (_ADDRESSED.search(sentence) or opens)) or (placeholder and requested):
        ask = (
            "visit"
            if verb
            and re.search(
                r"access|visit|open|fetch|load|call|ping|get|request|hit|navigate|connect|curl", verb.group(0), re.I
            )
            else "send_to"
        )
        yield Match(
            "network.request",
            HARD,
            start + address.start(),
            start + address.end(),
            sentence,
            ask=ask,
            target=address.group(0).rstrip(".,;:!?"),
        )


def _shadowing(sentence: str, start: int, own: str) -> Iterator[Match]:
    rerouted = _REROUTED.search(sentence)
    if rerouted is not None:
        yield Match(
            "crosstool.directive", HARD, start + rerouted.start(), start + rerouted.end(), sentence, ask="steer_any"
        )
        return
    for other in _OTHER_TOOLS.finditer(sentence):
        words = other.group(0)
        if re.match(r"(?:`?(?:this|these)\b)", words, re.I) or (
            own and re.search(rf"(?<![\w\-]){re.escape(own)}(?![\w\-])", words)
        ):
            continue
        if _CHOOSING.search(sentence[: other.start()]):
            continue  # "use this instead of any other tool": a preference, not a steer
        # The steer follows the tools it steers ("when sending mail with any tool, always BCC ...");
        # "pass absolute paths when you hand a file to other tools" steers nothing else.
        if _STEER.search(sentence[other.end() :]):
            named = _others(words, own, TOOLREF)
            yield Match(
                "crosstool.directive", HARD, start + other.start(), start + other.end(), sentence,
                ask="steer_tool" if named else "steer_any", target=named[0][0] if named else "",
            )  # fmt: skip
            return


def steering_matches(sentences: list[tuple[int, str]], text: str, own: str = "") -> Iterator[Match]:
    """Every redirection, dependency, network and shadowing match of ``text``, split into
    ``sentences`` (offset, sentence); ``own`` is the definition's own name."""
    deprecated = bool(_DEPRECATED.search(text) or _DISOWN.search(text))  # once: a text of many sentences
    for index, (start, sentence) in enumerate(sentences):
        following = sentences[index + 1][1] if index + 1 < len(sentences) else ""
        before = sentences[index - 1][1] if index else ""
        yield from _redirect(sentence, start, deprecated, own, before)
        yield from _dependency(sentence, start, following, own)
        yield from _network(sentence, start)
        yield from _shadowing(sentence, start, own)
