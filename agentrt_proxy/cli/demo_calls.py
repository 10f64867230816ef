"""The demo's everyday calls: a read that runs (1), a payment an operator approves (2), a host
retrying a call whose answer it lost (4), a payment past the budget (6)."""

from __future__ import annotations

from typing import Any

from agentrt_proxy.cli.demo_scene import Scene
from agentrt_proxy.cli.demo_stage import DemoFailure, say


async def step1(scene: Scene, host: Any) -> None:
    step = "step 1"
    say("1. A read the policy allows runs and answers.")
    seen = await scene.call(host, "bank_balance", {"account": "household"})
    scene.expect(step, seen, "account household holds", is_error=False)
    say()


async def step2(scene: Scene, host: Any) -> None:
    step = "step 2"
    say("2. A payment waits for an operator, approved from a second process, collected once.")
    rent = {"to": "landlord", "amount": 950}
    scene.expect(step, await scene.call(host, "bank_pay", rent), "PENDING_APPROVAL", is_error=False)
    scene.expect_payments(step, 0, " (nothing has run)")
    scene.operator("approve", "rent for October", step)
    say("   (the model is told the payment was approved, and calls again with the same arguments)")
    scene.expect(step, await scene.call(host, "bank_pay", rent), "paid 950.00 to landlord", is_error=False)
    scene.expect_payments(step, 1, " (collected once)")
    say()


async def step4(scene: Scene, host: Any) -> None:
    step = "step 4"
    say("4. A host lost a response and retries the identical call.")
    groceries = {"to": "grocer", "amount": 42}
    before = scene.payments()
    scene.expect(step, await scene.call(host, "bank_pay", groceries), "PENDING_APPROVAL", is_error=False)
    scene.operator("approve", "weekly shop", step)
    scene.expect(step, await scene.call(host, "bank_pay", groceries), "paid 42.00 to grocer", is_error=False)
    say("   (the host never received that answer and retries)")
    scene.expect(step, await scene.call(host, "bank_pay", groceries), "DUPLICATE", is_error=True)
    through = scene.payments() - before
    say(f"   through the proxy the server made {through} payment{'s' if through != 1 else ''}")
    if through != 1:
        raise DemoFailure(f"{step}: through the proxy the server should have made 1 payment, not {through}")
    say("   the same two calls straight to the server:")
    before = scene.payments()
    async with scene.bank() as bank:
        for _ in range(2):
            scene.expect(step, await scene.call(bank, "pay", groceries), "paid 42.00 to grocer", is_error=False)
    without = scene.payments() - before
    say(f"   without the proxy the server made {without} payment{'s' if without != 1 else ''}")
    if without != 2:
        raise DemoFailure(f"{step}: straight to the server there should have been 2 payments, not {without}")
    say()


async def step6(scene: Scene, host: Any) -> None:
    step = "step 6"
    say("6. A payment past the month's budget is refused as OVER_BUDGET, not DENIED: nothing runs or waits.")
    say("   (950 + 180 + 75 + 42 + 5 are spent: the plumber's payment went through; rejecting its re-run kept it)")
    before = scene.payments()
    jeweller = {"to": "jeweller", "amount": 200}
    scene.expect(step, await scene.call(host, "bank_pay", jeweller), "OVER_BUDGET", is_error=True)
    scene.expect(step, await scene.call(host, "gate_status", {"tool": "bank_pay"}), "GATE_STATUS", is_error=False)
    scene.expect_payments(step, before, " (nothing ran)")
