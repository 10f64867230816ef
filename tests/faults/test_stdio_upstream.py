"""The fault matrix, stdio upstream (issue 14, item 10): a payment meets each fault once.

The server is ``fixtures/faulty_bank.py``: it writes the payment to the ledger (it executed),
then misbehaves as the fault file says. Each row checks the seed's answer ("Timeouts, crashes,
and restarts"): a timeout, a dropped connection, a protocol error or a JSON-RPC error to a
mutating call is an unknown outcome (UNKNOWN_OUTCOME, an operator decides, other payments to
the tool BLOCKED); an answer that is not JSON is an answer (UNRECORDED, counted as executed);
noise before the answer, or an answer in single bytes, is the answer. Then: stderr has one
line about it and no traceback, nothing is half recorded, and once the fault clears (the server
continued or started again, the operator rejected what waits) the next payment pays once.
"""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path

import anyio
import pytest

from tests.conftest import REPO_ROOT
from tests.faults.worlds import (
    ANN,
    BOB,
    assert_nothing_half_recorded,
    assert_one_line_each,
    balance_answers,
    new_lines,
    pinned_world,
)
from tests.harness import is_error, text_of
from tests.program.test_serve_process import prefix, proxy
from tests.program.test_servers_down import server_pids

pytestmark = [pytest.mark.program, pytest.mark.anyio, pytest.mark.timeout(90)]

FAULTY = str(REPO_ROOT / "tests" / "fixtures" / "faulty_bank.py")
UNKNOWN = "UNKNOWN_OUTCOME"

# fault -> (the answer's prefix or text, the words it must hold)
MATRIX = {
    "hang": (UNKNOWN, "timed out"),
    "exit": (UNKNOWN, "may have"),
    "partial": ("UNRECORDED", "could not be recorded"),  # the line names the call: an answer began
    "close_stdout": (UNKNOWN, "may have"),
    "rpc_error": (UNKNOWN, "may have"),
    "invalid_json": ("UNRECORDED", "could not be recorded"),
    "garbage": ("paid 1.00 to ann", ""),
    "drip": ("paid 1.00 to ann", ""),
}


@pytest.mark.parametrize("fault", list(MATRIX))
async def test_a_payment_meeting_an_upstream_fault_gets_the_seeds_answer_and_the_next_one_pays(
    tmp_path: Path, program_argv: list[str], program_env: dict[str, str], fault: str
) -> None:
    server = {
        "command": [sys.executable, FAULTY],
        "env": [
            f"PYTHONPATH={REPO_ROOT}",
            f"FAKE_PAYMENTS_LEDGER={tmp_path / 'ledger'}",
            f"FAULT_FILE={tmp_path / 'fault'}",
            f"REQUEST_LOG={tmp_path / 'requests'}",
        ],
    }
    w = await pinned_world(tmp_path, program_argv, program_env, server)
    want, words = MATRIX[fault]
    try:
        async with proxy(w) as host:
            await balance_answers(host)
            before = host.stderr
            (tmp_path / "fault").write_text(fault)
            result = await host.call("bank_pay", ANN)
            text = text_of(result)
            assert w.payments() == 1  # the server executed it, whatever it answered
            if want in (UNKNOWN, "UNRECORDED"):
                assert prefix(result) == want and words in text and not is_error(result), text
            else:
                assert text == want and not is_error(result), text
            await anyio.sleep(0.3)  # a supervisor's line about the server comes after the answer
            lines = new_lines(host.stderr, before)
            assert_one_line_each(lines)
            if want == UNKNOWN:
                assert sum("its outcome is unknown" in line for line in lines) == 1, lines
                other = await host.call("bank_pay", BOB)
                assert prefix(other) == "BLOCKED" and w.payments() == 1, text_of(other)
                if fault == "hang":
                    for pid in server_pids(w.ledger):
                        os.kill(pid, signal.SIGCONT)  # the late answer must match no call
                [waiting] = w.pending()
                await w.reject(waiting, "checked with the bank: paid")
            assert_nothing_half_recorded(w)
            await balance_answers(host)  # the server is back (continued, or started again)
            after = await host.call("bank_pay", BOB)
            assert text_of(after) == "paid 2.00 to bob" and w.payments() == 2, text_of(after)
            assert_nothing_half_recorded(w)
            assert "Traceback" not in host.stderr
    finally:
        for pid in server_pids(w.ledger):
            os.kill(pid, signal.SIGKILL)
