"""The strict JSON boundary, the canonical and policy forms, and the request key.

Covers runtime-core §4 and proxy-and-mcp-module §2.3, and the original tests
TestRequestKey_CanonicalByLiteral and TestRequestKey_NoCollisions (proxy-and-mcp-module §5.2 items 7, 8).
"""

from __future__ import annotations

import hashlib
import json
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentrt_proxy import canonical
from agentrt_proxy.canonical import JSONBoundaryError, Number

TOOL = "bank_pay"
BASE = '{"to":"bob","amount":25}'


def key(arguments, tool: str = TOOL):
    return canonical.request_key(tool, arguments)


def refusal(raw) -> str:
    with pytest.raises(JSONBoundaryError) as caught:
        canonical.canonical_json(raw)
    return caught.value.reason


# ----------------------------------------------------------------- TestRequestKey_CanonicalByLiteral


@pytest.mark.parametrize(
    "same",
    [
        '{"amount":25,"to":"bob"}',  # reordered keys
        ' {\n\t"to" : "bob" ,\r\n "amount" :25 }\n',  # whitespace everywhere
        '{"\\u0074o":"\\u0062ob","amount":25}',  # escapes spell the same contents
        '{"to":"b\\u006fb","\\u0061mount":25}',
    ],
)
def test_key_order_whitespace_and_escape_spelling_do_not_change_the_key(same: str) -> None:
    # TestRequestKey_CanonicalByLiteral: keyed alike
    assert key(same) == key(BASE) is not None


@pytest.mark.parametrize(
    "other",
    [
        '{"to":"Bob","amount":25}',  # case
        '{"to":"bob ","amount":25}',  # trailing space
        '{"to":"bob","amount":25.0}',  # 10.0-style literal
        '{"to":"bob","amount":2.5e1}',  # exponent literal
        '{"to":"bob","amount":"25"}',  # a string, not a number
        '{"to":"bob","amount":-25}',  # negation
    ],
)
def test_any_change_to_contents_or_literal_keys_apart(other: str) -> None:
    # TestRequestKey_CanonicalByLiteral: keyed apart
    assert key(other) is not None
    assert key(other) != key(BASE)


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ('{"n":10}', '{"n":10.0}'),
        ('{"n":10}', '{"n":1e1}'),
        ('{"n":1.5}', '{"n":1.50}'),
        ('{"n":10}', '{"n":"10"}'),
        ('{"l":[1,2,3]}', '{"l":[3,2,1]}'),
    ],
)
def test_literals_and_array_order_key_apart(a: str, b: str) -> None:
    # TestRequestKey_CanonicalByLiteral
    assert key(a) is not None and key(b) is not None
    assert key(a) != key(b)


def test_another_tool_keys_the_same_arguments_apart() -> None:
    # TestRequestKey_CanonicalByLiteral: another tool
    assert key(BASE, "bank_refund") != key(BASE, "bank_pay")
    # the NUL separator: a tool name cannot run into the arguments
    assert key("{}", "a") != canonical.request_key("a{", "}")


def test_worked_request_key_example() -> None:
    # proxy-and-mcp-module §2.3: bank_pay {"to":"bob","amount":25}
    assert canonical.canonical_json(BASE) == b'{"amount":25,"to":"bob"}'
    expected = "1cd3d3207e0b7c022e7a7e6457004f8361a521824bb73c76c8822282c9eeff09"
    assert key(BASE) == expected
    assert hashlib.sha256(b"bank_pay\x00" + b'{"amount":25,"to":"bob"}').hexdigest() == expected


@pytest.mark.parametrize("absent", [None, "", "   ", "null", " null\n", b"null", b""])
def test_absent_blank_or_null_arguments_are_keyed_as_an_empty_object(absent) -> None:
    # proxy-and-mcp-module §2.3: absent, empty or null -> {}
    assert key(absent) == key("{}") == key(" { } ")


# ----------------------------------------------------------------------- TestRequestKey_NoCollisions


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("-0", "0"),
        ("-0.0", "0e5"),
        ("1.0", "1"),
        ("0.10", "0.1"),
        ("1e+2", "100"),
        ("1E2", "100"),
        (str(2**53 + 1), str(2**53)),
        ("1250.5", "1250.50"),
    ],
)
def test_numbers_equal_as_floats_still_key_apart(a: str, b: str) -> None:
    # TestRequestKey_NoCollisions
    ka, kb = key(f'{{"n":{a}}}'), key(f'{{"n":{b}}}')
    assert ka is not None and kb is not None
    assert ka != kb


def test_null_member_and_array_order_key_apart() -> None:
    # TestRequestKey_NoCollisions
    assert key('{"x":null}') != key("{}")
    assert key('{"l":[1,2]}') != key('{"l":[2,1]}')


