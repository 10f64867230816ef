"""The demo's release (9): a payment whose answer came too late keeps its reservation, though
the bank paid nothing; the operator, who knows it did not, rejects its re-run and gives the
reservation back with ``budget release``, reading the budget before and after."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from agentrt_proxy.cli._demo_scene import OPERATOR, Scene
from agentrt_proxy.cli._demo_stage import DemoFailure, say
from agentrt_proxy.config import ALLOW
from agentrt_proxy.text import demo_text as words

DECLINE_SECONDS = 10  # the bank's decline comes long after pay's 1 s, however loaded the machine


def monthly(budgets: list[dict[str, str]], step: str) -> dict[str, str]:
    """The monthly budget's spent and reserved, as ``runs -json`` gives them."""
    found = [b for b in budgets if b.get("budget") == "monthly"]
    if not found:
        raise DemoFailure(words.no_budget_line(step))
    return found[0]


async def step9_release(scene: Scene) -> None:
    step = "step 9"
    say(words.STEP9)
    declining = [f"FAKE_PAYMENTS_SLOW_DECLINES={DECLINE_SECONDS}"]
    slow = scene.write_variant("slow.json", declining, {"timeout": "1s", "outcome": ALLOW})
    say(words.STEP9_SLOW)
    flowers: dict[str, Any] = {"to": "florist", "amount": 40, "mode": "slow"}
    before = scene.payments()
    async with scene.proxy(slow) as host:
        # Past pay's 1 s the proxy stops waiting: the outcome is unknown, so the amount stays held.
        scene.expect(step, await scene.call(host, "bank_pay", flowers), "UNKNOWN_OUTCOME", is_error=False)
        run_id = scene.operator("reject", words.STEP9_NOTE, step, expect_kind="interrupted_side_effect")
    held = monthly(scene.budgets_seen, step)  # read by the operator's runs -json, before deciding
    say(words.budget_before_deciding(held["spent"], held["reserved"]))
    scene.expect_payments(step, before, words.STEP9_NOTHING_PAID)
    scene.shell(["budget", "release", "-db", "runs.db", run_id, "-note", words.STEP9_NOTE, "-by", OPERATOR], what=step)
    scene.read_runs(step)
    after = monthly(scene.budgets_seen, step)
    say(words.budget_after_release(after["spent"], after["reserved"]))
    counted_before = Decimal(held["spent"]) + Decimal(held["reserved"])
    counted_after = Decimal(after["spent"]) + Decimal(after["reserved"])
    if counted_before - counted_after != flowers["amount"] or Decimal(after["reserved"]) != 0:
        raise DemoFailure(words.release_wrong(step, held, after))
    say()
