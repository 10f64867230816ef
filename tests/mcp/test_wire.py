"""Bytes-in/bytes-out units: framing, JSON-RPC decoding/encoding, raw spans, SSE."""

from __future__ import annotations

import json

import pytest

from agentrt_proxy.canonical.encoder import WIRE, Raw
from agentrt_proxy.canonical.encoder import encode as encode_json
from agentrt_proxy.mcp._framing import LineBuffer
from agentrt_proxy.mcp._sse import SSEParser
from agentrt_proxy.mcp.jsonrpc import (
    Batch,
    DecodeFailure,
    ErrorResponse,
    Invalid,
    Notification,
    Request,
    Response,
    decode_line,
    encode,
)
from agentrt_proxy.mcp.server import negotiate_version, raw_arguments
from agentrt_proxy.mcp.spans import SpanError, find_span, raw_members, top_level_id, with_members_in_front

# ---------------------------------------------------------------- framing


def test_a_16_mib_line_is_framed_whole() -> None:
    buf = LineBuffer()
    payload = b'{"x":"' + b"a" * (16 << 20) + b'"}'
    lines: list[bytes] = []
    for i in range(0, len(payload), 65536):
        lines += buf.feed(payload[i : i + 65536])
    assert lines == []
    lines += buf.feed(b"\n{}\n")
    assert lines == [payload, b"{}"]


def test_crlf_is_tolerated_and_a_split_crlf_still_ends_one_line() -> None:
    buf = LineBuffer()
    assert buf.feed(b"one\r\ntwo\r") == [b"one"]
    assert buf.feed(b"\nthree") == [b"two"]
    assert buf.finish() == b"three"
    assert buf.finish() is None


def test_lines_arriving_a_byte_at_a_time_are_framed() -> None:
    buf = LineBuffer()
    out: list[bytes] = []
    for b in b"ab\ncd\n\n":
        out += buf.feed(bytes([b]))
    assert out == [b"ab", b"cd", b""]


# ---------------------------------------------------------------- JSON-RPC


def test_requests_notifications_and_responses_are_told_apart() -> None:
    req = decode_line(b'{"jsonrpc":"2.0","id":"a","method":"ping"}')
    assert isinstance(req, Request) and req.id == "a" and req.method == "ping"
    assert isinstance(decode_line(b'{"jsonrpc":"2.0","id":7,"method":"m","params":{}}'), Request)
    note = decode_line(b'{"jsonrpc":"2.0","method":"notifications/initialized"}')
    assert isinstance(note, Notification)
    res = decode_line(b'{"result":{},"jsonrpc":"2.0","id":3}')
    assert isinstance(res, Response) and res.id == 3
    err = decode_line(b'{"jsonrpc":"2.0","id":4,"error":{"code":-32601,"message":"nope","data":"x"}}')
    assert isinstance(err, ErrorResponse) and (err.code, err.message, err.data) == (-32601, "nope", "x")


def test_malformed_lines_are_classified_never_raised() -> None:
    assert isinstance(decode_line(b"garbage"), DecodeFailure)
    assert isinstance(decode_line(b'{"a":\xff}'), DecodeFailure)  # invalid UTF-8
    assert isinstance(decode_line(b'{"a":NaN}'), DecodeFailure)
    assert isinstance(decode_line(b"[" * 100000 + b"]" * 100000), DecodeFailure | Batch)
    assert decode_line(b"   ") is None
    null_id = decode_line(b'{"jsonrpc":"2.0","id":null,"method":"ping"}')
    assert isinstance(null_id, Invalid) and null_id.is_request and null_id.id is None
    bad_version = decode_line(b'{"jsonrpc":"1.0","id":5,"method":"ping"}')
    assert isinstance(bad_version, Invalid) and bad_version.id == 5
    stray = decode_line(b'{"jsonrpc":"2.0","hello":1}')
    assert isinstance(stray, Invalid) and not stray.is_request
    assert isinstance(decode_line(b"[1,2]"), Batch)
    assert isinstance(decode_line(b'"text"'), Invalid)


