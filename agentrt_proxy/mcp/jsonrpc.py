"""JSON-RPC 2.0 messages as MCP uses them: decoding one line, encoding one message.

Pure functions, no I/O. Decoding keeps the line's text so callers can take raw
spans (``params.arguments``, ``result.structuredContent``) from it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from agentrt_proxy.canonical import encoder
from agentrt_proxy.canonical.encoder import WIRE, WIRE_ASCII
from agentrt_proxy.canonical.message_size import MAX_MESSAGE_VALUES, too_many_values
from agentrt_proxy.errors import InvalidValue
from agentrt_proxy.mcp import _messages as M
from agentrt_proxy.mcp.spans import SpanError, iter_members, top_level_id

__all__ = [
    "INTERNAL_ERROR",
    "INVALID_PARAMS",
    "INVALID_REQUEST",
    "METHOD_NOT_FOUND",
    "PARSE_ERROR",
    "Batch",
    "DecodeFailure",
    "ErrorResponse",
    "Invalid",
    "Notification",
    "Request",
    "Response",
    "classify",
    "decode_line",
    "encode",
    "error_message",
    "oversized_request_id",
]

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
MSG_TOO_DEEP = M.TOO_DEEP
MSG_TOO_MANY_DIGITS = M.TOO_MANY_DIGITS
MSG_NOT_INITIALIZED = M.NOT_INITIALIZED
MSG_TOO_MANY_VALUES = M.TOO_MANY_VALUES
MSG_REPEATED_KEY = M.REPEATED_KEY
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603

RequestId = str | int

HEAD_BYTES = 1 << 16  # of a message refused undecoded, searched for its id (every SDK writes it early)

# How many tokens of a line that does not decode are searched for its id: about 0.15 s at
# most, so a hostile 16 MiB line cannot hold the event loop (and the leases) for seconds.
ID_SCAN_TOKENS = 250_000


@dataclass(frozen=True)
class Request:
    id: RequestId
    method: str
    params: dict[str, Any] | None
    text: str  # the JSON text of this message (a line, or a batch element's span)


@dataclass(frozen=True)
class Notification:
    method: str
    params: dict[str, Any] | None
    text: str


@dataclass(frozen=True)
class Response:
    id: RequestId
    result: Any
    text: str


@dataclass(frozen=True)
class ErrorResponse:
    id: RequestId | None
    code: int
    message: str
    data: Any
    text: str


@dataclass(frozen=True)
class Invalid:
    """Well-formed JSON that is not a valid message; ``id`` is the request id if readable."""

    id: RequestId | None
    reason: str
    is_request: bool  # it carried a method, so it deserves an -32600 answer


@dataclass(frozen=True)
class Batch:
    """A JSON array line; ``items`` are the element objects, ``text`` the whole line."""

    items: list[Any]
    text: str


@dataclass(frozen=True)
class DecodeFailure:
    """The line could not be decoded. Not JSON (or not UTF-8): JSON-RPC answers -32700 with id
    null. Valid JSON nested past the decoder's depth: ``request_id`` is the top-level id read
    from the line, so the request it belongs to is still answered (-32600, with that id)."""

    reason: str
    request_id: RequestId | None = None
    undecoded: bool = False  # refused by its weight before decoding (its id read from its edges)


Message = Request | Notification | Response | ErrorResponse


class _NotJSON(InvalidValue):
    """NaN or Infinity: not JSON, unlike a number past the decoder's digit limit (which is)."""


def _refuse_constant(name: str) -> Any:
    raise _NotJSON(M.NUMBER_NOT_JSON.format(name=name))


class _Repeated(dict[str, Any]):
    """A decoded object whose text repeated a key (its value is the last one's, as ``json``
    keeps). Only the envelope's objects are refused for it (``classify``); deeper ones are the
    arguments' or the result's, which the strict boundary refuses in its own words."""

    repeated_key = ""


def _object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj = dict(pairs)
    if len(obj) == len(pairs):
        return obj
    repeated = _Repeated(obj)
    seen: set[str] = set()
    for key, _ in pairs:
        if key in seen:
            repeated.repeated_key = key
            break
        seen.add(key)
    return repeated


_DECODER = json.JSONDecoder(parse_constant=_refuse_constant, object_pairs_hook=_object)


def _repeated_in_envelope(obj: dict[str, Any]) -> str | None:
    """Why the envelope is refused for a repeated key: the message object, its ``params`` (and
    their ``_meta``), its ``error`` and its ``result``, each at its own top level."""
    parts: list[tuple[str, Any]] = [("message", obj)]
    params = obj.get("params")
    parts += [("params", params)]
    if isinstance(params, dict):
        parts.append(("params._meta", params.get("_meta")))
    parts += [("error", obj.get("error")), ("result", obj.get("result"))]
    for part, value in parts:
        if isinstance(value, _Repeated):
            return MSG_REPEATED_KEY.format(key=json.dumps(value.repeated_key, ensure_ascii=False), part=part)
    return None


def _valid_id(value: Any) -> bool:
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


