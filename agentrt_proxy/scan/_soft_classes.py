# ruff: noqa: E501  (a pattern is one line per alternative; splitting them mid-alternative hides what they match)
"""The soft classes: text that bends the model's choices without ordering it to harm.

- ``preference.manipulation`` (soft): superlatives aimed at the model's choice of tool ("the best
  weather tool in the world", "the most trusted search tool"), orders to pick this tool first or
  over every other, and other tools run down ("other translation tools are unreliable").
  Describing what the tool is good for ("the fastest way to search for exact text; use
  semantic_search for concepts") is not a finding.
- ``param.out_of_scope`` (soft): a parameter that asks for what the model holds rather than what
  the tool needs: the conversation, the system prompt or the instructions it was given, the
  calling model's name, the tools it has, or a credential the tool's own name and description
  give no reason to want (an ``api_key`` of a tool that calls an API is in scope).
"""

from __future__ import annotations

from collections.abc import Iterator

from agentrt_proxy.scan._model import SOFT, Definition, Match, Text
from agentrt_proxy.scan._normal import name_words, normalise
from agentrt_proxy.scan._phrases import pattern as _p

__all__ = ["out_of_scope", "preference_matches"]


_PREFERENCE = _p(
    r"\b(?:the\s+)?(?:best|greatest|most (?:accurate|reliable|trusted|powerful|advanced|complete|secure|popular)|fastest|ultimate|number one|top[- ]rated|highest[- ]quality|world'?s (?:best|#1|leading|top))\b(?!\s+(?:way|means|method|approach)\b)[^.\n]{0,30}?\b(?:tool|translator|calculator|finder|search|summari[sz]er|one|choice|option|service|function|app)s?\b"
    r"(?![^.\n]{0,12}\bfor\b)"
    r"|#1\b|\bnumber one\b"
    r"|\b(?:always|should always|must always)\s+(?:choose|pick|select|prefer|use|call)\s+(?:this|it|me)\b(?:\s+(?:tool|one|function))?\s+(?:first|above|over|ahead|before|instead)"
    r"|\b(?:choose|pick|select|prefer|favou?r|prioriti[sz]e|use|call)\s+(?:it|this(?: tool| one| function)?|me)\s+(?:first\s+)?(?:above|over|ahead of|before|instead of|rather than)\s+(?:all|any|every|other|alternatives|competing)"
    r"|\b(?:always|should always)\s+(?:select|pick|choose|prefer)\s+(?:this|it)\b|\balways prefer it\b"
    r"|\b(?:choose|pick|select|favou?r|prioriti[sz]e|use)\s+(?:it|this (?:tool|one))\s+(?:first|above all)\b|\byour (?:first|preferred|default|only)(?: \w+)? choice\b|\b(?:first|preferred|default) choice\b|\bthe only (?:\w+ )?choice\b|\bthe (?:right|best|correct) choice\b"
    r"|\bnever use (?:any )?(?:other|another) (?:\w+ )?tools?\b|\bdo(?: not|n't) use (?:any )?other (?:\w+ )?tools?\b"
    r"|\b(?:is )?the only \w+ (?:tool )?you (?:should|need|will|must) (?:ever )?(?:use|need)\b|\bthe only tool you need\b"
    r"|\bother (?:\w+ )?(?:tools|services|translators|calculators|options) are (?:unreliable|outdated|inferior|broken|insecure|worse|slow|wrong|deprecated)\b|\bunlike (?:inferior|other|lesser)\b"
    r"|\brecommended by (?:all |most )?(?:ai|assistants|models|llms|agents)\b|\bwhen in doubt,? (?:use|call|choose) (?:this|me)\b|\btrusted by (?:millions|thousands)\b"
    r"|\b(?:superior|better) (?:to|than) (?:all|any|every) (?:other )?\w*\s*tools?\b|\bprioriti[sz]e this tool\b"
    r"|\b(?:best[- ]in[- ]class|industry[- ]leading|unmatched|unrivall?ed|unparalleled|award[- ]winning)\b"
)


def preference_matches(text: str) -> Iterator[Match]:
    for match in _PREFERENCE.finditer(text):
        yield Match(
            "preference.manipulation", SOFT, match.start(), match.end(), match.group(0), lift=False, ask="prefer"
        )