def test_encoding_is_one_compact_utf8_line_with_raw_json_written_verbatim() -> None:
    data = encode({"id": 1, "result": {"n": Raw("9007199254740993"), "t": "é\n"}})
    assert data == '{"id":1,"result":{"n":9007199254740993,"t":"é\\n"}}'.encode()
    assert b"\n" not in data
    # A lone surrogate cannot be UTF-8: it goes out as the escape it came in as.
    assert encode({"t": "\ud800"}) == b'{"t":"\\ud800"}'


MEMBER_TEXTS = [
    '{"content":[],"isError":false}',
    '{ "_meta" : { } , "content":[] }',
    '{"k\\u0041":1.50,"a":{"b":[1e400,"\\ud800"]}}',
    '{\n  "x": "é",\n  "y": null\n}',
    '{"a":1,"a":2}',
]


@pytest.mark.parametrize("text", MEMBER_TEXTS)
def test_an_object_written_from_its_member_texts_is_the_same_bytes(text: str) -> None:
    members = raw_members(text)
    assert [name for name, _key, _value in members] == [key for key, _value in json.loads(text, object_pairs_hook=list)]
    rebuilt = "{" + ",".join(f"{key}:{value}" for _name, key, value in members) + "}"
    assert rebuilt == text
    if len({name for name, _k, _v in members}) == len(members):
        assert encode_json({key: value for _name, key, value in members}, WIRE) == text


@pytest.mark.parametrize(
    ("text", "added", "written"),
    [
        ('{"content":[]}', {"resultType": "complete"}, '{"resultType":"complete","content":[]}'),
        ('{ "a" : 1.50 }', {"b": 2, "a": 3}, '{"b":2,"a" : 1.50 }'),
        (" { } ", {"resultType": "complete"}, '{"resultType":"complete"}'),
        ('{"resultType":"task"}', {"resultType": "complete"}, '{"resultType":"task"}'),
    ],
)
def test_members_go_in_front_of_a_raw_object_and_its_own_keep_their_bytes(
    text: str, added: dict[str, object], written: str
) -> None:
    assert with_members_in_front(text, added) == written


@pytest.mark.parametrize("text", ["[1]", '{"a"}', '{"a":1 "b":2}', '{"a":1,}'])
def test_member_texts_of_what_is_no_object_are_refused(text: str) -> None:
    with pytest.raises(SpanError):
        raw_members(text)


def test_version_negotiation_echoes_a_legacy_version_else_offers_the_latest() -> None:
    for v in ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"]:
        assert negotiate_version(v) == v
    assert negotiate_version("1999-01-01") == "2025-11-25"
    assert negotiate_version("2026-07-28") == "2025-11-25"
    assert negotiate_version(None) == "2025-11-25"


# ---------------------------------------------------------------- raw spans


def test_arguments_reach_the_handler_verbatim_with_duplicates_and_literals() -> None:
    args = '{ "a" : 1.50, "a":2, "big":9007199254740993, "s":"\\ud800", "e":1E+2 }'
    line = '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","arguments":' + args + "}}"
    assert raw_arguments(line) == args
    assert raw_arguments('{"params":{"name":"t"}}') is None
    assert raw_arguments('{"params":{"arguments":null}}') == "null"
    # A repeated "arguments" key resolves to the last one, as json.loads does.
    assert raw_arguments('{"params":{"arguments":{"x":1},"arguments":{"y":2}}}') == '{"y":2}'


def test_keys_match_exactly_and_case_sensitively() -> None:
    text = '{"Tools":[{"name":"x"}],"tools":[{"name":"a","inputSchema":{"n":1.0}}]}'
    span = find_span(text, ["tools", 0, "inputSchema"])
    assert span is not None and text[span[0] : span[1]] == '{"n":1.0}'
    assert find_span(text, ["tools", 1]) is None
    assert find_span(text, ["tools", "x"]) is None
    escaped = '{"input\\u0053chema":{"a":1}}'
    span = find_span(escaped, ["inputSchema"])
    assert span is not None and escaped[span[0] : span[1]] == '{"a":1}'


