"""Which request a message too large to read answers, from the edges the framing kept of it.

A server that sends more than ``max_message_bytes`` in one message has answered something,
and the proxy must not hold the message to find out what. The framing keeps the message's
first and last bytes (``framing.EDGE_BYTES`` each). The answer is matched to a request only
when that is certain for a well-formed message:

- its beginning shows a top-level ``result`` or ``error`` member and no ``method`` (so it is
  an answer, not a request or notification from the server), and
- its ``id`` is read either among the top-level members before the huge value (the Python
  SDK writes ``jsonrpc``, ``id``, ``result``), or as the last member, right before the
  closing brace (the TypeScript SDK writes ``result``, ``jsonrpc``, ``id``). The member just
  before an object's final ``}`` is that object's own, so the end alone reads the top level.

Anything else names no request: the caller fails every call in flight as a protocol failure.
"""

from __future__ import annotations

import json
import re

from agentrt_proxy.mcp import _messages as M
from agentrt_proxy.mcp._framing import Oversize

__all__ = ["answer_id", "partial_id", "too_long", "whole_characters"]

_WS = re.compile(r"[ \t\n\r]*")
_SCAN = json.JSONDecoder().scan_once  # type: ignore[attr-defined]
_LAST_ID = re.compile(r'[,{][ \t\n\r]*"id"[ \t\n\r]*:[ \t\n\r]*(-?(?:0|[1-9][0-9]*))[ \t\n\r]*\}[ \t\n\r]*\Z')
_MISSING = object()


def _ws(text: str, i: int) -> int:
    m = _WS.match(text, i)
    assert m is not None
    return m.end()


def _head(head: bytes) -> tuple[bool, bool, object]:
    """The top-level members readable in a message's first bytes: (an answer's member seen,
    ``method`` seen, the ``id`` or ``_MISSING``). Stops where the text is cut off."""
    text = head.decode("utf-8", "replace")
    answer = method = False
    ident: object = _MISSING
    i = _ws(text, 0)
    if text[i : i + 1] != "{":
        return answer, method, ident
    i = _ws(text, i + 1)
    while text[i : i + 1] == '"':
        try:
            key, i = json.decoder.scanstring(text, i + 1)  # type: ignore[attr-defined]
        except ValueError:
            break  # the key itself is cut off
        i = _ws(text, i)
        if text[i : i + 1] != ":":
            break
        i = _ws(text, i + 1)
        answer = answer or key in ("result", "error")
        method = method or key == "method"
        if answer and ident is not _MISSING:
            break  # enough: the huge value usually follows
        try:
            value, end = _SCAN(text, i)
        except (StopIteration, ValueError, RecursionError):
            break  # the value is cut off
        if key == "id":
            ident = value
        i = _ws(text, end)
        if text[i : i + 1] != ",":
            break
        i = _ws(text, i + 1)
    return answer, method, ident


def _request_id(value: object) -> int | None:
    # The proxy's own ids are integers; true and false are not ids, though Python calls them ints.
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def answer_id(head: bytes, tail: bytes | None) -> int | None:
    """The proxy request an oversize message answers, when its edges say so for certain."""
    answer, method, ident = _head(head)
    if not answer or method:
        return None
    if ident is not _MISSING:
        return _request_id(ident)
    if tail is None:
        return None
    match = _LAST_ID.search(tail.decode("utf-8", "replace"))
    return int(match.group(1)) if match else None


def partial_id(head: bytes) -> int | str | None:
    """The top-level ``id`` readable in the beginning of a line still arriving, if any."""
    ident = _head(head)[2]
    if isinstance(ident, str):
        return ident
    return _request_id(ident)


def too_long(line: Oversize) -> str:
    """Why an answer past max_message_bytes was refused: its size once its end has come."""
    mib = 1 << 20
    limit = M.ANSWER_LIMIT.format(limit=line.limit, limit_mib=line.limit / mib)
    if line.tail is None:
        return M.ANSWER_LONGER.format(limit=limit)
    return M.ANSWER_OVER.format(size=line.size, size_mib=line.size / mib, limit=limit)


def whole_characters(head: bytes) -> bytes:
    """``head`` without a UTF-8 character the cut split at its end (so the record keeps text)."""
    try:
        head.decode("utf-8")
    except UnicodeDecodeError as err:
        if err.reason == M.UTF8_CUT:
            return head[: err.start]
    return head
