"""The real program as a host runs it: a child process over pipes, driven by the SDK client.

The port of the original proxy's process tests (``proxy/internal/cli/cli_test.go``,
proxy-and-mcp-module §5.6 items 3-9), plus the issue's own: SIGTERM mid-call, a lost
response retried, the host's cancellation, and the SDK client's ``auto`` mode.

Each proxy is ``agentrt-proxy serve -config <file>`` (source tree or .pyz, see conftest)
with session ``laptop``, hold 0s, ``pay`` remote_mutation 20s, ``balance`` read_only 5s,
``refund`` destructive 5s, pinned first with the ``pin`` command; the host is the official
SDK ``ClientSession`` over the child's stdin and stdout; approvals are decided with the real
``approve``/``reject`` subcommands. Effects are counted in the fake bank's ledger and read
from the database opened read-only.
"""

from __future__ import annotations

import itertools
import json
import os
import signal
import sys
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from subprocess import PIPE
from typing import Any

import anyio
import anyio.abc
import pytest
from mcp import ClientSession, StdioServerParameters, types
from mcp.client.stdio import stdio_client
from mcp.shared.message import SessionMessage

from agentrt_proxy.canonical.durations import parse_time
from agentrt_proxy.store import Store
from agentrt_proxy.testing.fakebank import count_payments
from tests.conftest import REPO_ROOT, run_program
from tests.harness import is_error, text_of
from tests.waiting import until

pytestmark = [pytest.mark.program, pytest.mark.anyio, pytest.mark.timeout(90)]

BLOCK_ROB = {"to": "rob", "amount": 5, "mode": "block"}
SLOW = {"to": "sam", "amount": 3, "mode": "slow"}

# proxy-and-mcp-module §2.5 "interrupted, approved, run again"
INTERRUPTED_APPROVED_RUN_AGAIN = [
    "run.created", "run.started", "step.started", "step.decided", "step.policy", "step.tool_started",
    "lease.taken_over", "step.interrupted", "step.policy", "approval.requested", "approval.decided",
    "run.resumed", "step.policy", "step.tool_started", "step.tool_finished", "run.finished",
]


# ------------------------------------------------------------------------------- the world


@dataclass
class World:
    """A configuration, its database and ledger, and every child this test started."""

    directory: Path
    config: Path
    argv: list[str]
    env: dict[str, str]
    hosts: list[Host] = field(default_factory=list)

    @property
    def db(self) -> str:
        return str(self.directory / "proxy.db")

    @property
    def ledger(self) -> Path:
        return self.directory / "ledger"

    def payments(self) -> int:
        return count_payments(self.ledger)

    def release(self) -> None:
        (self.directory / "ledger.release").write_text("")

    @contextmanager
    def store(self) -> Iterator[Store]:
        store = Store.open_readonly(self.db)
        try:
            yield store
        finally:
            store.close()

    def runs(self) -> list[Any]:
        with self.store() as store:
            return [summary.run for summary in reversed(store.list_runs(1000))]

    def run(self, run_id: str) -> Any:
        with self.store() as store:
            return store.get_run(run_id)

    def events(self, run_id: str) -> list[str]:
        with self.store() as store:
            return [e.type for e in store.events_of(run_id, 0, 1000)]

    def approvals(self) -> list[Any]:
        with self.store() as store, store.read() as conn:
            ids = [r[0] for r in conn.execute("SELECT id FROM approvals ORDER BY rowid")]
        with self.store() as store:
            return [store.get_approval(i) for i in ids]

    def pending(self) -> list[Any]:
        return [a for a in self.approvals() if a.status == "pending"]

    async def decide(self, verb: str, approval: Any, note: str = "") -> None:
        args = [verb, "-db", self.db, approval.run_id, "-approval", approval.id, "-by", "tester", "-yes"]
        if note:
            args += ["-note", note]
        done = await anyio.to_thread.run_sync(lambda: run_program(args, timeout=30))
        assert done.returncode == 0, (done.stdout, done.stderr)

    async def approve(self, approval: Any) -> None:
        await self.decide("approve", approval)

    async def reject(self, approval: Any, note: str) -> None:
        await self.decide("reject", approval, note)

    async def wait_for(self, what: str, predicate: Any, timeout: float = 15) -> None:
        await until(what, predicate, timeout)

    def executing_run(self) -> Any:
        running = [r for r in self.runs() if r.status == "RUNNING"]
        assert len(running) == 1, running
        return running[0]

    async def wait_lease_expired(self, run_id: str) -> None:
        run = self.run(run_id)
        assert run.lease_expires_at
        remaining = parse_time(run.lease_expires_at) - time.time_ns()
        await anyio.sleep(max(0.0, remaining / 1e9) + 0.3)

    def kill_orphans(self) -> None:
        """SIGKILL every fake bank left behind by a proxy this test killed (by pid)."""
        marker = f"FAKE_PAYMENTS_LEDGER={self.ledger}".encode()
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                with open(f"/proc/{entry}/environ", "rb") as f:
                    environ = f.read().split(b"\0")
            except OSError:
                continue
            if marker in environ:
                with suppress(OSError):
                    os.kill(int(entry), signal.SIGKILL)


