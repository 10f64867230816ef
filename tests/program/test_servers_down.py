"""Servers that die and servers down at start-up, through the real program (issue 13, items 4, 5).

The proxy is ``serve -config`` as a host runs it (the harness of ``test_serve_process``), with the
real backoff (the first start again after 1 s). A server that cannot start is the fake bank behind
a gate file (``fixtures/gated_server.py``). Effects are counted in the fake banks' ledgers; the
operator's lines are read from the proxy's standard error.
"""

from __future__ import annotations

import json
import os
import signal
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from agentrt_proxy.testing.fakebank import count_payments
from tests.conftest import REPO_ROOT, run_program
from tests.harness import is_error, text_of
from tests.program.test_serve_process import ALLOW_PAY, World, proxy, world

pytestmark = [pytest.mark.program, pytest.mark.anyio, pytest.mark.timeout(90)]

GATED = str(REPO_ROOT / "tests" / "fixtures" / "gated_server.py")
LEE = {"to": "lee", "amount": 1}
ANN = {"to": "ann", "amount": 2}


def server_pids(ledger: Path) -> list[int]:
    """The fake banks running with this ledger (found by their environment, as kill_orphans does)."""
    marker = f"FAKE_PAYMENTS_LEDGER={ledger}".encode()
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/environ", "rb") as f:
                if marker in f.read().split(b"\0"):
                    pids.append(int(entry))
        except OSError:
            continue
    return pids


def lines_about(stderr: str, server: str) -> list[str]:
    return [line for line in stderr.splitlines() if f'server "{server}"' in line]


def not_sent(result: Any) -> bool:
    return is_error(result) and ": nothing was sent to the server: " in text_of(result)


def two_servers(directory: Path) -> Path:
    """``bank`` (the fake bank) and ``shop`` (the fake bank behind ``shop.gate``), both pinned."""
    rules = {
        "balance": {"side_effect": "read_only", "timeout": "5s"},
        "pay": {"side_effect": "remote_mutation", "timeout": "20s", "outcome": "allow"},
        "refund": {"side_effect": "destructive", "timeout": "5s"},
    }
    env = [f"PYTHONPATH={REPO_ROOT}"]
    servers = [
        {
            "name": "bank",
            "command": [sys.executable, "-m", "agentrt_proxy.testing.fakebank"],
            "env": [*env, f"FAKE_PAYMENTS_LEDGER={directory / 'ledger'}"],
            "manifest": "bank.manifest.json",
            "rules": rules,
        },
        {
            "name": "shop",
            "command": [sys.executable, GATED],
            "env": [*env, f"FAKE_PAYMENTS_LEDGER={directory / 'shop-ledger'}", f"GATE_FILE={directory / 'shop.gate'}"],
            "manifest": "shop.manifest.json",
            "rules": rules,
        },
    ]
    path = directory / "proxy.json"
    document = {"database": "proxy.db", "session": "laptop", "hold": "0s", "servers": servers}
    path.write_text(json.dumps(document, indent=2))
    path.chmod(0o600)
    (directory / "shop.gate").write_text("")
    pinned = run_program(["pin", "-config", str(path)], timeout=30)
    assert pinned.returncode == 0, pinned.stderr
    (directory / "shop.gate").unlink()  # from now on the shop cannot start
    return path


async def test_a_killed_server_is_started_again_and_the_payment_that_sent_nothing_then_pays_once(
    tmp_path: Path, program_argv: list[str], program_env: dict[str, str]
) -> None:
    async with world(tmp_path, program_argv, program_env, pay=ALLOW_PAY) as w, proxy(w) as host:
        assert text_of(await host.call("bank_pay", LEE)) == "paid 1.00 to lee"
        [pid] = server_pids(w.ledger)
        os.kill(pid, signal.SIGKILL)
        await w.wait_for("the line saying it is down", lambda: 'server "bank" is down' in host.stderr)
        result = await host.call("bank_pay", ANN)  # within the first second of the backoff
        assert not_sent(result) and 'server "bank" is down' in text_of(result), text_of(result)
        assert w.payments() == 1 and w.pending() == []

        await w.wait_for("the restart", lambda: "started again" in host.stderr)
        assert server_pids(w.ledger) != [pid]
        paid = await host.call("bank_pay", ANN)
        assert text_of(paid) == "paid 2.00 to ann" and not is_error(paid)
        assert w.payments() == 2 and w.approvals() == []
        assert lines_about(host.stderr, "bank") == [
            'agentrt-proxy: server "bank" is down: it was killed by signal 9 (SIGKILL); its tools answer that '
            "nothing was sent; starting it again in 1s",
            'agentrt-proxy: server "bank" started again (try 1); its pin is checked as at start-up',
        ]


def test_check_exits_non_zero_naming_the_server_that_is_down(tmp_path: Path) -> None:
    config = two_servers(tmp_path)
    done = run_program(["check", "-config", str(config)], timeout=30)
    assert done.returncode == 1
    [line] = done.stderr.splitlines()
    assert line.startswith('agentrt-proxy: error: server "shop" is down: mcp: server "shop": connect: ')
    assert "the gate is closed" in line  # the server's own last words
    assert "bank: registered pay as bank_pay (remote_mutation)" in done.stdout.splitlines()

    (tmp_path / "shop.gate").write_text("")
    done = run_program(["check", "-config", str(config)], timeout=30)
    assert done.returncode == 0, done.stderr
    assert "shop: registered pay as shop_pay (remote_mutation)" in done.stdout.splitlines()


