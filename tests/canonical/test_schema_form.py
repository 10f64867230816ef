"""The canonical schema form of proxy-and-mcp-module §1.8 and the two pin hashes."""

from __future__ import annotations

import hashlib

import pytest

from agentrt_proxy.canonical.schema_form import (
    SchemaFormError,
    canonical_schema,
    description_hash,
    encode_string,
    schema_hash,
)

# TestCanonicalSchema_KeepsWhatFloat64WouldLose, plus the float64-exact examples of proxy-and-mcp-module §1.8.
LITERALS = [
    ("9007199254740993", "9007199254740993"),
    ("0.10000000000000000000010", "0.1000000000000000000001"),
    ("1.00000000000000000001e300", "1.00000000000000000001e+300"),
    ("-9007199254740993.000", "-9007199254740993"),
    ("9.007199254740993E15", "9007199254740993"),
    ("0.00000012345678901234567890123", "1.2345678901234567890123e-7"),
    ("123456789012345678901234567890", "1.2345678901234567890123456789e+29"),
    ("1.0", "1"),
    ("1e2", "100"),
    ("1E+2", "100"),
    ("-0", "-0"),
    ("0.1", "0.1"),
    ("1e21", "1e+21"),
    ("0.000001", "0.000001"),
    ("1e-7", "1e-7"),
    ("9007199254740992", "9007199254740992"),
    ("1e400", "1e+400"),
    ("1e-400", "1e-400"),
]


@pytest.mark.parametrize(("literal", "expected"), LITERALS)
def test_a_number_keeps_what_float64_would_lose(literal: str, expected: str) -> None:
    assert canonical_schema(literal) == expected.encode()
    assert canonical_schema(f'{{"maximum":{literal}}}') == f'{{"maximum":{expected}}}'.encode()


def test_keys_are_sorted_and_whitespace_dropped() -> None:
    raw = b'{ "type" : "object", "required": ["path"], "properties": {"path": {"type": "string"}} }'
    assert canonical_schema(raw) == (
        b'{"properties":{"path":{"type":"string"}},"required":["path"],"type":"object"}'
    )


def test_strings_are_escaped_as_go_writes_them_without_html_escaping() -> None:
    raw = '{"d":"<b>&amp;</b> \u2028 \u00e9 \\b\\f\\n\\u0001\\u007f \\ud800 \\"q\\\\"}'
    assert canonical_schema(raw) == (
        '{"d":"<b>&amp;</b> \\u2028 \u00e9 \\b\\f\\n\\u0001\u007f \ufffd \\"q\\\\"}'.encode()
    )


def test_invalid_utf8_bytes_each_become_a_replacement_character() -> None:
    assert canonical_schema(b'"a\xe2\x82b\xff"') == '"a\ufffd\ufffdb\ufffd"'.encode()


def test_a_duplicated_key_keeps_its_last_value() -> None:
    assert canonical_schema('{"a":1,"a":2}') == b'{"a":2}'


def test_empty_input_is_null_and_trailing_data_is_an_error() -> None:
    assert canonical_schema(b"") == b"null"
    assert canonical_schema(b"  \n") == b"null"
    with pytest.raises(SchemaFormError, match="trailing data after the schema"):
        canonical_schema(b'{"a":1} {}')
    with pytest.raises(SchemaFormError):
        canonical_schema(b'{"a":NaN}')
    with pytest.raises(SchemaFormError):
        canonical_schema(b'{"a":')


def test_hashes_are_sha256_of_the_canonical_forms() -> None:
    assert description_hash("Read a file.") == (
        "f83d56c834a0029f639f3db5e497620fcad6f2a8367d31e34238a3a9ae0c2020"
    )
    canonical = b'{"properties":{"path":{"type":"string"}},"required":["path"],"type":"object"}'
    raw = b'{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}'
    assert schema_hash(raw) == hashlib.sha256(canonical).hexdigest()


def test_encode_string_matches_go_for_controls() -> None:
    assert encode_string("\x00\x1f\t") == '"\\u0000\\u001f\\t"'