@pytest.mark.parametrize(
    "refused",
    [
        '{"n":1e99999}',
        '{"n":1e-99999}',
        '{"n":1E+10001}',
        '{"a":1,"a":1}',
        '{"a":1,"\\u0061":1}',
        '{"s":"\\ud800"}',
        '{"s":"\\udc00"}',
        b'{"s":"\xff"}',
        b'{"s":"\xfe"}',
        "{} x",
        "00",
        '{"n":00}',
    ],
)
def test_arguments_the_boundary_refuses_have_no_key(refused) -> None:
    # TestRequestKey_NoCollisions: no key
    assert key(refused) is None


# --------------------------------------------------------------------------------- the boundary


def test_exactly_256_levels_are_accepted_and_257_refused() -> None:
    assert canonical.canonical_json("[" * 256 + "]" * 256) == ("[" * 256 + "]" * 256).encode()
    assert refusal("[" * 257 + "]" * 257) == "nested deeper than 256 levels"
    assert refusal('{"a":' * 257 + "1" + "}" * 257) == "nested deeper than 256 levels"


def test_brackets_inside_strings_do_not_count_as_depth() -> None:
    text = '["' + "[" * 300 + '{"]'
    assert canonical.canonical_json(text) == text.encode()


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        # depth before UTF-8
        (b"[" * 257 + b'"\xff"' + b"]" * 257, "nested deeper than 256 levels"),
        # UTF-8 before validity
        (b'{"a":"\xff"', "not valid UTF-8"),
        # validity before surrogates
        ('{"a":"\\ud800"', "not valid JSON"),
        # surrogates before duplicates
        ('{"a":"\\ud800","a":1}', "unpaired surrogate \\ud800"),
        # duplicates before number bounds
        ('{"a":1e10001,"a":1}', 'duplicate key "a"'),
    ],
)
def test_checks_run_in_the_originals_order(raw, reason: str) -> None:
    # runtime-core §4.3: first failure wins
    assert refusal(raw) == reason


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        (b'"\xff"', "not valid UTF-8"),
        (b'"\xfe"', "not valid UTF-8"),
        (b'"\xc3"', "not valid UTF-8"),
        ("", "not valid JSON"),
        ("   ", "not valid JSON"),
        ("{} x", "not valid JSON"),
        ("{}{}", "not valid JSON"),
        ("00", "not valid JSON"),
        ("NaN", "not valid JSON"),
        ("[NaN]", "not valid JSON"),
        ("Infinity", "not valid JSON"),
        ('{"n":-Infinity}', "not valid JSON"),
        ("[1,]", "not valid JSON"),
        ("'a'", "not valid JSON"),
        ('"\t"', "not valid JSON"),
        ('"\\ud800"', "unpaired surrogate \\ud800"),
        ('"\\udc00"', "unpaired surrogate \\udc00"),
        ('"\\uDC00"', "unpaired surrogate \\uDC00"),
        ('"\\ud800x"', "unpaired surrogate \\ud800"),
        ('"\\ud800\\u0041"', "unpaired surrogate \\ud800"),
        ('"\\ud800\\ud800\\udc00"', "unpaired surrogate \\ud800"),
        ('{"a":1,"a":2}', 'duplicate key "a"'),
        ('{"a":1,"\\u0061":2}', 'duplicate key "a"'),
        ('[{"k":[{"z":1,"z":1}]}]', 'duplicate key "z"'),
        ("1e10001", "number 1e10001 has an exponent beyond ±10000"),
        ("1e-10001", "number 1e-10001 has an exponent beyond ±10000"),
        ("1E+10001", "number 1E+10001 has an exponent beyond ±10000"),
        ("1e100000", "number 1e100000 has an exponent beyond ±10000"),
        ("1e-10000000", "number 1e-10000000 has an exponent beyond ±10000"),
    ],
)
def test_each_refusal_gives_the_originals_reason(raw, reason: str) -> None:
    assert refusal(raw) == reason


def test_the_first_repeated_key_in_text_order_is_named() -> None:
    assert refusal('{"b":{"x":1,"x":2},"a":{"y":1,"y":2}}') == 'duplicate key "x"'
    assert refusal('{"a":1,"a":{"x":1,"x":2}}') == 'duplicate key "a"'
    assert refusal('{"a":{"x":1,"x":2},"a":1}') == 'duplicate key "x"'


def test_an_escaped_surrogate_pair_is_one_character() -> None:
    assert canonical.canonical_json('"\\ud83d\\ude00"') == '"😀"'.encode()
    assert canonical.canonical_json('"\\\\ud800"') == b'"\\\\ud800"'  # an escaped backslash, no escape