async def test_with_one_of_two_servers_down_at_start_up_the_other_serves_and_the_down_one_is_picked_up(
    tmp_path: Path, program_argv: list[str], program_env: dict[str, str]
) -> None:
    config = two_servers(tmp_path)
    w = World(tmp_path, config, program_argv, program_env)
    try:
        async with proxy(w) as host:
            listed = {tool.name for tool in (await host.client.list_tools()).tools}
            assert {"bank_pay", "shop_pay", "shop_balance"} <= listed
            [down] = lines_about(host.stderr, "shop")
            assert down.startswith('agentrt-proxy: server "shop" is down at start-up: mcp: server "shop": connect: ')
            assert "its 3 pinned tool(s) are offered from its manifest" in down

            assert text_of(await host.call("bank_pay", LEE)) == "paid 1.00 to lee"
            assert not_sent(await host.call("shop_pay", ANN))
            assert w.payments() == 1 and count_payments(tmp_path / "shop-ledger") == 0

            (tmp_path / "shop.gate").write_text("")
            await w.wait_for("the shop up", lambda: 'server "shop" is up' in host.stderr, timeout=20)
            with anyio.fail_after(10):
                paid = await host.call("shop_pay", ANN)
            assert text_of(paid) == "paid 2.00 to ann"
            assert count_payments(tmp_path / "shop-ledger") == 1 and w.payments() == 1 and w.pending() == []
            assert len(lines_about(host.stderr, "shop")) == 2  # down at start-up, then up
    finally:
        for host in w.hosts:
            host.kill()
        w.kill_orphans()


def gated_shop(directory: Path) -> Path:
    """Only ``shop`` (the fake bank behind ``shop.gate``), its payments asking an operator; pinned
    while the gate was open, then down (the gate removed) until a test opens it again."""
    rules = {
        "balance": {"side_effect": "read_only", "timeout": "5s"},
        "pay": {"side_effect": "remote_mutation", "timeout": "20s", "amount_field": "amount"},
        "refund": {"side_effect": "destructive", "timeout": "5s"},
    }
    server = {
        "name": "shop",
        "command": [sys.executable, GATED],
        "env": [
            f"PYTHONPATH={REPO_ROOT}",
            f"FAKE_PAYMENTS_LEDGER={directory / 'ledger'}",
            f"GATE_FILE={directory / 'shop.gate'}",
        ],
        "manifest": "shop.manifest.json",
        "rules": rules,
    }
    path = directory / "proxy.json"
    budgets = [{"name": "daily", "tools": ["shop_pay"], "limit": 100, "window": "24h"}]
    path.write_text(
        json.dumps({"database": "proxy.db", "session": "laptop", "hold": "0s", "budgets": budgets, "servers": [server]})
    )
    path.chmod(0o600)
    (directory / "shop.gate").write_text("")
    pinned = run_program(["pin", "-config", str(path)], timeout=30)
    assert pinned.returncode == 0, pinned.stderr
    (directory / "shop.gate").unlink()
    return path


async def test_an_approved_payment_to_a_server_that_was_down_pays_once_when_it_is_back_without_a_second_approval(
    tmp_path: Path, program_argv: list[str], program_env: dict[str, str]
) -> None:
    w = World(tmp_path, gated_shop(tmp_path), program_argv, program_env)
    try:
        async with proxy(w) as host:
            waiting = await host.call("shop_pay", ANN)
            assert text_of(waiting).startswith("PENDING_APPROVAL"), text_of(waiting)
            [approval] = w.pending()
            await w.approve(approval)

            sent_nothing = await host.call("shop_pay", ANN)  # the server is still down
            assert not_sent(sent_nothing), text_of(sent_nothing)
            assert f"(approval {approval.id}) still stands until " in text_of(sent_nothing)
            assert w.payments() == 0
            assert w.run(approval.run_id).status == "WAITING_FOR_APPROVAL"
            assert [a.status for a in w.approvals()] == ["approved"]

            (tmp_path / "shop.gate").write_text("")
            await w.wait_for("the shop up", lambda: 'server "shop" is up' in host.stderr, timeout=20)
            paid = await host.call("shop_pay", ANN)
            assert text_of(paid) == "paid 2.00 to ann" and not is_error(paid)
            assert w.payments() == 1
            assert [(a.id, a.status) for a in w.approvals()] == [(approval.id, "approved")]  # asked once, used once
            assert w.run(approval.run_id).status == "COMPLETED"
            with w.store() as store:  # the budget counts the payment once: reserved again, then spent
                assert [(h.amount, h.state) for h in store.holds.of_run(approval.run_id)] == [("2", "spent")]
            again = await host.call("shop_pay", ANN)
            assert text_of(again).startswith("DUPLICATE") and w.payments() == 1
        verified = run_program(["verify", "-db", w.db], timeout=30)
        assert verified.returncode == 0, (verified.stdout, verified.stderr)
    finally:
        for host in w.hosts:
            host.kill()
        w.kill_orphans()
