"""Approvals as MCP tasks, through the real program (issue 17, "shows that it holds").

Each proxy is ``agentrt-proxy serve -config <file>`` (the ``world`` of test_serve_process:
session ``laptop``, hold 0s, ``pay`` remote_mutation), driven by the hand-written host of
``task_host`` in either era: 2026-07-28 with or without the extension
``io.modelcontextprotocol/tasks``, or 2025-11-25 with ``params.task``. Approvals are decided
by the real ``approve``/``reject`` subcommands from another process. Effects are counted in
the fake bank's ledger (one line per executed payment, written before it answers), in the
approvals' rows and in the requests the host itself sent.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.conftest import run_program
from tests.harness import is_error, text_of
from tests.program.task_host import RawHost, raw_host
from tests.program.test_serve_process import ALLOW_PAY, World, prefix, world

pytestmark = [pytest.mark.program, pytest.mark.anyio, pytest.mark.timeout(120)]

NINA = {"to": "nina", "amount": 12}
TERMINAL = ("completed", "failed", "cancelled")
MISSING_CAPABILITY = -32021
INVALID_PARAMS = -32602


# ------------------------------------------------------------------------------ helpers


def host(w: World, name: str, *, era: str = "modern", tasks: bool = True) -> Any:
    return raw_host(w.argv, w.config, w.env, era=era, tasks=tasks, name=name)


def approval_of(w: World, approval_id: str) -> Any:
    [approval] = [a for a in w.approvals() if a.id == approval_id]
    return approval


def waiting_on(task: dict[str, Any]) -> str:
    """The approval id a working task's status message names."""
    message = task["statusMessage"]
    assert "(approval " in message, message
    return str(message.split("(approval ", 1)[1].split(")", 1)[0])


async def decide_exit(w: World, verb: str, approval: Any) -> int:
    """The CLI's exit code for ``verb`` (approve/reject) of ``approval``, from another process."""
    args = [verb, "-db", w.db, approval.run_id, "-approval", approval.id, "-by", "tester", "-yes"]
    if verb == "reject":
        args += ["-note", "not this one"]
    done = await anyio.to_thread.run_sync(lambda: run_program(args, timeout=30))
    return done.returncode


async def task_of_call(h: RawHost, arguments: dict[str, Any]) -> dict[str, Any]:
    """A modern call that waits on an approval: the task it answers."""
    created = await h.call("bank_pay", arguments)
    assert created.get("resultType") == "task", created
    assert created["status"] == "working" and created["taskId"], created
    return created


def outcome(result: dict[str, Any]) -> str:
    return str(result.get("_meta", {}).get("gate/outcome", ""))


def ledger_payees(w: World) -> list[str]:
    if not w.ledger.exists():
        return []
    return [json.loads(line)["to"] for line in w.ledger.read_text().splitlines()]


def task_row(w: World, task_id: str) -> dict[str, Any]:
    with w.store() as store, store.read() as conn:
        cursor = conn.execute("SELECT * FROM proxy_tasks WHERE id = ?", (task_id,))
        names = [d[0] for d in cursor.description]
        row = cursor.fetchone()
    assert row is not None, task_id
    return dict(zip(names, row, strict=True))


# ======================================================================= 2026-07-28


async def test_an_approved_task_completes_with_the_payment_and_the_host_calls_once(
    tmp_path: Path, program_argv: list[str], program_env: dict[str, str]
) -> None:
    async with world(tmp_path, program_argv, program_env) as w, host(w, "modern") as h:
        created = await task_of_call(h, NINA)
        working = await h.get(created["taskId"])
        assert working["status"] == "working"
        [approval] = w.pending()
        assert waiting_on(working) == approval.id
        assert w.payments() == 0
        await w.approve(approval)
        done = await h.until_terminal(created["taskId"])
        assert done["status"] == "completed", done
        assert text_of(done["result"]) == "paid 12.00 to nina" and not is_error(done["result"])
        assert w.payments() == 1
        assert h.sent_requests("tools/call") == 1


async def test_a_rejected_task_completes_rejected_and_pays_nothing(
    tmp_path: Path, program_argv: list[str], program_env: dict[str, str]
) -> None:
    async with world(tmp_path, program_argv, program_env) as w, host(w, "modern") as h:
        created = await task_of_call(h, NINA)
        [approval] = w.pending()
        await w.reject(approval, "not today")
        done = await h.until_terminal(created["taskId"])
        assert done["status"] == "completed", done  # the extension: isError is a completed call's answer
        assert prefix(done["result"]) == "REJECTED" and is_error(done["result"]), done
        assert '"not today"' in text_of(done["result"])
        assert w.payments() == 0
        assert h.sent_requests("tools/call") == 1


