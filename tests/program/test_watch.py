"""``watch`` for scripts: JSON lines in a pipe, ``-notify`` through a recording stub, ``-exec``.

A real proxy over pipes (``tests/program/test_serve_process.py``'s world and host) makes
payments wait; ``watch`` runs as its own child with standard output a pipe; decisions are made
with the real ``approve``/``reject``. Effects are counted: the lines read, the stub's log, the
fake bank's ledger.
"""

from __future__ import annotations

import json
import os
import queue
import subprocess
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from tests.harness import text_of
from tests.program.test_serve_process import prefix, proxy, world
from tests.waiting import until_served

pytestmark = [pytest.mark.program, pytest.mark.anyio, pytest.mark.timeout(90)]


class Lines:
    """A child's standard output, one line at a time, with a deadline."""

    def __init__(self, process: subprocess.Popen[str]) -> None:
        self.process = process
        self.queue: queue.Queue[str] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.queue.put(line)

    def next(self, timeout: float = 10) -> dict[str, Any]:
        return json.loads(self.queue.get(timeout=timeout))

    def none_within(self, seconds: float) -> bool:
        try:
            self.queue.get(timeout=seconds)
        except queue.Empty:
            return True
        return False


@contextmanager
def watching(argv: list[str], env: dict[str, str], *args: str) -> Iterator[Lines]:
    # serve answers initialize before it opens its database (the cold start), and watch refuses
    # a database that does not exist: start watching once serve has made it.
    if "-db" in args:
        until_served(args[args.index("-db") + 1])
    process = subprocess.Popen(
        [*argv, "watch", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
        env=env,
    )
    try:
        yield Lines(process)
    finally:
        process.terminate()
        process.wait(timeout=10)


def stub(directory: Path, name: str) -> Path:
    """A program on PATH that appends its arguments (and AGENTRT_* variables) to a log."""
    bin_dir = directory / "bin"
    bin_dir.mkdir(exist_ok=True)
    log = directory / f"{name}.log"
    script = bin_dir / name
    script.write_text(
        "#!/bin/sh\n"
        # One write per call: watch starts its children without waiting, and two printfs
        # from two children at once would interleave into lines that belong to neither.
        'args=""\n'
        'for a in "$@"; do args="$args$a|"; done\n'
        'line="${args}id=$AGENTRT_APPROVAL_ID run=$AGENTRT_RUN_ID tool=$AGENTRT_TOOL"\n'
        f'printf "%s\\n" "$line" >> "{log}"\n'
    )
    script.chmod(0o755)
    return log


def wait_lines(path: Path, count: int, timeout: float = 10) -> list[str]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        lines = path.read_text().splitlines() if path.exists() else []
        if len(lines) >= count:
            return lines
        time.sleep(0.05)
    return path.read_text().splitlines() if path.exists() else []


async def test_watch_in_a_pipe_prints_one_json_line_per_new_approval_and_per_decision(
    tmp_path: Path, program_argv: list[str], program_env: dict[str, str]
) -> None:
    async with world(tmp_path, program_argv, program_env) as w, proxy(w) as host:
        with watching(program_argv, program_env, "-db", w.db) as lines:
            assert lines.none_within(0.5)  # nothing waits yet: not a line
            assert prefix(await host.call("bank_pay", {"to": "nina", "amount": 12})) == "PENDING_APPROVAL"
            waiting = lines.next()
            [approval] = w.pending()
            assert waiting["event"] == "waiting" and waiting["approval_id"] == approval.id
            assert waiting["tool"] == "bank_pay" and waiting["run_id"] == approval.run_id
            assert "to=nina" in waiting["summary"]
            await w.approve(approval)
            decided = lines.next()
            assert (decided["event"], decided["approval_id"], decided["status"]) == ("decided", approval.id, "approved")
            assert text_of(await host.call("bank_pay", {"to": "nina", "amount": 12})) == "paid 12.00 to nina"
            assert prefix(await host.call("bank_pay", {"to": "otto", "amount": 3})) == "PENDING_APPROVAL"
            second = lines.next()
            assert second["event"] == "waiting" and second["approval_id"] != approval.id
            [other] = w.pending()
            await w.reject(other, "not otto")
            rejected = lines.next()
            assert (rejected["status"], rejected["note"]) == ("rejected", "not otto")
            assert lines.none_within(1.0)  # exactly four lines: two waiting, two decisions
        assert w.payments() == 1


async def test_watch_notify_calls_notify_send_once_per_new_approval(
    tmp_path: Path, program_argv: list[str], program_env: dict[str, str]
) -> None:
    log = stub(tmp_path, "notify-send")
    env = {**program_env, "PATH": f"{tmp_path / 'bin'}{os.pathsep}{program_env.get('PATH', os.environ['PATH'])}"}
    secret = "s3cr3t-" + "x" * 300
    async with world(tmp_path, program_argv, program_env) as w, proxy(w) as host:
        with watching(program_argv, env, "-db", w.db, "-json", "-notify"):
            await host.call("bank_pay", {"to": secret, "amount": 12})
            await host.call("bank_pay", {"to": "otto", "amount": 3})
            calls = wait_lines(log, 2)
            time.sleep(0.5)  # and no third
            calls = log.read_text().splitlines()
    assert len(calls) == 2, calls
    assert all("bank_pay" in c for c in calls)
    assert secret not in log.read_text()  # a short summary, never the arguments whole


async def test_watch_notify_without_notify_send_says_so_in_one_line_and_goes_on(
    tmp_path: Path, program_argv: list[str], program_env: dict[str, str]
) -> None:
    (tmp_path / "bin").mkdir()
    env = {**program_env, "PATH": str(tmp_path / "bin")}  # no notify-send anywhere on it
    async with world(tmp_path, program_argv, program_env) as w, proxy(w) as host:
        with watching(program_argv, env, "-db", w.db, "-json", "-notify") as lines:
            await host.call("bank_pay", {"to": "nina", "amount": 12})
            assert lines.next()["event"] == "waiting"  # the view goes on
            assert lines.process.poll() is None
            lines.process.terminate()
            _, err = lines.process.communicate(timeout=10)
    assert err.count("no notify-send on this machine") == 1, err
    assert len(err.splitlines()) == 1, err


async def test_watch_exec_runs_the_command_per_new_approval_with_its_fields_and_no_shell(
    tmp_path: Path, program_argv: list[str], program_env: dict[str, str]
) -> None:
    log = stub(tmp_path, "on-approval")
    command = f"{tmp_path / 'bin' / 'on-approval'} 'one arg; $(touch {tmp_path / 'pwned'})'"
    async with world(tmp_path, program_argv, program_env) as w, proxy(w) as host:
        with watching(program_argv, program_env, "-db", w.db, "-json", "-exec", command):
            await host.call("bank_pay", {"to": "nina", "amount": 12})
            [approval] = w.pending()
            calls = wait_lines(log, 1)
    assert calls == [f"one arg; $(touch {tmp_path / 'pwned'})|id={approval.id} run={approval.run_id} tool=bank_pay"]
    assert not (tmp_path / "pwned").exists()


async def test_approve_on_a_run_with_one_pending_approval_needs_no_approval_flag(
    tmp_path: Path, program_argv: list[str], program_env: dict[str, str]
) -> None:
    from tests.conftest import run_program

    async with world(tmp_path, program_argv, program_env) as w, proxy(w) as host:
        await host.call("bank_pay", {"to": "nina", "amount": 12})
        [approval] = w.pending()
        assert f'watch -db "{w.db}"' in host.stderr  # the proxy's line names watch first
        done = run_program(["approve", "-db", w.db, approval.run_id, "-yes"], env={"USER": "ann"})
        assert done.returncode == 0, done.stderr
        assert w.approvals()[0].status == "approved" and w.approvals()[0].decided_by == "ann"
        assert text_of(await host.call("bank_pay", {"to": "nina", "amount": 12})) == "paid 12.00 to nina"
        assert w.payments() == 1
