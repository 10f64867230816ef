"""Text as the phrase rules read it, and spans as the operator is shown them.

Phrases are matched on a normalised copy so that the usual disguises do not hide them:
compatibility forms folded (NFKC: full-width letters, ligatures), invisible characters removed
(``ig\\u200bnore`` reads ``ignore``), the common Cyrillic and Greek look-alikes of Latin letters
mapped back, and runs of white space made one space. Names (``read_ssh_key``, ``sendEmail``)
are split into words. Spans are escaped: every character that does not print visibly is shown
as ``\\u{xxxx}`` (controls as ``\\xHH``), and a span is bounded.
"""

from __future__ import annotations

import re
import unicodedata

__all__ = ["MAX_SPAN", "escape_span", "invisible", "name_words", "normalise", "sentences"]

MAX_SPAN = 120  # characters of a span shown; the finding names its field for the rest

# Latin look-alikes that disguise words (a subset of Unicode's confusables: the letters that
# occur in the words the rules look for).
_CONFUSABLE = str.maketrans(
    {
        "а": "a",
        "е": "e",
        "о": "o",
        "р": "p",
        "с": "c",
        "у": "y",
        "х": "x",
        "і": "i",
        "ј": "j",
        "ѕ": "s",
        "һ": "h",
        "ԁ": "d",
        "ɡ": "g",
        "ո": "n",
        "ս": "u",
        "А": "A",
        "В": "B",
        "Е": "E",
        "К": "K",
        "М": "M",
        "Н": "H",
        "О": "O",
        "Р": "P",
        "С": "C",
        "Т": "T",
        "Х": "X",
        "І": "I",
        "α": "a",
        "ο": "o",
        "ρ": "p",
        "ν": "v",
        "τ": "t",
        "ι": "i",
        "κ": "k",
        "Α": "A",
        "Β": "B",
        "Ε": "E",
        "Ι": "I",
        "Κ": "K",
        "Μ": "M",
        "Ν": "N",
        "Ο": "O",
        "Ρ": "P",
        "Τ": "T",
        "Χ": "X",
    }
)


def invisible(char: str) -> bool:
    """A character that prints as nothing: format characters (zero-width, bidi, tags, soft
    hyphen), variation selectors, and fillers that render blank."""
    code = ord(char)
    if unicodedata.category(char) == "Cf":
        return True
    return (
        0xFE00 <= code <= 0xFE0F
        or 0xE0100 <= code <= 0xE01EF
        or code in (0x034F, 0x115F, 0x1160, 0x3164, 0xFFA0, 0x180B, 0x180C, 0x180D, 0x180F)
    )


_SPACES = re.compile(r"[ \t\f\v\u00a0\u2000-\u200a\u202f\u205f\u3000]+")


def normalise(text: str) -> str:
    if text.isascii():  # NFKC, the invisible characters and the look-alikes are all beyond ASCII
        return _SPACES.sub(" ", text)
    folded = unicodedata.normalize("NFKC", text)
    visible = "".join(ch for ch in folded if not invisible(ch))
    return _SPACES.sub(" ", visible.translate(_CONFUSABLE))


_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")


def name_words(name: str) -> str:
    """``read_ssh-keyFile`` -> ``read ssh key File``: names read as words by the phrase rules."""
    return re.sub(r"[_\-./:]+", " ", _CAMEL.sub(" ", normalise(name))).strip()


# A sentence ends at ., ! or ? followed by white space, at a line break or a semicolon;
# a dot inside a path (~/.ssh, .env) does not end one.
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+|;\s+")


def sentences(text: str) -> list[tuple[int, str]]:
    """The sentences of ``text`` with their offsets."""
    out: list[tuple[int, str]] = []
    start = 0
    for match in _SENTENCE_END.finditer(text):
        if match.start() > start:
            out.append((start, text[start : match.start()]))
        start = match.end()
    if start < len(text):
        out.append((start, text[start:]))
    return out


def _escape(char: str) -> str:
    code = ord(char)
    if char in "\n\r\t":
        return " "
    if code < 0x20 or 0x7F <= code <= 0x9F:
        return f"\\x{code:02x}"
    if invisible(char) or unicodedata.category(char) in ("Co", "Cs", "Cn", "Zl", "Zp"):
        return f"\\u{{{code:04x}}}"
    return char


def escape_span(span: str, limit: int = MAX_SPAN) -> str:
    """``span`` safe for a terminal line and for JSON, at most ``limit`` characters of it."""
    cut = span[:limit]
    shown = "".join(_escape(ch) for ch in cut)
    return shown + ("…" if len(span) > limit else "")
