"""The demo's newcomers: a server that rewords a tool's description (7), a host of the
2026-07-28 revision that takes an approval as a task (8), and a description that asks the model
for something, which the scan refuses at pin time and explains (10)."""

from __future__ import annotations

import json

from agentrt_proxy.cli._demo_scene import Scene
from agentrt_proxy.cli._demo_stage import DemoFailure, compact, indented, line_host, one_line, result_text, say
from agentrt_proxy.store import TASK_COMPLETED, TASK_WORKING
from agentrt_proxy.text import demo_text as words
from agentrt_proxy.text.operator_text import SCAN_ASKS


def step7_review(scene: Scene) -> None:
    step = "step 7"
    say(words.STEP7)
    scene.write_variant("changed.json", [f"FAKE_PAYMENTS_DESCRIPTION={words.REWORDED}"])
    say(words.STEP7_CHANGED)
    out = scene.shell(["check", "-config", "changed.json"], what=step)
    if words.CHECK_REFUSES_SIGN not in out or f"+{words.REWORDED}" not in out:
        raise DemoFailure(words.check_did_not_refuse(step))
    say(words.STEP7_BARE_PIN)
    done = scene.run_program(["pin", "-config", "changed.json"], what=step)
    indented(done.stderr, "  ")
    if done.returncode != 1 or words.PIN_REFUSES_SIGN not in done.stderr:
        raise DemoFailure(words.bare_pin_took_it(step, done.returncode))
    say(words.STEP7_MANIFEST_KEPT)
    say()


async def step8_task(scene: Scene) -> None:
    step = "step 8"
    say(words.STEP8)
    for line in words.STEP8_HOST:
        say(line)
    before = scene.payments()
    async with line_host(scene.program, scene.config, scene.directory / "task-proxy.stderr", step) as host:
        await host.request("server/discover", {})
        window = {"name": "bank_pay", "arguments": {"to": "window-cleaner", "amount": 20}}
        task = await host.request("tools/call", window)
        if task.get("resultType") != "task" or task.get("status") != TASK_WORKING:
            raise DemoFailure(words.no_working_task(step, compact(task)))
        say(words.STEP8_POLLS)
        await host.request("tasks/get", {"taskId": task["taskId"]})
        scene.expect_payments(step, before, words.NOTHING_HAS_RUN)
        scene.operator("approve", "the windows", step)
        done = await host.until_terminal(task["taskId"])
        paid = result_text(done)
        if done.get("status") != TASK_COMPLETED or paid != "paid 20.00 to window-cleaner":
            raise DemoFailure(words.task_not_completed(step, compact(done)))
        say(words.task_completed(paid))
        scene.expect_payments(step, before + 1, words.PAID_ONCE)
    say()


def step10_scan(scene: Scene) -> None:
    """The operator accepts exactly the change a review showed; the scan still refuses the tool
    and says what its description asks. Last, so no later step reads the manifest it wrote."""
    step = "step 10"
    say(words.STEP10)
    scene.write_variant("poisoned.json", [f"FAKE_PAYMENTS_DESCRIPTION={words.POISONED}"])
    say(words.STEP10_POISONED)
    review = scene.run_program(["pin", "-config", "poisoned.json", "-review", "-json"], what=step)
    try:
        fingerprint = str(json.loads(review.stdout)["servers"][0]["fingerprint"])
    except (ValueError, KeyError, IndexError, TypeError) as err:
        raise DemoFailure(words.no_fingerprint(step, one_line(review.stdout or review.stderr))) from err
    args = ["pin", "-config", "poisoned.json", "-accept", "bank", "-expect", fingerprint]
    say(words.STEP10_ACCEPTS)
    say(words.shell_line(args))
    done = scene.run_program(args, what=step)
    indented(done.stdout + done.stderr, "  ")
    asked = [SCAN_ASKS["conceal"], SCAN_ASKS["steer_any"]]
    if done.returncode != 1 or words.SCAN_REFUSES_SIGN not in done.stdout or not all(a in done.stdout for a in asked):
        raise DemoFailure(words.scan_did_not_refuse(step, done.returncode))
    say(words.STEP10_NEVER_OFFERED)
    say()
