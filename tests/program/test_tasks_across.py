"""Approvals as MCP tasks across calls, hosts and time, through the real program (issue 17).

The companion of test_tasks.py (the same world and hand-written host): many tasks at once on
one session, a task and a plain call for the same request, a modern host without the tasks
extension, ``subscriptions/listen``, and a task's time to live. Effects are counted in the fake
bank's ledger (its lines name the payees), the approvals' rows and the CLI's exit codes.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.harness import is_error, text_of
from tests.program.task_host import RawHost
from tests.program.test_serve_process import prefix, proxy, world
from tests.program.test_tasks import (
    INVALID_PARAMS,
    MISSING_CAPABILITY,
    NINA,
    approval_of,
    decide_exit,
    host,
    ledger_payees,
    task_of_call,
    task_row,
    waiting_on,
)

pytestmark = [pytest.mark.program, pytest.mark.anyio, pytest.mark.timeout(120)]

SUBSCRIPTION_ID = "io.modelcontextprotocol/subscriptionId"


def status_of(h: RawHost, listen_id: Any, task_id: str, status: str) -> Any:
    """A predicate: a ``notifications/tasks`` of ``listen_id``'s stream saying ``status``."""

    def said(message: dict[str, Any]) -> bool:
        params = message.get("params", {})
        return (
            message["method"] == "notifications/tasks"
            and params.get("taskId") == task_id
            and params.get("status") == status
            and params.get("_meta", {}).get(SUBSCRIPTION_ID) == listen_id
        )

    return said


# ================================================================= many at once


@pytest.mark.timeout(300)
async def test_fifty_concurrent_tasks_decided_in_random_order_pay_exactly_the_approved_ones_once_each(
    tmp_path: Path, program_argv: list[str], program_env: dict[str, str]
) -> None:
    payees = [f"payee{i:02d}" for i in range(50)]
    async with world(tmp_path, program_argv, program_env, max_pending=60) as w, host(w, "fifty") as h:
        tasks: dict[str, str] = {}  # payee -> task id

        async def ask(index: int, payee: str) -> None:
            tasks[payee] = (await task_of_call(h, {"to": payee, "amount": index + 1}))["taskId"]

        async with anyio.create_task_group() as tg:
            for index, payee in enumerate(payees):
                tg.start_soon(ask, index, payee)
        assert len(set(tasks.values())) == 50 and len(w.pending()) == 50
        approvals = {payee: waiting_on(await h.get(task_id)) for payee, task_id in tasks.items()}
        assert len(set(approvals.values())) == 50

        chooser = random.Random(20261017)
        order = list(payees)
        chooser.shuffle(order)
        approved = {payee for payee in order if chooser.random() < 0.5}
        assert 0 < len(approved) < 50
        for payee in order:  # one operator command at a time, as an operator decides them
            verb = "approve" if payee in approved else "reject"
            assert await decide_exit(w, verb, approval_of(w, approvals[payee])) == 0

        for payee, task_id in tasks.items():
            done = await h.until_terminal(task_id, timeout=60)
            assert done["status"] == "completed", done
            if payee in approved:
                assert text_of(done["result"]).endswith(f" to {payee}") and not is_error(done["result"])
            else:
                assert prefix(done["result"]) == "REJECTED", done
        assert sorted(ledger_payees(w)) == sorted(approved)
        assert h.sent_requests("tools/call") == 50


# ============================================================ one request, two forms


async def test_a_task_and_a_plain_call_for_the_same_request_are_the_same_request(
    tmp_path: Path, program_argv: list[str], program_env: dict[str, str]
) -> None:
    async with world(tmp_path, program_argv, program_env) as w, host(w, "tasks") as h, proxy(w, "plain") as plain:
        created = await task_of_call(h, NINA)
        [approval] = w.pending()
        # The official SDK's client in the handshake era, through another proxy of the session.
        pending = await plain.call("bank_pay", NINA)
        assert prefix(pending) == "PENDING_APPROVAL" and f"(approval {approval.id})" in text_of(pending)
        assert len(w.approvals()) == 1
        await w.approve(approval)
        done = await h.until_terminal(created["taskId"])
        assert done["status"] == "completed" and text_of(done["result"]) == "paid 12.00 to nina", done
        again = await plain.call("bank_pay", NINA)
        assert prefix(again) == "DUPLICATE" and is_error(again), text_of(again)
        assert "paid 12.00 to nina" in text_of(again)
        assert w.payments() == 1 and len(w.approvals()) == 1