async def test_a_task_cancelled_before_approval_pays_nothing_even_when_the_operator_approves_later(
    tmp_path: Path, program_argv: list[str], program_env: dict[str, str]
) -> None:
    async with world(tmp_path, program_argv, program_env) as w, host(w, "modern") as h:
        created = await task_of_call(h, NINA)
        [approval] = w.pending()
        acknowledged = await h.result("tasks/cancel", {"taskId": created["taskId"]})
        assert acknowledged["resultType"] == "complete", acknowledged
        cancelled = await h.get(created["taskId"])
        assert cancelled["status"] == "cancelled", cancelled
        withdrawn = approval_of(w, approval.id)
        assert withdrawn.status == "rejected" and withdrawn.decided_by == "host:tasks/cancel"
        assert w.run(approval.run_id).status == "CANCELLED"
        assert await decide_exit(w, "approve", approval) != 0
        await anyio.sleep(1.5)  # three of the owner's ticks: a task that would still run has run by now
        assert w.payments() == 0
        assert (await h.get(created["taskId"]))["status"] == "cancelled"


async def test_cancelling_a_task_after_its_approval_is_acknowledged_and_changes_nothing(
    tmp_path: Path, program_argv: list[str], program_env: dict[str, str]
) -> None:
    async with world(tmp_path, program_argv, program_env) as w, host(w, "modern") as h:
        blocked = {"to": "wes", "amount": 9, "mode": "block"}
        created = await task_of_call(h, blocked)
        [approval] = w.pending()
        await w.approve(approval)
        await w.wait_for("the payment's ledger line", lambda: w.payments() == 1)
        acknowledged = await h.result("tasks/cancel", {"taskId": created["taskId"]})
        assert acknowledged["resultType"] == "complete", acknowledged
        assert (await h.get(created["taskId"]))["status"] == "working"
        w.release()
        done = await h.until_terminal(created["taskId"])
        assert done["status"] == "completed" and text_of(done["result"]) == "paid 9.00 to wes", done
        assert approval_of(w, approval.id).decided_by == "tester"
        assert w.payments() == 1


# -------------------------------------------------------------------- crashes and takeover


async def test_a_task_of_a_killed_proxy_is_taken_over_by_a_new_one_and_pays_once_after_approval(
    tmp_path: Path, program_argv: list[str], program_env: dict[str, str]
) -> None:
    async with world(tmp_path, program_argv, program_env, lease_ttl="3s") as w:
        async with host(w, "killed") as first:
            created = await task_of_call(first, NINA)
            [approval] = w.pending()
            first.kill()  # SIGKILL: no release of its lease, nothing said to anyone
            await first.process.wait()
        await w.approve(approval)
        await anyio.sleep(1)
        assert w.payments() == 0  # approved, but nobody owns the task to execute it
        async with host(w, "new") as second:
            done = await second.until_terminal(created["taskId"], timeout=30)
            assert done["status"] == "completed", done
            assert text_of(done["result"]) == "paid 12.00 to nina" and not is_error(done["result"])
            assert second.sent_requests("tools/call") == 0
            assert w.payments() == 1
            await anyio.sleep(1.5)  # three more ticks of the new owner
        assert w.payments() == 1
        assert task_row(w, created["taskId"])["run_id"] == approval.run_id


async def test_a_proxy_that_stops_lets_a_new_one_take_its_task_over_at_once(
    tmp_path: Path, program_argv: list[str], program_env: dict[str, str]
) -> None:
    async with world(tmp_path, program_argv, program_env) as w:  # the default lease: 30 s
        async with host(w, "stopped") as first:
            created = await task_of_call(first, NINA)
            [approval] = w.pending()
            assert first.process.stdin is not None
            await first.process.stdin.aclose()  # the host went away: the proxy stops
            with anyio.fail_after(15):
                assert await first.process.wait() == 0
        assert task_row(w, created["taskId"])["owner"] == ""  # let go, not left to run out
        await w.approve(approval)
        async with host(w, "new") as second:
            done = await second.until_terminal(created["taskId"], timeout=10)  # well within 30 s
            assert text_of(done["result"]) == "paid 12.00 to nina"
        assert w.payments() == 1


