"""A huge host message must not starve the leases of the calls executing meanwhile (issue 14,
item 4). Proxy A executes a payment that waits upstream; its host sends a call with 1.5 M
array elements (12 s of parsing and recording in pure Python); proxy B, on the same session,
keeps asking for the identical payment. B must hear IN_PROGRESS throughout: A's lease is
renewed while A works on the huge call, so B never takes the run over, and the payment is
paid once and recorded as paid.
"""

from __future__ import annotations

import time
from pathlib import Path

import anyio
import pytest

from tests.harness import text_of
from tests.program.test_serve_process import proxy, world

pytestmark = [pytest.mark.program, pytest.mark.anyio, pytest.mark.timeout(120)]

WAITING_PAYMENT = {"to": "rob", "amount": 5, "mode": "block"}
HUGE = {"to": "x", "amount": [0] * 1_500_000}


async def test_a_huge_host_message_does_not_let_another_proxy_take_over_a_running_payment(
    tmp_path: Path, program_argv: list[str], program_env: dict[str, str]
) -> None:
    pay = {"outcome": "allow", "timeout": "60s"}
    async with (
        world(tmp_path, program_argv, program_env, pay=pay, lease_ttl="3s") as w,
        proxy(w, "a") as a,
        proxy(w, "b") as b,
    ):
        _, paid, box = await a.send_raw("bank_pay", WAITING_PAYMENT)
        await w.wait_for("the payment's ledger line", lambda: w.payments() == 1)
        _, huge_answered, _ = await a.send_raw("bank_pay", HUGE)
        seen = []
        started = time.monotonic()
        while time.monotonic() - started < 8 or not huge_answered.is_set():
            seen.append(text_of(await b.call("bank_pay", WAITING_PAYMENT)).split(":", 1)[0])
            await anyio.sleep(0.5)
            if time.monotonic() - started > 60:
                break
        assert huge_answered.is_set()
        assert set(seen) == {"IN_PROGRESS"}, seen
        w.release()
        with anyio.fail_after(20):
            await paid.wait()
        assert box["message"]["result"]["content"][0]["text"] == "paid 5.00 to rob"
        assert w.payments() == 1
        again = await b.call("bank_pay", WAITING_PAYMENT)
        assert text_of(again).startswith("DUPLICATE: "), text_of(again)
