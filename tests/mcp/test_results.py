"""Result mapping (proxy-and-mcp-module §1.13.6–8, decision 0015): blocks as the server sent them,
structured content beside them, the cap (never a cut), a text sent twice recorded once, the short
text, errors and their summaries."""

from __future__ import annotations

import json
from typing import Any

import pytest

from agentrt_proxy.canonical import policy_text, to_python
from agentrt_proxy.canonical.schema_form import encode_string
from agentrt_proxy.mcp.outcomes import CALL_TOOL_RESULT, Refused, Result
from agentrt_proxy.mcp.results import (
    ERROR_TEXT_BYTES,
    TOO_LARGE_HEAD_BYTES,
    TRUNCATION_MARKER,
    cap_text,
    map_result,
    mapped_text,
)
from agentrt_proxy.upstream import known_answer_pattern


def mapped(result: Any, cap: int = 65536, server: str = "fs", remote: str = "t", raw: str | None = None) -> Any:
    text = '{"jsonrpc":"2.0","id":1,"result":' + (raw if raw is not None else json.dumps(result)) + "}"
    return map_result(server, remote, json.loads(text)["result"], text, cap)


def recorded_size(out: Result) -> int:
    """The recorded whole's size in its canonical form (what the cap counts)."""
    return len(policy_text(out.content).encode("utf-8"))


# ------------------------------------------------------------------ every block kind, unchanged

ANNOTATIONS = {"audience": ["user", "assistant"], "priority": 0.25, "lastModified": "2026-01-02T03:04:05Z"}
META = {"vendor/trace": "abc", "n": 7}
BLOCKS: dict[str, dict[str, Any]] = {
    "text": {"type": "text", "text": "hello sandbox\n"},
    "image": {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"},
    "audio": {"type": "audio", "data": "UklGRg==", "mimeType": "audio/wav"},
    "resource": {
        "type": "resource",
        "resource": {"uri": "test://static/resource/1", "mimeType": "text/plain", "text": "Resource 1", "_meta": META},
    },
    "resource blob": {
        "type": "resource",
        "resource": {"uri": "test://static/resource/2", "mimeType": "application/octet-stream", "blob": "AAECAw=="},
    },
    "resource_link": {
        "type": "resource_link",
        "uri": "file:///srv/a.txt",
        "name": "a.txt",
        "title": "A",
        "mimeType": "text/plain",
        "size": 1234,
        "icons": [{"src": "https://example.org/a.png", "sizes": ["48x48"]}],
    },
    "a kind from a later revision": {"type": "hologram", "frames": [1, 2, 3]},
}
PLACEHOLDERS = {
    "text": "hello sandbox\n",
    "image": "[image image/png, 8 bytes]",
    "audio": "[audio audio/wav, 4 bytes]",
    "resource": "[resource test://static/resource/1, text/plain, 10 bytes]",
    "resource blob": "[resource test://static/resource/2, application/octet-stream, 4 bytes]",
    "resource_link": "[resource link file:///srv/a.txt]",
    "a kind from a later revision": "[hologram content]",
}


@pytest.mark.parametrize("kind", sorted(BLOCKS))
@pytest.mark.parametrize("extra", ["bare", "annotations", "_meta", "both"])
def test_every_block_kind_is_recorded_as_the_server_sent_it(kind: str, extra: str) -> None:
    block = dict(BLOCKS[kind])
    if extra in ("annotations", "both"):
        block["annotations"] = ANNOTATIONS
    if extra in ("_meta", "both"):
        block["_meta"] = META
    out = mapped({"content": [{"type": "text", "text": "before"}, block, {"type": "text", "text": "after"}]})
    assert isinstance(out, Result) and out.form == CALL_TOOL_RESULT and not out.truncated and not out.is_error
    assert to_python(out.content) == {
        "content": [{"type": "text", "text": "before"}, block, {"type": "text", "text": "after"}]
    }
    assert out.text == f"before\n{PLACEHOLDERS[kind]}\nafter"
    assert out.summary == f"fs/t: {recorded_size(out)} bytes"


def test_the_blocks_keep_their_order_and_their_number_literals() -> None:
    raw = (
        '{"content":[{"type":"resource_link","uri":"u","name":"n","size":123456789012345678901},'
        '{"type":"text","text":"x","annotations":{"priority":0.1}},{"type":"image","data":"AA==","mimeType":"image/gif"}]}'
    )
    out = mapped(None, raw=raw)
    assert [block["type"] for block in out.content["content"]] == ["resource_link", "text", "image"]
    assert '"size":123456789012345678901' in policy_text(out.content)
    assert '"priority":0.1' in policy_text(out.content)


def test_structured_content_is_recorded_beside_the_servers_text_never_instead_of_it() -> None:
    # The filesystem server's read_text_file: before 0015 the host got {"content":"hello sandbox\n"}.
    out = mapped(
        {"content": [{"type": "text", "text": "hello sandbox\n"}], "structuredContent": {"content": "hello sandbox\n"}}
    )
    assert to_python(out.content) == {
        "content": [{"type": "text", "text": "hello sandbox\n"}],
        "structuredContent": {"content": "hello sandbox\n"},
    }
    assert out.text == "hello sandbox\n"
    only = mapped({"content": [], "structuredContent": {"ok": True, "lines": 2}})
    assert only.content["content"] == [] and only.text == '{"lines":2,"ok":true}'  # no blocks: the JSON is the text


def test_structured_content_keeps_its_numbers() -> None:  # TestCall_StructuredContentKeepsItsNumbers
    raw = (
        '{"content":[],"structuredContent":'
        '{"s":"<b>","n":9007199254740993,"id":123456789012345678901234567890,"f":0.1}}'
    )
    out = mapped(None, raw=raw)
    assert policy_text(out.content["structuredContent"]) == (
        '{"f":0.1,"id":1.2345678901234567890123456789e+29,"n":9007199254740993,"s":"<b>"}'
    )


def test_the_results_own_meta_is_recorded_as_sent_and_a_non_object_meta_is_not() -> None:
    out = mapped({"content": [], "_meta": {"gate/outcome": "PENDING_APPROVAL", "vendor/x": 1}})
    assert to_python(out.content["_meta"]) == {"gate/outcome": "PENDING_APPROVAL", "vendor/x": 1}  # the record keeps it
    assert "_meta" not in mapped({"content": [], "_meta": "nope"}).content


def test_a_missing_or_null_content_records_no_blocks_and_a_null_structured_content_is_ignored() -> None:
    assert mapped({}).content == {"content": []}
    assert mapped({"content": None}).content == {"content": []}
    out = mapped({"content": [{"type": "text", "text": "hi"}], "structuredContent": None})
    assert "structuredContent" not in out.content and out.text == "hi"


def test_a_repeated_member_counts_once_as_the_decoder_reads_it() -> None:
    out = mapped(None, raw='{"content":[{"type":"text","text":"first"}],"content":[{"type":"text","text":"last"}]}')
    assert out.content["content"] == [{"type": "text", "text": "last"}]


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        ('{"content":[],"structuredContent":{"a":1,"a":2}}', 'duplicate key "a"'),
        ('{"content":[],"structuredContent":{"nested":' + "[" * 300 + "]" * 300 + "}}", "256"),
        ('{"content":"not an array"}', "the result's content is not an array"),
        ('"not an object"', "the result is not a JSON object"),
    ],
)
def test_a_result_failing_the_boundary_is_refused(raw: str, reason: str) -> None:
    out = mapped(None, raw=raw)
    assert isinstance(out, Refused) and reason in out.reason


