"""The demo's everyday calls: a read that runs (1), a payment an operator approves (2), a host
retrying a call whose answer it lost (4), a payment past the budget (6)."""

from __future__ import annotations

from typing import Any

from agentrt_proxy.cli._demo_scene import Scene
from agentrt_proxy.cli._demo_stage import DemoFailure, say
from agentrt_proxy.text import demo_text as words


async def step1(scene: Scene, host: Any) -> None:
    step = "step 1"
    say(words.STEP1)
    seen = await scene.call(host, "bank_balance", {"account": "household"})
    scene.expect(step, seen, "account household holds", is_error=False)
    say()


async def step2(scene: Scene, host: Any) -> None:
    step = "step 2"
    say(words.STEP2)
    rent = {"to": "landlord", "amount": 950}
    scene.expect(step, await scene.call(host, "bank_pay", rent), "PENDING_APPROVAL", is_error=False)
    scene.expect_payments(step, 0, words.NOTHING_HAS_RUN)
    scene.operator("approve", "rent for October", step)
    say(words.STEP2_CALLS_AGAIN)
    scene.expect(step, await scene.call(host, "bank_pay", rent), "paid 950.00 to landlord", is_error=False)
    scene.expect_payments(step, 1, words.COLLECTED_ONCE)
    say()


async def step4(scene: Scene, host: Any) -> None:
    step = "step 4"
    say(words.STEP4)
    groceries = {"to": "grocer", "amount": 42}
    before = scene.payments()
    scene.expect(step, await scene.call(host, "bank_pay", groceries), "PENDING_APPROVAL", is_error=False)
    scene.operator("approve", "weekly shop", step)
    scene.expect(step, await scene.call(host, "bank_pay", groceries), "paid 42.00 to grocer", is_error=False)
    say(words.STEP4_RETRIES)
    scene.expect(step, await scene.call(host, "bank_pay", groceries), "DUPLICATE", is_error=True)
    through = scene.payments() - before
    say(words.through_the_proxy(through))
    if through != 1:
        raise DemoFailure(words.through_wrong(step, through))
    say(words.STEP4_STRAIGHT)
    before = scene.payments()
    async with scene.bank() as bank:
        for _ in range(2):
            scene.expect(step, await scene.call(bank, "pay", groceries), "paid 42.00 to grocer", is_error=False)
    without = scene.payments() - before
    say(words.without_the_proxy(without))
    if without != 2:
        raise DemoFailure(words.straight_wrong(step, without))
    say()


async def step6(scene: Scene, host: Any) -> None:
    step = "step 6"
    say(words.STEP6)
    say(words.STEP6_SPENT)
    before = scene.payments()
    jeweller = {"to": "jeweller", "amount": 200}
    scene.expect(step, await scene.call(host, "bank_pay", jeweller), "OVER_BUDGET", is_error=True)
    scene.expect(step, await scene.call(host, "gate_status", {"tool": "bank_pay"}), "GATE_STATUS", is_error=False)
    scene.expect_payments(step, before, words.NOTHING_RAN)
