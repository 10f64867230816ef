"""Where the operator and the model see a call answered as a task: ``runs``, ``show``, ``approve``
and the status tool, over a real proxy that a hand-written host drives (tests/program/task_host).

Each proxy is ``serve -config`` of ``test_serve_process.world`` (session ``laptop``, hold 0s,
``bank_pay`` needs an approval, ``bank_balance`` is read-only and allowed); the operator's
commands run as processes of their own; effects are counted in the fake bank's ledger.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest

from agentrt_proxy.text import model_text
from tests.conftest import run_program
from tests.program.task_host import RawHost, raw_host
from tests.program.test_serve_process import World, world

pytestmark = [pytest.mark.program, pytest.mark.anyio, pytest.mark.timeout(120)]

PAY = {"to": "alice", "amount": 7}


async def operator(*args: str) -> Any:
    done = await anyio.to_thread.run_sync(lambda: run_program(list(args), timeout=30))
    assert done.returncode == 0, (done.stdout, done.stderr)
    return done


async def paid_as_task(w: World, host: RawHost) -> tuple[str, Any]:
    """A payment the host follows as a task (the extension's form): (task id, its approval)."""
    answer = await host.call("bank_pay", PAY)
    assert answer["resultType"] == "task" and answer["status"] == "working", answer
    await w.wait_for("the approval", lambda: len(w.pending()) == 1)
    return answer["taskId"], w.pending()[0]


def text(result: dict[str, Any]) -> str:
    return "".join(block["text"] for block in result["content"] if block.get("type") == "text")


async def test_runs_and_show_name_the_task_a_host_follows_and_a_plain_run_shows_none(
    tmp_path: Path, program_argv: list[str], program_env: dict[str, str]
) -> None:
    async with world(tmp_path, program_argv, program_env) as w, raw_host(program_argv, w.config, program_env) as host:
        plain = await host.call("bank_balance", {"account": "main"})
        assert plain.get("resultType") != "task" and not plain.get("isError"), plain
        task_id, approval = await paid_as_task(w, host)
        balance_run = next(r.id for r in w.runs() if r.id != approval.run_id)

        listed = (await operator("runs", "-db", w.db)).stdout.splitlines()
        assert listed[0].split() == ["RUN", "STATUS", "REASON", "STEPS", "CREATED", "APPROVAL", "TASK", "GOAL"]
        row = next(line.split() for line in listed if line.startswith(approval.run_id))
        assert row[1] == "WAITING_FOR_APPROVAL" and row[-3:-1] == ["working", "call"], row
        plain_row = next(line.split() for line in listed if line.startswith(balance_run))
        assert plain_row[-3] == "-", plain_row  # no task: the TASK cell is empty

        as_json = {r["id"]: r for r in json.loads((await operator("runs", "-db", w.db, "-json")).stdout)["runs"]}
        task = as_json[approval.run_id]["task"]
        assert (task["id"], task["era"], task["status"]) == (task_id, "extension", "working")
        assert approval.id in task["status_message"]
        assert "task" not in as_json[balance_run]

        shown = (await operator("show", "-db", w.db, approval.run_id)).stdout.splitlines()
        line = next(s for s in shown if s.startswith("task "))
        assert line.startswith(f"task     {task_id} (extension): working — waiting for an operator's approval")
        assert shown.index(line) < next(i for i, s in enumerate(shown) if s.startswith("APPROVAL WAITING"))
        plain_shown = (await operator("show", "-db", w.db, balance_run)).stdout
        assert "\ntask " not in plain_shown and task_id not in plain_shown

        decided = (
            await operator("approve", "-db", w.db, approval.run_id, "-approval", approval.id, "-by", "tester")
        ).stdout.splitlines()
        assert decided[-1].startswith(f"task {task_id} waits on this run: the proxy that owns it executes"), decided
        done = await host.until_terminal(task_id)
        assert done["status"] == "completed" and text(done["result"]) == "paid 7.00 to alice", done
        assert w.payments() == 1

        after = json.loads((await operator("show", "-db", w.db, approval.run_id, "-json")).stdout)
        assert after["run"]["task"]["status"] == "completed" and after["run"]["status"] == "COMPLETED"
        assert "pending_approval_id" not in after["run"]


async def test_show_names_the_era_of_a_task_a_2025_host_asked_for(
    tmp_path: Path, program_argv: list[str], program_env: dict[str, str]
) -> None:
    async with (
        world(tmp_path, program_argv, program_env) as w,
        raw_host(program_argv, w.config, program_env, era="2025-11-25") as host,
    ):
        created = await host.call("bank_pay", PAY, task={"ttl": 60000})
        task_id = created["task"]["taskId"]
        await w.wait_for("the approval", lambda: len(w.pending()) == 1)
        approval = w.pending()[0]
        # The task names its run once it waits on the approval: then show finds it.
        await w.wait_for("the task bound to its run", lambda: _task_of(w, approval.run_id) is not None)
        shown = (await operator("show", "-db", w.db, approval.run_id)).stdout
        assert f"task     {task_id} (2025-11-25): working — " in shown
        await w.reject(approval, "not to alice")
        done = await host.until_terminal(task_id)
        assert done["status"] == "failed"  # 2025-11-25: an isError answer (REJECTED) fails the task
        after = json.loads((await operator("show", "-db", w.db, approval.run_id, "-json")).stdout)
        task = after["run"]["task"]
        assert {k: task[k] for k in ("id", "era", "status")} == {"id": task_id, "era": "2025-11-25", "status": "failed"}
        # The failed task's message is the answer the host would read from a plain call: REJECTED and the note.
        assert task["status_message"].startswith("REJECTED") and '"not to alice"' in task["status_message"], task
        assert w.payments() == 0


def _task_of(w: World, run_id: str) -> Any:
    with w.store() as store:
        return store.tasks.of_runs([run_id]).get(run_id)


async def test_the_status_tool_reports_a_tasks_state_and_names_the_task_an_approval_waits_on(
    tmp_path: Path, program_argv: list[str], program_env: dict[str, str]
) -> None:
    async with world(tmp_path, program_argv, program_env) as w, raw_host(program_argv, w.config, program_env) as host:
        task_id, approval = await paid_as_task(w, host)

        working = text(await host.call("gate_status", {"task_id": task_id}))
        assert working.startswith(
            f"GATE_STATUS: task {task_id} is working: waiting for an operator's approval (approval {approval.id})"
        ), working
        assert f"Its approval {approval.id} for bank_pay " in working and "PENDING for " in working

        asked = text(await host.call("gate_status", {"approval_id": approval.id}))
        assert asked.startswith(f"GATE_STATUS: approval {approval.id} for bank_pay ")
        assert model_text.status_task_follows(task_id, "working") in asked
        listing = text(await host.call("gate_status", {}))
        assert "1 request in this session is waiting" in listing and f"Task {task_id} (working)" in listing

        unknown = text(await host.call("gate_status", {"task_id": "0" * 32}))
        assert unknown == model_text.status_unknown_task("0" * 32)
        refused = await host.call("gate_status", {"task_id": 5})
        assert refused["isError"] is True and model_text.STATUS_BAD_ARGUMENTS in text(refused)
        both = await host.call("gate_status", {"task_id": task_id, "approval_id": approval.id})
        assert both["isError"] is True and model_text.STATUS_BAD_ARGUMENTS in text(both)
        assert w.payments() == 0  # asking executes nothing

        await w.approve(approval)
        await host.until_terminal(task_id)
        completed = text(await host.call("gate_status", {"task_id": task_id}))
        assert completed.startswith(f"GATE_STATUS: task {task_id} is completed: {model_text.TASK_DONE}.")
        assert model_text.STATUS_TASK_ENDED in completed and model_text.STATUS_EXECUTED_OK in completed
        assert w.payments() == 1


async def test_a_2025_task_that_needed_no_approval_still_names_its_run(
    tmp_path: Path, program_argv: list[str], program_env: dict[str, str]
) -> None:
    async with (
        world(tmp_path, program_argv, program_env) as w,
        raw_host(program_argv, w.config, program_env, era="2025-11-25") as host,
    ):
        created = await host.call("bank_balance", {"account": "main"}, task={"ttl": 60000})
        task_id = created["task"]["taskId"]
        assert (await host.until_terminal(task_id))["status"] == "completed"
        (run,) = w.runs()
        runs = json.loads((await operator("runs", "-db", w.db, "-json")).stdout)["runs"]
        assert [r["task"]["id"] for r in runs if r["id"] == run.id] == [task_id]
        shown = (await operator("show", "-db", w.db, run.id)).stdout
        assert f"task     {task_id} (2025-11-25): completed — {model_text.TASK_DONE}" in shown
