"""Fuzzing what a host may write to the session (issue 14, item 11): the session never crashes,
never runs a tool for a call it did not validate, and answers every request that had an id
exactly once (a cancelled call: at most once), whatever else the stream holds and however it is
split into reads.

A script is a prelude (initialize with some revision, or nothing) and a list of items, each a
line of a known kind with the answers it is owed; the stream is cut at random points. Budget:
a few seconds (max_examples below, deadline=None; derandomised when ``CI`` is set).
"""

from __future__ import annotations

import json
import logging
import os
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.mcp.host_streams import INITIALIZED, Host, initialize

LIMIT = 1 << 16  # the session's bound in these tests, so oversized lines cost little
VERSIONS = [None, "2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"]
POOL_IDS: list[Any] = [0, 1, 2, -1, 10**30, "a", "b", "", "\u00e9", "\ud800", "L" * 300]
BAD_IDS: list[Any] = [None, 1.5, True, [1], {"a": 1}]
# FUZZ_EXAMPLES=5000 for a longer hunt; under CI the examples are derandomised (the same every run).
FUZZ = settings(
    max_examples=int(os.environ.get("FUZZ_EXAMPLES", "300")),
    deadline=None,
    derandomize="CI" in os.environ,
    suppress_health_check=[HealthCheck.too_slow],
)


@dataclass
class Owed:
    """What the script's lines are owed, and which tool calls the session may run."""

    by_id: Counter[Any] = field(default_factory=Counter)  # top-level answers per id
    null: int = 0  # top-level answers with id null
    batches: Counter[tuple[str, ...]] = field(default_factory=Counter)  # one array each: its ids
    may_run: Counter[tuple[Any, str, str | None]] = field(default_factory=Counter)
    cancellable: Counter[Any] = field(default_factory=Counter)  # tools/call per id, for cancellation
    cancelled: set[Any] = field(default_factory=set)


def dumps(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"))


def key(msg_id: Any) -> Any:
    """A Counter key that keeps 1, True and "1" apart (the wire does)."""
    return (type(msg_id).__name__, dumps(msg_id))


json_leaves = (
    st.none() | st.booleans() | st.integers() | st.text(max_size=5) | st.floats(allow_nan=False, allow_infinity=False)
)
json_values = st.recursive(
    json_leaves,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3),
    max_leaves=6,
)
arguments = st.one_of(
    st.just(None),
    st.dictionaries(st.text(max_size=4), json_values, max_size=3),
    json_values,  # absent, object, any
)


@st.composite
def tools_call(draw: st.DrawFn, msg_id: Any) -> tuple[str, str | None, str | None]:
    """The line of a ``tools/call``; the name and arguments text it would run with, if valid."""
    name = draw(st.sampled_from(["echo", "slow", "boom", "rpc", 5, None]))
    params: dict[str, Any] = {} if name is None else {"name": name}
    args = draw(arguments)
    args_text = None
    if args is not None or draw(st.booleans()):
        params["arguments"] = args
        args_text = dumps(args)
    if draw(st.booleans()):
        params["_meta"] = {"progressToken": draw(st.sampled_from(["t", 1, 1.5, None]))}
    text = '{"jsonrpc":"2.0","id":' + dumps(msg_id) + ',"method":"tools/call","params":' + dumps(params) + "}"
    return text, (name if isinstance(name, str) else None), args_text


