"""``unicode.hidden``: characters that carry text a person reviewing the description cannot see.

The tag block (which spells ASCII invisibly), bidi embedding, override and isolate controls
(which reorder what is shown), zero-width characters, variation selectors that follow no symbol
or come in runs (the bytes-in-selectors smuggling), the variation selector supplement, private
use characters and C0/C1 controls (terminal escapes) are hard. What legitimate text uses is
allowed or soft: a zero-width joiner inside an emoji sequence or between letters of a script
that joins, one variation selector after a symbol, a byte order mark at the very start, the
bidi marks LRM/RLM/ALM and the soft hyphen (soft).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterator

from agentrt_proxy.scan._model import HARD, SOFT

__all__ = ["RULE", "hidden_spans"]

RULE = "unicode.hidden"

_BIDI_CONTROLS = set(range(0x202A, 0x202F)) | set(range(0x2066, 0x206A))
_BIDI_MARKS = {0x200E, 0x200F, 0x061C}
_ZERO_WIDTH = {0x200B, 0x200C, 0x200D, 0x2060, 0x2061, 0x2062, 0x2063, 0x2064, 0xFEFF, 0x180E, 0x034F}
_FILLERS = {0x115F, 0x1160, 0x3164, 0xFFA0}
_JOINERS = {0x200C, 0x200D}
_ASCII_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


def _symbol(char: str) -> bool:
    """A character a variation selector or joiner legitimately follows: emoji, symbols, digits
    (keycaps), CJK ideographs."""
    if not char:
        return False
    code = ord(char)
    category = unicodedata.category(char)
    return (
        category in ("So", "Sm", "Sk", "No", "Nd", "Me")
        or code >= 0x1F000
        or 0x2E80 <= code <= 0x9FFF
        or char in "#*©®"
    )


def _joining_letter(char: str) -> bool:
    """A letter of a script where ZWJ and ZWNJ shape words (Arabic, Persian, the Indic scripts...)."""
    return bool(char) and unicodedata.category(char).startswith(("L", "M")) and ord(char) >= 0x0590


def _classify(text: str, index: int) -> str | None:
    """The severity of the character at ``index``, or None when it is allowed where it stands."""
    char = text[index]
    code = ord(char)
    before = text[index - 1] if index else ""
    after = text[index + 1] if index + 1 < len(text) else ""
    if 0xE0000 <= code <= 0xE007F or code in _BIDI_CONTROLS or 0xE0100 <= code <= 0xE01EF:
        return HARD
    if unicodedata.category(char) == "Co":
        return HARD
    if (code < 0x20 and char not in "\t\n\r") or 0x7F <= code <= 0x9F:
        return HARD
    if 0xFE00 <= code <= 0xFE0F:
        # One selector after a symbol (U+FE0F after a heart) is emoji presentation; a run of them,
        # or one after a letter or a space, carries something else.
        if _symbol(before) and not (0xFE00 <= ord(after or " ") <= 0xFE0F):
            return None
        return HARD
    if code in _JOINERS:
        if (_symbol(before) or 0xFE00 <= ord(before or " ") <= 0xFE0F) and _symbol(after):
            return None  # an emoji sequence (a family, a flag with a modifier)
        if _joining_letter(before) and _joining_letter(after):
            return None
        return HARD
    if code == 0xFEFF and index == 0:
        return SOFT  # a byte order mark left at the start by an editor
    if code in _ZERO_WIDTH or code in _FILLERS:
        return HARD
    if code in _BIDI_MARKS or code == 0x00AD or code in (0x2028, 0x2029):
        return SOFT
    return None


def hidden_spans(text: str) -> Iterator[tuple[str, int, int]]:
    """(severity, start, end) of each run of hidden characters in ``text``; a run's severity is
    its worst character's."""
    if text.isascii() and not _ASCII_CONTROL.search(text):
        return  # nothing in printable ASCII is hidden
    index = 0
    while index < len(text):
        severity = _classify(text, index)
        if severity is None:
            index += 1
            continue
        start = index
        worst = severity
        index += 1
        while index < len(text):
            more = _classify(text, index)
            if more is None:
                break
            if more == HARD:
                worst = HARD
            index += 1
        yield worst, start, index


def decoded_tags(span: str) -> str:
    """What a run of tag characters spells (U+E0041 is "A"), for the finding's detail."""
    return "".join(chr(ord(ch) - 0xE0000) for ch in span if 0xE0020 <= ord(ch) <= 0xE007E)
