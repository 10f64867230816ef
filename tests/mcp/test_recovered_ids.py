"""The id read back from a line that does not decode as a whole (too deep, too many digits, cut
off at the size bound) is the id the host wrote, or none: never another request's id."""

from __future__ import annotations

import json
import os
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentrt_proxy.mcp.jsonrpc import ID_SCAN_TOKENS, oversized_request_id
from agentrt_proxy.mcp.spans import top_level_id

DEEP = "[" * 1200 + "]" * 1200  # past the decoder's depth (about 990 at the proxy's stack)


@pytest.mark.parametrize("written", ["null", "true", "false", "1.5", "1e3", "-2.0E+1", '{"x":2}', "[3]"])
def test_an_id_that_is_not_a_string_or_an_integer_is_read_as_none_and_not_as_the_next_key_or_its_digits(
    written: str,
) -> None:
    text = '{"jsonrpc":"2.0","id":' + written + ',"method":"tools/call","params":{"a":' + DEEP + "}}"
    assert top_level_id(text) is None


@pytest.mark.parametrize(
    ("written", "read"), [("7", 7), ("-0", 0), ('"a\\"b"', 'a"b'), ("12345678901234567890", 12345678901234567890)]
)
def test_a_string_or_integer_id_is_read_exactly_wherever_it_stands(written: str, read: Any) -> None:
    first = '{"id":' + written + ',"method":"x","params":{"a":' + DEEP + "}}"
    last = '{"method":"x","params":{"a":' + DEEP + ',"id":9},"jsonrpc":"2.0","id":' + written + "}"
    assert top_level_id(first) == read
    assert top_level_id(last) == read  # the TypeScript SDK writes the id after the params


def test_the_search_for_an_id_gives_up_after_its_token_budget() -> None:
    text = '{"method":"x","params":{"a":[' + "0," * ID_SCAN_TOKENS + '0]},"id":5}'
    assert top_level_id(text) == 5
    assert top_level_id(text, ID_SCAN_TOKENS) is None


json_scalars = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text()
json_values = st.recursive(
    json_scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner, max_size=3),
    max_leaves=8,
)


def valid_id(value: Any) -> bool:
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


@settings(max_examples=int(os.environ.get("FUZZ_EXAMPLES", "200")), deadline=None)
@given(
    members=st.dictionaries(st.sampled_from(["jsonrpc", "method", "params", "x", "i", "d"]), json_values, max_size=4),
    msg_id=json_values,
    position=st.integers(min_value=0, max_value=4),
    deep_after=st.booleans(),
)
def test_a_line_too_deep_to_decode_yields_its_own_id_or_none(
    members: dict[str, Any], msg_id: Any, position: int, deep_after: bool
) -> None:
    items = [(k, json.dumps(v)) for k, v in members.items()]
    items.insert(min(position, len(items)), ("id", json.dumps(msg_id)))
    items.insert(len(items) if deep_after else 0, ("deep", DEEP))
    text = "{" + ",".join(f"{json.dumps(k)}:{v}" for k, v in items) + "}"
    assert top_level_id(text) == (msg_id if valid_id(msg_id) else None)


@settings(max_examples=int(os.environ.get("FUZZ_EXAMPLES", "200")), deadline=None)
@given(
    members=st.dictionaries(st.sampled_from(["jsonrpc", "method", "params", "x"]), json_values, max_size=3),
    msg_id=json_values,
    position=st.integers(min_value=0, max_value=3),
    cut=st.integers(min_value=0, max_value=400),
)
def test_the_beginning_of_an_oversized_line_yields_its_own_id_or_none(
    members: dict[str, Any], msg_id: Any, position: int, cut: int
) -> None:
    items = [(k, json.dumps(v, ensure_ascii=False)) for k, v in members.items()]
    items.insert(min(position, len(items)), ("id", json.dumps(msg_id, ensure_ascii=False)))
    text = "{" + ",".join(f"{json.dumps(k)}:{v}" for k, v in items) + ',"pad":"' + "x" * 1000 + '"}'
    head = text.encode("utf-8")[:cut]
    assert oversized_request_id(head) in ((msg_id, None) if valid_id(msg_id) else (None,))


def test_an_id_whose_digits_run_to_the_cut_is_not_read() -> None:
    assert oversized_request_id(b'{"jsonrpc":"2.0","id":123') is None  # it may be 1234… past the cut
    assert oversized_request_id(b'{"jsonrpc":"2.0","id":0.') is None  # it may be 0.5
    assert (
        oversized_request_id(b'{"jsonrpc":"2.0","id":"r-1" ') is None
    )  # nothing after it yet: read only what a "," or "}" closes
    assert oversized_request_id(b'{"jsonrpc":"2.0","id":123,') == 123
    assert oversized_request_id(b'{"jsonrpc":"2.0","id":"\xc3\xa9t","x":"\xc3') == "\u00e9t"  # a cut character
    assert oversized_request_id(b'{"jsonrpc":"2.0","x":"\xff","id":1,') is None  # not UTF-8: not a message