async def test_a_modern_host_without_the_extension_gets_pending_approval_and_no_tasks(
    tmp_path: Path, program_argv: list[str], program_env: dict[str, str]
) -> None:
    async with world(tmp_path, program_argv, program_env) as w, host(w, "prose", tasks=False) as prose:
        pending = await prose.call("bank_pay", NINA)
        assert "resultType" in pending and pending["resultType"] == "complete", pending
        [approval] = w.pending()
        assert prefix(pending) == "PENDING_APPROVAL" and f"(approval {approval.id})" in text_of(pending)
        with w.store() as store, store.read() as conn:
            assert conn.execute("SELECT count(*) FROM proxy_tasks").fetchone()[0] == 0
        async with host(w, "tasks") as tasks:  # a task that exists, so the refusal is not "not found"
            created = await task_of_call(tasks, {"to": "olga", "amount": 3})
            for method in ("tasks/get", "tasks/cancel"):
                refused = await prose.request(method, {"taskId": created["taskId"]})
                assert refused["error"]["code"] == MISSING_CAPABILITY, refused
            assert (await tasks.get(created["taskId"]))["status"] == "working"  # the cancel did nothing
        assert w.payments() == 0


# ====================================================================== listening


async def test_a_listener_hears_its_task_complete_with_the_result_and_its_cancellation_ends_the_stream(
    tmp_path: Path, program_argv: list[str], program_env: dict[str, str]
) -> None:
    async with world(tmp_path, program_argv, program_env) as w, host(w, "listener") as h:
        first = (await task_of_call(h, NINA))["taskId"]
        second = (await task_of_call(h, {"to": "olga", "amount": 3}))["taskId"]
        listen_id, listen_answered, _ = await h.start(
            "subscriptions/listen", {"notifications": {"taskIds": [first, second]}}
        )
        ack = await h.until_notified(
            "the acknowledgement", lambda m: m["method"] == "notifications/subscriptions/acknowledged"
        )
        assert ack["_meta"][SUBSCRIPTION_ID] == listen_id and ack["notifications"] == {"taskIds": [first, second]}
        approvals = {waiting_on(await h.get(t)): t for t in (first, second)}
        [nina, olga] = sorted(w.pending(), key=lambda a: approvals[a.id] != first)
        await w.approve(nina)
        told = await h.until_notified("the completed task", status_of(h, listen_id, first, "completed"))
        assert text_of(told["result"]) == "paid 12.00 to nina" and not is_error(told["result"])
        assert w.payments() == 1

        await h.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": listen_id}})
        await anyio.sleep(0.5)
        await w.approve(olga)
        done = await h.until_terminal(second)
        assert text_of(done["result"]) == "paid 3.00 to olga" and w.payments() == 2
        await anyio.sleep(1)  # two ticks after the end: a stream still open has told it by now
        assert not any(status_of(h, listen_id, second, "completed")(m) for m in h.notifications)
        assert not listen_answered.is_set()  # a cancelled request is never answered


# ==================================================================== time to live


async def test_a_task_waiting_past_its_ttl_is_withdrawn_pays_nothing_and_later_has_expired(
    tmp_path: Path, program_argv: list[str], program_env: dict[str, str]
) -> None:
    async with world(tmp_path, program_argv, program_env, task_ttl="2s") as w, host(w, "ttl") as h:
        created = await task_of_call(h, NINA)
        task_id = created["taskId"]
        assert created["ttlMs"] == 2000
        listen_id, _, _ = await h.start("subscriptions/listen", {"notifications": {"taskIds": [task_id]}})
        told = await h.until_notified("the withdrawn task", status_of(h, listen_id, task_id, "cancelled"), timeout=10)
        assert "time to live" in told["statusMessage"]
        [approval] = w.approvals()
        assert approval.status == "rejected" and approval.decided_by == "host:task-ttl"
        assert await decide_exit(w, "approve", approval) != 0
        with anyio.fail_after(5):
            while True:
                answer = await h.request("tasks/get", {"taskId": task_id})
                if "error" in answer:
                    break
                assert answer["result"]["status"] == "cancelled", answer
                await anyio.sleep(0.2)
        assert answer["error"]["code"] == INVALID_PARAMS and "expired" in answer["error"]["message"], answer
        assert task_row(w, task_id)["status"] == "cancelled"  # withdrawn, not deleted: the record stays
        assert w.payments() == 0