def write_config(directory: Path, *, pay: dict[str, Any] | None = None, **top: Any) -> Path:
    server = {
        "name": "bank",
        "command": [sys.executable, "-m", "agentrt_proxy.testing.fakebank"],
        "env": [f"FAKE_PAYMENTS_LEDGER={directory / 'ledger'}", f"PYTHONPATH={REPO_ROOT}"],
        "manifest": "bank.manifest.json",
        "rules": {
            "balance": {"side_effect": "read_only", "timeout": "5s"},
            "pay": {"side_effect": "remote_mutation", "timeout": "20s", **(pay or {})},
            "refund": {"side_effect": "destructive", "timeout": "5s"},
        },
    }
    document = {"database": "proxy.db", "session": "laptop", "hold": "0s", "servers": [server], **top}
    path = directory / "proxy.json"
    path.write_text(json.dumps(document, indent=2))
    path.chmod(0o600)
    return path


@asynccontextmanager
async def world(tmp_path: Path, argv: list[str], env: dict[str, str], **config: Any) -> AsyncIterator[World]:
    path = write_config(tmp_path, **config)
    pinned = await anyio.to_thread.run_sync(lambda: run_program(["pin", "-config", str(path)], timeout=30))
    assert pinned.returncode == 0, pinned.stderr
    w = World(tmp_path, path, argv, env)
    try:
        yield w
    finally:
        for host in w.hosts:
            host.kill()
        w.release()  # a payment still blocked anywhere answers and ends
        w.kill_orphans()


ALLOW_PAY = {"outcome": "allow"}


# ------------------------------------------------------------------------------ the host


@dataclass
class Host:
    """One proxy child process and the SDK client session talking to it."""

    process: anyio.abc.Process
    client: ClientSession
    stderr_path: Path
    _raw: dict[str, Any] = field(default_factory=dict)
    _ids: Any = field(default_factory=lambda: itertools.count(1))

    @property
    def stderr(self) -> str:
        return self.stderr_path.read_text(errors="replace")

    async def call(self, name: str, arguments: dict[str, Any]) -> types.CallToolResult:
        return await self.client.call_tool(name, arguments)

    async def send_raw(self, name: str, arguments: dict[str, Any]) -> tuple[str, anyio.Event, dict[str, Any]]:
        """Send a ``tools/call`` the SDK does not track: (id, answered event, answer box)."""
        request_id = f"raw-{next(self._ids)}"
        done = anyio.Event()
        box: dict[str, Any] = {}
        self._raw[request_id] = (done, box)
        message = {"jsonrpc": "2.0", "id": request_id, "method": "tools/call",
                   "params": {"name": name, "arguments": arguments}}
        await self.process.stdin.send((json.dumps(message) + "\n").encode())  # type: ignore[union-attr]
        return request_id, done, box

    async def send_notification(self, method: str, params: dict[str, Any]) -> None:
        message = {"jsonrpc": "2.0", "method": method, "params": params}
        await self.process.stdin.send((json.dumps(message) + "\n").encode())  # type: ignore[union-attr]

    async def close_stdin(self) -> None:
        await self.process.stdin.aclose()  # type: ignore[union-attr]

    async def wait(self, timeout: float = 30) -> int:
        with anyio.fail_after(timeout):
            return await self.process.wait()

    def alive(self) -> bool:
        return self.process.returncode is None

    def kill(self) -> None:
        if self.process.returncode is None:
            with suppress(ProcessLookupError):
                self.process.kill()