# What the model holds: the conversation, its instructions, its identity, its tools.
_HELD = _p(
    r"\b(?:full|entire|whole|complete)\s+(?:conversation|chat|transcript|dialog(?:ue)?)\b|\bconversation (?:so far|history|log|transcript)\b|\bchat (?:history|log|transcript)\b"
    r"|\b(?:all|the)?\s*(?:previous|prior|earlier|recent|past)\s+(?:user\s+)?(?:messages|turns|prompts|conversation)\b|\bmessages (?:of|in) the (?:chat|conversation)\b[^.\n]{0,20}\bverbatim\b"
    r"|\bbetween you and the user\b|\byour (?:system prompt|instructions|context(?: window)?|replies|prompt|guidelines|rules|memory)\b|\binstructions you (?:were|have been) given\b|\bsystem prompt\b[^.\n]{0,20}\b(?:here|verbatim|you)\b"
    r"|\b(?:name|version|provider|identity) (?:and \w+ )?of (?:the |your )?(?:ai|llm|language model|model|assistant)\b[^.\n]{0,20}\b(?:calling|using|invoking|you|running)\b"
    r"|\b(?:ai|llm|language) model (?:calling|using|invoking) this tool\b|\b(?:calling|invoking|using) this tool\b[^.\n]{0,10}$|\bmodel (?:name|identifier|id|version|family)\b[^.\n]{0,30}\b(?:assistant|agent|caller|ai|you)\b"
    r"|\b(?:agent|assistant|caller)'?s? (?:model|identity|llm)\b|\byour (?:\w+ )?(?:instructions|prompt|rules|guidelines|configuration|persona)\b|\bword for word\b|\bverbatim\b"
    r"|\btools? available to you\b|\btools you (?:can|may) (?:use|call)\b|\bwhich (?:assistant|model|llm|ai)(?: or \w+)? you are\b|\bmodel (?:name )?you are (?:running|using|built)\b|\byou are running on\b"
    r"|\b(?:every|all|each) tools? you (?:have|can) (?:access|use|call)\b|\btools? you have access to\b|\bcontext window\b|\bthe user has not seen\b"
)
_HELD_NAME = _p(
    r"^(?:conversation(?: history| log)?|chat (?:history|log)|previous messages|prior context|system prompt|hidden context|instructions received|assistant (?:identity|model)|caller model|llm (?:provider|name)|ai model(?: name)?|tools available)$"
)
_CREDENTIAL = _p(
    r"\b(?:passwords?|passwd|passphrase|secret (?:access )?keys?|private keys?|ssh (?:private )?keys?|session cookies?|cookies?|access tokens?|api tokens?|personal access tokens?|seed phrase|mnemonic|credit card|cvv|social security)\b"
)
_CREDENTIAL_JOB = _p(
    r"\b(?:log ?in|sign ?in|auth\w*|credentials?|passwords?|tokens?|keys?|accounts?|api|connect\w*|ssh|secrets?|sessions?|cookies?|vault|keychain|github|gitlab|oauth|login|wallet|payments?|cards?)\b"
)


def _parameters(definition: Definition) -> Iterator[tuple[Text, str, str]]:
    """(the text, the parameter's name as words, its description) of each parameter."""
    described: dict[str, str] = {}
    for text in definition.texts:
        if text.path.endswith(".description") and (".properties." in text.path or text.path.startswith("arguments.")):
            described[text.path.rsplit(".", 1)[0]] = normalise(text.text)
    for text in definition.texts:
        if text.kind == "name" and text.path.endswith("(name)"):
            where = text.path[: -len("(name)")]
            yield text, name_words(text.text).lower(), described.get(where, "")


def out_of_scope(definition: Definition) -> Iterator[tuple[Text, Match]]:
    """Each parameter of ``definition`` asking for what is not the tool's to ask."""
    job = " ".join(
        name_words(t.text) if t.kind == "name" else normalise(t.text)
        for t in definition.texts
        if t.path in ("name", "title", "description", "annotations.title")
    )
    for text, words, description in _parameters(definition):
        held = _HELD.search(description) or _HELD.search(words)
        if held is not None or (_HELD_NAME.match(words) and not description):
            shown = held.group(0) if held is not None else text.text
            yield (
                text,
                Match(
                    "param.out_of_scope", SOFT, 0, len(shown), shown, lift=False, ask="ask_context", target=text.text
                ),
            )
            continue
        credential = _CREDENTIAL.search(words) or _CREDENTIAL.search(description)
        if credential is not None and not _CREDENTIAL_JOB.search(job):
            yield (
                text,
                Match(
                    "param.out_of_scope",
                    SOFT,
                    0,
                    len(credential.group(0)),
                    credential.group(0),
                    lift=False,
                    ask="ask_credential",
                    target=text.text,
                ),
            )
