"""A huge host message must not starve the leases of the calls executing meanwhile (issue 14,
item 4; issue 22, item 5). Proxy A executes a payment that waits upstream; its host sends huge
lines; proxy B, on the same database and session, keeps asking for the identical payment. B must
hear IN_PROGRESS throughout: A's lease is renewed (on a thread of its own) while A works on the
huge lines, so B never takes the run over (no ``lease.taken_over``, no ``step.interrupted``), the
first host gets the paid result, and the ledger holds exactly one payment.

The shapes: the largest call the proxy still decodes and records (just under 500,000 values),
and lines past that weight, which are refused undecoded (``-32600`` naming the limit): 12.6 MB of
4.2 million ``{}`` (the issue's attack), 6 MB nested 3 million deep, 1 million keys. A lease_ttl
of 3 s makes the old starvation certain: the 4.2 million ``{}`` alone held the old proxy longer.
"""

from __future__ import annotations

import time
from pathlib import Path

import anyio
import pytest

from tests.harness import text_of
from tests.program.test_serve_process import Host, proxy, world

pytestmark = [pytest.mark.program, pytest.mark.anyio, pytest.mark.timeout(180)]

WAITING_PAYMENT = {"to": "rob", "amount": 5, "mode": "block"}
UNDER_THE_LIMIT = '{"to":"x","amount":[' + ",".join(["0"] * 490_000) + "]}"  # decoded, recorded INVALID
EMPTY_OBJECTS = '{"to":"x","amount":[' + ",".join(["{}"] * 4_200_000) + "]}"  # 12.6 MB
DEEP = "[" * 3_000_000 + "]" * 3_000_000
MANY_KEYS = "{" + ",".join(f'"k{i}":0' for i in range(1_000_000)) + "}"
SHAPES = {
    "under the limit": UNDER_THE_LIMIT,
    "4.2 M empty objects": EMPTY_OBJECTS,
    "deep nesting": DEEP,
    "many keys": MANY_KEYS,
}
ROUNDS = 3  # huge lines, one after another: their work together outlasts the lease


async def send_line(host: Host, arguments: str) -> tuple[anyio.Event, dict[str, object]]:
    """A ``tools/call`` of ``arguments`` (JSON text) as one line, answered to a raw- id."""
    request_id = f"raw-{next(host._ids)}"
    done = anyio.Event()
    box: dict[str, object] = {}
    host._raw[request_id] = (done, box)
    line = (
        '{"jsonrpc":"2.0","id":"' + request_id + '","method":"tools/call","params":{"name":"bank_pay",'
        '"arguments":' + arguments + "}}\n"
    )
    await host.process.stdin.send(line.encode())  # type: ignore[union-attr]
    return done, box


@pytest.mark.parametrize("shape", list(SHAPES))
async def test_a_huge_host_message_does_not_let_another_proxy_take_over_a_running_payment(
    tmp_path: Path, program_argv: list[str], program_env: dict[str, str], shape: str
) -> None:
    pay = {"outcome": "allow", "timeout": "90s"}
    async with (
        world(tmp_path, program_argv, program_env, pay=pay, lease_ttl="3s") as w,
        proxy(w, "a") as a,
        proxy(w, "b") as b,
    ):
        _, paid, box = await a.send_raw("bank_pay", WAITING_PAYMENT)
        await w.wait_for("the payment's ledger line", lambda: w.payments() == 1)
        answered = [await send_line(a, SHAPES[shape]) for _ in range(ROUNDS)]
        seen = []
        started = time.monotonic()
        while time.monotonic() - started < 8 or not all(done.is_set() for done, _ in answered):
            seen.append(text_of(await b.call("bank_pay", WAITING_PAYMENT)).split(":", 1)[0])
            await anyio.sleep(0.5)
            if time.monotonic() - started > 90:
                break
        assert all(done.is_set() for done, _ in answered)
        if shape != "under the limit":  # refused undecoded, by the request's own id
            assert {reply["message"]["error"]["code"] for _, reply in answered} == {-32600}  # type: ignore[index]
        assert set(seen) == {"IN_PROGRESS"}, seen
        w.release()
        with anyio.fail_after(30):
            await paid.wait()
        assert box["message"]["result"]["content"][0]["text"] == "paid 5.00 to rob"
        assert w.payments() == 1
        events = [e for r in w.runs() for e in w.events(r.id)]
        assert "lease.taken_over" not in events and "step.interrupted" not in events
        again = await b.call("bank_pay", WAITING_PAYMENT)
        assert text_of(again).startswith("DUPLICATE: "), text_of(again)
