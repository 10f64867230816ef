"""``initialize`` answered before the session exists (``mcp.handshake``, decision 0024): the same
bytes as the session's answer, the same state for the session to go on from, and every byte
it read but did not answer handed over; anything but an ``initialize`` first is left alone."""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Iterator
from typing import Any

import anyio
import pytest

from agentrt_proxy.mcp import ServerSession
from agentrt_proxy.mcp.handshake import EARLY_LINE_BYTES, EarlyInput, answer_initialize_early, initialize_result
from tests.mcp.host_streams import INITIALIZED, ChunkPipe, CountingTools, Sink, initialize, line

F_SETPIPE_SZ = 1031  # Linux
INFO = {"name": "gated-tools", "version": "1"}
TOOLS_LIST = line({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
CALL_ECHO = line({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "echo", "arguments": {}}})


class TaskTools(CountingTools):
    serves_tasks = True


@pytest.fixture
def pipes() -> Iterator[tuple[int, int, int, int]]:
    proxy_in, host_in = os.pipe()  # the host writes, the proxy reads
    host_out, proxy_out = os.pipe()
    fcntl.fcntl(host_in, F_SETPIPE_SZ, 1 << 20)  # room for the over-long line, written at once
    yield proxy_in, host_in, proxy_out, host_out
    for fd in (proxy_in, host_in, proxy_out, host_out):
        with contextlib.suppress(OSError):
            os.close(fd)


def early(pipes: tuple[int, int, int, int], data: bytes, *, serves_tasks: bool = False) -> tuple[EarlyInput, bytes]:
    """What ``answer_initialize_early`` leaves and writes when the host has written ``data``."""
    proxy_in, host_in, proxy_out, host_out = pipes
    os.write(host_in, data)
    got = answer_initialize_early(INFO, serves_tasks=serves_tasks, in_fd=proxy_in, out_fd=proxy_out, wait_s=0.2)
    os.set_blocking(host_out, False)
    try:
        written = os.read(host_out, 1 << 20)
    except BlockingIOError:
        written = b""
    return got, written


async def session_answers(data: bytes, tools: CountingTools, early_input: EarlyInput | None = None) -> bytes:
    """Every byte a session writes for ``data`` (then the end of the stream)."""
    pipe, sink = ChunkPipe(), Sink()
    session = ServerSession(pipe, sink, tools, INFO, early=early_input)
    if data:
        await pipe.send_side.send(data)
    await pipe.send_side.aclose()
    with anyio.fail_after(10):
        await session.run()
    return bytes(sink.data)


@pytest.mark.anyio
@pytest.mark.parametrize("version", ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25", "2099-01-01"])
@pytest.mark.parametrize("tools", [CountingTools, TaskTools])
async def test_the_early_answer_is_the_sessions_byte_for_byte(
    pipes: tuple[int, int, int, int], version: str, tools: type[CountingTools]
) -> None:
    first = initialize(version, msg_id=7)
    got, written = early(pipes, first, serves_tasks=tools is TaskTools)
    assert got.handshake is not None and got.unread == b""
    assert written == await session_answers(first, tools())


@pytest.mark.anyio
async def test_the_session_goes_on_from_the_early_handshake_with_the_bytes_read_past_it(
    pipes: tuple[int, int, int, int],
) -> None:
    rest = INITIALIZED + TOOLS_LIST + CALL_ECHO
    got, written = early(pipes, initialize("2025-06-18") + rest)
    assert got.unread == rest and got.handshake is not None
    assert got.handshake.version == "2025-06-18"
    tools = CountingTools()
    answered = await session_answers(b"", tools, got)  # nothing more arrives: only what was read
    normal = CountingTools()
    whole = await session_answers(initialize("2025-06-18") + rest, normal)
    assert written + answered == whole
    assert [name for _, name, _ in tools.executed] == ["echo"] == [name for _, name, _ in normal.executed]


@pytest.mark.parametrize(
    "data",
    [
        line({"jsonrpc": "2.0", "id": 1, "method": "ping"}) + initialize(),
        line({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": {}}}),
        b"not json\n" + initialize(),
        b"[" + initialize().rstrip(b"\n") + b"]\n",
        b"\n" + initialize(),
        initialize().rstrip(b"\n"),  # no whole line in time
        b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"x":"' + b"a" * EARLY_LINE_BYTES + b'"}}\n',
        line({"jsonrpc": "2.0", "method": "initialize"}),  # a notification, not a request
    ],
    ids=["ping first", "modern", "not json", "batch", "empty line", "partial", "over-long", "notification"],
)
def test_anything_but_an_initialize_request_first_is_handed_over_unanswered(
    pipes: tuple[int, int, int, int], data: bytes
) -> None:
    got, written = early(pipes, data)
    assert written == b""
    assert got.handshake is None and got.unread == data


def test_a_stdin_that_is_not_a_pipe_is_not_read(tmp_path: Any) -> None:
    path = tmp_path / "stdin"
    path.write_bytes(initialize())
    with path.open("rb") as stdin:
        got = answer_initialize_early(INFO, serves_tasks=False, in_fd=stdin.fileno(), out_fd=-1)
        assert got == EarlyInput() and stdin.tell() == 0 and os.lseek(stdin.fileno(), 0, os.SEEK_CUR) == 0


@pytest.mark.parametrize(
    ("params", "version", "declared"),
    [
        ({"protocolVersion": "2024-11-05", "capabilities": {"sampling": {}}}, "2024-11-05", {"sampling": {}}),
        ({"protocolVersion": 5, "capabilities": []}, "2025-11-25", {}),
        ({}, "2025-11-25", {}),
    ],
)
def test_initialize_settles_the_version_and_what_the_host_declared(
    params: dict[str, Any], version: str, declared: dict[str, Any]
) -> None:
    settled, result = initialize_result(params, INFO, "read the docs", True, {"resources": {}})
    assert (settled.version, settled.host_capabilities) == (version, declared)
    assert result["protocolVersion"] == version and result["instructions"] == "read the docs"
    assert result["capabilities"]["resources"] == {} and result["serverInfo"] == INFO