@asynccontextmanager
async def proxy(w: World, name: str = "proxy") -> AsyncIterator[Host]:
    """Start ``serve -config`` as a child and connect the SDK client over its pipes."""
    stderr_path = w.directory / f"{name}.stderr"
    stderr_file = stderr_path.open("wb")
    process = await anyio.open_process([*w.argv, "serve", "-config", str(w.config)], stdin=PIPE, stdout=PIPE,
                                       stderr=stderr_file, env=w.env, cwd=str(w.directory))
    stderr_file.close()
    read_send, read_receive = anyio.create_memory_object_stream[SessionMessage | Exception](100)
    write_send, write_receive = anyio.create_memory_object_stream[SessionMessage](100)
    raw: dict[str, Any] = {}

    async def from_proxy() -> None:
        buffer = b""
        assert process.stdout is not None
        try:
            async for chunk in process.stdout:
                buffer += chunk
                while b"\n" in buffer:
                    line, buffer = buffer.split(b"\n", 1)
                    decoded = json.loads(line)
                    request_id = decoded.get("id")
                    if isinstance(request_id, str) and request_id.startswith("raw-"):
                        if request_id in raw:
                            done, box = raw.pop(request_id)
                            box["message"] = decoded
                            done.set()
                        continue
                    await read_send.send(SessionMessage(types.jsonrpc_message_adapter.validate_json(line)))
        except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
            pass
        finally:
            await read_send.aclose()

    async def to_proxy() -> None:
        assert process.stdin is not None
        async for message in write_receive:
            data = message.message.model_dump_json(by_alias=True, exclude_unset=True) + "\n"
            try:
                await process.stdin.send(data.encode())
            except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                return

    host: Host | None = None
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(from_proxy)
            tg.start_soon(to_proxy)
            async with ClientSession(read_receive, write_send) as client:
                with anyio.fail_after(20):
                    await client.initialize()
                host = Host(process, client, stderr_path, raw)
                w.hosts.append(host)
                try:
                    yield host
                finally:
                    host.kill()
            tg.cancel_scope.cancel()
    finally:
        if host is None and process.returncode is None:
            process.kill()
        with anyio.CancelScope(shield=True), anyio.move_on_after(5):
            await process.wait()


def prefix(result: Any) -> str:
    return text_of(result).split(":", 1)[0]


async def kill_mid_payment(w: World, host: Host, arguments: dict[str, Any]) -> Any:
    """Send a ``block`` payment, wait for its ledger line, SIGKILL the proxy: the run it leaves."""
    before = w.payments()
    await host.send_raw("bank_pay", arguments)
    await w.wait_for("the payment's ledger line", lambda: w.payments() == before + 1)
    run = w.executing_run()
    os.kill(host.process.pid, signal.SIGKILL)
    assert await host.wait() == -signal.SIGKILL
    return run


async def crashed_and_interrupted(w: World, fresh: Host, arguments: dict[str, Any]) -> Any:
    """After a crash: the identical call answers IN_PROGRESS while the dead lease lives, then
    INTERRUPTED with one interruption approval named. Returns that approval."""
    run = w.executing_run()
    assert parse_time(run.lease_expires_at) - time.time_ns() >= 1_000_000_000, "less than 1 s of lease left"
    early = await fresh.call("bank_pay", arguments)
    assert prefix(early) == "IN_PROGRESS" and not is_error(early), text_of(early)
    await w.wait_lease_expired(run.id)
    result = await fresh.call("bank_pay", arguments)
    assert prefix(result) == "INTERRUPTED" and not is_error(result), text_of(result)
    [approval] = [a for a in w.approvals() if a.kind == "interrupted_side_effect"]
    assert approval.status == "pending" and approval.run_id == run.id
    assert f"(approval {approval.id})" in text_of(result)
    return approval


# ======================================================================= proxy-and-mcp-module §5.6 items 3-9


# Go: TestProcess_RestartCollectsAnApprovalGrantedWhileItWasGone
async def test_a_restarted_proxy_collects_an_approval_granted_while_it_was_gone(
        tmp_path: Path, program_argv: list[str], program_env: dict[str, str]) -> None:
    async with world(tmp_path, program_argv, program_env) as w:
        nina = {"to": "nina", "amount": 12}
        async with proxy(w, "first") as first:
            pending = await first.call("bank_pay", nina)
            assert prefix(pending) == "PENDING_APPROVAL"
            await first.close_stdin()
            assert await first.wait() == 0
        [approval] = w.pending()
        # Go checks "approve laptop."; here the operator command is this program's own
        # subcommand, spelled `approve -db "<db>" <run> -approval <id>`.
        assert f'approve -db "{w.db}" {approval.run_id} -approval {approval.id}' in first.stderr
        assert approval.run_id.startswith("laptop.")
        await w.approve(approval)
        async with proxy(w, "second") as second:
            collected = await second.call("bank_pay", nina)
            assert text_of(collected) == "paid 12.00 to nina" and not is_error(collected)
        assert w.payments() == 1


