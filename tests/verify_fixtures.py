"""An honest database for verify's state check, written by the in-process proxy (tests/harness.py)
with the fake bank: a read, a payment approved and collected, one rejected and asked again, a
payment that took effect and timed out (an unknown outcome) whose interruption approval was
rejected and which was asked again, and a payment under a budget (its reservation reserved, then
spent). Five runs, three approvals, five call rows, one budget reservation; three payments."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.harness import DEFAULT_RULES, is_error, proxy_harness, text_of

TIMEOUT_PAY: dict[str, Any] = {
    **DEFAULT_RULES,
    "pay": {"side_effect": "remote_mutation", "timeout": "300ms", "outcome": "allow"},
}
PRICED_PAY: dict[str, Any] = {
    **DEFAULT_RULES,
    "pay": {"side_effect": "remote_mutation", "timeout": "10s", "outcome": "allow", "amount_field": "amount"},
}
DAILY = [{"name": "daily", "tools": ["bank_pay"], "limit": 100, "window": "24h"}]


async def build_honest(directory: Path) -> Path:
    async with proxy_harness(directory) as h:
        assert not is_error(await h.call("bank_balance", {"account": "household"}))
        await h.call("bank_pay", {"to": "kim", "amount": 7})
        h.approve(h.pending()[0].id)
        assert "paid" in text_of(await h.call("bank_pay", {"to": "kim", "amount": 7}))
        await h.call("bank_pay", {"to": "lee", "amount": 3})
        h.reject(h.pending()[0].id, "not lee")
        assert text_of(await h.call("bank_pay", {"to": "lee", "amount": 3})).startswith("REJECTED")
        assert h.payments() == 1
    async with proxy_harness(directory, pin_first=False, rules=TIMEOUT_PAY) as h:
        result = await h.call("bank_pay", {"to": "max", "amount": 2, "mode": "block"})
        assert text_of(result).startswith("UNKNOWN_OUTCOME"), text_of(result)
        (directory / "ledger.release").write_text("")
        h.reject(h.pending()[0].id, "it went through; do not pay again")
        again = await h.call("bank_pay", {"to": "max", "amount": 2, "mode": "block"})  # settles its row
        assert text_of(again).startswith("REJECTED"), text_of(again)
        assert h.payments() == 2
    async with proxy_harness(directory, pin_first=False, rules=PRICED_PAY, budgets=DAILY) as h:
        assert "paid" in text_of(await h.call("bank_pay", {"to": "nia", "amount": 4}))
        assert h.payments() == 3
        return Path(h.config.database)