def classify(obj: Any, text: str) -> Message | Invalid:
    """Sort one decoded JSON value into a message kind."""
    if not isinstance(obj, dict):
        return Invalid(None, M.NOT_AN_OBJECT, False)
    raw_id = obj.get("id")
    has_id = "id" in obj and raw_id is not None
    msg_id = raw_id if _valid_id(raw_id) else None
    repeated = _repeated_in_envelope(obj)
    if repeated is not None:
        # Never the id of a message that gives two: which one it meant cannot be known.
        known_id = None if isinstance(obj, _Repeated) and obj.repeated_key == "id" else msg_id
        return Invalid(known_id, repeated, "method" in obj)
    if "method" in obj:
        method = obj["method"]
        if obj.get("jsonrpc") != "2.0":
            return Invalid(msg_id, 'jsonrpc must be "2.0"', has_id)
        if not isinstance(method, str):
            return Invalid(msg_id, M.METHOD_NOT_STRING, has_id)
        params = obj.get("params")
        if params is not None and not isinstance(params, dict):
            return Invalid(msg_id, M.PARAMS_NOT_OBJECT, has_id)
        if not has_id:
            if "id" in obj:  # an explicit null id: MCP forbids it in requests
                return Invalid(None, M.NULL_REQUEST_ID, True)
            return Notification(method, params, text)
        if msg_id is None:
            return Invalid(None, M.BAD_REQUEST_ID, True)
        return Request(msg_id, method, params, text)
    if "result" in obj and msg_id is not None:
        return Response(msg_id, obj["result"], text)
    if isinstance(obj.get("error"), dict):
        err = obj["error"]
        code = err.get("code")
        message = err.get("message")
        return ErrorResponse(
            msg_id,
            code if isinstance(code, int) and not isinstance(code, bool) else INTERNAL_ERROR,
            message if isinstance(message, str) else "",
            err.get("data"),
            text,
        )
    return Invalid(msg_id, M.NOT_A_MESSAGE, False)


def decode_line(line: bytes) -> Message | Invalid | Batch | DecodeFailure | None:
    """Decode one framed line. ``None`` for a blank line (tolerated, ignored)."""
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError:
        return DecodeFailure(M.NOT_UTF8)
    if not text.strip(" \t\r\n"):
        return None
    if too_many_values(line):
        reason = MSG_TOO_MANY_VALUES.format(limit=MAX_MESSAGE_VALUES)
        return DecodeFailure(reason, oversized_request_id(line[:HEAD_BYTES]), undecoded=True)
    try:
        obj = _DECODER.decode(text)
    except RecursionError:
        return DecodeFailure(MSG_TOO_DEEP, top_level_id(text, ID_SCAN_TOKENS))
    except (json.JSONDecodeError, _NotJSON) as exc:
        return DecodeFailure(M.NOT_JSON.format(error=exc))
    except ValueError:
        # Valid JSON whose integer is past Python's digit limit: the request is answered by its id.
        return DecodeFailure(MSG_TOO_MANY_DIGITS, top_level_id(text, ID_SCAN_TOKENS))
    if isinstance(obj, list):
        return Batch(obj, text)
    return classify(obj, text)


def oversized_request_id(head: bytes) -> RequestId | None:
    """The id of a message cut off at ``head`` (its beginning): read strictly, member by member,
    so junk never yields an id; ``None`` unless a whole top-level id comes before the cut."""
    try:
        text = head.decode("utf-8")
    except UnicodeDecodeError as exc:
        if exc.start < len(head) - 3:
            return None  # not UTF-8 before the cut: not a message
        text = head[: exc.start].decode("utf-8")  # the cut split a character
    try:
        for key, start, end in iter_members(text, 0):
            if key != "id":
                continue
            if text[end:].lstrip(" \t\r\n")[:1] not in (",", "}"):
                return None  # the value runs to the cut or into junk: "0." may be 0.5, "12" 123
            value = json.loads(text[start:end])
            return value if _valid_id(value) else None
    except (SpanError, ValueError):
        pass  # the cut (or junk) before any top-level id
    return None


def encode(message: Any) -> bytes:
    """One message as compact UTF-8 JSON without a newline, in the encoder's ``WIRE`` style
    (a ``canonical.encoder.Raw`` written verbatim, a ``canonical.Number`` as its literal)."""
    try:
        return encoder.encode(message, WIRE).encode("utf-8")
    except UnicodeEncodeError:
        # A lone surrogate (from a "\ud800" escape) cannot be written as UTF-8;
        # ASCII escaping keeps it as the escape it arrived as.
        return encoder.encode(message, WIRE_ASCII).encode("utf-8")


def request(msg_id: RequestId, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
    msg: dict[str, Any] = {"jsonrpc": "2.0", "id": msg_id, "method": method}
    if params is not None:
        msg["params"] = params
    return msg


def notification(method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
    msg: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
    if params is not None:
        msg["params"] = params
    return msg


def result(msg_id: RequestId, value: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": msg_id, "result": value}


def error(msg_id: RequestId | None, code: int, message: str, data: Any = None) -> dict[str, Any]:
    err: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        err["data"] = data
    return {"jsonrpc": "2.0", "id": msg_id, "error": err}


def error_message(code: int) -> str:
    return {
        PARSE_ERROR: "Parse error",
        INVALID_REQUEST: "Invalid Request",
        METHOD_NOT_FOUND: "Method not found",
        INVALID_PARAMS: "Invalid params",
        INTERNAL_ERROR: "Internal error",
    }.get(code, "Error")
