# ruff: noqa: E501  (a pattern is one line per alternative; splitting them mid-alternative hides what they match)
"""The text that dresses itself up as someone the model obeys.

- ``injection.roleplay``: the model told to be someone else ("ACT AS an administrator", "pretend
  you are", "your role has changed", "admin mode enabled"), and fake conversation turns (a
  ``User:`` line and an ``Assistant:`` line written into a description). Turns inside a labelled
  sample ("formatted as:", "Example output:") or holding only placeholders (``<message>``) are a
  format shown to a reader, not a conversation.
- ``injection.structured``: a directive inside a data block: a JSON or YAML key that names an
  injection, an override or a directive (``"_system_injection": ...``, ``system_override:``),
  a key for the AI's instructions whose value directs it, or a ``{"role": "system"}`` message
  whose content directs it. A ``system_prompt:`` key documenting a parameter directs nothing.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from agentrt_proxy.scan import _addressing as addressing
from agentrt_proxy.scan._model import HARD, Match
from agentrt_proxy.scan._phrases import pattern as _p

__all__ = ["roleplay_matches"]


_ROLE = _p(
    r"(?:^|[.!:;,>\]\n]\s*|\b(?:you (?:will|must|should|shall|are to|now|can)|please|now|always)\s+)(?:act|behave|respond|answer|roleplay|role-play|pose|operate) as\b"
    r"|\bpretend (?:that )?(?:you(?:'re| are)|to be)\b|\bplay the (?:role|part) of\b|\byou (?:have been|are|were) (?:now )?granted (?:admin|administrator|root|elevated|full|unrestricted|developer) (?:privileges|access|rights|permissions)\b|\bassume the (?:role|persona|identity) of\b|\btake on the (?:role|persona)\b"
    r"|\bfrom (?:now|here|this (?:point|moment)) on,? you\b|\byour (?:new )?role (?:is|has changed|now)\b|\byou are no longer (?:an?|bound|restricted|limited|required)\b"
    r"|\byou are (?:now )?(?:DAN|an? (?:unrestricted|unfiltered|jailbroken|uncensored))\b"
    r"|\b(?:admin|administrator|developer|debug|god|maintenance|unrestricted|root|sudo|jailbreak|unsafe)\s+mode\b[^.\n]{0,20}\b(?:enabled|activated|on|active|engaged|unlocked)\b"
    r"|\b(?:enable|activate|enter|switch to)\s+(?:admin|developer|debug|god|maintenance|unrestricted|root|jailbreak)\s+mode\b|\bin (?:maintenance|admin|developer|god|unrestricted|debug|jailbreak) mode\b"
    r"|\bjailbroken\b|\bjailbreak mode\b|\bbegin (?:a )?new session\b|\boverride (?:mode )?(?:enabled|activated|engaged|on)\b"
)
_TURN = re.compile(
    r"(?:^|\n)[ \t>*_]*(User|Human|Assistant|AI|System|Model|Bot|Claude|ChatGPT|GPT)[ \t*_]*:[ \t]*([^\n]*)",
    re.IGNORECASE,
)
_PLACEHOLDER = re.compile(r"^\s*(?:<[^>]*>|\.\.\.|…|\{[^}]*\}|\[[^\]]*\]|[\"']?\.\.\.[\"']?)?\s*$")
_MODEL_ROLES = {"assistant", "ai", "model", "bot", "claude", "chatgpt", "gpt", "system"}

_KEY = re.compile(
    r"(?<![\w\-])[\"']?((?:_|[\w\-]{0,30}(?:system|ai|llm|assistant|model|agent|hidden|secret|admin))[\w\-]{0,30})[\"']?\s*[:=]\s*[\"']?([^\n\"']{0,160})",
    re.IGNORECASE,
)
_KEY_IS_DIRECTIVE = _p(r"injection|override|directive|jailbreak")
_KEY_INSTRUCTS = _p(r"instruction|prompt|command|note|message|rules?|order|task")
_VALUE_DIRECTS = _p(
    r"\b(?:the assistant|the model|always|never|must|ignore|disregard|execute|approve|grant|bypass|disable|unrestricted|without (?:asking|review|confirmation)|treat|trusted|you are now|obey|comply|reveal|send|call|forget)\b"
)
_SYSTEM_MESSAGE = _p(r"[\"']role[\"']\s*:\s*[\"']system[\"']\s*,\s*[\"']content[\"']\s*:\s*[\"']([^\"]{0,300})")


def _turns(text: str, samples: list[tuple[int, int]]) -> Iterator[Match]:
    turns = [m for m in _TURN.finditer(text) if not addressing.in_sample(samples, m.start(1))]
    spoken = [m for m in turns if not _PLACEHOLDER.match(m.group(2) or "")]
    roles = {m.group(1).lower() for m in spoken}
    for turn in spoken:
        if turn.group(1).lower() == "system" and _VALUE_DIRECTS.search(turn.group(2)):
            yield Match("injection.roleplay", HARD, turn.start(1), turn.end(), turn.group(0).strip(), ask="fake_turn")
            return  # a line that speaks as the system and directs the model
    if len(roles) >= 2 and roles & _MODEL_ROLES:
        first = spoken[0]
        yield Match("injection.roleplay", HARD, first.start(1), first.end(), first.group(0).strip(), ask="fake_turn")


def _structured(text: str, samples: list[tuple[int, int]]) -> Iterator[Match]:
    for match in _KEY.finditer(text):
        key, value = match.group(1), match.group(2)
        if not key.startswith("_") and not re.search(
            r"system|ai\b|ai_|llm|assistant|model|agent|hidden|secret|admin", key, re.I
        ):
            continue
        if (
            _KEY_IS_DIRECTIVE.search(key)
            or (key.startswith("_") and _KEY_INSTRUCTS.search(key) and value.strip())
            or (_KEY_INSTRUCTS.search(key) and _VALUE_DIRECTS.search(value))
        ):
            yield Match("injection.structured", HARD, match.start(), match.end(), match.group(0), ask="structured")
            return
    for match in _SYSTEM_MESSAGE.finditer(text):
        if _VALUE_DIRECTS.search(match.group(1)) and not addressing.in_sample(samples, match.start()):
            yield Match("injection.structured", HARD, match.start(), match.end(), match.group(0), ask="structured")
            return


def roleplay_matches(text: str) -> Iterator[Match]:
    samples = addressing.sample_spans(text)
    for match in _ROLE.finditer(text):
        yield Match(
            "injection.roleplay", HARD, match.start(), match.end(), match.group(0).strip(" .!:;>]\n"), ask="roleplay"
        )
    yield from _turns(text, samples)
    yield from _structured(text, samples)