async def test_a_kill_while_an_approved_task_executes_ends_it_with_an_unknown_outcome_never_run_again(
    tmp_path: Path, program_argv: list[str], program_env: dict[str, str]
) -> None:
    async with world(tmp_path, program_argv, program_env, lease_ttl="3s") as w:
        blocked = {"to": "wes", "amount": 9, "mode": "block"}
        async with host(w, "killed") as first:
            created = await task_of_call(first, blocked)
            [approval] = w.pending()
            await w.approve(approval)
            await w.wait_for("the payment's ledger line", lambda: w.payments() == 1)
            first.kill()
            await first.process.wait()
        async with host(w, "new") as second:
            done = await second.until_terminal(created["taskId"], timeout=30)
            assert done["status"] == "completed", done
            result = done["result"]
            assert outcome(result) in ("UNKNOWN_OUTCOME", "INTERRUPTED"), result
            assert prefix(result) == outcome(result) and not is_error(result), result
            await anyio.sleep(2)  # four ticks: a task that would run it again has by now
            assert w.payments() == 1
            [asked] = w.pending()  # the operator, not the task, decides whether it runs again
            assert asked.kind == "interrupted_side_effect" and asked.run_id == approval.run_id
            assert f"(approval {asked.id})" in text_of(result)
        assert w.payments() == 1


# ======================================================================= 2025-11-25


async def bound(h: RawHost, task_id: str) -> dict[str, Any]:
    """A 2025-11-25 task once its driver has found the approval it waits on."""
    with anyio.fail_after(15):
        while True:
            task = await h.get(task_id)
            if "(approval " in task.get("statusMessage", ""):
                return task
            await anyio.sleep(0.1)


async def test_a_2025_task_round_trip_blocks_on_tasks_result_until_approve_and_is_listed_and_told(
    tmp_path: Path, program_argv: list[str], program_env: dict[str, str]
) -> None:
    async with world(tmp_path, program_argv, program_env) as w, host(w, "old", era="2025-11-25") as h:
        assert h.initialized["capabilities"]["tasks"]["requests"] == {"tools": {"call": {}}}
        listed = await h.result("tools/list")
        assert {t["name"]: t["execution"]["taskSupport"] for t in listed["tools"]}["bank_pay"] == "optional"
        created = await h.call("bank_pay", NINA, task={"ttl": 60000})
        task_id = created["task"]["taskId"]
        assert created["task"]["status"] == "working" and "content" not in created
        working = await bound(h, task_id)
        [approval] = w.pending()
        assert waiting_on(working) == approval.id

        _, answered, box = await h.start("tasks/result", {"taskId": task_id})
        await anyio.sleep(1.5)
        assert not answered.is_set()  # blocks while the operator has not decided
        await w.approve(approval)
        with anyio.fail_after(15):
            await answered.wait()
        result = box["message"]["result"]
        assert text_of(result) == "paid 12.00 to nina" and not is_error(result)
        assert result["_meta"]["io.modelcontextprotocol/related-task"] == {"taskId": task_id}
        assert w.payments() == 1 and h.sent_requests("tools/call") == 1

        told = await h.until_notified(
            "the completed status",
            lambda m: (
                m["method"] == "notifications/tasks/status"
                and m["params"]["taskId"] == task_id
                and m["params"]["status"] == "completed"
            ),
        )
        assert "result" not in told  # 2025-11-25: tasks/result gives it
        listed_tasks = (await h.result("tasks/list"))["tasks"]
        assert [(t["taskId"], t["status"]) for t in listed_tasks] == [(task_id, "completed")]


async def test_2025_tasks_list_pages_fifty_at_a_time_with_a_cursor(
    tmp_path: Path, program_argv: list[str], program_env: dict[str, str]
) -> None:
    async with world(tmp_path, program_argv, program_env) as w, host(w, "old", era="2025-11-25") as h:
        made = set()
        for _ in range(51):  # the status tool's tasks are born complete: no operator needed
            made.add((await h.call("gate_status", {"tool": "bank_pay"}, task={"ttl": 60000}))["task"]["taskId"])
        first = await h.result("tasks/list")
        assert len(first["tasks"]) == 50 and first["nextCursor"]
        rest = await h.result("tasks/list", {"cursor": first["nextCursor"]})
        assert len(rest["tasks"]) == 1 and "nextCursor" not in rest
        assert {t["taskId"] for t in first["tasks"] + rest["tasks"]} == made
        assert all(t["status"] == "completed" for t in first["tasks"] + rest["tasks"])
        refused = await h.request("tasks/list", {"cursor": "not-a-cursor"})
        assert refused["error"]["code"] == INVALID_PARAMS, refused
        assert w.payments() == 0


