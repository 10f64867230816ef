"""Approvals as tasks: how long a task takes to be made, and to finish once the operator decides.

``python bench/tasks.py [PYZ] [-tasks 50] [-rounds 3]``

One proxy process (the .pyz, else the source tree) in front of the fake bank, hold 0s; a
hand-written 2026-07-28 host declaring the tasks extension (``tests/program/task_host.py``).
Each round: ``-tasks`` payments to distinct payees sent at once (each answered with a task:
the time to its CreateTaskResult, p50/p90/max); a ``subscriptions/listen`` on their ids; every
approval granted in one go through the gate's ``approve_shown`` (as ``approve`` does); then the
time from the last grant's commit to each task's completed notification (p50/p90/max), and the
ledger, which must hold each payment once. Prints a Markdown table. Measurement only.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))


def _config(directory: Path, tasks: int) -> Path:
    server = {
        "name": "bank",
        "command": [sys.executable, "-m", "agentrt_proxy.testing.fakebank"],
        "env": [f"FAKE_PAYMENTS_LEDGER={directory / 'ledger'}", f"PYTHONPATH={REPO}"],
        "manifest": "bank.manifest.json",
        "rules": {
            "pay": {"side_effect": "remote_mutation", "timeout": "20s"},
            "balance": {"side_effect": "read_only"},
            "refund": {"side_effect": "destructive"},
        },
    }
    document = {
        "database": "proxy.db",
        "session": "bench",
        "hold": "0s",
        "max_pending": tasks + 10,
        "servers": [server],
    }
    path = directory / "proxy.json"
    path.write_text(json.dumps(document))
    path.chmod(0o600)
    return path


def _q(values: list[float]) -> str:
    ordered = sorted(values)
    p90 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.9))]
    return f"{statistics.median(ordered) * 1000:.1f} / {p90 * 1000:.1f} / {ordered[-1] * 1000:.1f}"


async def _round(argv: list[str], env: dict[str, str], tasks: int, directory: Path) -> dict[str, Any]:
    from agentrt_proxy.gate import approvals
    from agentrt_proxy.store import Store, pending_approvals
    from agentrt_proxy.testing.fakebank import count_payments
    from tests.program.task_host import raw_host

    config = _config(directory, tasks)
    subprocess.run([*argv, "pin", "-config", str(config)], env=env, check=True, capture_output=True)
    created: list[float] = []
    ids: list[str] = []
    async with raw_host(argv, config, env, name="bench") as host:

        async def one(i: int) -> None:
            began = time.perf_counter()
            answer = await host.call("bank_pay", {"to": f"payee{i}", "amount": 1})
            created.append(time.perf_counter() - began)
            assert answer.get("resultType") == "task", answer
            ids.append(answer["taskId"])

        async with anyio.create_task_group() as tg:
            for i in range(tasks):
                tg.start_soon(one, i)
        await host.start("subscriptions/listen", {"notifications": {"taskIds": ids}})
        store = Store.open_existing(str(directory / "proxy.db"))
        try:
            for a in pending_approvals(store, tasks):
                approvals.approve_shown(store, a.run_id, a.id, a.hash, "bench")
        finally:
            store.close()
        granted = time.perf_counter()
        finished: dict[str, float] = {}
        with anyio.fail_after(120):
            while len(finished) < tasks:
                await host.news.wait()
                for note in host.notifications:
                    params = note.get("params", {})
                    if note.get("method") == "notifications/tasks" and params.get("status") == "completed":
                        finished.setdefault(params["taskId"], time.perf_counter() - granted)
    paid = count_payments(directory / "ledger")
    return {"created": created, "finished": list(finished.values()), "paid": paid}


def main(argv: list[str]) -> int:
    pyz = argv[0] if argv and not argv[0].startswith("-") else None
    opts = dict(zip(argv[1::2] if pyz else argv[0::2], argv[2::2] if pyz else argv[1::2], strict=False))
    tasks, rounds = int(opts.get("-tasks", 50)), int(opts.get("-rounds", 3))
    program = [sys.executable, pyz] if pyz else [sys.executable, "-m", "agentrt_proxy"]
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    results = []
    for _ in range(rounds):
        with tempfile.TemporaryDirectory() as tmp:
            results.append(anyio.run(_round, program, env, tasks, Path(tmp)))
    created = [v for r in results for v in r["created"]]
    finished = [v for r in results for v in r["finished"]]
    print(f"| {tasks} tasks x {rounds} rounds ({'pyz' if pyz else 'source'}) | p50 / p90 / max ms |")
    print("| --- | --- |")
    print(f"| tools/call to its CreateTaskResult (all {tasks} at once) | {_q(created)} |")
    print(f"| last grant committed to the task's completed notification | {_q(finished)} |")
    print(f"| payments in the ledger per round (must be {tasks}) | {', '.join(str(r['paid']) for r in results)} |")
    return 0 if all(r["paid"] == tasks for r in results) else 1


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
