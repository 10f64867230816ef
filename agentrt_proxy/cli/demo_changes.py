"""The demo's newcomers: a server that rewords a tool's description (7) and a host of the
2026-07-28 revision that takes an approval as a task (8)."""

from __future__ import annotations

import os

from agentrt_proxy.cli.demo_scene import Scene
from agentrt_proxy.cli.demo_stage import DemoFailure, compact, indented, line_host, readable_json, result_text, say
from agentrt_proxy.store import TASK_COMPLETED, TASK_WORKING
from agentrt_proxy.text import demo_text as words


def step7_review(scene: Scene) -> None:
    step = "step 7"
    say(words.STEP7)
    changed = scene.configuration()
    changed["servers"][0]["env"].append(f"FAKE_PAYMENTS_DESCRIPTION={words.REWORDED}")
    (scene.directory / "changed.json").write_text(readable_json(changed) + "\n", encoding="utf-8")
    os.chmod(scene.directory / "changed.json", 0o600)
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
