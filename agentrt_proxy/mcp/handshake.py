"""The handshake's answer, and answering ``initialize`` before the event loop exists (decision 0024).

``initialize_result`` and ``capabilities`` are the one source of what ``initialize`` and
``server/discover`` answer: the session's ``Answering`` calls them, and so does
``answer_initialize_early``, which ``serve`` runs right after its stdio servers start, before
anyio, asyncio and the session's code are imported. It waits at most ``EARLY_WAIT_S`` for stdin's
first line; when that line is an ``initialize`` request it writes the answer the session would
write, byte for byte, and the session then starts from the state it settled (``Handshake``) and
reads first whatever was read past that line. Anything else (another first message, a line that
is not JSON, a batch, a line longer than ``EARLY_LINE_BYTES``, no whole line in time, the end of
the stream, a stdin that is not a pipe or a socket) is the session's as it came: every byte read
is handed over unanswered, and the session answers it as it always has.

Stdlib and ``jsonrpc`` only, like ``spawn``: importable before anyio.
"""

from __future__ import annotations

import contextlib
import os
import select
import stat
import time
from dataclasses import dataclass
from typing import Any

from agentrt_proxy.mcp import jsonrpc, tasks_wire
from agentrt_proxy.mcp._framing import LineBuffer

__all__ = [
    "EARLY_LINE_BYTES",
    "EARLY_WAIT_S",
    "LATEST_PROTOCOL_VERSION",
    "SUPPORTED_PROTOCOL_VERSIONS",
    "EarlyInput",
    "Handshake",
    "answer_initialize_early",
    "capabilities",
    "initialize_result",
    "negotiate_version",
]

SUPPORTED_PROTOCOL_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
LATEST_PROTOCOL_VERSION = "2025-11-25"

# A host writes initialize as soon as it has started the proxy, which is ~40 ms before this
# runs: the line is nearly always waiting. Waiting longer would only delay the session (and
# the upstreams' connection) for a host that speaks late, which the session serves as well.
EARLY_WAIT_S = 0.05
EARLY_LINE_BYTES = 1 << 16  # an initialize request is a few hundred bytes


def negotiate_version(requested: object) -> str:
    """Echo a legacy version the host asked for; otherwise offer the latest."""
    if isinstance(requested, str) and requested in SUPPORTED_PROTOCOL_VERSIONS:
        return requested
    return LATEST_PROTOCOL_VERSION


def capabilities(
    serves_tasks: bool, offered: dict[str, Any], *, modern_era: bool = False, version: str | None = None
) -> dict[str, Any]:
    """The server's capabilities: ``offered`` is what the application adds (resources…)."""
    # The handshake era is told when the offered tools change (a server's tool no longer
    # matching its pin); a session of the modern revision gets no unsolicited notifications,
    # its lists carry ttlMs instead.
    answer: dict[str, Any] = {"tools": {"listChanged": not modern_era}, "logging": {}}
    if serves_tasks:
        if modern_era:
            answer["extensions"] = {tasks_wire.TASKS_EXTENSION: {}}
        elif version == tasks_wire.TASKS_VERSION_2025:
            answer["tasks"] = dict(tasks_wire.CAPABILITIES_2025)
    answer.update(offered)
    return answer


@dataclass(frozen=True)
class Handshake:
    """What ``initialize`` settled: the revision the session speaks, what the host declared."""

    version: str
    host_capabilities: dict[str, Any]


def initialize_result(
    params: dict[str, Any],
    server_info: dict[str, Any],
    instructions: str | None,
    serves_tasks: bool,
    offered: dict[str, Any],
) -> tuple[Handshake, dict[str, Any]]:
    """The handshake an ``initialize`` with ``params`` settles, and its answer's result."""
    version = negotiate_version(params.get("protocolVersion"))
    declared = params.get("capabilities")
    result: dict[str, Any] = {
        "protocolVersion": version,
        "capabilities": capabilities(serves_tasks, offered, version=version),
        "serverInfo": server_info,
    }
    if instructions:
        result["instructions"] = instructions
    return Handshake(version, declared if isinstance(declared, dict) else {}), result


@dataclass(frozen=True)
class EarlyInput:
    """What ``answer_initialize_early`` leaves the session: the bytes it read and did not answer
    (the session reads them before its stream), and the handshake if it answered ``initialize``."""

    unread: bytes = b""
    handshake: Handshake | None = None


def answer_initialize_early(
    server_info: dict[str, Any],
    *,
    serves_tasks: bool,
    instructions: str | None = None,
    in_fd: int = 0,
    out_fd: int = 1,
    wait_s: float = EARLY_WAIT_S,
) -> EarlyInput:
    """Answer stdin's first line if it is ``initialize`` (see the module's description)."""
    if not _is_pipe(in_fd):
        return EarlyInput()
    read = _first_line(in_fd, wait_s)
    end = read.find(b"\n")
    if end < 0 or end > EARLY_LINE_BYTES:
        return EarlyInput(read)
    (line,) = LineBuffer().feed(read[: end + 1])  # framed as the session frames it ("\r\n" too)
    request = jsonrpc.decode_line(line)
    if not isinstance(request, jsonrpc.Request) or request.method != "initialize":
        return EarlyInput(read)
    handshake, result = initialize_result(request.params or {}, server_info, instructions, serves_tasks, {})
    data = memoryview(jsonrpc.encode(jsonrpc.result(request.id, result)) + b"\n")
    with contextlib.suppress(OSError):  # the host is gone: the session finds its pipe broken too
        while data:
            data = data[os.write(out_fd, data) :]
    return EarlyInput(read[end + 1 :], handshake)


def _is_pipe(fd: int) -> bool:
    # A pipe's or a socket's end of stream stays ended, so the session reads it again; a
    # terminal's would not, and a file is no host.
    try:
        return stat.S_IFMT(os.fstat(fd).st_mode) in (stat.S_IFIFO, stat.S_IFSOCK)
    except OSError:
        return False


def _first_line(fd: int, wait_s: float) -> bytes:
    """What ``fd`` gives within ``wait_s``, up to the first newline (or past the bound)."""
    read = bytearray()
    deadline = time.monotonic() + wait_s
    while b"\n" not in read and len(read) <= EARLY_LINE_BYTES:
        left = deadline - time.monotonic()
        try:
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                break
            chunk = os.read(fd, EARLY_LINE_BYTES)
        except BlockingIOError:
            continue  # a non-blocking stdin that had nothing after all
        except (OSError, ValueError):
            break
        if not chunk:
            break  # the end of the stream: the session reads it again
        read += chunk
    return bytes(read)
