"""Result mapping (spec §1.13.6–8): structured content, text, caps and summaries."""

from __future__ import annotations

import json
from typing import Any

import pytest

from agentrt_proxy.mcp.outcomes import Refused, Result
from agentrt_proxy.mcp.results import TRUNCATION_MARKER, cap_text, map_result


def mapped(result: Any, cap: int = 65536, server: str = "fs", remote: str = "t", raw: str | None = None) -> Any:
    text = '{"jsonrpc":"2.0","id":1,"result":' + (raw if raw is not None else json.dumps(result)) + "}"
    return map_result(server, remote, json.loads(text)["result"], text, cap)


def test_structured_and_text_results() -> None:  # TestCall_StructuredAndTextResults
    out = mapped({"content": [], "structuredContent": {"ok": True, "lines": 2}}, remote="structured")
    assert isinstance(out, Result)
    assert out.text == '{"lines":2,"ok":true}' and out.summary == "fs/structured: 21 bytes"
    blocks = [
        {"type": "text", "text": "first"},
        {"type": "image", "data": "AA==", "mimeType": "image/png"},
        {"type": "text", "text": "last"},
    ]
    out = mapped({"content": blocks})
    assert out.content == "first\n[image omitted]\nlast" and not out.truncated


def test_every_non_text_block_has_its_placeholder() -> None:
    kinds = ["audio", "resource_link", "resource", "weird"]
    out = mapped({"content": [{"type": k} for k in kinds]})
    assert out.text == "[audio omitted]\n[resource link omitted]\n[embedded resource omitted]\n[content omitted]"


def test_an_is_error_result_carries_its_summary_and_text() -> None:
    out = mapped(
        {"content": [{"type": "text", "text": "card declined for jo"}], "isError": True}, server="bank", remote="pay"
    )
    assert isinstance(out, Result) and out.is_error
    assert out.error_text == "bank/pay: 22 bytes, error: card declined for jo"


def test_oversized_content_is_truncated() -> None:  # TestCall_OversizedContentIsTruncated
    out = mapped({"content": [{"type": "text", "text": "x" * 1000}]}, cap=64, remote="read_file")
    assert out.text == "x" * 49 + TRUNCATION_MARKER
    assert len(json.dumps(out.text)) == 64 and out.truncated
    assert out.summary == "fs/read_file: 64 bytes, truncated"


def test_the_cap_counts_encoded_bytes() -> None:  # TestCall_CapCountsEncodedBytes
    text, truncated = cap_text("\x01" * 16, 100)  # 16 × 6 + 2 = 98 bytes: kept whole
    assert text == "\x01" * 16 and not truncated
    text, truncated = cap_text("\x01" * 40, 100)
    assert truncated and text.endswith(TRUNCATION_MARKER)
    assert len(json.dumps(text).encode()) <= 100
    text, truncated = cap_text("世" * 100, 100)
    assert truncated and text.startswith("世") and len(json.dumps(text, ensure_ascii=False).encode()) <= 100
    text.encode("utf-8")  # valid runes only


@pytest.mark.parametrize(
    "source", ["", "x" * 300, "\x01" * 50, "世界" * 80, 'a"b\\c' * 40, "é\n\t" * 70, "\u2028" * 60]
)
def test_cap_text_never_exceeds_the_cap(source: str) -> None:  # TestCapText_NeverExceedsTheCap
    from agentrt_proxy.canonical.schema_form import encode_string

    marker_len = len(encode_string(TRUNCATION_MARKER).encode())
    for cap in range(200):
        text, truncated = cap_text(source, cap)
        size = len(encode_string(text).encode())
        assert size <= max(cap, marker_len)
        json.loads(encode_string(text))
        if truncated:
            assert text.endswith(TRUNCATION_MARKER)
            prefix = text[: -len(TRUNCATION_MARKER)]
            assert source.startswith(prefix)
            if len(prefix) == len(source):  # only the quotes did not fit (tiny caps)
                continue
            longer = source[: len(prefix) + 1] + TRUNCATION_MARKER
            assert len(encode_string(longer).encode()) > max(cap, marker_len)  # the longest prefix that fits
        else:
            assert text == source and size <= cap


def test_oversized_structured_content_falls_back_to_text() -> None:
    # TestCall_OversizedStructuredContentFallsBackToText
    big = {"k": "v" * 200}  # 208 bytes in the canonical form
    text_blocks = [{"type": "text", "text": "twelve chars"}]
    out = mapped({"content": text_blocks, "structuredContent": big}, cap=100, remote="with_text")
    assert out.summary == "fs/with_text: 14 bytes, truncated, structured content of 208 bytes dropped for the text"
    out = mapped({"content": [], "structuredContent": big}, cap=100, remote="only")
    assert out.text == "[structured content dropped: too large]" and "dropped" in out.summary
    out = mapped({"content": [], "structuredContent": {"k": 1}}, cap=100, remote="small")
    assert out.summary == "fs/small: 7 bytes" and out.content == {"k": "1"}


def test_structured_content_keeps_its_numbers() -> None:  # TestCall_StructuredContentKeepsItsNumbers
    raw = (
        '{"content":[],"structuredContent":'
        '{"s":"<b>","n":9007199254740993,"id":123456789012345678901234567890,"f":0.1}}'
    )
    out = mapped(None, raw=raw)
    assert out.text == '{"f":0.1,"id":1.2345678901234567890123456789e+29,"n":9007199254740993,"s":"<b>"}'


def test_structured_content_failing_the_boundary_is_refused() -> None:
    out = mapped(None, raw='{"content":[],"structuredContent":{"a":1,"a":2}}')
    assert isinstance(out, Refused) and "duplicate key" in out.reason and out.raw == b'{"a":1,"a":2}'
    deep = "[" * 300 + "]" * 300
    out = mapped(None, raw='{"content":[],"structuredContent":{"nested":' + deep + "}}")
    assert isinstance(out, Refused) and "256" in out.reason
    assert isinstance(mapped(None, raw='"not an object"'), Refused)


def test_a_null_structured_content_is_ignored() -> None:
    out = mapped({"content": [{"type": "text", "text": "hi"}], "structuredContent": None})
    assert out.text == "hi" and out.summary == "fs/t: 4 bytes"
