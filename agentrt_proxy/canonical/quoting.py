"""Go's ``%q``: the one way the program double-quotes a name or a value inside a message.

The original's messages quote with ``%q`` (``duplicate key "a"``, ``mcp: server "fs": …``,
``the rule hides "x" …``), which is ``strconv.Quote``: ``"`` and ``\\`` get a backslash; ``\\a``
``\\b`` ``\\f`` ``\\n`` ``\\r`` ``\\t`` ``\\v`` their short escapes; any other control character
below U+0080 (DEL too) is ``\\xHH``; every other character that is not printable (categories C
and Z but the ASCII space: the C1 controls, U+00A0 and the other spaces, the bidi and zero-width
controls, U+2028/U+2029, unassigned and private-use code points) is ``\\uHHHH``, or ``\\UHHHHHHHH``
above U+FFFF; printable text stays as it is. A lone surrogate (which Go's strings cannot hold:
its decoder made it U+FFFD) is written ``\\ufffd``.

``go_escape`` is the same without the quotes and without escaping ``"`` and ``\\``: server-chosen
text made safe for one line of an error message.
"""

from __future__ import annotations

__all__ = ["go_escape", "go_quote"]

_SHORT = {"\a": "\\a", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t", "\v": "\\v"}


def _escaped(text: str, quoted: bool) -> str:
    out: list[str] = []
    for char in text:
        if char in _SHORT:
            out.append(_SHORT[char])
        elif quoted and char in '"\\':
            out.append("\\" + char)
        elif "\ud800" <= char <= "\udfff":
            out.append("\\ufffd")
        elif char.isprintable():
            out.append(char)
        elif char < "\x80":
            out.append(f"\\x{ord(char):02x}")
        elif char <= "\uffff":
            out.append(f"\\u{ord(char):04x}")
        else:
            out.append(f"\\U{ord(char):08x}")
    return "".join(out)


def go_quote(text: str) -> str:
    """``text`` as Go's ``%q`` writes it (see the module's description)."""
    if text.isprintable() and '"' not in text and "\\" not in text:
        return f'"{text}"'
    return f'"{_escaped(text, True)}"'


def go_escape(text: str) -> str:
    """``text`` with ``%q``'s escapes but neither quotes nor escaped ``"`` and ``\\``."""
    if text.isprintable():
        return text
    return _escaped(text, False)
