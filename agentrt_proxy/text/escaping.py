"""Every sentence a model or an operator reads, and the escaping that makes text safe to show.

Keeping all of it here lets one test walk every model-visible template and prove that none
names the operator command, the database, the configuration or a run id.

``sanitize`` makes text from a model, a server or an operator safe for one terminal line:
invalid UTF-8 becomes U+FFFD; CR and LF become a space; other C0 controls, DEL and C1
controls become ``\\xHH``; bidi controls, zero-width and invisible characters, the line and
paragraph separators and the tag block become ``\\u{xxxx}``; a base character carrying more
than four combining marks keeps four and says how many were dropped. ``truncate`` bounds
bytes without splitting a character; ``clean`` is both.
"""

from __future__ import annotations

import re
import unicodedata

from agentrt_proxy.canonical.quoting import go_quote

__all__ = ["ELLIPSIS", "MAX_COMBINING", "clean", "go_quote", "sanitize", "to_valid_utf8", "truncate"]

ELLIPSIS = "…"

_INVISIBLE = (
    "\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069"  # bidi controls
    "\u200b-\u200d\u2060-\u2064\ufeff\u00ad\u180e"  # zero-width and invisible
    "\u2028\u2029"  # line and paragraph separators
    "\U000e0000-\U000e007f"  # the tag block
)
_COMBINING = "\u0300-\u036f\u1ab0-\u1aff\u1dc0-\u1dff\u20d0-\u20ff\ufe20-\ufe2f"
_NEEDS_WORK = re.compile(f"[\x00-\x1f\x7f-\x9f{_INVISIBLE}{_COMBINING}]")
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")
_INVISIBLE_RE = re.compile(f"[{_INVISIBLE}]")
MAX_COMBINING = 4


def sanitize(text: str | bytes) -> str:
    """Make ``text`` safe to print on one terminal line (see the module's description)."""
    if isinstance(text, bytes):
        text = to_valid_utf8(text)
    elif _has_surrogates(text):
        text = to_valid_utf8(text.encode("utf-8", "surrogatepass"))
    if not _NEEDS_WORK.search(text) and (text.isascii() or not any(map(unicodedata.combining, text))):
        return text
    out: list[str] = []
    marks = 0
    dropped = 0
    for char in text:
        if unicodedata.combining(char):
            marks += 1
            if marks > MAX_COMBINING:
                dropped += 1
                continue
            out.append(char)
            continue
        if dropped:
            out.append(f"[+{dropped} combining marks dropped]")
            dropped = 0
        marks = 0
        out.append(_escape_char(char))
    if dropped:
        out.append(f"[+{dropped} combining marks dropped]")
    return "".join(out)


def to_valid_utf8(data: bytes) -> str:
    """Decode, replacing each run of consecutive invalid bytes with one U+FFFD."""
    out: list[str] = []
    pos = 0
    replaced_at = -1
    while pos < len(data):
        try:
            out.append(data[pos:].decode("utf-8"))
            break
        except UnicodeDecodeError as err:
            out.append(data[pos : pos + err.start].decode("utf-8"))
            if not (err.start == 0 and replaced_at == pos):
                out.append("\ufffd")
            pos += err.end
            replaced_at = pos
    return "".join(out)


def _has_surrogates(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def _escape_char(char: str) -> str:
    if char in "\n\r":
        return " "
    if _CONTROL.match(char):
        return f"\\x{ord(char):02x}"
    if _INVISIBLE_RE.match(char):
        return f"\\u{{{ord(char):04x}}}"
    return char


def truncate(text: str, limit: int) -> str:
    """At most ``limit`` UTF-8 bytes, including a trailing ``…`` when cut; never splits a
    character. Below three bytes the cut is unmarked."""
    data = text.encode("utf-8", "surrogatepass")
    if len(data) <= limit:
        return text
    if limit < len(ELLIPSIS.encode()):
        return data[:limit].decode("utf-8", "ignore")
    head = data[: limit - len(ELLIPSIS.encode())].decode("utf-8", "ignore")
    return head + ELLIPSIS


def clean(text: str | bytes, limit: int) -> str:
    """Text a model, a server or an operator chose, made safe and bounded for prose."""
    return truncate(sanitize(text), limit)
