"""A float64-exact schema's pin equals byte for byte the pin the legacy SDK path made (proxy-and-mcp-module §5.12 #1).

No legacy pins were recorded, so the legacy pin is rebuilt here as the SDK path made it: every number
decoded to a float64, a repeated key's last value, each invalid byte and lone surrogate a U+FFFD, then
Go's ``encoding/json`` marshalling without HTML escaping. It is an oracle written apart from the one
encoder, which the pin (``canonical_schema``: the encoder's ``SCHEMA`` style) is compared with.
"""

from __future__ import annotations

import hashlib
import io
import json
import math
import struct
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from agentrt_proxy.cli import _pin as pin
from agentrt_proxy.upstream import live_tool, pin_tool, read_manifest
from tests.upstream.scripted import scripted_config, write_script


def _go_decode_bytes(data: bytes) -> str:
    """UTF-8 as Go's decoder reads it: every byte of an invalid sequence is its own U+FFFD."""
    out: list[str] = []
    i = 0
    while i < len(data):
        for size in (1, 2, 3, 4):
            try:
                out.append(data[i : i + size].decode("utf-8"))
            except UnicodeDecodeError:
                continue
            i += size
            break
        else:
            out.append("\ufffd")
            i += 1
    return "".join(out)


def _fix_surrogates(value: Any) -> Any:
    """Go's unquote turns a lone surrogate escape into U+FFFD (a valid pair is one character)."""
    if isinstance(value, str):
        return "".join("\ufffd" if 0xD800 <= ord(c) <= 0xDFFF else c for c in value)
    if isinstance(value, list):
        return [_fix_surrogates(v) for v in value]
    if isinstance(value, dict):
        return {_fix_surrogates(k): _fix_surrogates(v) for k, v in value.items()}
    return value


def _go_string(s: str) -> str:
    """encoding/json's string encoder with SetEscapeHTML(false) (Go 1.22+: \\b and \\f short)."""
    short = {'"': '\\"', "\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t", "\b": "\\b", "\f": "\\f"}
    out = []
    for c in s:
        if c in short:
            out.append(short[c])
        elif ord(c) < 0x20 or c in "\u2028\u2029":
            out.append(f"\\u{ord(c):04x}")
        else:
            out.append(c)
    return '"' + "".join(out) + '"'


def _go_float(f: float) -> str:
    """encoding/json's float64 encoder: shortest digits, 'e' form below 1e-6 or from 1e21."""
    if f == 0:
        return "-0" if math.copysign(1, f) < 0 else "0"
    digits, exponent = Decimal(repr(f)).normalize().as_tuple()[1:]
    assert isinstance(exponent, int)
    mantissa = "".join(map(str, digits))
    point = len(mantissa) + exponent  # the decimal point sits after this many digits
    sign = "-" if f < 0 else ""
    if abs(f) < 1e-6 or abs(f) >= 1e21:
        e = point - 1
        body = mantissa[0] + ("." + mantissa[1:] if len(mantissa) > 1 else "")
        return f"{sign}{body}e{'-' if e < 0 else '+'}{abs(e):02d}".replace("e-0", "e-").replace("e+0", "e+")
    if point <= 0:
        return f"{sign}0.{'0' * -point}{mantissa}"
    if point >= len(mantissa):
        return sign + mantissa + "0" * (point - len(mantissa))
    return f"{sign}{mantissa[:point]}.{mantissa[point:]}"


def _go_marshal(value: Any) -> str:
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, float):
        return _go_float(value)
    if isinstance(value, str):
        return _go_string(value)
    if isinstance(value, list):
        return "[" + ",".join(_go_marshal(v) for v in value) + "]"
    items = sorted(value.items(), key=lambda kv: kv[0].encode("utf-8"))  # Go sorts map keys bytewise
    return "{" + ",".join(_go_string(k) + ":" + _go_marshal(v) for k, v in items) + "}"


def legacy_pin(raw: bytes) -> bytes:
    """The legacy pin: the SDK decodes into ``any`` (every number a float64, a repeated key's
    last value kept), then the schema is marshalled back without HTML escaping."""
    tree = json.loads(_go_decode_bytes(raw), parse_int=float, parse_float=float)
    return _go_marshal(_fix_surrogates(tree)).encode("utf-8")


