"""How many JSON values a message holds, weighed before it is decoded.

A message's bytes bound what it costs to hold, not what it costs to decode: 12.6 MB of ``{}``
decodes to 4.2 million dicts (27 bytes of objects for each byte of text, before any copy), and
decoding them holds the interpreter for seconds (bench/message_shapes_rss.py). So a message is weighed
first, without making an object: its values (every object, array, string, number, ``true``,
``false`` and ``null``) and its object keys, each counting one. Past ``MAX_MESSAGE_VALUES`` it is
refused undecoded.

The weight is read from bytes counts in three steps, each only when the one before cannot tell:
the count of commas, colons and opening brackets of the raw bytes (an upper bound: a string may
hold them too; a few ms for 16 MiB) accepts almost every message; the count of its string
literals (a lower bound, from its quotes) refuses a message of many short strings; only a message
between the two has its string literals cut out (one regular-expression pass over at most
``MAX_MESSAGE_VALUES`` literals) and is counted exactly, so a long text full of commas passes.
"""

from __future__ import annotations

import re

__all__ = ["MAX_MESSAGE_VALUES", "too_many_values"]

# The most values and keys one message may hold. Half a million ``{}``, the costliest kind,
# decode in about 0.1 s to about 40 MB of objects (bench/message_shapes_rss.py); a real tool list
# or answer holds far fewer (a result is capped at max_result_bytes anyway).
MAX_MESSAGE_VALUES = 500_000

_STRING_LITERAL = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)  # unrolled: no step per character


def _weight(data: bytes) -> int:
    """Values and keys, when ``data`` holds no string literal: every value but the first of its
    container follows a comma, every key is followed by a colon; ``[]`` and ``{}`` hold none."""
    opened = data.count(b"[") + data.count(b"{") - data.count(b"[]") - data.count(b"{}")
    return data.count(b",") + data.count(b":") + opened + 1


def too_many_values(data: bytes, limit: int = MAX_MESSAGE_VALUES) -> bool:
    """Whether ``data`` holds more than ``limit`` values and keys (for JSON; for text that is not
    JSON it may say either, and the decoder refuses that text anyway)."""
    if _weight(data) <= limit:  # a string's own commas, colons and brackets only add to it
        return False
    # Each literal has two quotes that no backslash escapes; ``\\"`` is counted as escaped too,
    # so this is a lower bound on the literals (keys or values, each counting one).
    if (data.count(b'"') - data.count(b'\\"')) // 2 > limit:
        return True
    stripped = _STRING_LITERAL.sub(b"", data)
    quote = stripped.find(b'"')
    if quote >= 0:  # an unterminated string: the rest of the input is inside it
        stripped = stripped[:quote]
    return _weight(stripped) > limit
