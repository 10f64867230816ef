"""sanitize, truncate and clean (runtime-core §6, proxy-and-mcp-module §2.13)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentrt_proxy.text.escaping import ELLIPSIS, clean, go_quote, sanitize, to_valid_utf8, truncate


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("plain text, é and 漢字 😀", "plain text, é and 漢字 😀"),
        ("a\nb", "a b"),
        ("a\rb", "a b"),
        ("a\r\nb", "a  b"),
        ("a\tb", "a\\x09b"),
        ("\x00", "\\x00"),
        ("\x1b[31mred", "\\x1b[31mred"),
        ("\x1f", "\\x1f"),
        ("del\x7f", "del\\x7f"),
        ("nel\x85", "nel\\x85"),
        ("\x80\x9f", "\\x80\\x9f"),
        ("abc\u202eevil", "abc\\u{202e}evil"),
        ("\u202a\u2066\u2069\u061c\u200e\u200f", "\\u{202a}\\u{2066}\\u{2069}\\u{061c}\\u{200e}\\u{200f}"),
        ("zero\u200bwidth\u200d\ufeff", "zero\\u{200b}width\\u{200d}\\u{feff}"),
        ("soft\u00adhyphen\u180e\u2060\u2064", "soft\\u{00ad}hyphen\\u{180e}\\u{2060}\\u{2064}"),
        ("line\u2028para\u2029", "line\\u{2028}para\\u{2029}"),
        ("tag\U000e0041\U000e007f\U000e0000", "tag\\u{e0041}\\u{e007f}\\u{e0000}"),
        ("\xa0non-breaking stays", "\xa0non-breaking stays"),
    ],
)
def test_each_sanitize_rule(text: str, shown: str) -> None:
    assert sanitize(text) == shown


def test_text_needing_nothing_is_returned_as_is() -> None:
    text = "nothing to do: café, 漢字, e\u0301"
    assert sanitize(text) == text


@pytest.mark.parametrize(
    ("data", "shown"),
    [
        (b"a\xffb", "a\ufffdb"),
        (b"a\xff\xfe\xfdb", "a\ufffdb"),  # a run of invalid bytes is ONE U+FFFD
        (b"a\xffb\xfec", "a\ufffdb\ufffdc"),
        (b"\xe6\xbc", "\ufffd"),  # a cut multi-byte character
        (b"\xed\xa0\x80", "\ufffd"),  # an encoded surrogate
        (b"ok \xc3\xa9", "ok é"),
        (b"\xff\n\x1b", "\ufffd \\x1b"),
    ],
)
def test_invalid_utf8_becomes_one_replacement_per_run(data: bytes, shown: str) -> None:
    assert sanitize(data) == shown


def test_a_str_holding_lone_surrogates_is_treated_as_invalid_bytes() -> None:
    assert sanitize("a\ud800\udfffb") == "a\ufffdb"


def test_to_valid_utf8_matches_go_strings_to_valid_utf8() -> None:
    assert to_valid_utf8(b"\xffa\xff") == "\ufffda\ufffd"
    assert to_valid_utf8(b"") == ""


def test_combining_marks_beyond_four_are_dropped_with_the_count() -> None:
    zalgo = "e" + "\u0301" * 7 + "x"
    assert sanitize(zalgo) == "e" + "\u0301" * 4 + "[+3 combining marks dropped]x"
    assert sanitize("e" + "\u0301" * 4) == "e" + "\u0301" * 4
    assert sanitize("a" + "\u0300" * 5 + "b" + "\u0300" * 6) == (
        "a" + "\u0300" * 4 + "[+1 combining marks dropped]b" + "\u0300" * 4 + "[+2 combining marks dropped]"
    )


def test_combining_marks_outside_the_common_block_are_bounded_too() -> None:
    # Hebrew points: the fast path once returned these untouched (fixed in prose.sanitize)
    assert sanitize("a" + "\u05b0" * 6) == "a" + "\u05b0" * 4 + "[+2 combining marks dropped]"


@pytest.mark.parametrize(
    ("text", "limit", "cut"),
    [
        ("abcdef", 6, "abcdef"),
        ("abcdef", 5, "ab…"),
        ("abcdef", 3, "…"),
        ("abcdef", 2, "ab"),
        ("abcdef", 0, ""),
        ("aé漢字", 5, "a…"),
        ("aé漢字", 6, "aé…"),
        ("漢字", 2, ""),
        ("😀😀", 7, "😀…"),
    ],
)
def test_truncate_bounds_bytes_without_splitting_a_character(text: str, limit: int, cut: str) -> None:
    assert truncate(text, limit) == cut


@settings(max_examples=500, deadline=None)
@given(st.text(st.characters(exclude_categories=("Cs",))), st.integers(min_value=0, max_value=64))
def test_truncate_never_exceeds_the_bound_or_splits_a_character(text: str, limit: int) -> None:
    cut = truncate(text, limit)
    data = cut.encode("utf-8")  # raises if a character were split into a surrogate
    assert len(data) <= limit
    if len(text.encode("utf-8")) <= limit:
        assert cut == text
    elif limit >= 3:
        assert cut.endswith(ELLIPSIS)
        assert text.startswith(cut[: -len(ELLIPSIS)])
    else:
        assert text.startswith(cut)


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=64) | st.text(max_size=64), st.integers(min_value=0, max_value=80))
def test_clean_is_one_safe_bounded_line(text, limit: int) -> None:
    out = clean(text, limit)
    assert len(out.encode("utf-8")) <= limit
    assert not any(ch in out for ch in "\n\r\x1b\x00\u2028\u202e")
    assert out == truncate(sanitize(text), limit)


def test_go_quote_quotes_like_percent_q() -> None:
    assert go_quote('a "b" \\ c') == '"a \\"b\\" \\\\ c"'
    assert go_quote("x\ny\tz\x01\x7f") == '"x\\ny\\tz\\x01\\x7f"'
    assert go_quote("\u202e") == '"\\u202e"'