@pytest.mark.parametrize("literal", ["1e10000", "1e-10000", "1E+10000", "-2.5e-010000", "1e000010000"])
def test_exponents_up_to_ten_thousand_are_accepted(literal: str) -> None:
    assert canonical.canonical_json(literal) == literal.encode()


def test_a_number_longer_than_ten_thousand_characters_is_refused() -> None:
    long_number = "0." + "0" * 9998 + "1"
    assert len(long_number) == 10_001
    assert refusal(f"[{long_number}]") == f"number {long_number[:24]}... is longer than 10000 characters"
    assert refusal("1" * 10_001) == f"number {'1' * 24}... is longer than 10000 characters"
    ten_thousand = "0." + "0" * 9997 + "1"
    assert canonical.canonical_json(f"[{ten_thousand}]") == f"[{ten_thousand}]".encode()


def test_a_nested_float_overflow_is_refused_but_a_top_level_one_is_not() -> None:
    # runtime-core §4.3 step 5: the token decoder's side effect
    with pytest.raises(JSONBoundaryError):
        canonical.canonical_json("[1e400]")
    assert canonical.canonical_json("1e400") == b"1e400"
    assert canonical.canonical_json("[1e-400]") == b"[1e-400]"


def test_a_str_with_a_raw_lone_surrogate_is_not_utf8() -> None:
    assert refusal('"\ud800"') == "not valid UTF-8"


def test_parse_strict_keeps_number_literals() -> None:
    value = canonical.parse_strict('{"a":1.50,"b":[1e1,-0]}')
    assert value == {"a": "1.50", "b": ["1e1", "-0"]}
    assert all(isinstance(n, Number) for n in canonical.iter_numbers(value))
    assert canonical.to_python(value) == {"a": 1.5, "b": [10.0, 0]}


# ------------------------------------------------------------------------------ the escaping


def test_canonical_form_escapes_html_characters_and_line_separators() -> None:
    raw = '"<a>&\\u2028\\u2029"'
    assert canonical.canonical_json(raw) == b'"\\u003ca\\u003e\\u0026\\u2028\\u2029"'


def test_policy_form_keeps_html_characters_and_line_separators_raw() -> None:
    value = canonical.parse_strict('{"b":"<a>&\\u2028\\u2029","a":1}')
    assert canonical.policy_text(value) == '{"a":1,"b":"<a>&\u2028\u2029"}'


def test_control_characters_use_short_escapes_or_lowercase_u00xx() -> None:
    raw = '"\\b\\f\\n\\r\\t\\u0000\\u0001\\u001F\\u001b\\"\\\\"'
    expected = b'"\\b\\f\\n\\r\\t\\u0000\\u0001\\u001f\\u001b\\"\\\\"'
    assert canonical.canonical_json(raw) == expected
    assert canonical.policy_text(canonical.parse_strict(raw)) == expected.decode()


def test_del_non_ascii_and_slash_are_written_raw() -> None:
    raw = '"\\u007f\\u00e9\\u6f22/\\/\\ud83d\\ude00"'
    assert canonical.canonical_json(raw) == '"\x7fé漢//😀"'.encode()


def test_keys_sort_by_utf8_bytes_not_utf16() -> None:
    # U+FF5E sorts before U+1F600 in UTF-8 byte order but after it in UTF-16 order
    raw = '{"\\ud83d\\ude00":1,"\\uff5e":2,"b":3,"B":4,"":5}'
    assert canonical.canonical_json(raw) == '{"":5,"B":4,"b":3,"～":2,"😀":1}'.encode()


def test_canonical_and_policy_forms_agree_without_html_characters() -> None:
    value = canonical.parse_strict('{"z":[1.0,true,false,null],"a":{"y":"x"}}')
    assert canonical.policy_text(value).encode() == canonical.canonical_bytes(value)
    assert canonical.canonical_bytes(value) == b'{"a":{"y":"x"},"z":[1.0,true,false,null]}'


def test_content_hash_hashes_the_canonical_form_or_else_the_raw_bytes() -> None:
    assert canonical.content_hash(' {"b":1, "a":2} ') == hashlib.sha256(b'{"a":2,"b":1}').hexdigest()
    assert canonical.content_hash('{"a":1,"a":1}') == hashlib.sha256(b'{"a":1,"a":1}').hexdigest()


# ------------------------------------------------------------------------------- properties

_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(st.characters(exclude_categories=("Cs",)), max_size=12),
)
_values = st.recursive(
    _scalars,
    lambda children: st.one_of(
        st.lists(children, max_size=4),
        st.dictionaries(st.text(st.characters(exclude_categories=("Cs",)), max_size=6), children, max_size=4),
    ),
    max_leaves=20,
)


