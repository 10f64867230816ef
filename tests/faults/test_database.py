"""The fault matrix, database (issue 14, item 10): read-only and full, through the real program.

Locked past the busy timeout is tests/proxy/test_database_faults.py; deleted or replaced is
tests/program/test_database_faults.py. Here, with the fake bank:

- read-only at start-up (the database's directory a read-only bind mount): refused with one line
  naming the path, nothing served;
- read-only while serving (``chattr +i`` on the database and its WAL: every write fails, root
  included): UNAVAILABLE, nothing executed; once writable again the next payment pays once;
- full (RLIMIT_FSIZE on the proxy, set from outside with prlimit just above the files' sizes:
  Python ignores SIGXFSZ, so a write past it fails with EFBIG, which SQLite reports as FULL):
  UNAVAILABLE saying whether the payment executed, the ledger agreeing; with the limit lifted the
  next payment pays once.

Each: one stderr line and no traceback, nothing half recorded (``verify`` intact).
"""

from __future__ import annotations

import resource
import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

import anyio
import pytest

from tests.conftest import run_program
from tests.faults.worlds import BOB, assert_nothing_half_recorded, assert_one_line_each, new_lines
from tests.harness import is_error, text_of
from tests.program.test_serve_process import ALLOW_PAY, proxy, world

pytestmark = [pytest.mark.program, pytest.mark.anyio, pytest.mark.timeout(90)]

NOTHING_EXECUTED = "nothing was executed"
EXECUTED = "could not be recorded"


def files_of(db: str) -> list[Path]:
    return [Path(f"{db}{suffix}") for suffix in ("", "-wal") if Path(f"{db}{suffix}").exists()]


@contextmanager
def immutable(paths: list[Path]) -> Iterator[None]:
    """``chattr +i`` on each path for the block: no write, even through an open descriptor."""
    if shutil.which("chattr") is None:
        pytest.skip("chattr is not installed")
    done = subprocess.run(["chattr", "+i", *map(str, paths)], capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"chattr +i does not work here: {done.stderr.strip()}")
    try:
        yield
    finally:
        subprocess.run(["chattr", "-i", *map(str, paths)], check=True)


async def test_a_database_on_a_read_only_mount_is_refused_at_start_up_naming_the_path(
    tmp_path: Path, program_argv: list[str], program_env: dict[str, str]
) -> None:
    async with world(tmp_path, program_argv, program_env, pay=ALLOW_PAY) as w, proxy(w) as host:
        assert text_of(await host.call("bank_pay", BOB)) == "paid 2.00 to bob"  # the database now exists
    data = tmp_path / "data"
    data.mkdir()
    shutil.move(w.db, data / "proxy.db")
    mounted = tmp_path / "ro"
    mounted.mkdir()
    done = subprocess.run(["mount", "--bind", str(data), str(mounted)], capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"mount --bind does not work here: {done.stderr.strip()}")
    try:
        done = subprocess.run(["mount", "-o", "remount,bind,ro", str(mounted)], capture_output=True, text=True)
        if done.returncode != 0:
            pytest.skip(f"a read-only bind mount does not work here: {done.stderr.strip()}")
        config = w.config.read_text().replace('"proxy.db"', f'"{mounted / "proxy.db"}"')
        w.config.write_text(config)
        served = await anyio.to_thread.run_sync(
            lambda: run_program(["serve", "-config", str(w.config)], input="", timeout=30)
        )
        assert served.returncode != 0 and served.stdout == ""
        lines = served.stderr.splitlines()
        assert len(lines) == 1 and str(mounted / "proxy.db") in lines[0], lines
        assert "read-only" in lines[0].lower() or "read only" in lines[0].lower(), lines
        assert w.payments() == 1
    finally:
        subprocess.run(["umount", str(mounted)], check=False)


async def test_a_database_made_read_only_while_serving_executes_nothing_and_the_next_payment_pays_once(
    tmp_path: Path, program_argv: list[str], program_env: dict[str, str]
) -> None:
    async with world(tmp_path, program_argv, program_env, pay=ALLOW_PAY) as w, proxy(w) as host:
        assert text_of(await host.call("bank_pay", {"to": "ann", "amount": 1})) == "paid 1.00 to ann"
        before = host.stderr
        with immutable(files_of(w.db)):
            refused = await host.call("bank_pay", BOB)
            text = text_of(refused)
            assert is_error(refused) and text.startswith("UNAVAILABLE: ") and NOTHING_EXECUTED in text, text
            assert w.payments() == 1
        lines = new_lines(host.stderr, before)
        assert_one_line_each(lines)
        assert len(lines) == 1, lines
        assert_nothing_half_recorded(w)
        after = await host.call("bank_pay", BOB)
        assert text_of(after) == "paid 2.00 to bob" and w.payments() == 2, text_of(after)
        assert_nothing_half_recorded(w)
        assert "Traceback" not in host.stderr


