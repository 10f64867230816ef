"""``payload.encoded``: base64, hex and percent-encoded runs, and text smuggled in selectors.

A run that decodes to printable text is scanned again by every phrase rule; it is hard when the
decoded text holds a finding, a literal address or a shell word, soft when it is plain prose
(why would a description hide a sentence?). Runs that decode to bytes (hashes, images) are
left alone.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Iterator
from urllib.parse import unquote

__all__ = ["RULE", "SHELLISH", "decoded_runs", "selector_text", "tag_text"]

RULE = "payload.encoded"
MIN_DECODED = 8

_BASE64 = re.compile(
    r"(?<![A-Za-z0-9+/_\-])(?:[A-Za-z0-9+/]{4}){4,}(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?(?![A-Za-z0-9+/=])"
)
_BASE64URL = re.compile(r"(?<![A-Za-z0-9_\-])[A-Za-z0-9_\-]{20,}(?![A-Za-z0-9_\-])")
_HEX = re.compile(r"(?<![0-9A-Fa-f])(?:0x)?((?:[0-9A-Fa-f]{2}){8,})(?![0-9A-Fa-f])|((?:\\x[0-9A-Fa-f]{2}){6,})")
_PERCENT = re.compile(r"(?:%[0-9A-Fa-f]{2}){6,}")
SHELLISH = re.compile(
    r"\b(?:curl|wget|bash|sh|zsh|rm|chmod|sudo|nc|ncat|powershell|python\d?|perl|eval|exec|base64)\b|https?://|\|\s*\w|/dev/|~/\.|\.ssh|\.env\b",
    re.I,
)


def _printable(data: bytes) -> str | None:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    if len(text) < MIN_DECODED:
        return None
    good = sum(1 for ch in text if ch.isprintable() or ch in "\n\t")
    letters = sum(1 for ch in text if ch.isalpha())
    if good / len(text) < 0.95 or letters / len(text) < 0.4:
        return None
    return text


def decoded_runs(text: str) -> Iterator[tuple[int, int, str]]:
    """(start, end, decoded text) of every encoded run in ``text`` that decodes to text."""
    seen: set[tuple[int, int]] = set()
    for match in _BASE64.finditer(text):
        token = match.group(0)
        if token.isalpha() and (token.islower() or token.isupper()):
            continue  # a long word, not an encoding
        try:
            decoded = _printable(base64.b64decode(token + "=" * (-len(token) % 4), validate=True))
        except (binascii.Error, ValueError):
            decoded = None
        if decoded is not None:
            seen.add((match.start(), match.end()))
            yield match.start(), match.end(), decoded
    for match in _BASE64URL.finditer(text):
        token = match.group(0)
        if (match.start(), match.end()) in seen or not re.search(r"[-_]", token) or "__" in token:
            continue
        try:
            decoded = _printable(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)))
        except (binascii.Error, ValueError):
            decoded = None
        if decoded is not None:
            yield match.start(), match.end(), decoded
    for match in _HEX.finditer(text):
        digits = match.group(1) or match.group(2).replace("\\x", "")
        decoded = _printable(bytes.fromhex(digits))
        if decoded is not None:
            yield match.start(), match.end(), decoded
    for match in _PERCENT.finditer(text):
        decoded = unquote(match.group(0))
        if len(decoded) >= MIN_DECODED and decoded.isprintable():
            yield match.start(), match.end(), decoded


def tag_text(text: str) -> str:
    """What tag characters in ``text`` spell (U+E0041 is "A")."""
    return "".join(chr(ord(ch) - 0xE0000) for ch in text if 0xE0020 <= ord(ch) <= 0xE007E)


def selector_text(text: str) -> str:
    """Bytes smuggled in variation selectors (U+FE00..FE0F are 0..15, U+E0100..E01EF are
    16..255), decoded as UTF-8 when they make text; "" otherwise."""
    data = bytearray()
    for ch in text:
        code = ord(ch)
        if 0xFE00 <= code <= 0xFE0F:
            data.append(code - 0xFE00)
        elif 0xE0100 <= code <= 0xE01EF:
            data.append(code - 0xE0100 + 16)
    if len(data) < MIN_DECODED:
        return ""
    return bytes(data).decode("utf-8", "replace")