LEGACY_SCHEMAS = [
    b'{"type":"object"}',
    b'{ "type" : "object", "required" : ["path"], "properties" : {"path" : {"type" : "string"}} }',
    '{"type":"object","description":"caf\u00e9 \u4e16\u754c \U0001f600","properties":{"\u00e9":{}}}'.encode(),
    b'{"type":"object","description":"<b>&amp;</b> \\u003cscript\\u003e","properties":{"<&>":{}}}',
    b'{"type":"object","description":"lone \\ud800 and \\udfff, pair \\ud83d\\ude00","properties":{"\\ud800":{}}}',
    b'{"type":"object","description":"bad \xff byte, cut \xe2\x82 sequence, \xed\xa0\x80 surrogate"}',
    b'{"type":"object","a":1,"b":{"c":true},"a":{"again":[2]}}',
    b'{"type":"object","minimum":-0,"maximum":1.0,"multipleOf":0.5,"x":[1e2,1E+2,100.000,1e21,1e-7,0.000001]}',
    b'{"type":"object","x":[0.1,-2.5e-3,9007199254740992,1e300,5e-324,1.7976931348623157e308,123456789]}',
    b'{"type":"object","description":"\\u0001\\b\\f\\n\\r\\t\\u007f \\u2028\\u2029 \\/ \\u0041 \\\\ \\""}',
    b'{"type":"object","properties":{"a":{"enum":[null,false,true,[],{}]},"A":{},"b":{"type":["string","null"]}}}',
    b'{"type":"object","description":"\xc3\xa9\xef\xbf\xbd","\xf0\x9f\x98\x80":{"\xe2\x80\xa8":0}}',
]


def _float64_exact(raw: bytes) -> bool:
    """Every number literal denotes the decimal its float64 is written as (as the original's
    schemas do): only then can the legacy, float64-decoded pin be compared at all."""
    exact = True

    def number(literal: str) -> float:
        nonlocal exact
        value = float(literal)
        exact = exact and math.isfinite(value) and Decimal(repr(value)) == Decimal(literal)
        return value

    json.loads(_go_decode_bytes(raw), parse_int=number, parse_float=number)
    return exact


@pytest.mark.parametrize("raw", LEGACY_SCHEMAS, ids=range(len(LEGACY_SCHEMAS)))
def test_the_pin_of_a_float64_exact_schema_equals_the_legacy_float64_pin_byte_for_byte(raw: bytes) -> None:
    # TestCanonicalSchema_MatchesTheLegacyPinByteForByte
    assert _float64_exact(raw)
    pinned = pin_tool(live_tool("t", "The t tool.", None, raw))
    expected = legacy_pin(raw)
    assert pinned.input_schema == expected
    assert pinned.schema_hash == hashlib.sha256(expected).hexdigest()


def test_the_legacy_reference_itself_behaves_as_go_does() -> None:
    # TestCanonicalSchema_MatchesTheLegacyPinByteForByte: the reference the comparison relies on
    assert _go_decode_bytes(b"a\xe2\x82b\xff") == "a\ufffd\ufffdb\ufffd"
    assert [_go_float(f) for f in (1.0, -0.0, 1e21, 1e20, 1e-7, 1e-6, 0.1, 5e-324, 123456789.0)] == [
        "1", "-0", "1e+21", "100000000000000000000", "1e-7", "0.000001", "0.1", "5e-324", "123456789",
    ]  # fmt: skip
    assert legacy_pin(b'{"b":1,"a":2,"b":3}') == b'{"a":2,"b":3}'
    assert legacy_pin(b'"\\ud800<"') == '"\ufffd<"'.encode()
    assert struct.pack(">d", float(2**53 + 1)) == struct.pack(">d", float(2**53))
    assert legacy_pin(b"9007199254740993") == b"9007199254740992"  # where the legacy pin lost a digit


def test_a_float64_exact_schema_pinned_over_the_wire_equals_the_legacy_pin(tmp_path: Path) -> None:
    # TestCanonicalSchema_MatchesTheLegacyPinByteForByte (through pin, from the raw listing).
    # The schema with invalid bytes stays out: the wire refuses a message that is not UTF-8
    # (MCP: messages MUST be UTF-8), where the Go SDK replaced the bytes and pinned it.
    utf8 = [raw for raw in LEGACY_SCHEMAS if _is_utf8(raw)]
    tools = ",".join(
        f'{{"name":"t{i}","description":"The t{i} tool.","inputSchema":{raw.decode()}}}' for i, raw in enumerate(utf8)
    )
    script = write_script(tmp_path / "script.json", tools=f"[{tools}]")
    config_path = scripted_config(tmp_path, script)
    # One schema's description holds control characters, a hard scan finding (issue 15): taken by override.
    overrides = ",".join(f"t{i}:unicode.hidden" for i in range(len(utf8)))
    assert pin.pin_command(["-config", str(config_path), "-override", overrides], stdout=io.StringIO()) == 0
    manifest = read_manifest(tmp_path / "fs.json")
    assert len(manifest.tools) == len(utf8) == len(LEGACY_SCHEMAS) - 1
    for i, raw in enumerate(utf8):
        expected = legacy_pin(raw)
        assert manifest.tools[f"t{i}"].input_schema == expected, i
        assert manifest.tools[f"t{i}"].schema_hash == hashlib.sha256(expected).hexdigest(), i


def _is_utf8(raw: bytes) -> bool:
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True