async def test_a_full_database_answers_unavailable_saying_what_ran_and_once_it_has_room_the_next_payment_pays(
    tmp_path: Path, program_argv: list[str], program_env: dict[str, str]
) -> None:
    async with world(tmp_path, program_argv, program_env, pay=ALLOW_PAY) as w, proxy(w) as host:
        assert text_of(await host.call("bank_pay", {"to": "ann", "amount": 1})) == "paid 1.00 to ann"
        pid = host.process.pid
        limit = max(p.stat().st_size for p in files_of(w.db)) + 1
        before = host.stderr
        hard = resource.prlimit(pid, resource.RLIMIT_FSIZE)[1]  # kept: raising it again needs a capability
        resource.prlimit(pid, resource.RLIMIT_FSIZE, (limit, hard))
        refused = None
        try:
            for n in range(2, 60):  # each payment grows the WAL; one of them meets the limit
                paid = w.payments()
                result = await host.call("bank_pay", {"to": f"p{n}", "amount": n})
                if text_of(result).startswith("UNAVAILABLE: "):
                    refused, grew = result, w.payments() - paid
                    break
                assert text_of(result) == f"paid {n:.2f} to p{n}", text_of(result)
        finally:
            with suppress(ProcessLookupError):
                resource.prlimit(pid, resource.RLIMIT_FSIZE, (hard, hard))
        assert refused is not None, "no payment met the limit"
        text = text_of(refused)
        assert is_error(refused), text
        assert (grew, EXECUTED in text, NOTHING_EXECUTED in text) in ((1, True, False), (0, False, True)), (grew, text)
        lines = new_lines(host.stderr, before)
        assert_one_line_each(lines)
        assert 1 <= len(lines) <= 2, lines  # the fault, and what became of the kept outcome
        assert_nothing_half_recorded(w)
        total = w.payments()
        after = await host.call("bank_pay", BOB)
        assert text_of(after) == "paid 2.00 to bob" and w.payments() == total + 1, text_of(after)
        assert_nothing_half_recorded(w)
        assert "Traceback" not in host.stderr


async def test_a_full_database_never_answers_a_new_request_in_progress_and_names_what_it_could_not_write(
    tmp_path: Path, program_argv: list[str], program_env: dict[str, str]
) -> None:
    async with world(tmp_path, program_argv, program_env, pay=ALLOW_PAY, lease_ttl="3s") as w, proxy(w) as host:
        assert text_of(await host.call("bank_pay", {"to": "ann", "amount": 1})) == "paid 1.00 to ann"
        _, answered, box = await host.send_raw("bank_pay", {"to": "kim", "amount": 7, "mode": "block"})
        await w.wait_for("the blocked payment to reach the bank", lambda: w.payments() == 2)
        pid = host.process.pid
        hard = resource.prlimit(pid, resource.RLIMIT_FSIZE)[1]
        resource.prlimit(pid, resource.RLIMIT_FSIZE, (max(p.stat().st_size for p in files_of(w.db)) + 1, hard))
        try:
            w.release()  # the bank answers; the full database refuses the outcome past the lease
            with anyio.fail_after(30):
                await answered.wait()
            kept = box["message"]["result"]
            assert text_of(kept).startswith("UNAVAILABLE: ") and EXECUTED in text_of(kept), kept
            [left] = [r for r in w.runs() if r.status == "RUNNING"]  # paid, and not recorded
            await w.wait_lease_expired(left.id)
            before = host.stderr
            fresh = await host.call("bank_pay", {"to": "never-before", "amount": 3})
            text = text_of(fresh)
            # A request never made before meets the run left behind, whose take-over the full
            # database refuses: nothing ran, and it says so, never IN_PROGRESS.
            assert text.startswith("UNAVAILABLE: ") and NOTHING_EXECUTED in text, text
            assert w.payments() == 2
            lines = new_lines(host.stderr, before)
            assert_one_line_each(lines)
            assert len(lines) == 1 and f"the database refused to record the take-over of run {left.id}" in lines[0]
        finally:
            with suppress(ProcessLookupError):
                resource.prlimit(pid, resource.RLIMIT_FSIZE, (hard, hard))
        assert [r.id for r in w.runs() if r.status == "RUNNING"] == [left.id]  # nothing half-moved
        # Room again: the kept outcome is recorded on its run, late, and the take-over says it executed.
        await w.wait_for("the kept outcome to be recorded", lambda: "step.late_outcome" in w.events(left.id), 30)
        blocked = await host.call("bank_pay", {"to": "never-before", "amount": 3})
        assert text_of(blocked).startswith("BLOCKED"), text_of(blocked)
        assert any(
            f"run {left.id}: a call to bank_pay was cut off" in line and "it executed" in line
            for line in host.stderr.splitlines()
        ), host.stderr
        assert w.payments() == 2 and "Traceback" not in host.stderr
        assert_nothing_half_recorded(w)
