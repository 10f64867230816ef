"""The demo's crashes: the proxy killed while a payment is inside the server (3), and the
payment server dying between an approval and its collection (5)."""

from __future__ import annotations

import os
import signal
from typing import Any

from agentrt_proxy.cli.demo_scene import LEASE_TTL_SECONDS, Scene
from agentrt_proxy.cli.demo_stage import DemoFailure, Seen, alive, child_with_env, compact, one_line, say

PLUMBER: dict[str, Any] = {"to": "plumber", "amount": 180, "mode": "block"}


async def step3_kill(scene: Scene, host: Any) -> None:
    import anyio

    step = "step 3"
    say("3. The proxy is killed while a payment is inside the server; after a restart the outcome is unknown.")
    say("   (mode block: the server records the payment, then answers only once it is released)")
    before = scene.payments()
    scene.expect(step, await scene.call(host, "bank_pay", PLUMBER), "PENDING_APPROVAL", is_error=False)
    scene.operator("approve", "repair the boiler", step)
    say(f"   model calls bank_pay {compact(PLUMBER)}   (collecting it, in the background)")
    collected: list[Seen] = []

    async def collect() -> None:
        collected.append(await scene.call(host, "bank_pay", PLUMBER, quiet=True))

    async with anyio.create_task_group() as tg:
        tg.start_soon(collect)
        with anyio.move_on_after(20) as wait:
            while scene.payments() == before:
                await anyio.sleep(0.02)
        if wait.cancelled_caught:
            raise DemoFailure(f"{step}: the server did not record the payment within 20 s")
        say("   the server has recorded the payment and has not answered; the proxy is killed with SIGKILL")
        os.kill(scene.pid_of(host), signal.SIGKILL)
        with anyio.move_on_after(20):
            while not collected:
                await anyio.sleep(0.02)
    # Let any server the dead proxy left behind finish, so nothing waits forever.
    scene.ledger.with_name(scene.ledger.name + ".release").touch()
    if not collected:
        raise DemoFailure(f"{step}: the host's call did not end when the proxy died")
    say(f"   the host's call ends without an answer: {one_line(collected[0].text, 90)}")


async def step3_after_restart(scene: Scene, host: Any) -> None:
    import anyio

    step = "step 3"
    say("   a new proxy is started (the host reconnects) and the model calls again, identically")
    first = await scene.call(host, "bank_pay", PLUMBER)
    scene.expect(step, first, ("IN_PROGRESS", "INTERRUPTED"), is_error=False)
    say(f"   waiting out the dead proxy's {LEASE_TTL_SECONDS}s lease")
    await anyio.sleep(LEASE_TTL_SECONDS + 0.5)
    scene.expect(step, await scene.call(host, "bank_pay", PLUMBER), "INTERRUPTED", is_error=False)
    scene.expect(step, await scene.call(host, "gate_status", {}), "GATE_STATUS", is_error=False)
    scene.operator("reject", "the bank shows it went through", step, expect_kind="interrupted_side_effect")
    scene.expect(step, await scene.call(host, "bank_pay", PLUMBER), "REJECTED", is_error=True)
    scene.expect_payments(step, 2, " (the cut-off one ran once, and nothing ran again)")
    say("   the tool is unblocked: a different payment asks, is approved and runs")
    other = {"to": "electrician", "amount": 75}
    scene.expect(step, await scene.call(host, "bank_pay", other), "PENDING_APPROVAL", is_error=False)
    scene.operator("approve", "new socket", step)
    scene.expect(step, await scene.call(host, "bank_pay", other), "paid 75.00 to electrician", is_error=False)
    scene.expect_payments(step, 3, "")
    say()


async def step5(scene: Scene, host: Any) -> None:
    import anyio

    step = "step 5"
    say("5. The payment server dies between two calls; the proxy starts it again.")
    tip = {"to": "courier", "amount": 5}
    scene.expect(step, await scene.call(host, "bank_pay", tip), "PENDING_APPROVAL", is_error=False)
    scene.operator("approve", "a tip", step)
    before = scene.payments()
    bank = child_with_env(scene.pid_of(host), f"FAKE_PAYMENTS_LEDGER={scene.ledger}", "step 5")
    os.kill(bank, signal.SIGKILL)
    say(f"   the server's process ({bank}) is killed with SIGKILL; the model collects the approved payment")
    with anyio.move_on_after(5):  # the proxy notices the server's end (its stdout closes)
        while alive(bank):
            await anyio.sleep(0.02)
    seen = await scene.call(host, "bank_pay", tip)
    if not (seen.is_error and "nothing was sent" in seen.text and "still stands" in seen.text):
        got = one_line(seen.text)
        raise DemoFailure(
            f"{step}: the model should have seen that nothing was sent and the approval stands, but saw: {got}"
        )
    scene.expect_payments(
        step, before, " (nothing ran, so the operator's approval of exactly this payment still stands)"
    )
    say("   (the proxy starts the server again after 1 s)")
    tail = getattr(getattr(host, "_transport", None), "stderr_tail", lambda: "")
    with anyio.move_on_after(20):
        while "started again" not in tail():
            await anyio.sleep(0.05)
    scene.show_log(host)
    if "started again" not in tail():
        raise DemoFailure(f"{step}: the proxy did not start the server again within 20 s")
    say("   the model asks again with the same arguments: the approval stands, so it pays without asking again")
    scene.expect(step, await scene.call(host, "bank_pay", tip), "paid 5.00 to courier", is_error=False)
    scene.expect_payments(step, before + 1, " (paid once, on the one approval)")
    say()
