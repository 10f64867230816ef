"""The halves of nine original `mcp` tests that the other test files left out.

Each test names the original Go test (spec §5.10-5.13) whose missing half it checks. The
upstream is ``fixtures/scripted_server.py``: a stdio server whose listing, errors and
call answers the test writes into a script file.
"""

from __future__ import annotations

import asyncio
import hashlib
import io
import json
import math
import os
import signal
import struct
import sys
import time
from decimal import Decimal
from pathlib import Path
from typing import Any

import anyio
import pytest

from agentrt_proxy import canonical
from agentrt_proxy.cli import pin
from agentrt_proxy.config import ConfigError, Rule, load_config, read_rules
from agentrt_proxy.mcp import ConnectError, ServerSpec, open_connection
from agentrt_proxy.upstream import (
    LoadError,
    OpenError,
    is_known_answer,
    live_tool,
    load,
    open_servers,
    pin_tool,
    read_manifest,
    servers,
)
from tests.processes import alive

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
SCRIPTED = str(FIXTURES / "scripted_server.py")
SECOND = 1_000_000_000
MS = 1_000_000
OBJECT = '{"type":"object"}'


def tools_text(*tools: tuple[str, str]) -> str:
    """The raw ``tools`` array for (name, raw inputSchema) pairs."""
    return "[" + ",".join(f'{{"name":"{n}","description":"The {n} tool.","inputSchema":{s}}}' for n, s in tools) + "]"


def write_script(path: Path, **script: Any) -> Path:
    path.write_text(json.dumps(script))
    return path


def write_config(tmp_path: Path, script: Path, rules: dict[str, Any] | None = None, **server: Any) -> Path:
    """A configuration with one server ``fs`` run by the scripted fixture."""
    entry = {
        "name": "fs",
        "command": [sys.executable, SCRIPTED],
        "env": [f"SCRIPT={script}"],
        "manifest": "fs.json",
        "default_timeout": "5s",
        "rules": rules or {},
        **server,
    }
    path = tmp_path / "proxy.json"
    path.write_text(json.dumps({"database": "proxy.db", "session": "laptop", "servers": [entry]}))
    path.chmod(0o600)
    return path


