"""The one Go-compatible encoder and its styles (runtime-core §4.1-4.2, proxy-and-mcp-module §1.8-1.9).

Before the four writers it replaced were removed (the store's walk, the canonical forms'
``_encode``, the schema form's ``_write``, the manifest's ``_indent``), each style was checked
against its writer on random trees. What stays is the property where ``json.dumps`` should
agree: on trees without number literals every style is ``json.dumps`` (keys sorted or not,
compact or indented two spaces) followed by the style's escapes (spec: runtime-core §9.3).
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from agentrt_proxy.canonical._values import JSONBoundaryError, Number
from agentrt_proxy.canonical.encoder import (
    CANONICAL,
    MANIFEST,
    POLICY,
    SCHEMA,
    STORE,
    WIRE,
    WIRE_ASCII,
    Raw,
    Style,
    _go_json,
    _walker,
    encode,
    go_json,
)

CHARS = list('ab<>&\u2028\u2029"\\/\n\r\t\b\f\x00\x01\x1f\x7f\x85é😀 \u202e')
SURROGATES = ["\ud800", "\udbff", "\udc00", "\udfff"]

texts = st.text(st.sampled_from(CHARS), max_size=8)
texts_with_surrogates = st.text(st.sampled_from(CHARS + SURROGATES), max_size=8)
ints = st.integers(min_value=-(10**30), max_value=10**30)
finite_floats = st.floats(allow_nan=False, allow_infinity=False)


def trees(leaves: st.SearchStrategy[Any], keys: st.SearchStrategy[str]) -> st.SearchStrategy[Any]:
    def containers(children: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
        lists = st.lists(children, max_size=4)
        return lists | lists.map(tuple) | st.dictionaries(keys, children, max_size=4)

    return st.recursive(leaves, containers, max_leaves=24)


PLAIN = st.none() | st.booleans() | ints | finite_floats | texts


def escaped(text: str, characters: str) -> str:
    # Every character a style escapes can only occur inside a string of JSON text.
    table = {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028", "\u2029": "\\u2029"}
    for char in characters:
        text = text.replace(char, table[char])
    return text


def dumps(value: Any, **options: Any) -> str:
    options.setdefault("separators", (",", ":"))
    return json.dumps(value, ensure_ascii=False, **options)


@settings(max_examples=300, deadline=None)
@given(trees(PLAIN | st.floats() | texts_with_surrogates, texts_with_surrogates))
def test_the_store_style_is_json_dumps_made_html_safe(value: Any) -> None:
    assert encode(value, STORE) == _go_json(value) == go_json(value) == escaped(dumps(value), "<>&\u2028\u2029")


@settings(max_examples=300, deadline=None)
@given(trees(PLAIN, texts))
def test_the_canonical_style_is_sorted_json_dumps_made_html_safe(value: Any) -> None:
    assert encode(value, CANONICAL) == escaped(dumps(value, sort_keys=True), "<>&\u2028\u2029")


@settings(max_examples=300, deadline=None)
@given(trees(PLAIN, texts))
def test_the_policy_style_is_sorted_json_dumps(value: Any) -> None:
    assert encode(value, POLICY) == dumps(value, sort_keys=True)


@settings(max_examples=300, deadline=None)
@given(trees(st.none() | st.booleans() | ints | texts, texts))
def test_the_schema_style_is_sorted_json_dumps_with_the_line_separators_escaped(value: Any) -> None:
    assert encode(value, SCHEMA) == escaped(dumps(value, sort_keys=True), "\u2028\u2029")


@settings(max_examples=300, deadline=None)
@given(trees(PLAIN, texts))
def test_the_manifest_style_is_json_dumps_indented_two_spaces_made_html_safe(value: Any) -> None:
    assert encode(value, MANIFEST) == escaped(dumps(value, indent=2, separators=(",", ": ")), "<>&\u2028\u2029")


@settings(max_examples=300, deadline=None)
@given(trees(PLAIN | texts_with_surrogates, texts_with_surrogates))
def test_the_wire_style_writes_the_bytes_json_dumps_wrote_on_the_wire(value: Any) -> None:
    # What mcp.jsonrpc.encode wrote before the one encoder: compact, not ASCII, nothing escaped
    # but what JSON must, a lone surrogate kept (and everything escaped in the ASCII fallback).
    assert encode(value, WIRE) == json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    assert encode(value, WIRE_ASCII) == json.dumps(value, separators=(",", ":"), allow_nan=False)


@settings(max_examples=300, deadline=None)
@given(trees(PLAIN | st.floats() | st.sampled_from([Number("1.50"), Number("-0"), Raw("[1,{}]")]), texts))
def test_the_stores_c_fast_path_and_the_walk_write_the_same(value: Any) -> None:
    assert go_json(value) == _go_json(value)


def walked(value: Any, style: Style) -> str:
    out: list[str] = []
    _walker(style)(value, out)
    return "".join(out)


LEAVES = (PLAIN | st.floats() | texts_with_surrogates
          | st.sampled_from([Number("1.50"), Number("-0"), Raw("[1,{}]"), 2**70, -(2**64)]))
# Keys whose order a lone surrogate changes: Go sorts it as U+FFFD, after U+E000..U+FFFC.
KEYS = st.text(st.sampled_from(CHARS + SURROGATES + ["\uff01", "\ufffd"]), max_size=4)


def written(value: Any, write: Any) -> str:
    try:
        return str(write(value))
    except JSONBoundaryError as refused:  # a float that is not finite: refused alike
        return f"refused: {refused}"


@settings(max_examples=800, deadline=None)
@given(trees(LEAVES, KEYS), st.sampled_from(["CANONICAL", "POLICY", "SCHEMA"]))
@example([float("inf")], "CANONICAL")
@example({"a": [1, float("nan")]}, "POLICY")
@example({"\ud800": 1, "\uff01": 2, "a": 3}, "CANONICAL")
@example({"k": "\ud800<\u2028>"}, "SCHEMA")
def test_the_sorted_styles_c_path_and_the_walk_write_the_same(value: Any, name: str) -> None:
    # Lone surrogates in keys and strings, floats, literals, huge ints: whatever the C path takes
    # (or leaves to the walk), the bytes are the walk's; the request keys and hashes depend on them.
    style = {"CANONICAL": CANONICAL, "POLICY": POLICY, "SCHEMA": SCHEMA}[name]
    assert written(value, lambda v: encode(v, style)) == written(value, lambda v: walked(v, style))


def test_a_sorted_style_writes_a_tree_without_literals_or_floats_through_the_c_path() -> None:
    style = Style(sort_keys=True, escape_html=True)

    def no_walk(value: Any, out: list[str]) -> None:
        raise AssertionError("walked")

    style._walk = no_walk
    tree = {"b": [1, True, None, ("x", "<\u2028>")], "a": {"\ud800x": "y"}.get("none", "é"), "c": {}}
    assert encode(tree, style) == escaped(dumps(tree, sort_keys=True), "<>&\u2028\u2029")
    for walked_only in ({"n": Number("1")}, {"f": 1.5}, {"\ud800": 1}, {1: "a"}, [Raw("{}")]):
        with pytest.raises(AssertionError, match="walked"):
            encode(walked_only, style)


STYLES = {
    "STORE": STORE,
    "CANONICAL": CANONICAL,
    "POLICY": POLICY,
    "SCHEMA": SCHEMA,
    "MANIFEST": MANIFEST,
    "WIRE": WIRE,
}


@pytest.mark.parametrize("style", STYLES.values(), ids=STYLES.keys())
def test_every_style_writes_a_literal_as_the_text_it_holds(style: Style) -> None:
    value = {"n": Number("1.50"), "r": Raw('{"b":1,"a":[2e1]}')}
    assert encode(value, style).replace("\n", "").replace(" ", "") == '{"n":1.50,"r":{"b":1,"a":[2e1]}}'


@pytest.mark.parametrize(
    ("style", "text"),
    [
        (STORE, r'"\u003c\u0026\u003e \u2028 ' + "\ud800" + r" \n\u0001" + '\x7f"'),
        (CANONICAL, r'"\u003c\u0026\u003e \u2028 ' + "\ufffd" + r" \n\u0001" + '\x7f"'),
        (POLICY, '"<&> \u2028 \ufffd ' + r"\n\u0001" + '\x7f"'),
        (SCHEMA, r'"<&> \u2028 ' + "\ufffd" + r" \n\u0001" + '\x7f"'),
        (MANIFEST, r'"\u003c\u0026\u003e \u2028 ' + "\ufffd" + r" \n\u0001" + '\x7f"'),
        (WIRE, '"<&> \u2028 \ud800 ' + r"\n\u0001" + '\x7f"'),
    ],
    ids=STYLES.keys(),
)
def test_each_style_escapes_its_own_characters_in_a_string(style: Style, text: str) -> None:
    assert encode("<&> \u2028 \ud800 \n\x01\x7f", style) == text


@pytest.mark.parametrize(
    ("style", "written"),
    [(STORE, "[NaN,Infinity,-Infinity]"), *[(style, None) for style in (CANONICAL, POLICY, SCHEMA, MANIFEST, WIRE)]],
    ids=STYLES.keys(),
)
def test_a_float_that_is_not_finite_is_refused_by_every_style_but_the_store(style: Style, written: str | None) -> None:
    value = [float("nan"), float("inf"), float("-inf")]
    if written is not None:
        assert encode(value, style) == written
        return
    with pytest.raises(JSONBoundaryError, match="number nan is not JSON"):
        encode(value, style)


@pytest.mark.parametrize("style", [CANONICAL, POLICY, SCHEMA], ids=["CANONICAL", "POLICY", "SCHEMA"])
def test_keys_sort_by_their_utf8_bytes_with_a_lone_surrogate_as_u_fffd(style: Style) -> None:
    # Go sorts the keys its decoder made: a lone surrogate is U+FFFD, after U+E000 and before 😀.
    value = {"😀": 1, "\ud800": 2, "\ue000": 3, "b": 4, "B": 5, "é": 6}
    assert encode(value, style) == '{"B":5,"b":4,"é":6,"\ue000":3,"\ufffd":2,"😀":1}'


def test_the_store_keeps_the_order_given_and_writes_a_key_that_is_not_a_string_as_str() -> None:
    assert go_json({"z": 1, "a": 2, 3: None, True: [Number("1e1")]}) == '{"z":1,"a":2,"3":null,"True":[1e1]}'


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (5, "5"),
        ("x", '"x"'),
        ({}, "{}"),
        ([], "[]"),
        ({"a": []}, '{\n  "a": []\n}'),
        (
            [1, [2, {}], {"b": {"c": None}}],
            '[\n  1,\n  [\n    2,\n    {}\n  ],\n  {\n    "b": {\n      "c": null\n    }\n  }\n]',
        ),
        ({"a,b:": 'x:{y},[z]\\"'}, '{\n  "a,b:": "x:{y},[z]\\\\\\""\n}'),
    ],
)
def test_the_manifest_style_indents_as_gos_marshal_indent(value: Any, text: str) -> None:
    assert encode(value, MANIFEST) == text


# A typical tools/call answer, its recorded parts embedded as the literal text they were stored as.
CALL_ANSWER = {
    "jsonrpc": "2.0",
    "id": 7,
    "result": {
        "content": Raw('[{"type":"text","text":"paid 19.99 €"}]'),
        "structuredContent": Raw('{"amount":19.990,"n":9007199254740993}'),
        "isError": False,
    },
}


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (
            CALL_ANSWER,
            '{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"paid 19.99 €"}],'
            '"structuredContent":{"amount":19.990,"n":9007199254740993},"isError":false}}',
        ),
        ({"a": {"b": [Raw("1e400"), {"c": Raw(' { "d" : [ ] } ')}]}}, '{"a":{"b":[1e400,{"c": { "d" : [ ] } }]}}'),
        ([Raw("[]"), Raw('"x"'), Raw("null"), [Raw("{}")]], '[[],"x",null,[{}]]'),
        (
            {"n": Number("1.50"), "big": Number("12345678901234567890.5"), "e": Number("-0e-0")},
            '{"n":1.50,"big":12345678901234567890.5,"e":-0e-0}',
        ),
        (
            {"t": "é😀 <&> \u2028\u2029 \x00\x7f", "r": Raw('"é<&>\\u0000"')},
            '{"t":"é😀 <&> \u2028\u2029 \\u0000\x7f","r":"é<&>\\u0000"}',
        ),
        ({Raw(' "k\\u0041" '): Raw(" 1 "), "b": (1, 2.5, True, None)}, '{ "k\\u0041" : 1 ,"b":[1,2.5,true,null]}'),
        ({"z": 1, "a": 2}, '{"z":1,"a":2}'),
    ],
    ids=["a call's answer", "nested Raw", "Raw in lists", "numbers as literals", "non-ASCII", "a Raw key", "order"],
)
def test_the_wire_style_embeds_raw_json_and_number_literals_verbatim(value: Any, text: str) -> None:
    assert encode(value, WIRE) == text
    assert json.loads(text) is not None  # each row is JSON a host can read


def test_the_ascii_wire_escapes_every_character_outside_ascii_but_the_raw_text() -> None:
    value = {"t": "é\ud800", "r": Raw('"é"'), "n": Number("2.0")}
    assert encode(value, WIRE_ASCII) == '{"t":"\\u00e9\\ud800","r":"é","n":2.0}'
