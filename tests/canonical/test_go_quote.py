"""The one Go-style quote: ``go_quote`` is Go's ``%q`` (``strconv.Quote``), ``go_escape`` its body.

Every message that quotes a name or a value uses it: the boundary's ``duplicate key``, the wire's
``mcp: server "fs": …``, the load checks, the model's and the operator's sentences.
"""

from __future__ import annotations

import ast

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentrt_proxy import canonical
from agentrt_proxy.canonical._strict import JSONBoundaryError
from agentrt_proxy.canonical.quoting import go_escape, go_quote
from agentrt_proxy.mcp import spec
from agentrt_proxy.text import escaping

# (text, what Go's strconv.Quote writes)
AS_GO_QUOTES = [
    ("", '""'),
    ("plain", '"plain"'),
    ('a "b" \\ c', '"a \\"b\\" \\\\ c"'),
    ("\a\b\f\n\r\t\v", '"\\a\\b\\f\\n\\r\\t\\v"'),
    ("\x00\x01\x1b\x7f", '"\\x00\\x01\\x1b\\x7f"'),
    ("\x85\x9f", '"\\u0085\\u009f"'),
    ("\u00a0\u3000", '"\\u00a0\\u3000"'),
    ("é 漢字 😀 e\u0301", '"é 漢字 😀 e\u0301"'),
    ("\u202e\u200b\ufeff\u00ad", '"\\u202e\\u200b\\ufeff\\u00ad"'),
    ("\u2028\u2029", '"\\u2028\\u2029"'),
    ("\ue000", '"\\ue000"'),
    ("\U000e0041\U0010ffff", '"\\U000e0041\\U0010ffff"'),
    ("\ud800", '"\\ufffd"'),
]


@pytest.mark.parametrize(("text", "quoted"), AS_GO_QUOTES, ids=range(len(AS_GO_QUOTES)))
def test_go_quote_writes_what_gos_strconv_quote_writes(text: str, quoted: str) -> None:
    assert go_quote(text) == quoted


@pytest.mark.parametrize(
    ("text", "escaped"),
    [
        ("plain", "plain"),
        ('say "hi" \\', 'say "hi" \\'),
        ("line\nbreak\x1b[2J\u202e", "line\\nbreak\\x1b[2J\\u202e"),
        ("\x07bell", "\\abell"),
    ],
)
def test_go_escape_is_the_quote_without_quotes(text: str, escaped: str) -> None:
    assert go_escape(text) == escaped


@settings(max_examples=500, deadline=None)
@given(st.text(st.characters(exclude_categories=("Cs",))))
def test_a_quoted_text_is_one_printable_literal_that_reads_back_as_the_text(text: str) -> None:
    # Go's escapes are Python's too, so the quote reads back exactly.
    quoted = go_quote(text)
    assert quoted.isprintable()
    assert ast.literal_eval(quoted) == text


def test_every_quoting_module_uses_the_one_quote() -> None:
    assert escaping.go_quote is go_quote
    assert spec.go_quote is go_quote


def test_the_boundary_names_a_repeated_key_as_go_quotes_it() -> None:
    with pytest.raises(JSONBoundaryError) as caught:
        canonical.check_json('{"a\\u0001\\u2028":1,"a\\u0001\\u2028":2}')
    assert caught.value.reason == 'duplicate key "a\\x01\\u2028"'