# Go: TestProcess_TwoProxiesOnOneSession
async def test_two_proxies_work_together_on_one_session(
        tmp_path: Path, program_argv: list[str], program_env: dict[str, str]) -> None:
    async with (
        world(tmp_path, program_argv, program_env, pay=ALLOW_PAY) as w,
        proxy(w, "a") as a,
        proxy(w, "b") as b,
    ):
        answers: dict[str, Any] = {}

        async def pay(name: str, host: Host, arguments: dict[str, Any]) -> None:
            answers[name] = await host.call("bank_pay", arguments)

        async with anyio.create_task_group() as tg:  # the same slow payment at once
            tg.start_soon(pay, "a", a, SLOW)
            tg.start_soon(pay, "b", b, SLOW)
        texts = sorted(text_of(r) for r in answers.values())
        paid = [t for t in texts if t == "paid 3.00 to sam"]
        others = [t for t in texts if t != "paid 3.00 to sam"]
        assert len(paid) == 1 and len(others) == 1, texts
        assert others[0].split(":", 1)[0] in ("IN_PROGRESS", "DUPLICATE"), others
        assert w.payments() == 1

        async with anyio.create_task_group() as tg:  # different slow payments in parallel
            tg.start_soon(pay, "a", a, {"to": "tia", "amount": 1, "mode": "slow"})
            tg.start_soon(pay, "b", b, {"to": "ula", "amount": 2, "mode": "slow"})
        assert text_of(answers["a"]) == "paid 1.00 to tia"
        assert text_of(answers["b"]) == "paid 2.00 to ula"
        assert w.payments() == 3


# Go: TestProcess_CrashThenApproveRunsItAgainOnce
async def test_after_a_crash_an_approval_runs_the_payment_again_once(
        tmp_path: Path, program_argv: list[str], program_env: dict[str, str]) -> None:
    async with (
        world(tmp_path, program_argv, program_env, pay=ALLOW_PAY, lease_ttl="3s") as w,
        proxy(w, "crashed") as crashed,
        proxy(w, "fresh") as fresh,
    ):
        run = await kill_mid_payment(w, crashed, BLOCK_ROB)
        assert w.run(run.id).status == "RUNNING"
        approval = await crashed_and_interrupted(w, fresh, BLOCK_ROB)
        assert_blocked(await fresh.call("bank_pay", {"to": "uma", "amount": 1}), approval.id)
        read = await fresh.call("bank_balance", {"account": "main"})
        assert text_of(read) == "account main holds 120.00 EUR"
        assert w.payments() == 1

        w.release()
        await w.approve(approval)
        paid = await fresh.call("bank_pay", BLOCK_ROB)
        assert text_of(paid) == "paid 5.00 to rob" and not is_error(paid)
        assert w.payments() == 2
        assert w.events(run.id) == INTERRUPTED_APPROVED_RUN_AGAIN
        dup = await fresh.call("bank_pay", BLOCK_ROB)
        assert prefix(dup) == "DUPLICATE" and is_error(dup)
        assert w.payments() == 2


def assert_blocked(result: Any, approval_id: str) -> None:
    assert prefix(result) == "BLOCKED" and is_error(result), text_of(result)
    assert f"(approval {approval_id})" in text_of(result)


# Go: TestProcess_CrashThenRejectRunsNothingAndUnblocks
async def test_after_a_crash_a_rejection_runs_nothing_and_unblocks_the_tool(
        tmp_path: Path, program_argv: list[str], program_env: dict[str, str]) -> None:
    async with (
        world(tmp_path, program_argv, program_env, pay=ALLOW_PAY, lease_ttl="3s") as w,
        proxy(w, "crashed") as crashed,
        proxy(w, "fresh") as fresh,
    ):
        await kill_mid_payment(w, crashed, BLOCK_ROB)
        approval = await crashed_and_interrupted(w, fresh, BLOCK_ROB)
        await w.reject(approval, "it went through")
        rejected = await fresh.call("bank_pay", BLOCK_ROB)
        assert prefix(rejected) == "REJECTED" and is_error(rejected)
        assert '"it went through"' in text_of(rejected)
        other = await fresh.call("bank_pay", {"to": "uma", "amount": 1})
        assert text_of(other) == "paid 1.00 to uma"
        assert w.payments() == 2