@st.composite
def top_level_item(draw: st.DrawFn, owed: Owed, initialized: bool, batch_ok: bool, counter: list[int]) -> bytes:
    kind = draw(
        st.sampled_from(
            [
                "call",
                "call",
                "request",
                "bad_shape",
                "bad_id",
                "notification",
                "cancel_flood",
                "response",
                "garbage",
                "not_object",
                "deep",
                "digits",
                "oversized",
                "batch",
                "blank",
            ]
        )
    )
    msg_id = draw(st.sampled_from(POOL_IDS))
    if kind == "call":
        text, name, args_text = draw(tools_call(msg_id))
        owed.by_id[key(msg_id)] += 1
        owed.cancellable[key(msg_id)] += 1
        if initialized and name is not None:
            owed.may_run[(key(msg_id), name, args_text)] += 1
        return text.encode()
    if kind == "request":
        method = draw(
            st.sampled_from(
                ["ping", "tools/list", "server/discover", "resources/list", "x/y", "notifications/cancelled"]
            )
        )
        owed.by_id[key(msg_id)] += 1
        params = draw(st.sampled_from([None, {}, {"cursor": "x"}]))
        return dumps(
            {"jsonrpc": "2.0", "id": msg_id, "method": method, **({"params": params} if params else {})}
        ).encode()
    if kind == "bad_shape":  # a request by a valid id whose envelope is wrong: -32600 by that id
        owed.by_id[key(msg_id)] += 1
        bad = draw(
            st.sampled_from(
                [
                    {"jsonrpc": "1.0", "method": "ping"},
                    {"method": "tools/call"},
                    {"jsonrpc": "2.0", "method": 5},
                    {"jsonrpc": "2.0", "method": "tools/call", "params": [1]},
                    {"jsonrpc": "2.0", "method": "tools/call", "params": "echo"},
                ]
            )
        )
        return dumps({**bad, "id": msg_id}).encode()
    if kind == "bad_id":
        owed.null += 1
        bad_id = draw(st.sampled_from(BAD_IDS))
        return dumps({"jsonrpc": "2.0", "id": bad_id, "method": draw(st.sampled_from(["ping", "tools/call"]))}).encode()
    if kind == "notification":
        method = draw(st.sampled_from(["notifications/initialized", "notifications/progress", "tools/call", "x/y"]))
        return dumps({"jsonrpc": "2.0", "method": method, "params": {"name": "echo"}}).encode()
    if kind == "cancel_flood":
        targets = draw(st.lists(st.sampled_from([*POOL_IDS, *BAD_IDS, "never"]), min_size=1, max_size=60))
        owed.cancelled.update(key(t) for t in targets)
        return b"\n".join(
            dumps({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": t}}).encode()
            for t in targets
        )
    if kind == "response":
        return dumps(
            {"jsonrpc": "2.0", "id": msg_id, **draw(st.sampled_from([{"result": {}}, {"error": {"code": 1}}]))}
        ).encode()
    if kind == "garbage":  # never JSON, never UTF-8 or never a value: -32700 with id null
        owed.null += 1
        prefix = draw(st.sampled_from([b"\xff", b"{\x01", b"[1,,", b'{"a":NaN}', b"{'id':1}"]))
        return prefix + draw(st.binary(max_size=20)).replace(b"\n", b"")
    if kind == "not_object":  # JSON, but no message: nothing to answer
        return draw(st.sampled_from([b"5", b'"s"', b"null", b"true", b"{}", b'{"id":3,"result":1}']))
    if kind == "deep":
        # Past the decoder's depth even under hypothesis, which raises the recursion limit by 2000.
        depth = draw(st.sampled_from([5000, 20000]))
        valid = draw(st.booleans())
        the_id = msg_id if valid else draw(st.sampled_from(BAD_IDS))
        if valid:
            owed.by_id[key(msg_id)] += 1
        else:
            owed.null += 1
        nested = "[" * depth + "]" * depth
        return (
            '{"jsonrpc":"2.0","id":' + dumps(the_id) + ',"method":"tools/call","params":{"name":"echo",'
            '"arguments":{"x":' + nested + "}}}"
        ).encode()
    if kind == "digits":
        owed.by_id[key(msg_id)] += 1
        return (
            '{"jsonrpc":"2.0","id":' + dumps(msg_id) + ',"method":"tools/call","params":{"name":"echo",'
            '"arguments":{"n":' + "7" * 4400 + "}}}"
        ).encode()
    if kind == "oversized":
        id_first = draw(st.booleans())
        memo = dumps({"name": "echo", "arguments": {"memo": "m" * (LIMIT + 10)}})
        if id_first:
            owed.by_id[key(msg_id)] += 1
            return ('{"jsonrpc":"2.0","id":' + dumps(msg_id) + ',"method":"tools/call","params":' + memo + "}").encode()
        owed.null += 1
        return ('{"method":"tools/call","params":' + memo + ',"jsonrpc":"2.0","id":' + dumps(msg_id) + "}").encode()
    if kind == "batch":
        return draw(batch(owed, initialized, batch_ok, counter))
    return draw(st.sampled_from([b"", b" ", b"\r"]))


@st.composite
def batch(draw: st.DrawFn, owed: Owed, initialized: bool, batch_ok: bool, counter: list[int]) -> bytes:
    counter[0] += 1
    n = counter[0]
    items: list[str] = []
    ids: list[str] = []
    for i in range(draw(st.integers(min_value=0, max_value=5))):
        msg_id = f"b{n}-{i}" if i == 0 or draw(st.integers(0, 3)) else f"b{n}-0"  # now and then a reused id
        kind = draw(st.sampled_from(["call", "ping", "initialize", "notification", "bad_id", "not_object"]))
        if kind == "call":
            text, name, args_text = draw(tools_call(msg_id))
            items.append(text)
            ids.append(repr(msg_id))
            if batch_ok and name is not None:
                owed.may_run[(key(msg_id), name, args_text)] += 1
        elif kind in ("ping", "initialize"):
            items.append(dumps({"jsonrpc": "2.0", "id": msg_id, "method": kind}))
            ids.append(repr(msg_id))
        elif kind == "notification":
            items.append('{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"b0"}}')
        elif kind == "bad_id":
            items.append('{"jsonrpc":"2.0","id":null,"method":"ping"}')
            ids.append(repr(None))
        else:
            items.append(draw(st.sampled_from(["5", "[]", '{"x":1}'])))
    if batch_ok and items:
        if ids:
            owed.batches[tuple(sorted(ids))] += 1
    else:
        owed.null += 1  # outside 2025-03-26, or empty: one -32600 with id null
    return ("[" + ",".join(items) + "]").encode()


@st.composite
def scripts(draw: st.DrawFn) -> tuple[str | None, list[bytes], Owed]:
    version = draw(st.sampled_from(VERSIONS))
    owed = Owed()
    counter = [0]
    lines = draw(st.lists(top_level_item(owed, version is not None, version == "2025-03-26", counter), max_size=25))
    return version, lines, owed


async def play(version: str | None, lines: list[bytes], cuts: list[int]) -> Host:
    host = Host(max_message_bytes=LIMIT)
    endings = [b"\r\n" if i % 3 == 0 else b"\n" for i in range(len(lines))]
    stream = b"".join(line + end for line, end in zip(lines, endings, strict=True))
    with anyio.fail_after(30):
        async with anyio.create_task_group() as tg:
            tg.start_soon(host.session.run)
            if version is not None:
                await host.send(initialize(version))
                await host.wait_for(1)
                await host.send(INITIALIZED)
            at = 0
            for cut in cuts:
                if at >= len(stream):
                    break
                await host.send(stream[at : at + cut])
                at += cut
            if at < len(stream):
                await host.send(stream[at:])
            await host.close()
    return host


@pytest.fixture(autouse=True)
def quiet_session_log() -> Any:
    """The ``boom`` tool makes the session log a traceback for the operator; not wanted here."""
    logger = logging.getLogger("agentrt_proxy.mcp.server")
    level = logger.level
    logger.setLevel(logging.CRITICAL)
    yield
    logger.setLevel(level)


def check(host: Host, version: str | None, owed: Owed) -> None:
    answers = host.sink.messages()
    if version is not None:
        assert answers[0]["id"] == "init" and answers[0]["result"]["protocolVersion"] == version
        answers = answers[1:]
    by_id: Counter[Any] = Counter()
    null = 0
    arrays: Counter[tuple[str, ...]] = Counter()
    for answer in answers:
        members = answer if isinstance(answer, list) else [answer]
        for m in members:  # every line out is a response: an id and exactly one of result and error
            assert set(m) in ({"jsonrpc", "id", "result"}, {"jsonrpc", "id", "error"}), m
            assert m["jsonrpc"] == "2.0"
        if isinstance(answer, list):
            assert answer, "an empty array is never sent"
            arrays[tuple(sorted(repr(m["id"]) for m in answer))] += 1
        elif answer["id"] is None:
            null += 1
        else:
            by_id[key(answer["id"])] += 1
    assert null == owed.null
    assert arrays == owed.batches
    for msg_id in set(by_id) | set(owed.by_id):
        got, due = by_id[msg_id], owed.by_id[msg_id]
        # A cancelled call gets no answer; only a call whose id a cancellation named may go unanswered.
        spared = owed.cancellable[msg_id] if msg_id in owed.cancelled else 0
        assert due - spared <= got <= due, (msg_id, got, due)
    ran = Counter((key(i), name, args) for i, name, args in host.tools.executed)
    assert not ran - owed.may_run, ("a tool ran for a call that was not a valid request", ran - owed.may_run)
    for _, name, args in host.tools.executed:
        assert isinstance(name, str)
        assert args is None or isinstance(json.loads(args), (dict, list, str, int, float, bool, type(None)))
    if version is None:
        assert host.tools.executed == []  # nothing runs before initialize


@FUZZ
@given(script=scripts(), cuts=st.lists(st.integers(min_value=1, max_value=4096), max_size=12))
def test_every_request_is_answered_once_and_only_valid_calls_run(
    script: tuple[str | None, list[bytes], Owed], cuts: list[int]
) -> None:
    version, lines, owed = script
    host = anyio.run(play, version, lines, cuts)
    check(host, version, owed)


@FUZZ
@given(data=st.binary(max_size=3000), cuts=st.lists(st.integers(min_value=1, max_value=512), max_size=8))
def test_arbitrary_bytes_never_crash_the_session_nor_run_a_tool(data: bytes, cuts: list[int]) -> None:
    host = anyio.run(play, "2025-03-26", [data], cuts)
    assert host.tools.executed == []
    for answer in host.sink.messages()[1:]:
        assert answer["id"] is None or isinstance(answer, list) or "error" in answer
