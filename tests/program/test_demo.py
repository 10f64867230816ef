"""The demonstration (spec proxy-and-mcp-module §4.2, §5.8): it runs every step through the
real program, as a newcomer would, from the source tree or the single file."""

from __future__ import annotations

import json
import re
import shutil
from contextlib import closing
from pathlib import Path

import pytest

from agentrt_proxy.store import HOLD_RELEASED, Store
from tests.conftest import run_program

pytestmark = pytest.mark.program

MARKERS = [
    "model sees: account household holds",
    "model sees: PENDING_APPROVAL",
    "model sees: paid 950.00 to landlord",
    "model sees: INTERRUPTED",
    "model sees (isError): REJECTED",
    "model sees (isError): DUPLICATE",
    'model sees (isError): OVER_BUDGET: budget "monthly" has 148 left of 1400 per 720h0m0s',
    "through the proxy the server made 1 payment",
    "without the proxy the server made 2 payments",
    "model sees (isError): bank_pay: nothing was sent to the server",
    "started again",
    "model sees: paid 5.00 to courier",
    '"result":{"resultType":"task",',
    "task completed: paid 20.00 to window-cleaner",
    "every process the demo started has exited",
]


def test_demo_runs_every_step() -> None:
    done = run_program(["demo", "-keep"], timeout=240)
    kept = re.search(r"^kept (\S+); read it with:$", done.stdout, re.MULTILINE)
    try:
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
        for marker in MARKERS:
            assert marker in done.stdout, f"missing {marker!r} in:\n{done.stdout}"
        for header in (
            "1. A read",
            "2. A payment waits",
            "3. The proxy is killed",
            "4. A host lost a response",
            "5. The payment server dies",
            "6. A payment past the month's budget",
            "7. The server rewords a tool's description",
            "8. An approval as a task",
            "9. A payment's answer comes too late",
            "10. A description that asks the model for something",
        ):
            assert f"\n{header}" in done.stdout
        assert "the proxy is killed with SIGKILL" in done.stdout
        assert "intact:" in done.stdout  # verify's report of the audit chain
        # ... and of the state held to it, after a SIGKILL, a takeover, approvals and a rejection
        assert "call(s): every row agrees with the chain" in done.stdout
        assert "demo failed" not in done.stdout and done.stderr == ""

        # The ledger, counted here rather than trusted from the narration: one line per
        # payment the fake server made.
        assert kept is not None, done.stdout[-2000:]
        directory = Path(kept.group(1))
        payments = [json.loads(line) for line in (directory / "ledger.txt").read_text().splitlines()]
        by_payee: dict[str, int] = {}
        for payment in payments:
            by_payee[payment["to"]] = by_payee.get(payment["to"], 0) + 1
        # landlord: approved, collected once; plumber: cut off by SIGKILL, ran once and never
        # again after the operator rejected the re-run; electrician: the unblocked tool ran;
        # grocer: once through the proxy (the retry was DUPLICATE), twice straight to the server.
        # courier: the server died before the approved payment was collected, so nothing was sent;
        # started again, asked and approved again, it ran once. window-cleaner: one tools/call answered
        # with a task; approved, the proxy itself paid once and the task completed with the result.
        assert by_payee == {
            "landlord": 1,
            "plumber": 1,
            "electrician": 1,
            "grocer": 3,
            "courier": 1,
            "window-cleaner": 1,
        }, payments
        # The operator's runs shows the one run that was a task, completed.
        header = next(line for line in done.stdout.splitlines() if line.strip().startswith("RUN "))
        assert header.split()[6] == "TASK"
        assert sum(1 for line in done.stdout.splitlines() if "  completed  call bank_pay" in line) == 1
        # Step 9: the florist's payment timed out and the bank paid nothing (no ledger line); the
        # operator released its reservation, so that run's one hold is released, in the chain.
        with closing(Store.open_readonly(str(directory / "runs.db"))) as store:
            florist = [h for h in store.holds.every() if h.amount == "40"]
        assert [(h.state, h.budget) for h in florist] == [(HOLD_RELEASED, "monthly")]
        # Step 10: the accepted change was refused by the scan and recorded so, with both findings;
        # balance is no longer pinned.
        manifest = json.loads((directory / "bank.manifest.json").read_text())
        refused = manifest["scan"]["refused"]
        assert {f["rule"] for f in refused["balance"]} == {"crosstool.directive", "injection.concealment"}
        assert "balance" not in manifest["tools"]
        assert (directory / "runs.db").is_file()
        assert (directory / "proxy.json").stat().st_mode & 0o777 == 0o600
    finally:
        if kept is not None:
            shutil.rmtree(kept.group(1), ignore_errors=True)


def test_demo_refuses_a_stray_argument() -> None:
    done = run_program(["demo", "-nope"])
    assert done.returncode == 2
    assert "flag provided but not defined: -nope" in done.stderr