# Go: TestProcess_CrashThenRejectAsksAgainAfterTheWindow
async def test_after_a_crash_and_a_rejection_the_identical_call_asks_again_after_the_window(
        tmp_path: Path, program_argv: list[str], program_env: dict[str, str]) -> None:
    async with world(tmp_path, program_argv, program_env, pay=ALLOW_PAY, lease_ttl="3s",
                     repeat_window="2s") as w, proxy(w, "crashed") as crashed, proxy(w, "fresh") as fresh:
        await kill_mid_payment(w, crashed, BLOCK_ROB)
        first = await crashed_and_interrupted(w, fresh, BLOCK_ROB)
        await w.reject(first, "no")
        assert prefix(await fresh.call("bank_pay", BLOCK_ROB)) == "REJECTED"
        await anyio.sleep(2.5)
        again = await fresh.call("bank_pay", BLOCK_ROB)
        assert prefix(again) == "INTERRUPTED" and not is_error(again), text_of(again)
        [second] = w.pending()
        assert second.kind == "interrupted_side_effect" and second.id != first.id
        assert f"(approval {second.id})" in text_of(again)
        assert w.payments() == 1


# Go: TestProcess_CrashOfAnApprovedPaymentAsksAgain
async def test_a_crash_while_an_approved_payment_runs_asks_again(
        tmp_path: Path, program_argv: list[str], program_env: dict[str, str]) -> None:
    async with world(tmp_path, program_argv, program_env, lease_ttl="3s") as w:
        wes = {"to": "wes", "amount": 9, "mode": "block"}
        async with proxy(w, "crashed") as crashed, proxy(w, "fresh") as fresh:
            assert prefix(await crashed.call("bank_pay", wes)) == "PENDING_APPROVAL"
            [granted] = w.pending()
            await w.approve(granted)
            run = await kill_mid_payment(w, crashed, wes)  # crashed during collection
            assert run.id == granted.run_id
            approval = await crashed_and_interrupted(w, fresh, wes)
            assert json.loads(approval.capability_json)["interrupted"]["step_id"] == granted.step_id
            w.release()
            await w.approve(approval)
            paid = await fresh.call("bank_pay", wes)
            assert text_of(paid) == "paid 9.00 to wes" and not is_error(paid)
            assert w.payments() == 2
            assert w.run(run.id).status == "COMPLETED"


# Go: TestProcess_StdinCloseMidCallFinishesTheStep
async def test_closing_stdin_mid_call_finishes_the_step(
        tmp_path: Path, program_argv: list[str], program_env: dict[str, str]) -> None:
    async with world(tmp_path, program_argv, program_env, pay=ALLOW_PAY) as w:
        async with proxy(w) as host:
            _, answered, box = await host.send_raw("bank_pay", SLOW)
            await w.wait_for("the payment's ledger line", lambda: w.payments() == 1)
            run = w.executing_run()
            await host.close_stdin()
            assert await host.wait() == 0
            assert answered.is_set() and text_of(box["message"]["result"]) == "paid 3.00 to sam"
        events = w.events(run.id)
        assert w.run(run.id).status == "COMPLETED"
        assert "step.interrupted" not in events and events[-1] == "run.finished"
        assert w.payments() == 1


async def test_closing_stdin_during_a_hold_ends_the_hold_and_answers_pending_at_once(
        tmp_path: Path, program_argv: list[str], program_env: dict[str, str]) -> None:
    # Stdin's end is a shutdown like a signal (seed: "accepts no more calls"), and a hold ends
    # when the proxy shuts down (proxy-and-mcp-module §2.6.5): the held call answers PENDING_APPROVAL at once
    # instead of keeping the process alive for the rest of the hold.
    async with world(tmp_path, program_argv, program_env, hold="20s") as w, proxy(w) as host:
        _, answered, box = await host.send_raw("bank_pay", {"to": "vic", "amount": 2})
        await w.wait_for("the approval to be asked", lambda: "waits for an operator" in host.stderr)
        began = time.monotonic()
        await host.close_stdin()
        assert await host.wait() == 0
        assert time.monotonic() - began < 5
        assert answered.is_set() and prefix(box["message"]["result"]) == "PENDING_APPROVAL"
        assert len(w.pending()) == 1 and w.payments() == 0