async def test_a_2025_task_cancelled_before_approval_is_answered_cancelled_and_a_terminal_one_refuses(
    tmp_path: Path, program_argv: list[str], program_env: dict[str, str]
) -> None:
    async with world(tmp_path, program_argv, program_env) as w, host(w, "old", era="2025-11-25") as h:
        created = await h.call("bank_pay", NINA, task={"ttl": 60000})
        task_id = created["task"]["taskId"]
        await bound(h, task_id)
        [approval] = w.pending()
        cancelled = await h.result("tasks/cancel", {"taskId": task_id})
        assert cancelled["taskId"] == task_id and cancelled["status"] == "cancelled", cancelled
        assert approval_of(w, approval.id).decided_by == "host:tasks/cancel"
        assert await decide_exit(w, "approve", approval) != 0
        again = await h.request("tasks/cancel", {"taskId": task_id})
        assert again["error"]["code"] == INVALID_PARAMS and "terminal" in again["error"]["message"], again
        await h.until_notified(
            "the cancelled status",
            lambda m: (
                m["method"] == "notifications/tasks/status"
                and m["params"]["taskId"] == task_id
                and m["params"]["status"] == "cancelled"
            ),
        )
        await anyio.sleep(1)
        assert w.payments() == 0


async def test_a_2025_task_rejected_fails_and_one_already_executing_cannot_be_cancelled(
    tmp_path: Path, program_argv: list[str], program_env: dict[str, str]
) -> None:
    async with world(tmp_path, program_argv, program_env) as w, host(w, "old", era="2025-11-25") as h:
        rejected = (await h.call("bank_pay", NINA, task={"ttl": 60000}))["task"]["taskId"]
        await bound(h, rejected)
        [first] = w.pending()
        await w.reject(first, "no")
        assert (await h.until_terminal(rejected))["status"] == "failed"  # 2025-11-25: isError fails the task
        answer = await h.result("tasks/result", {"taskId": rejected})
        assert prefix(answer) == "REJECTED" and is_error(answer), answer

        blocked = {"to": "wes", "amount": 9, "mode": "block"}
        running = (await h.call("bank_pay", blocked, task={"ttl": 60000}))["task"]["taskId"]
        await bound(h, running)
        [second] = w.pending()
        await w.approve(second)
        await w.wait_for("the payment's ledger line", lambda: w.payments() == 1)
        refused = await h.request("tasks/cancel", {"taskId": running})
        assert refused["error"]["code"] == INVALID_PARAMS, refused
        w.release()
        done = await h.until_terminal(running)
        assert done["status"] == "completed"
        assert text_of(await h.result("tasks/result", {"taskId": running})) == "paid 9.00 to wes"
        assert w.payments() == 1


async def test_a_2025_task_for_a_request_already_executing_waits_for_it_instead_of_answering_in_progress(
    tmp_path: Path, program_argv: list[str], program_env: dict[str, str]
) -> None:
    async with world(tmp_path, program_argv, program_env, pay=ALLOW_PAY) as w, host(w, "old", era="2025-11-25") as h:
        blocked = {"to": "rob", "amount": 5, "mode": "block"}
        _, plain_answered, plain = await h.start("tools/call", {"name": "bank_pay", "arguments": blocked})
        await w.wait_for("the payment's ledger line", lambda: w.payments() == 1)
        created = await h.call("bank_pay", blocked, task={"ttl": 60000})
        task_id = created["task"]["taskId"]
        await anyio.sleep(1.5)  # three ticks: the task's driver has met the executing run by now
        assert (await h.get(task_id))["status"] == "working"
        w.release()
        with anyio.fail_after(15):
            await plain_answered.wait()
        assert text_of(plain["message"]["result"]) == "paid 5.00 to rob"
        done = await h.until_terminal(task_id)
        result = await h.result("tasks/result", {"taskId": task_id})
        # The same request: the rules answer it DUPLICATE with the recorded result (an error
        # answer, which fails a task of this era), never an IN_PROGRESS nobody will call again.
        assert done["status"] == "failed", done
        assert prefix(result) == "DUPLICATE" and "paid 5.00 to rob" in text_of(result), result
        assert w.payments() == 1
