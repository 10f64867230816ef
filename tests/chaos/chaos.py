"""The crash harness: two proxies on one session and one fake bank, SIGKILLed at random instants.

A round sends one mutating call (``bank_pay``, which needs an approval) to one of two proxies
serving the same session and database, and with some probability SIGKILLs that proxy a
random moment later: before the claim, after it, inside the upstream call, after the answer,
during the commit. A killed proxy is started again. An operator approves or rejects what
waits, with the real ``approve`` and ``reject`` commands. Each request pays a recipient of
its own (``to`` is unique), so the ledger says how often each request executed.

After every round the invariants are checked (``check``):

- the ledger holds no payment that no approved execution accounts for, and none twice
  without an approval between: per request, payments <= approvals granted for it;
- every payment was recorded as started before it happened: payments <= ``step.tool_started``
  events of the request's runs;
- the audit chain verifies, and ``PRAGMA integrity_check`` is ok;
- the budget (``BUDGET``: every payment is 1, the limit 5 per 20 s) never counts past its limit
  in any window, and every payment the ledger holds is counted in it: per request, payments <=
  reserved or spent reservations of its runs + re-runs an operator approved (an approved re-run
  spends the reservation of the attempt it re-runs: the operator said that one did not pay).

At the end (``settle``) every request is called again on a fresh proxy once the leases have
expired, and every execution whose outcome is unknown must be visible to the operator: an
interrupted step has an interruption approval naming it.

Used by tests/chaos/test_kills.py (CI: at least 100 kills) and bench/chaos.py (longer runs).
"""

from __future__ import annotations

import bisect
import contextlib
import itertools
import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

from agentrt_proxy.canonical.durations import parse_time
from agentrt_proxy.store import RUNNING, Store
from tests.waiting import until_sync

LEASE_TTL = "3s"  # the shortest the configuration allows: a killed proxy's run is taken over soon
ANSWER_TIMEOUT = 30.0
# Small enough to refuse now and then, with a window short enough to let payments through again.
BUDGET_LIMIT = 5
BUDGET = {"name": "chaos", "tools": ["bank_pay"], "limit": BUDGET_LIMIT, "window": "20s"}
BUDGET_WINDOW_NS = 20 * 1_000_000_000


def write_config(directory: Path, repo: Path) -> Path:
    server = {
        "name": "bank",
        "command": [sys.executable, "-m", "agentrt_proxy.testing.fakebank"],
        "env": [f"FAKE_PAYMENTS_LEDGER={directory / 'ledger'}", f"PYTHONPATH={repo}"],
        "manifest": "bank.manifest.json",
        "rules": {
            "balance": {"side_effect": "read_only", "timeout": "5s"},
            "pay": {"side_effect": "remote_mutation", "timeout": "10s", "amount_field": "amount"},
            "refund": {"side_effect": "destructive", "timeout": "5s"},
        },
    }
    document = {
        "database": "proxy.db",
        "session": "chaos",
        "hold": "0s",
        "lease_ttl": LEASE_TTL,
        "max_pending": 1000,
        "servers": [server],
        "budgets": [BUDGET],
    }
    path = directory / "proxy.json"
    path.write_text(json.dumps(document, indent=2))
    path.chmod(0o600)
    return path


MODERN_ENVELOPE = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {"extensions": {"io.modelcontextprotocol/tasks": {}}},
    "io.modelcontextprotocol/clientInfo": {"name": "chaos", "version": "1"},
}


