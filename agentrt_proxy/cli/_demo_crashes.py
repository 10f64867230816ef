"""The demo's crashes: the proxy killed while a payment is inside the server (3), and the
payment server dying between an approval and its collection (5)."""

from __future__ import annotations

import os
import signal
from typing import Any

from agentrt_proxy.cli._demo_scene import LEASE_TTL_SECONDS, Scene
from agentrt_proxy.cli._demo_stage import DemoFailure, Seen, alive, child_with_env, compact, one_line, say
from agentrt_proxy.text import demo_text as words

PLUMBER: dict[str, Any] = {"to": "plumber", "amount": 180, "mode": "block"}


async def step3_kill(scene: Scene, host: Any) -> None:
    import anyio

    step = "step 3"
    say(words.STEP3)
    say(words.STEP3_BLOCK_MODE)
    before = scene.payments()
    scene.expect(step, await scene.call(host, "bank_pay", PLUMBER), "PENDING_APPROVAL", is_error=False)
    scene.operator("approve", "repair the boiler", step)
    say(words.collecting_in_background(compact(PLUMBER)))
    collected: list[Seen] = []

    async def collect() -> None:
        collected.append(await scene.call(host, "bank_pay", PLUMBER, quiet=True))

    async with anyio.create_task_group() as tg:
        tg.start_soon(collect)
        with anyio.move_on_after(20) as wait:
            while scene.payments() == before:
                await anyio.sleep(0.02)
        if wait.cancelled_caught:
            raise DemoFailure(words.payment_not_recorded(step))
        say(words.STEP3_KILLED)
        os.kill(scene.pid_of(host), signal.SIGKILL)
        with anyio.move_on_after(20):
            while not collected:
                await anyio.sleep(0.02)
    # Let any server the dead proxy left behind finish, so nothing waits forever.
    scene.ledger.with_name(scene.ledger.name + ".release").touch()
    if not collected:
        raise DemoFailure(words.call_did_not_end(step))
    say(words.call_ends_unanswered(one_line(collected[0].text, 90)))


async def step3_after_restart(scene: Scene, host: Any) -> None:
    import anyio

    step = "step 3"
    say(words.STEP3_RESTARTED)
    first = await scene.call(host, "bank_pay", PLUMBER)
    scene.expect(step, first, ("IN_PROGRESS", "INTERRUPTED"), is_error=False)
    say(words.waiting_out_lease(LEASE_TTL_SECONDS))
    await anyio.sleep(LEASE_TTL_SECONDS + 0.5)
    scene.expect(step, await scene.call(host, "bank_pay", PLUMBER), "INTERRUPTED", is_error=False)
    scene.expect(step, await scene.call(host, "gate_status", {}), "GATE_STATUS", is_error=False)
    scene.operator("reject", words.STEP3_REJECT_NOTE, step, expect_kind="interrupted_side_effect")
    scene.expect(step, await scene.call(host, "bank_pay", PLUMBER), "REJECTED", is_error=True)
    scene.expect_payments(step, 2, words.STEP3_RAN_ONCE)
    say(words.STEP3_UNBLOCKED)
    other = {"to": "electrician", "amount": 75}
    scene.expect(step, await scene.call(host, "bank_pay", other), "PENDING_APPROVAL", is_error=False)
    scene.operator("approve", "new socket", step)
    scene.expect(step, await scene.call(host, "bank_pay", other), "paid 75.00 to electrician", is_error=False)
    scene.expect_payments(step, 3, "")
    say()


async def step5(scene: Scene, host: Any) -> None:
    import anyio

    step = "step 5"
    say(words.STEP5)
    tip = {"to": "courier", "amount": 5}
    scene.expect(step, await scene.call(host, "bank_pay", tip), "PENDING_APPROVAL", is_error=False)
    scene.operator("approve", "a tip", step)
    before = scene.payments()
    bank = child_with_env(scene.pid_of(host), f"FAKE_PAYMENTS_LEDGER={scene.ledger}", "step 5")
    os.kill(bank, signal.SIGKILL)
    say(words.server_killed(bank))
    with anyio.move_on_after(5):  # the proxy notices the server's end (its stdout closes)
        while alive(bank):
            await anyio.sleep(0.02)
    seen = await scene.call(host, "bank_pay", tip)
    if not (seen.is_error and all(sign in seen.text for sign in words.NOTHING_SENT_SIGNS)):
        got = one_line(seen.text)
        raise DemoFailure(words.not_sent_unseen(step, got))
    scene.expect_payments(step, before, words.STEP5_APPROVAL_STANDS)
    say(words.STEP5_RESTARTS)
    tail = getattr(getattr(host, "_transport", None), "stderr_tail", lambda: "")
    with anyio.move_on_after(20):
        while "started again" not in tail():
            await anyio.sleep(0.05)
    scene.show_log(host)
    if "started again" not in tail():
        raise DemoFailure(words.server_not_restarted(step))
    say(words.STEP5_ASKS_AGAIN)
    scene.expect(step, await scene.call(host, "bank_pay", tip), "paid 5.00 to courier", is_error=False)
    scene.expect_payments(step, before + 1, words.STEP5_PAID_ONCE)
    say()