@pytest.mark.parametrize("ws", ["", " ", "\t", "\n", "\r", " \r\n\t "])
def test_a_span_is_found_whatever_json_whitespace_lies_between_the_tokens(ws: str) -> None:
    tokens = ["{", '"x"', ":", "0", ",", '"params"', ":", "{", '"arguments"', ":"]
    tokens += ["[", "1", ",", '"two"', "]", "}", "}"]
    text = ws + ws.join(tokens) + ws
    span = find_span(text, ["params", "arguments"])
    assert span is not None and json.loads(text[span[0] : span[1]]) == [1, "two"]
    assert text[span[0]] == "[" and text[span[1] - 1] == "]"  # the value alone, no whitespace around it
    assert [name for name, _key, _value in raw_members(text)] == ["x", "params"]


@pytest.mark.parametrize(
    "text",
    [
        '{"params":{"arguments":[1]},}',  # a comma before the brace
        '{"params":{"arguments":[1]},"z" 1}',  # a member after the one sought, its colon missing
        '{"params":{"arguments":[1]},"z":[1,}',  # a broken value after the one sought
        '{"params":{"arguments":[1]}',  # the object never closed
        '{"params":{"arguments":[1],"x":tru}}',  # a broken literal beside the one sought
        '[{"params":1}',  # no object where the first key is sought, and no value at all
    ],
)
def test_a_span_is_not_found_in_text_that_is_no_whole_value(text: str) -> None:
    with pytest.raises(SpanError):
        find_span(text, ["params", "arguments"])


def test_the_id_of_an_undecodable_answer_can_still_be_read() -> None:
    assert top_level_id('{"jsonrpc":"2.0","result":{"id":9,"x":[1,2,NaN]},"id":42}') == 42
    assert top_level_id('{"id":"r-1","result":{bad') == "r-1"
    assert top_level_id("not json at all") is None


# ---------------------------------------------------------------- SSE


def sse_events(body: bytes, step: int | None = None) -> list[bytes]:
    parser = SSEParser()
    out: list[bytes] = []
    chunks = [body] if step is None else [body[i : i + step] for i in range(0, len(body), step)]
    for chunk in chunks:
        out += parser.feed(chunk)
    return out + parser.finish()


@pytest.mark.parametrize("step", [None, 1, 2, 3, 7])
def test_sse_events_are_parsed_whatever_the_chunking(step: int | None) -> None:
    msg = b'{"jsonrpc":"2.0","id":1,"result":{}}'
    crlf = b"id: 1\r\nevent: message\r\ndata: " + msg + b"\r\n\r\n"
    assert sse_events(crlf, step) == [msg]
    cr_only = b"event: message\rdata:" + msg + b"\r\r"
    assert sse_events(cr_only, step) == [msg]
    split = b'data: {"jsonrpc":"2.0",\n: a comment in between\ndata: "id":1,"result":{}}\n\n'
    assert sse_events(split, step) == [b'{"jsonrpc":"2.0",\n"id":1,"result":{}}']
    assert json.loads(sse_events(split, step)[0]) == {"jsonrpc": "2.0", "id": 1, "result": {}}
    unterminated = b"data: " + msg
    assert sse_events(unterminated, step) == [msg]


def test_sse_skips_priming_events_and_other_event_names() -> None:
    body = b'id: abc\ndata: \n\nevent: other\ndata: {}\n\nevent:   message \ndata: {"a":1}\n\nretry: 500\n\n'
    assert sse_events(body) == [b'{"a":1}']
    assert sse_events(b"event: endpoint\ndata: /x\n\n") == []