class RawHost:
    """One ``serve`` child spoken to line by line, as a host does; answers matched by id. A
    ``tasks`` host speaks 2026-07-28 with the tasks extension: a payment that waits on an
    approval is answered with a task, which the proxy then executes by itself once approved."""

    def __init__(self, argv: Sequence[str], config: Path, env: dict[str, str], stderr: Path,
                 tasks: bool = False) -> None:
        self.tasks = tasks
        self._err = stderr.open("ab")
        self.process = subprocess.Popen(
            [*argv, "serve", "-config", str(config)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._err, env=env, cwd=str(config.parent),
        )  # fmt: skip
        self._answers: dict[Any, dict[str, Any]] = {}
        self._cond = threading.Condition()
        self._ids = iter(range(1, 1 << 62))
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        if tasks:
            self._send({"jsonrpc": "2.0", "id": "ready", "method": "tools/list",
                        "params": {"_meta": MODERN_ENVELOPE}})
            self.answer("ready")
            return
        self._send(
            {
                "jsonrpc": "2.0",
                "id": 0,
                "method": "initialize",
                "params": {
                    "protocolVersion": "2025-06-18",
                    "capabilities": {},
                    "clientInfo": {"name": "chaos", "version": "1"},
                },
            }
        )
        self._send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        # Ready when tools/list answers (upstream listed, store open): a kill that follows hits the call.
        self._send({"jsonrpc": "2.0", "id": "ready", "method": "tools/list"})
        self.answer("ready")

    def _read(self) -> None:
        assert self.process.stdout is not None
        with contextlib.suppress(ValueError, OSError):  # the pipe closed under it: the proxy was killed
            for line in self.process.stdout:
                with contextlib.suppress(ValueError):
                    message = json.loads(line)
                    if isinstance(message, dict) and "id" in message:
                        with self._cond:
                            self._answers[message["id"]] = message
                            self._cond.notify_all()
        with self._cond:
            self._cond.notify_all()

    def _send(self, message: dict[str, Any]) -> bool:
        assert self.process.stdin is not None
        try:
            self.process.stdin.write((json.dumps(message) + "\n").encode())
            self.process.stdin.flush()
            return True
        except (BrokenPipeError, ValueError, OSError):
            return False

    def send_call(self, arguments: dict[str, Any]) -> int | None:
        request_id = next(self._ids)
        params: dict[str, Any] = {"name": "bank_pay", "arguments": arguments}
        if self.tasks:
            params["_meta"] = MODERN_ENVELOPE
        sent = self._send({"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params})
        return request_id if sent else None

    def answer(self, request_id: int | str, timeout: float = ANSWER_TIMEOUT) -> dict[str, Any] | None:
        """The answer, or None when the proxy died first (or took longer than ``timeout``)."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while request_id not in self._answers:
                if self.process.poll() is not None or not self._reader.is_alive():
                    return self._answers.pop(request_id, None)
                left = deadline - time.monotonic()
                if left <= 0:
                    return None
                self._cond.wait(min(left, 0.05))
            return self._answers.pop(request_id)

    def alive(self) -> bool:
        return self.process.poll() is None

    def kill(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            self.process.send_signal(signal.SIGKILL)
        self.process.wait()
        self._err.close()
        for pipe in (self.process.stdin, self.process.stdout):
            with contextlib.suppress(OSError):
                if pipe is not None:
                    pipe.close()

    def close(self) -> None:
        with contextlib.suppress(OSError):
            if self.process.stdin is not None:
                self.process.stdin.close()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(10)
        self.kill()


def arguments_of(recipient: str) -> dict[str, Any]:
    """Every fifth request pays slowly (2 s upstream), so a kill lands inside the upstream call."""
    if int(recipient[1:]) % 5 == 0:
        return {"to": recipient, "amount": 1, "mode": "slow"}
    return {"to": recipient, "amount": 1}


def text_of(answer: dict[str, Any] | None) -> str:
    if not answer or not isinstance(answer.get("result"), dict):
        return ""
    content = answer["result"].get("content") or [{}]
    return str(content[0].get("text", ""))


@dataclass
class Figures:
    rounds: int = 0
    calls: int = 0
    kills: int = 0
    approvals: int = 0
    rejections: int = 0
    paid: int = 0
    checks: int = 0
    cut_executing: int = 0  # steps a kill cut off inside the upstream call (outcome unknown)
    tasks: set[str] = field(default_factory=set)  # the task ids hosts were answered with
    tasks_paid: int = 0  # tasks that ended with the tool's "paid" result
    answers: Counter[str] = field(default_factory=Counter)
    violations: list[str] = field(default_factory=list)
    seconds: float = 0.0

    def line(self) -> str:
        top = ", ".join(f"{k} {v}" for k, v in self.answers.most_common())
        return (
            f"{self.rounds} rounds, {self.calls} calls, {self.kills} kills, {self.approvals} approvals, "
            f"{self.rejections} rejections, {self.paid} paid answers, {len(self.tasks)} tasks "
            f"({self.tasks_paid} ended paid), {self.cut_executing} cut off executing, "
            f"{self.checks} invariant checks, "
            f"{len(self.violations)} violations, {self.seconds:.1f} s; answers: {top}"
        )


class Chaos:
    def __init__(self, directory: Path, argv: Sequence[str], env: dict[str, str], repo: Path, seed: int,
                 burst: int = 1) -> None:
        self.directory = directory
        self.burst = burst  # up to this many calls sent at once in a round (their writes share COMMITs)
        self.argv = list(argv)
        self.env = env
        self.config = write_config(directory, repo)
        self.db = directory / "proxy.db"
        self.ledger = directory / "ledger"
        self.rng = random.Random(seed)
        self.proxies: list[RawHost | None] = [None, None]
        self.open: list[str] = []  # recipients whose request has not been paid or refused yet
        self.next_recipient = 0
        self.figures = Figures()

    # ---------------------------------------------------------------- the program

    def cli(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*self.argv, *args], capture_output=True, text=True, env=self.env, cwd=str(self.directory), timeout=60
        )

    def pin(self) -> None:
        done = self.cli("pin", "-config", str(self.config))
        if done.returncode != 0:
            raise RuntimeError(f"pin failed: {done.stderr}")

    def proxy(self, slot: int) -> RawHost:
        host = self.proxies[slot]
        if host is None or not host.alive():
            if host is not None:
                host.kill()
            # Half the proxies serve a host that takes tasks: their approved payments run with
            # no second call, by whichever proxy owns (or took over) the task.
            host = RawHost(self.argv, self.config, self.env, self.directory / f"proxy{slot}.stderr",
                           tasks=self.rng.random() < 0.5)
            self.proxies[slot] = host
        return host

    def stop(self) -> None:
        for host in self.proxies:
            if host is not None:
                host.close()
        self.proxies = [None, None]

    # ---------------------------------------------------------------- one round

    def request(self) -> dict[str, Any]:
        if not self.open or (len(self.open) < 8 and self.rng.random() < 0.3):
            self.next_recipient += 1
            self.open.append(f"r{self.next_recipient}")
        return arguments_of(self.rng.choice(self.open))

    def round(self, kill_probability: float = 0.5, max_delay: float = 0.06) -> None:
        self.figures.rounds += 1
        slot = self.rng.randrange(2)
        host = self.proxy(slot)
        sent: list[tuple[int, dict[str, Any]]] = []
        for _ in range(1 if self.burst == 1 else self.rng.randint(1, self.burst)):
            arguments = self.request()
            request_id = host.send_call(arguments)
            self.figures.calls += 1
            if request_id is not None:
                sent.append((request_id, arguments))
        if sent and self.rng.random() < kill_probability:
            slow = any(arguments.get("mode") == "slow" for _, arguments in sent)
            time.sleep(self.rng.uniform(0, 0.3 if slow else max_delay))
            host.kill()
            self.proxies[slot] = None
            self.figures.kills += 1
        else:
            for request_id, arguments in sent:
                self.take(arguments["to"], host.answer(request_id))
        self.operator()
        self.check()

    def take(self, recipient: str, answer: dict[str, Any] | None) -> None:
        if answer and isinstance(answer.get("result"), dict) and answer["result"].get("resultType") == "task":
            self.figures.tasks.add(answer["result"]["taskId"])
            self.figures.answers["task"] += 1
            return
        text = text_of(answer)
        kind = text.split(":", 1)[0] if ":" in text[:40] else text.split(" ", 1)[0]
        self.figures.answers[kind or "none"] += 1
        if text.startswith("paid "):
            self.figures.paid += 1
        if text.startswith(("paid ", "REJECTED", "DUPLICATE")) and recipient in self.open:
            self.open.remove(recipient)

    def operator(self) -> None:
        """Approve or reject one waiting approval, now and then, with the real commands."""
        if self.rng.random() > 0.5:
            return
        pending = self.pending()
        if not pending:
            return
        approval = self.rng.choice(pending)
        if self.rng.random() < 0.8:
            done = self.cli(
                "approve", "-db", str(self.db), approval.run_id, "-approval", approval.id, "-yes", "-by", "chaos"
            )
            self.figures.approvals += done.returncode == 0
        else:
            done = self.cli(
                "reject", "-db", str(self.db), approval.run_id, "-approval", approval.id, "-note", "no", "-by", "chaos"
            )
            self.figures.rejections += done.returncode == 0
        if done.returncode != 0 and "is not pending" not in done.stderr:
            self.violations(f"the operator's command failed: {done.stderr.strip()}")

    # ---------------------------------------------------------------- invariants

    def read(self) -> Store:
        return Store.open_readonly(str(self.db))

    def pending(self) -> list[Any]:
        if not self.db.exists():
            return []
        store = self.read()
        try:
            with store.read() as c:
                ids = [row[0] for row in c.execute("SELECT id FROM approvals WHERE status = 'pending'")]
            return [store.get_approval(i) for i in ids]
        finally:
            store.close()

    def payments(self) -> Counter[str]:
        counts: Counter[str] = Counter()
        if self.ledger.exists():
            for line in self.ledger.read_text().splitlines():
                counts[json.loads(line)["to"]] += 1
        return counts

    def check(self) -> None:
        """The invariants; each violation is kept with what showed it."""
        if not self.db.exists():
            return
        self.figures.checks += 1
        paid = self.payments()  # read first: a payment made after this cannot be unexplained below
        approved: Counter[str] = Counter()
        started: Counter[str] = Counter()
        store = self.read()
        try:
            with store.read() as c:
                approvals = c.execute("SELECT request_json FROM approvals WHERE status = 'approved'").fetchall()
                runs = [row[0] for row in c.execute("SELECT id FROM runs")]
            for (request_json,) in approvals:
                approved[json.loads(request_json)["args"]["to"]] += 1
            for run_id in runs:
                recipient = self._recipient(store, run_id)
                events = store.events_of(run_id, limit=10_000)
                started[recipient] += sum(1 for e in events if e.type == "step.tool_started")
            report = store.verify()
            self.check_budget(store, paid)
        finally:
            store.close()
        for recipient, n in paid.items():
            if n > approved[recipient]:
                self.violations(f"{recipient}: paid {n} times, approved {approved[recipient]} times")
            if n > started[recipient]:
                self.violations(f"{recipient}: paid {n} times, recorded as started {started[recipient]} times")
        if not report.intact:
            self.violations(f"verify: {report}")
        with contextlib.closing(sqlite3.connect(f"file:{self.db}?mode=ro", uri=True)) as c:
            ok = c.execute("PRAGMA integrity_check").fetchone()[0]
        if ok != "ok":
            self.violations(f"integrity_check: {ok}")

    def check_budget(self, store: Store, paid: Counter[str]) -> None:
        """The budget never counts past its limit in any window, and every payment is counted."""
        live = sorted((h for h in store.holds.every() if h.state in ("reserved", "spent")), key=lambda h: h.at)
        ats = [h.at for h in live]
        sums = list(itertools.accumulate((Decimal(h.amount) for h in live), initial=Decimal(0)))
        for hold in live:  # each reservation fit, with what the window held when it was made
            first, last = bisect.bisect_left(ats, hold.at - BUDGET_WINDOW_NS), bisect.bisect_right(ats, hold.at)
            total = sums[last] - sums[first]
            if total > BUDGET_LIMIT:
                self.violations(f"budget: {total} reserved or spent in the 20 s up to run {hold.run_id}'s hold")
        counted: Counter[str] = Counter()
        for hold in live:
            counted[self._recipient(store, hold.run_id)] += 1
        reruns: Counter[str] = Counter()
        with store.read() as c:
            rows = c.execute(
                "SELECT request_json FROM approvals WHERE status = 'approved' AND kind = 'interrupted_side_effect'"
            ).fetchall()
        for (request_json,) in rows:
            reruns[json.loads(request_json)["args"]["to"]] += 1
        for recipient, n in paid.items():
            if n > counted[recipient] + reruns[recipient]:
                self.violations(
                    f"{recipient}: paid {n} times, counted {counted[recipient]} times in the budget "
                    f"(and {reruns[recipient]} approved re-runs)"
                )

    @staticmethod
    def _recipient(store: Store, run_id: str) -> str:
        for step in store.steps_of(run_id):
            with contextlib.suppress(ValueError, KeyError, TypeError):
                return str(json.loads(step.decision_json)["args"]["to"])
        return ""

    def leases_ran_out(self) -> bool:
        """No running run's lease is live by the wall clock (the one clock leases are judged by)."""
        store = self.read()
        try:
            with store.read() as c:
                query = "SELECT lease_expires_at FROM runs WHERE status = ? AND lease_expires_at != ''"
                ends = [row[0] for row in c.execute(query, (RUNNING,))]
        finally:
            store.close()
        now = time.time_ns()
        return all(now >= parse_time(end) for end in ends)

    def violations(self, text: str) -> None:
        self.figures.violations.append(text)

    # ---------------------------------------------------------------- the end

    def settle(self) -> None:
        """Every request once more on a fresh proxy after the leases ran out; then every
        execution cut off with its outcome unknown must have an interruption approval."""
        self.stop()
        until_sync("every killed proxy's lease to run out", self.leases_ran_out)
        host = self.proxy(0)
        for recipient in [f"r{i}" for i in range(1, self.next_recipient + 1)]:
            request_id = host.send_call(arguments_of(recipient))
            if request_id is not None:
                self.take(recipient, host.answer(request_id))
        self.stop()
        self.check()
        self.check_tasks()
        store = self.read()
        try:
            with store.read() as c:
                runs = [row[0] for row in c.execute("SELECT id FROM runs")]
            for run_id in runs:
                named = set()
                for approval in store.approvals_of(run_id):
                    if approval.kind == "interrupted_side_effect":
                        capability = json.loads(approval.capability_json or "{}")
                        named.add((capability.get("interrupted") or {}).get("step_id"))
                        named.add(approval.step_id)
                for step_id in self._cut_while_executing(store, run_id):
                    self.figures.cut_executing += 1
                    if step_id not in named and not self._asked_in_a_later_run(store, runs, step_id):
                        self.violations(f"run {run_id}: step {step_id} was cut off executing; no operator was asked")
        finally:
            store.close()

    def check_tasks(self) -> None:
        """What the tasks say must be true: no more tasks ended "paid" for a recipient than the
        ledger holds payments to it, and every task a host was given is a row of the session."""
        paid = self.payments()
        claimed: Counter[str] = Counter()
        with contextlib.closing(sqlite3.connect(f"file:{self.db}?mode=ro", uri=True)) as c:
            rows = c.execute("SELECT id, arguments, status, result FROM proxy_tasks").fetchall()
        known = {row[0] for row in rows}
        for task_id in self.figures.tasks - known:
            self.violations(f"task {task_id} was returned to a host and is not in the database")
        for _task_id, arguments, status, result in rows:
            if status == "completed" and '"text":"paid ' in result:
                claimed[json.loads(arguments)["to"]] += 1
        self.figures.tasks_paid = sum(claimed.values())
        for recipient, n in claimed.items():
            if n > paid[recipient]:
                self.violations(f"{recipient}: {n} tasks ended paid, the ledger holds {paid[recipient]} payments")

    @staticmethod
    def _cut_while_executing(store: Store, run_id: str) -> list[str]:
        started: dict[str, bool] = {}
        for event in store.events_of(run_id, limit=10_000):
            if event.type == "step.tool_started":
                started[event.step_id] = True
            elif event.type in ("step.tool_finished", "step.failed") and event.step_id in started:
                started[event.step_id] = False
        return [step for step, open_ in started.items() if open_]

    @staticmethod
    def _asked_in_a_later_run(store: Store, runs: list[str], step_id: str) -> bool:
        for run_id in runs:
            for approval in store.approvals_of(run_id):
                capability = json.loads(approval.capability_json or "{}")
                if (capability.get("interrupted") or {}).get("step_id") == step_id:
                    return True
        return False


def run(directory: Path, argv: Sequence[str], env: dict[str, str], repo: Path, *, kills: int, seed: int,
        burst: int = 1) -> Figures:
    """Rounds until ``kills`` SIGKILLs happened; then settle. The figures, violations among them."""
    chaos = Chaos(directory, argv, env, repo, seed, burst)
    started = time.monotonic()
    chaos.pin()
    try:
        while chaos.figures.kills < kills:
            chaos.round()
        chaos.settle()
    finally:
        chaos.stop()
        chaos.figures.seconds = time.monotonic() - started
    return chaos.figures


if __name__ == "__main__":  # pragma: no cover - bench/chaos.py is the command
    print(os.getpid())
