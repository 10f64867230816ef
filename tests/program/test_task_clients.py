"""Real task clients through the real program (issue 25, items 1 and 2): the tasks extension's
own client library (``@modelcontextprotocol/ext-tasks`` over the TypeScript client 2.x) in the
2026-07-28 era and in 2025-11-25's, and the TypeScript SDK 1.x client's task stream.

``tests/node/task_host.mjs`` is the host: it makes each call, says when a call became a task,
and prints what the library made of the task's end (its result, or the error it raised, and
every status message it was shown). The proxy is ``serve -config`` in front of the fake bank
(the ``world`` of test_serve_process: hold 0s, ``pay`` remote_mutation); approvals are decided
with the real ``approve``/``reject`` from another process. Effects are counted in the fake
bank's ledger and in the approvals' rows.
"""

from __future__ import annotations

import json
import os
from collections.abc import Awaitable, Callable
from pathlib import Path
from subprocess import PIPE
from typing import Any

import anyio
import pytest

from tests.conftest import REPO_ROOT
from tests.program.test_node_peers import node_bin
from tests.program.test_serve_process import World, world

pytestmark = [pytest.mark.program, pytest.mark.anyio, pytest.mark.timeout(180)]

HOST_SCRIPT = REPO_ROOT / "tests" / "node" / "task_host.mjs"
NOTE = "not to nina this week"
Decide = Callable[[World, int, str], Awaitable[None]]


def task_modules() -> Path:
    modules = Path(os.environ.get("AGENTRT_NODE_MODULES") or REPO_ROOT / "tests" / "node" / "node_modules")
    for package in ("ext-tasks", "client", "sdk"):
        if not (modules / "@modelcontextprotocol" / package).is_dir():
            pytest.skip(f"@modelcontextprotocol/{package} is not installed: run scripts/setup-node.sh")
    return modules


async def run_host(w: World, host: str, calls: list[dict[str, Any]], decide: Decide) -> list[dict[str, Any]]:
    """Run the Node host against ``serve -config``; ``decide`` is called for each task it
    reports (by index and task id). The outcomes, one per call, in order."""
    node, modules = node_bin(), task_modules()
    plan = {
        "modules": str(modules),
        "command": w.argv[0],
        "args": [*w.argv[1:], "serve", "-config", str(w.config)],
        "env": w.env,
        "cwd": str(w.directory),
        "host": host,
        "calls": calls,
    }
    outcomes: list[dict[str, Any]] = []
    stderr_path = w.directory / f"{host}.stderr"
    with stderr_path.open("wb") as stderr_file:
        process = await anyio.open_process(
            [node, str(HOST_SCRIPT), json.dumps(plan)],
            stdin=PIPE,
            stdout=PIPE,
            stderr=stderr_file,
            cwd=str(w.directory),
        )
    try:
        buffer = b""
        assert process.stdout is not None
        with anyio.fail_after(150):
            async for chunk in process.stdout:
                buffer += chunk
                while b"\n" in buffer:
                    line, buffer = buffer.split(b"\n", 1)
                    event = json.loads(line)
                    if event["event"] == "task":
                        await decide(w, event["index"], event["taskId"])
                    elif event["event"] == "outcome":
                        outcomes.append(event)
                    elif event["event"] == "failed":
                        raise AssertionError(f"the host failed: {event['error']}\n{stderr_path.read_text()}")
            await process.wait()
    finally:
        if process.returncode is None:
            process.kill()
            with anyio.CancelScope(shield=True):
                await process.wait()
    assert len(outcomes) == len(calls), (outcomes, stderr_path.read_text())
    return outcomes


def decided_by(verdicts: dict[int, str]) -> Decide:
    """For call ``i``: approve or reject (with ``NOTE``) the one approval then pending;
    a call not named is left to the host (its cancel)."""

    async def decide(w: World, index: int, _task_id: str) -> None:
        verdict = verdicts.get(index)
        if verdict is None:
            return
        await w.wait_for("the task's approval", lambda: len(w.pending()) == 1)
        [approval] = w.pending()
        if verdict == "approve":
            await w.approve(approval)
        else:
            await w.reject(approval, NOTE)

    return decide


def text_of(result: dict[str, Any]) -> str:
    return " ".join(block.get("text", "") for block in result.get("content", []))


def payees(w: World) -> list[str]:
    if not w.ledger.exists():
        return []
    return [json.loads(line)["to"] for line in w.ledger.read_text().splitlines()]


CALLS = [
    {"name": "bank_pay", "arguments": {"to": "ann", "amount": 3}},
    {"name": "bank_pay", "arguments": {"to": "nina", "amount": 12}},
    {"name": "bank_pay", "arguments": {"to": "carl", "amount": 4}, "cancel": True},
]


async def test_the_extension_client_reads_a_completed_a_rejected_and_a_cancelled_task_and_pays_once(
    tmp_path: Path, program_argv: list[str], program_env: dict[str, str]
) -> None:
    async with world(tmp_path, program_argv, program_env) as w:
        paid, rejected, cancelled = await run_host(w, "ext-tasks", CALLS, decided_by({0: "approve", 1: "reject"}))
        assert paid["status"] == "completed", paid
        assert paid["result"]["resultType"] == "complete" and text_of(paid["result"]) == "paid 3.00 to ann", paid
        assert rejected["status"] == "completed", rejected  # the extension: isError is a completed call's answer
        assert rejected["result"]["isError"] is True, rejected
        assert text_of(rejected["result"]).startswith("REJECTED") and NOTE in text_of(rejected["result"])
        assert any(m.startswith("REJECTED") and NOTE in m for m in rejected["messages"]), rejected
        assert cancelled["status"] == "cancelled", cancelled
        assert payees(w) == ["ann"]
        statuses = [a.status for a in w.approvals()]
        assert statuses == ["approved", "rejected", "rejected"], statuses  # the cancel withdrew the third
        assert w.approvals()[2].decided_by == "host:tasks/cancel"


async def test_the_extension_client_in_2025_reads_the_operators_note_of_a_rejected_task(
    tmp_path: Path, program_argv: list[str], program_env: dict[str, str]
) -> None:
    async with world(tmp_path, program_argv, program_env) as w:
        paid, rejected, cancelled = await run_host(w, "ext-tasks-2025", CALLS, decided_by({0: "approve", 1: "reject"}))
        assert paid["status"] == "completed" and text_of(paid["result"]) == "paid 3.00 to ann", paid
        assert rejected["status"] == "failed", rejected  # 2025-11-25: isError fails the task
        assert rejected["error"].startswith("REJECTED") and NOTE in rejected["error"], rejected
        assert cancelled["status"] == "cancelled", cancelled
        assert payees(w) == ["ann"]


async def test_the_typescript_sdk_task_stream_is_told_rejected_and_the_note(
    tmp_path: Path, program_argv: list[str], program_env: dict[str, str]
) -> None:
    async with world(tmp_path, program_argv, program_env) as w:
        paid, rejected = await run_host(w, "sdk1", CALLS[:2], decided_by({0: "approve", 1: "reject"}))
        assert paid["status"] == "completed" and text_of(paid["result"]) == "paid 3.00 to ann", paid
        assert rejected["status"] == "failed", rejected
        assert rejected["messages"][-1].startswith("REJECTED") and NOTE in rejected["messages"][-1], rejected
        assert payees(w) == ["ann"]
        assert [a.status for a in w.approvals()] == ["approved", "rejected"]
