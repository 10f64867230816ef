"""What every fault of the matrix checks, around the real program (``serve -config``).

A world is the harness of ``tests/program/test_serve_process`` (its ``World`` and ``proxy``)
with a server of the test's choosing under the name ``bank``, pinned first with ``pin``. After a
fault, ``assert_nothing_half_recorded`` opens the database read-only: ``verify`` intact, no run
left RUNNING (none of these calls is still executing), and every run's steps agree with its
status.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio

from tests.conftest import run_program
from tests.harness import is_error, text_of
from tests.program.test_serve_process import World

PAY_RULES: dict[str, Any] = {
    "balance": {"side_effect": "read_only", "timeout": "2s"},
    "pay": {"side_effect": "remote_mutation", "timeout": "1s", "outcome": "allow"},
    "refund": {"side_effect": "destructive", "timeout": "2s"},
}
ANN = {"to": "ann", "amount": 1}
BOB = {"to": "bob", "amount": 2}


async def pinned_world(directory: Path, argv: list[str], env: dict[str, str], server: dict[str, Any]) -> World:
    """A configuration (session ``laptop``, hold 0s, database proxy.db) serving ``server`` as
    ``bank`` with ``PAY_RULES``, pinned with the real ``pin`` command."""
    document = {
        "database": "proxy.db",
        "session": "laptop",
        "hold": "0s",
        "servers": [{"name": "bank", "manifest": "bank.manifest.json", "rules": PAY_RULES, **server}],
    }
    path = directory / "proxy.json"
    path.write_text(json.dumps(document, indent=2))
    path.chmod(0o600)
    pinned = await anyio.to_thread.run_sync(lambda: run_program(["pin", "-config", str(path)], timeout=30))
    assert pinned.returncode == 0, pinned.stderr
    return World(directory, path, argv, env)


def new_lines(stderr: str, before: str) -> list[str]:
    """The lines written to stderr since ``before`` was read."""
    return [line for line in stderr[len(before) :].splitlines() if line.strip()]


def assert_one_line_each(lines: list[str]) -> None:
    """Operator lines, never a traceback or its frames."""
    assert not any(line.startswith(("Traceback", "  File ", "    ")) for line in lines), lines


def assert_nothing_half_recorded(w: World) -> None:
    """``verify`` intact (the chain and every row it explains); no run RUNNING and no step still
    deciding or executing (no call is in flight now); a run waiting for an operator has one step
    and one approval waiting; an ended run has no step waiting."""
    with w.store() as store:
        report = store.verify()
        assert report.intact, report
        with store.read() as conn:
            for run_id, status in conn.execute("SELECT id, status FROM runs").fetchall():
                steps = [s for (s,) in conn.execute("SELECT status FROM steps WHERE run_id = ?", (run_id,))]
                pending = conn.execute(
                    "SELECT count(*) FROM approvals WHERE run_id = ? AND status = 'pending'", (run_id,)
                ).fetchone()[0]
                assert status != "RUNNING" and steps, (run_id, status, steps)
                assert not {"deciding", "executing"} & set(steps), (run_id, status, steps)
                waiting = steps.count("awaiting_approval")
                if status == "WAITING_FOR_APPROVAL":
                    assert (waiting, pending) == (1, 1), (run_id, steps, pending)
                else:
                    assert (waiting, pending) == (0, 0), (run_id, status, steps, pending)


async def balance_answers(host: Any, seconds: float = 15) -> None:
    """Wait until a read reaches the server again (it may be starting again after the fault)."""
    with anyio.fail_after(seconds):
        while True:
            try:
                result = await host.call("bank_balance", {"account": "a-1"})
            except Exception as err:  # the proxy could not start, say: its log says why, so show it
                raise AssertionError(f"{err}; the proxy's stderr:\n{host.stderr}") from err
            if not is_error(result):
                assert text_of(result) == "account a-1 holds 120.00 EUR"
                return
            await anyio.sleep(0.2)