# ------------------------------------------------------------------ the cap


def big_result() -> dict[str, Any]:
    return {
        "content": [
            {"type": "text", "text": "x" * 5000},
            {"type": "image", "data": "A" * 3000, "mimeType": "image/png"},
            {"type": "text", "text": "tail"},
        ],
        "structuredContent": {"k": "v" * 100},
        "_meta": {"m": "w" * 50},
    }


def test_a_result_within_the_cap_is_kept_whole_and_one_byte_over_is_refused_never_cut() -> None:
    out = mapped(big_result(), cap=100_000)
    assert not out.truncated and to_python(out.content) == big_result()
    exact = recorded_size(out)
    assert out.summary == f"fs/t: {exact} bytes"
    assert not mapped(big_result(), cap=exact).truncated
    over = mapped(big_result(), cap=exact - 1)
    assert isinstance(over, Refused) and not isinstance(over, Result)
    assert over.reason == (
        f"the result is {exact} bytes (0.0 MiB) as recorded, over the limit of {exact - 1} bytes "
        "(0.0 MiB, max_result_bytes); it was neither recorded nor passed on, and never cut"
    )
    assert over.raw.startswith(b'{"jsonrpc":"2.0","id":1,"result":') and len(over.raw) <= TOO_LARGE_HEAD_BYTES


@pytest.mark.parametrize("cap", [1024, 2048, 4000, 8314])
def test_no_result_over_the_cap_is_ever_cut(cap: int) -> None:
    for result in (big_result(), {"content": [{"type": "text", "text": "é\u2028\x01" * 3000}]}):
        out = mapped(result, cap=cap)
        assert isinstance(out, Refused) and "max_result_bytes" in out.reason, cap


# ------------------------------------------------------------------ a text sent twice, recorded once

FILE = "line of a file\n" * 2000  # 30000 characters, over SHARED_MIN