def pin_config(config_path: Path) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = pin.pin_command(["-config", str(config_path)], stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


def check(config_path: Path) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = pin.check_command(["-config", str(config_path)], stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


def has_control(text: str) -> bool:
    return any(ord(c) < 0x20 or 0x7F <= ord(c) < 0xA0 for c in text)


# ------------------------------------------------------------ §5.13 #18: pin escapes the server's error


def test_pin_prints_the_servers_error_message_escaped(tmp_path: Path) -> None:
    # TestPin_ErrorEscapesTheServersMessage
    forged = "no licence\x1b[2K\r\n\x07server fs: pinned 3 tools OK\x1b]0;owned\x07"
    script = write_script(tmp_path / "script.json", list="error", list_error={"code": -32603, "message": forged})
    config_path = write_config(tmp_path, script)
    code, out, err = pin_config(config_path)
    assert code == 1 and out == ""
    assert err.endswith("\n") and err.count("\n") == 1
    line = err[:-1]
    assert not has_control(line), repr(line)
    assert "pinned 3 tools OK" in line
    assert line == (
        'agentrt-proxy: error: mcp: server "fs": list tools: the server answered tools/list with error -32603: '
        "no licence\\x1b[2K\\r\\n\\aserver fs: pinned 3 tools OK\\x1b]0;owned\\a"
    )
    assert not (tmp_path / "fs.json").exists()


# ------------------------------------------------------------ §5.10 #11: a loaded tool refuses input requests


def test_a_loaded_tool_answered_with_an_input_request_returns_the_named_refusal(tmp_path: Path) -> None:
    # TestCall_InputRequiredIsRefused (LoadedTool.call itself, over stdio)
    asking = {
        "resultType": "input_required",
        "inputRequests": {"confirm": {"method": "elicitation/create", "params": {"message": "Sure?"}}},
        "requestState": "opaque",
    }
    script = write_script(
        tmp_path / "script.json", tools=tools_text(("write_file", OBJECT)), calls={"write_file": json.dumps(asking)}
    )
    config_path = write_config(tmp_path, script, {"write_file": {"side_effect": "local_mutation"}})
    assert pin_config(config_path)[0] == 0

    async def scenario() -> Any:
        opened = await open_servers(load_config(config_path))
        try:
            tool = opened.by_name()["fs_write_file"]
            return tool, await tool.call('{"path":"a"}')
        finally:
            await opened.aclose()

    tool, out = anyio.run(scenario)
    assert out.is_error
    assert out.error_text == "fs_write_file: the server asked for more input, which this adapter does not support"
    assert is_known_answer(tool, out.error_text)  # an answer, not silence: never re-run as unknown


# ------------------------------------------------------------ §5.12 #4: a number change beyond float64


def test_a_maximum_moving_from_2_53_plus_1_to_2_53_refuses_the_tool(tmp_path: Path) -> None:
    # TestPin_SeesANumberChangeBeyondFloat64
    assert float(2**53 + 1) == float(2**53)  # what a float64 decoding could not tell apart
    big_default = "12345678901234567890"  # 20 digits, past 2^64 - 1 too

    def schema(maximum: int) -> str:
        return (
            f'{{"type":"object","properties":{{"n":{{"type":"integer","maximum":{maximum},"default":{big_default}}}}}}}'
        )

    script = tmp_path / "script.json"
    write_script(script, tools=tools_text(("limit", schema(2**53 + 1)), ("other", OBJECT)))
    rules = {"limit": {"side_effect": "read_only"}, "other": {"side_effect": "read_only"}}
    config_path = write_config(tmp_path, script, rules)
    assert pin_config(config_path)[0] == 0
    text = (tmp_path / "fs.json").read_text()
    assert '"maximum": 9007199254740993' in text and f'"default": {big_default}' in text
    pinned = read_manifest(tmp_path / "fs.json").tools["limit"]
    assert pinned.input_schema == (
        b'{"properties":{"n":{"default":12345678901234567890,"maximum":9007199254740993,"type":"integer"}},'
        b'"type":"object"}'
    )

    code, out, err = check(config_path)  # unchanged: both register, the literals kept
    assert code == 0, err
    assert "fs: registered limit as fs_limit (read_only)" in out

    write_script(script, tools=tools_text(("limit", schema(2**53)), ("other", OBJECT)))
    code, out, err = check(config_path)
    assert code == 0, err
    assert out.splitlines()[:2] == [
        "fs: registered other as fs_other (read_only)",
        "fs: refused limit: the input schema changed since the pin",
    ]


# ------------------------------------------------------------ §5.13 #5: Load times out on a silent listing


def test_load_fails_on_a_listing_that_never_answers_naming_the_step_and_the_bound_with_no_report(
    tmp_path: Path,
) -> None:
    # TestServer_ConnectTimeoutBoundsAListingThatNeverAnswers (the Load half). The original used 50 ms;
    # 1 s keeps the meaning (the listing, not the start, is what times out) on a loaded 2-core machine.
    script = tmp_path / "script.json"
    write_script(script, tools=tools_text(("read_file", OBJECT)))
    config_path = write_config(tmp_path, script, {"read_file": {"side_effect": "read_only"}}, connect_timeout="1s")
    assert pin_config(config_path)[0] == 0
    write_script(script, list="silent")
    config = load_config(config_path)
    server = config.servers[0]
    manifest = read_manifest(server.manifest)

    started = time.monotonic()
    with pytest.raises(ConnectError) as caught:
        anyio.run(lambda: load(server, manifest, servers.default_connector(server), repeat_window=0))
    assert str(caught.value).startswith('mcp: server "fs": list tools: timed out after 1s')
    assert not isinstance(caught.value, LoadError)  # so it carries no report
    assert time.monotonic() - started < 6

    with pytest.raises(OpenError) as opened:
        anyio.run(lambda: open_servers(config))
    assert str(opened.value).startswith('mcp: server "fs": list tools: timed out after 1s')
    assert opened.value.reports == []

    code, out, err = check(config_path)
    assert code == 1 and out == ""
    assert err.startswith('agentrt-proxy: error: mcp: server "fs": list tools: timed out after 1s')


# ------------------------------------------------------------ §5.13 #7: an outer cancellation is not a timeout


def _wait_dead(pid: int, seconds: float = 5) -> bool:
    deadline = time.monotonic() + seconds
    while alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    if alive(pid):
        os.kill(pid, signal.SIGKILL)
        return False
    return True


@pytest.mark.skipif(sys.platform == "win32", reason="process groups are Unix")
def test_a_callers_cancellation_is_reported_as_itself_not_as_the_phases_timeout(tmp_path: Path) -> None:
    # TestPhaseErr_NamesTheStepOnlyWhenItsOwnDeadlineFired (the cancellation half)
    pidfile = tmp_path / "pid"
    script = write_script(tmp_path / "script.json", list="silent", grandchild_pidfile=str(pidfile))
    spec = ServerSpec(name="fs", command=[sys.executable, SCRIPTED], env=[f"SCRIPT={script}"])
    seen: list[BaseException] = []

    async def cancelled_by_the_caller() -> bool:
        with anyio.move_on_after(0.5) as scope:
            try:
                async with open_connection(spec, timeout_ns=30 * SECOND):
                    pass
            except BaseException as exc:  # record what left open_connection, then let it go on
                seen.append(exc)
                raise
        return scope.cancelled_caught

    assert anyio.run(cancelled_by_the_caller) is True
    assert len(seen) == 1 and isinstance(seen[0], asyncio.CancelledError)  # asyncio is the product's loop
    assert not isinstance(seen[0], ConnectError) and "timed out" not in str(seen[0])
    assert _wait_dead(int(pidfile.read_text())), "the server's grandchild survived the cancellation"

    async def deadline_of_the_caller() -> None:
        with anyio.fail_after(0.5):
            async with open_connection(spec, timeout_ns=30 * SECOND):
                pass

    pidfile.unlink()
    with pytest.raises(TimeoutError) as caught:  # the caller's own deadline, not "list tools: timed out after 30s"
        anyio.run(deadline_of_the_caller)
    assert not isinstance(caught.value, ConnectError) and "list tools" not in str(caught.value)
    assert _wait_dead(int(pidfile.read_text()))

    async def own_deadline_inside_a_longer_one() -> None:
        with anyio.fail_after(20):
            async with open_connection(spec, timeout_ns=1 * SECOND):
                pass

    pidfile.unlink()
    with pytest.raises(ConnectError, match=r'^mcp: server "fs": list tools: timed out after 1s'):
        anyio.run(own_deadline_inside_a_longer_one)
    assert _wait_dead(int(pidfile.read_text()))


# ------------------------------------------------------------ §5.13 #13: descendants die after Pin and Load


@pytest.mark.skipif(sys.platform == "win32", reason="process groups are Unix")
def test_the_servers_descendants_die_after_pin_and_after_load(tmp_path: Path) -> None:
    # TestStdio_CloseKillsTheServersDescendants (after Pin, after Load)
    pidfile = tmp_path / "pid"
    script = write_script(
        tmp_path / "script.json", tools=tools_text(("read_file", OBJECT)), grandchild_pidfile=str(pidfile)
    )
    config_path = write_config(tmp_path, script, {"read_file": {"side_effect": "read_only"}})
    assert pin_config(config_path)[0] == 0
    assert _wait_dead(int(pidfile.read_text())), "the grandchild survived pin"

    pidfile.unlink()

    async def load_then_close() -> None:
        opened = await open_servers(load_config(config_path))
        try:
            assert [tool.name for tool in opened.tools] == ["fs_read_file"]
            assert alive(int(pidfile.read_text()))
        finally:
            await opened.aclose()

    anyio.run(load_then_close)
    assert _wait_dead(int(pidfile.read_text())), "the grandchild survived closing what Load opened"

    pidfile.unlink()  # a Load that registers nothing closes the connection itself
    write_config(tmp_path, script, {})
    code, _out, err = check(config_path)
    assert code == 1 and "no tool registered" in err
    assert _wait_dead(int(pidfile.read_text())), "the grandchild survived a Load that registered nothing"


# ------------------------------------------------------------ §5.13 #10, #11: reading a rules file


def test_every_field_of_a_rules_file_converts(tmp_path: Path) -> None:
    # TestReadRules_ConvertsTheOperatorsFormat
    path = tmp_path / "rules.json"
    path.write_text(
        json.dumps(
            {
                "write_file": {
                    "side_effect": "local_mutation",
                    "timeout": "1m30s",
                    "terminal": True,
                    "description": "Write inside the sandbox.",
                    "deny": ["force", "mode"],
                    "fixed": {"root": "/srv/sandbox", "limit": 9007199254740993, "opts": {"a": [1.50, None]}},
                    "rename": "write",
                    "allow_hint_mismatch": True,
                    "outcome": "require_approval",
                    "repeat_window": "10s",
                },
                "read_file": {"side_effect": "read_only"},
            }
        ).replace("1.5,", "1.50,")
    )
    path.chmod(0o600)
    rules = read_rules(path)
    assert set(rules) == {"write_file", "read_file"}
    write = rules["write_file"]
    assert write == Rule(
        side_effect="local_mutation",
        timeout=90 * SECOND,
        description="Write inside the sandbox.",
        deny=("force", "mode"),
        fixed=write.fixed,
        rename="write",
        allow_hint_mismatch=True,
        terminal=True,
        outcome="require_approval",
        repeat_window=10 * SECOND,
    )
    assert canonical.policy_text(write.fixed) == (
        '{"limit":9007199254740993,"opts":{"a":[1.50,null]},"root":"/srv/sandbox"}'
    )  # literals kept as written
    assert rules["read_file"] == Rule(side_effect="read_only")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"t":{"side_effect":"read_only","denny":["x"]}}', r'unknown field "denny" in servers\[rules\]\.rules\.t'),
        ('{"t":{"side_effect":"read_only","timeout":"5"}}', r'tool "t": timeout: .*missing unit'),
        ('{"t":{"side_effect":"read_only","timeout":5}}', r"timeout: a duration is a string"),
        ('{"t":{"side_effect":"read_only"', r"not usable JSON: not valid JSON"),
        ('{"t":{"side_effect":"read_only"}} {}', r"not usable JSON"),
    ],
    ids=["denny", "timeout-without-unit", "timeout-number", "truncated", "trailing-data"],
)
def test_a_rules_file_refuses_what_it_does_not_know_naming_the_file(tmp_path: Path, text: str, message: str) -> None:
    # TestReadRules_RefusesWhatItDoesNotKnow (denny, timeout "5", truncated JSON)
    path = tmp_path / "rules.json"
    path.write_text(text)
    path.chmod(0o600)
    with pytest.raises(ConfigError, match=message) as caught:
        read_rules(path)
    assert str(caught.value).startswith(f"config {path}: ")


# ------------------------------------------------------------ §5.12 #1: the legacy, float64-decoded pin


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
    config_path = write_config(tmp_path, script)
    assert pin_config(config_path)[0] == 0
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