# ===================================================================== the issue's own


async def test_sigterm_mid_call_finishes_and_records_the_call_and_exits_0(
        tmp_path: Path, program_argv: list[str], program_env: dict[str, str]) -> None:
    async with world(tmp_path, program_argv, program_env, pay=ALLOW_PAY) as w:
        async with proxy(w) as host:
            _, answered, box = await host.send_raw("bank_pay", SLOW)
            await w.wait_for("the payment's ledger line", lambda: w.payments() == 1)
            run = w.executing_run()
            host.process.send_signal(signal.SIGTERM)
            assert await host.wait() == 0
            assert answered.is_set() and text_of(box["message"]["result"]) == "paid 3.00 to sam"
        events = w.events(run.id)
        assert w.run(run.id).status == "COMPLETED"
        assert "step.interrupted" not in events and events[-1] == "run.finished"
        assert w.payments() == 1


async def test_a_lost_response_retried_pays_once_through_the_proxy_and_twice_without_it(
        tmp_path: Path, program_argv: list[str], program_env: dict[str, str]) -> None:
    async with world(tmp_path, program_argv, program_env, pay=ALLOW_PAY) as w, proxy(w) as host:
        # The host sends the payment and never reads its answer, then retries it.
        await host.send_raw("bank_pay", SLOW)
        await w.wait_for("the payment's ledger line", lambda: w.payments() == 1)
        retry = await host.call("bank_pay", SLOW)
        assert prefix(retry) == "IN_PROGRESS", text_of(retry)
        await w.wait_for("the payment's run to finish", lambda: w.runs()[-1].status == "COMPLETED")
        retry = await host.call("bank_pay", SLOW)
        assert prefix(retry) == "DUPLICATE" and "paid 3.00 to sam" in text_of(retry)
        assert w.payments() == 1

    # The same two calls straight against the fake server pay twice.
    direct = tmp_path / "direct-ledger"
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "agentrt_proxy.testing.fakebank"],
        env={**program_env, "PYTHONPATH": str(REPO_ROOT), "FAKE_PAYMENTS_LEDGER": str(direct)})
    with open(tmp_path / "direct.stderr", "w") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as bank:
            await bank.initialize()
            lost = {"to": "sam", "amount": 3}
            await bank.call_tool("pay", lost)  # its answer "lost"
            await bank.call_tool("pay", lost)
    assert count_payments(direct) == 2


async def test_the_hosts_cancellation_does_not_cancel_the_upstream_call(
        tmp_path: Path, program_argv: list[str], program_env: dict[str, str]) -> None:
    async with world(tmp_path, program_argv, program_env, pay=ALLOW_PAY) as w, proxy(w) as host:
        request_id, _, _ = await host.send_raw("bank_pay", BLOCK_ROB)
        await w.wait_for("the payment's ledger line", lambda: w.payments() == 1)
        run = w.executing_run()
        await host.send_notification("notifications/cancelled", {"requestId": request_id, "reason": "gave up"})
        await anyio.sleep(0.5)  # a cancellation passed on would end the blocked payment by now
        assert w.run(run.id).status == "RUNNING"
        w.release()
        await w.wait_for("the payment's run to finish", lambda: w.run(run.id).status != "RUNNING")
        assert w.run(run.id).status == "COMPLETED"
        dup = await host.call("bank_pay", BLOCK_ROB)
        assert prefix(dup) == "DUPLICATE", text_of(dup)
        assert "it succeeded, with this result: paid 5.00 to rob" in text_of(dup)
        assert w.payments() == 1


async def test_the_sdk_client_in_auto_mode_connects_without_a_stall(
        tmp_path: Path, program_argv: list[str], program_env: dict[str, str]) -> None:
    from mcp import Client

    async with world(tmp_path, program_argv, program_env) as w:
        params = StdioServerParameters(command=program_argv[0], args=[*program_argv[1:], "serve", "-config",
                                                                       str(w.config)], env=program_env)
        began = time.monotonic()
        with anyio.fail_after(20):
            async with Client(params, mode="auto") as client:
                connected = time.monotonic() - began
                listed = await client.list_tools()
                read = await client.call_tool("bank_balance", {"account": "main"})
        assert connected < 5, f"connecting took {connected:.1f}s"
        assert "bank_pay" in [t.name for t in listed.tools]
        assert text_of(read) == "account main holds 120.00 EUR"