@pytest.mark.parametrize(
    ("result", "entries"),
    [
        # the npm filesystem server's read_text_file
        (
            {"content": [{"type": "text", "text": FILE}], "structuredContent": {"content": FILE}},
            [{"block": 0, "path": ["content"]}],
        ),
        # deeper in the structured content, a second block shared too; the first in the record's (sorted) order named
        (
            {
                "content": [
                    {"type": "text", "text": "head"},
                    {"type": "text", "text": FILE, "_meta": {"k": 1}},
                    {"type": "text", "text": FILE + "!"},
                ],
                "structuredContent": {"files": [{"body": FILE}, {"body": FILE + "!"}], "again": FILE},
            },
            [{"block": 1, "path": ["again"]}, {"block": 2, "path": ["files", 1, "body"]}],
        ),
    ],
)
def test_a_text_the_server_sent_twice_is_recorded_once_and_answered_as_sent(
    result: dict[str, Any], entries: list[dict[str, Any]]
) -> None:
    from agentrt_proxy.mcp.shared_text import SHARED_KEY, expand

    out = mapped(result, cap=1 << 20)
    assert to_python(out.content[SHARED_KEY]) == entries
    for entry in entries:
        assert out.content["content"][entry["block"]]["text"] == ""
    assert recorded_size(out) < len(json.dumps(result)) - len(FILE)  # the file's text once, not twice
    assert out.summary == f"fs/t: {recorded_size(out)} bytes"
    assert to_python(expand(out.content)) == result  # read back exactly as the server sent it
    assert out.text.startswith(result["content"][0]["text"][:100])
    # the cap counts the record: a cap between once and twice the text passes it whole
    assert isinstance(mapped(result, cap=recorded_size(out)), Result)


def test_a_short_or_unequal_text_is_recorded_as_sent() -> None:
    short = {"content": [{"type": "text", "text": "hello"}], "structuredContent": {"content": "hello"}}
    unequal = {"content": [{"type": "text", "text": FILE}], "structuredContent": {"content": FILE + " "}}
    for result in (short, unequal):
        out = mapped(result, cap=1 << 20)
        assert to_python(out.content) == result


def test_a_record_read_back_from_the_store_expands_its_shared_text() -> None:
    from agentrt_proxy.canonical import parse_strict
    from agentrt_proxy.mcp.shared_text import expand

    result = {"content": [{"type": "text", "text": FILE}], "structuredContent": {"items": [FILE]}}
    stored = parse_strict(policy_text(mapped(result, cap=1 << 20).content))  # numbers read back as literals
    assert to_python(expand(stored)) == result
    broken = {**stored, "textFromStructured": [{"block": 5, "path": ["items", 0]}, {"block": 0, "path": ["nope"]}, 7]}
    assert to_python(expand(broken))["content"] == [{"type": "text", "text": ""}]  # nothing invented


# ------------------------------------------------------------------ the short text


def test_the_short_text_is_bounded() -> None:
    blocks = [{"type": "text", "text": "a" * 40}, {"type": "image", "data": "AA==", "mimeType": "image/png"}] * 10
    text = mapped_text(blocks, limit=100)
    assert len(text) == 100 and text.startswith("a" * 40 + "\n[image image/png, 1 bytes]\n")
    assert mapped_text("not a list") == "" and mapped_text([7, {"no": "type"}]) == "[content]\n[content]"


# ------------------------------------------------------------------ errors


def test_an_is_error_result_carries_its_summary_and_text() -> None:
    out = mapped(
        {"content": [{"type": "text", "text": "card declined for jo"}], "isError": True}, server="bank", remote="pay"
    )
    assert isinstance(out, Result) and out.is_error and out.form == ""
    assert out.error_text == "bank/pay: 22 bytes, error: card declined for jo"
    assert known_answer_pattern("bank", "pay", "bank_pay").match(out.error_text)


def test_an_is_error_result_names_its_other_blocks_and_falls_back_to_its_structured_content() -> None:
    out = mapped({"content": [{"type": "image", "data": "AAAA", "mimeType": "image/png"}], "isError": True})
    assert out.error_text == "fs/t: 28 bytes, error: [image image/png, 3 bytes]"
    out = mapped({"content": [], "structuredContent": {"code": 7}, "isError": True})
    assert out.text == '{"code":7}'


def test_an_oversized_error_is_truncated_at_the_error_bound() -> None:  # TestCall_OversizedContentIsTruncated
    out = mapped({"content": [{"type": "text", "text": "x" * 1000}], "isError": True}, cap=64, remote="read_file")
    assert out.text == "x" * 49 + TRUNCATION_MARKER
    assert len(json.dumps(out.text)) == 64 and out.truncated
    assert out.summary == "fs/read_file: 64 bytes, truncated"
    assert known_answer_pattern("fs", "read_file", "fs_read_file").match(out.error_text)
    huge = mapped({"content": [{"type": "text", "text": "y" * (2 * ERROR_TEXT_BYTES)}], "isError": True}, cap=1 << 23)
    assert len(encode_string(huge.text).encode()) <= ERROR_TEXT_BYTES and huge.truncated


# ------------------------------------------------------------------ cap_text


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
