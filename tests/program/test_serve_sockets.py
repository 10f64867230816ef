"""``serve`` opens no listening socket: the console is a command of its own, never part of it.

The proxy's sockets are read from /proc (its file descriptors' socket inodes, matched in its
network namespace's TCP and UDP tables) while it serves a host and a payment waits.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.program.test_console_http import listening_sockets
from tests.program.test_serve_process import prefix, proxy, world

pytestmark = [pytest.mark.program, pytest.mark.anyio, pytest.mark.timeout(90)]


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="reads the process's sockets from /proc")
async def test_serve_opens_no_listening_socket_while_a_payment_waits(
    tmp_path: Path, program_argv: list[str], program_env: dict[str, str]
) -> None:
    async with world(tmp_path, program_argv, program_env) as w, proxy(w) as host:
        assert prefix(await host.call("bank_pay", {"to": "nina", "amount": 12})) == "PENDING_APPROVAL"
        assert await host.call("bank_balance", {"account": "main"})  # the server was spoken to
        pids = [host.process.pid, *children(host.process.pid)]
        assert len(pids) >= 2  # the proxy and the bank it started
        assert {pid: listening_sockets(pid) for pid in pids} == {pid: set() for pid in pids}


def children(pid: int) -> list[int]:
    found = []
    for task in os.listdir(f"/proc/{pid}/task"):
        try:
            found += [int(c) for c in Path(f"/proc/{pid}/task/{task}/children").read_text().split()]
        except OSError:
            continue
    return found