def _escape_some(s: str, rng: random.Random) -> str:
    out = ['"']
    for ch in s:
        code = ord(ch)
        if ch in '"\\' or code < 0x20:
            out.append(f"\\u{code:04x}" if rng.random() < 0.5 else json.dumps(ch)[1:-1])
        elif rng.random() < 0.3:
            if code > 0xFFFF:
                code -= 0x10000
                hi, lo = 0xD800 + (code >> 10), 0xDC00 + (code & 0x3FF)
                out.append(f"\\u{hi:04x}\\u{lo:04X}" if rng.random() < 0.5 else f"\\u{hi:04X}\\u{lo:04x}")
            else:
                out.append(f"\\u{code:04X}" if rng.random() < 0.5 else f"\\u{code:04x}")
        elif ch == "/" and rng.random() < 0.5:
            out.append("\\/")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def _respell(value, rng: random.Random) -> str:
    """The same JSON value written another way: shuffled keys, random whitespace, escapes."""

    def ws() -> str:
        return "".join(rng.choice(" \t\n\r") for _ in range(rng.randint(0, 2)))

    if isinstance(value, dict):
        items = list(value.items())
        rng.shuffle(items)
        inner = ",".join(f"{ws()}{_escape_some(k, rng)}{ws()}:{ws()}{_respell(v, rng)}{ws()}" for k, v in items)
        return "{" + inner + ws() + "}"
    if isinstance(value, list):
        return "[" + ",".join(ws() + _respell(v, rng) + ws() for v in value) + ws() + "]"
    if isinstance(value, str):
        return _escape_some(value, rng)
    return json.dumps(value)


@settings(max_examples=200, deadline=None)
@given(_values)
def test_canonical_form_is_idempotent(value) -> None:
    once = canonical.canonical_json(json.dumps(value))
    assert canonical.canonical_json(once) == once
    assert canonical.canonical_bytes(canonical.parse_strict(once)) == once


@settings(max_examples=200, deadline=None)
@given(_values, st.randoms(use_true_random=False))
def test_respelling_a_value_never_changes_its_key(value, rng) -> None:
    # TestRequestKey_CanonicalByLiteral as a property: order, whitespace, escape spelling
    plain = json.dumps(value, ensure_ascii=False)
    respelled = _respell(value, rng)
    assert key(respelled) == key(plain) is not None
    assert key(json.dumps(value, ensure_ascii=True, indent=2)) == key(plain)


@settings(max_examples=200, deadline=None)
@given(_values, _values)
def test_different_canonical_forms_have_different_keys(a, b) -> None:
    # TestRequestKey_NoCollisions as a property (top-level null is keyed as {} by design)
    a, b = ({} if a is None else a), ({} if b is None else b)
    ca, cb = canonical.canonical_json(json.dumps(a)), canonical.canonical_json(json.dumps(b))
    if ca != cb:
        assert key(json.dumps(a)) != key(json.dumps(b))
    else:
        assert key(json.dumps(a)) == key(json.dumps(b))


def test_parses_on_several_threads_at_once_each_report_their_own_findings() -> None:
    # Each thread keeps one decoder and one parse state (canonical._strict._Decoding): a parse on
    # one thread must never see what a parse on another noticed (a duplicate key, an overflow).
    import sys
    import threading

    docs = {
        "clean": ('{"a": [' + ",".join(f'{{"k{i}": {i}.50}}' for i in range(300)) + "]}", None),
        "duplicate": (
            '{"a": [' + ",".join(f'{{"k": {i}}}' for i in range(300)) + '], "d": 1, "d": 2}',
            "duplicate key",
        ),
        "overflow": ("[" + ",".join(["1"] * 300 + ["1e999"]) + "]", "overflows"),
    }
    failures: list[str] = []
    start = threading.Barrier(len(docs))

    def parse_many(name: str) -> None:
        text, refusal = docs[name]
        start.wait()
        for _ in range(200):
            try:
                value = canonical.parse_strict(text)
            except canonical.JSONBoundaryError as err:
                if refusal is None or refusal not in err.reason:
                    failures.append(f"{name}: refused: {err.reason}")
                continue
            if refusal is not None:
                failures.append(f"{name}: accepted")
            elif value["a"][299] != {"k299": "299.50"}:
                failures.append(f"{name}: {value['a'][299]}")

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads as often as the interpreter can, inside the hooks too
    try:
        threads = [threading.Thread(target=parse_many, args=(name,)) for name in docs]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        sys.setswitchinterval(interval)
    assert failures == []
