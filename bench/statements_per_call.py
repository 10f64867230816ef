"""Every SQL statement each call of a fixed set of scenarios makes, to compare two versions.

``python bench/statements_per_call.py OUT.json [-compare BEFORE.json]`` (from the repository
root, with the test requirements installed): drives the in-process proxy of
``tests/harness.py`` (the fake bank upstream, the SDK client as host) through 38 calls:
allowed reads and payments, DUPLICATE, denied, invalid, unrecorded, pending, the cap,
collected, rejected, expired, timeouts, re-runs, BLOCKED and asking again. Every statement
any store connection runs is traced; OUT.json gets each call's answer and statements, and
one line per call is printed. With ``-compare``, each call's count is shown beside the
earlier one's and any call that makes more statements is named (exit 1). Counts are exact;
the statements' literals (ids, times) differ from run to run. Measurement only.
"""

from __future__ import annotations

import json
import re
import sys
import tempfile
from pathlib import Path
from typing import Any

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from agentrt_proxy.store import _store as store_module
from tests.harness import DEFAULT_RULES, Harness, proxy_harness, text_of

LOG: list[str] = []
_connect = store_module._connect


def _traced(path: str, readonly: bool, create: bool = True) -> Any:
    conn = _connect(path, readonly, create)
    conn.set_trace_callback(lambda statement: LOG.append(re.sub(r"\s+", " ", statement.strip())[:80]))
    return conn


store_module._connect = _traced  # type: ignore[assignment]

ALLOW = {**DEFAULT_RULES, "pay": {"side_effect": "remote_mutation", "timeout": "10s", "outcome": "allow"}}
TIMEOUT_PAY = {**DEFAULT_RULES, "pay": {"side_effect": "remote_mutation", "timeout": "300ms", "outcome": "allow"}}
KIM = {"to": "kim", "amount": 7, "mode": "block"}
LEE = {"to": "lee", "amount": 1}
CALLS: dict[str, dict[str, Any]] = {}


async def call(h: Harness, label: str, tool: str, args: dict[str, Any]) -> None:
    LOG.clear()
    result = await h.call(tool, args)
    CALLS[label] = {"answer": text_of(result)[:60], "count": len(LOG), "statements": list(LOG)}


async def scenarios(directory: Path) -> None:
    (directory / "a").mkdir()
    async with proxy_harness(directory / "a", rules=ALLOW, max_pending=2, approval_ttl="1h") as h:
        await call(h, "a01 read", "bank_balance", {"account": "A-1"})
        await call(h, "a02 read again", "bank_balance", {"account": "A-1"})
        await call(h, "a03 payment allowed", "bank_pay", {"to": "bob", "amount": 1})
        await call(h, "a04 payment duplicate", "bank_pay", {"to": "bob", "amount": 1})
        await call(h, "a05 payment declined", "bank_pay", {"to": "jo", "amount": 1, "mode": "error"})
        await call(h, "a06 declined duplicate", "bank_pay", {"to": "jo", "amount": 1, "mode": "error"})
        await call(h, "a07 refund denied", "bank_refund", {"payment": "p-1"})
        await call(h, "a08 refund denied again", "bank_refund", {"payment": "p-1"})
        await call(h, "a09 invalid", "bank_balance", {"acount": "A-1"})
        await call(h, "a10 unrecorded", "bank_pay", {"to": "max", "amount": 5, "mode": "deep"})
        await call(h, "a11 unrecorded duplicate", "bank_pay", {"to": "max", "amount": 5, "mode": "deep"})
        h.clock.advance(11 * 60)
        await call(h, "a12 payment after the window", "bank_pay", {"to": "bob", "amount": 1})
    (directory / "b").mkdir()
    async with proxy_harness(directory / "b", max_pending=2, approval_ttl="1h") as h:
        await call(h, "b01 pending", "bank_pay", {"to": "ann", "amount": 1})
        await call(h, "b02 pending again", "bank_pay", {"to": "ann", "amount": 1})
        await call(h, "b03 another pending", "bank_pay", {"to": "ben", "amount": 2})
        await call(h, "b04 the cap", "bank_pay", {"to": "cat", "amount": 3})
        await call(h, "b05 a read at the cap", "bank_balance", {"account": "A-1"})
        h.approve(h.pending()[0].id)
        await call(h, "b06 collected", "bank_pay", {"to": "ann", "amount": 1})
        await call(h, "b07 duplicate after collecting", "bank_pay", {"to": "ann", "amount": 1})
        h.reject(h.pending()[0].id, "no")
        await call(h, "b08 rejected", "bank_pay", {"to": "ben", "amount": 2})
        await call(h, "b09 a new pending", "bank_pay", {"to": "dan", "amount": 4})
        h.clock.advance(2 * 3600)
        await call(h, "b10 expired", "bank_pay", {"to": "dan", "amount": 4})
        await call(h, "b11 expired again", "bank_pay", {"to": "dan", "amount": 4})
        await call(h, "b12 rejected, after the window", "bank_pay", {"to": "ben", "amount": 2})
        await call(h, "b13 the status tool", "gate_status", {})
    (directory / "c").mkdir()
    async with proxy_harness(directory / "c", rules=TIMEOUT_PAY, approval_ttl="1m") as h:
        await call(h, "c01 timed out", "bank_pay", KIM)
        await call(h, "c02 timed out, again", "bank_pay", KIM)
        await call(h, "c03 blocked", "bank_pay", LEE)
        h.clock.advance(120)
        await call(h, "c04 blocked, asked again", "bank_pay", LEE)
        await call(h, "c05 the identical call", "bank_pay", KIM)
        h.clock.advance(120)
        await call(h, "c06 the identical call, expired", "bank_pay", KIM)
        (h.directory / "ledger.release").write_text("")
        h.approve(h.pending()[0].id)
        await call(h, "c07 the re-run collected", "bank_pay", KIM)
        await call(h, "c08 another payment", "bank_pay", LEE)
    (directory / "e").mkdir()
    async with proxy_harness(directory / "e", rules=TIMEOUT_PAY) as h:
        await call(h, "e01 timed out", "bank_pay", KIM)
        for i in range(2):
            h.approve(h.pending()[0].id)
            await call(h, f"e0{i + 2} the re-run timed out", "bank_pay", KIM)
        await call(h, "e04 blocked after the step limit", "bank_pay", LEE)
        h.reject(h.pending()[0].id, "enough")
        await call(h, "e05 another payment after the rejection", "bank_pay", LEE)


def main(argv: list[str]) -> int:
    out = Path(argv[0])
    before = json.loads(Path(argv[argv.index("-compare") + 1]).read_text()) if "-compare" in argv else None
    with tempfile.TemporaryDirectory(prefix="statements-") as scratch:
        anyio.run(scenarios, Path(scratch))
    out.write_text(json.dumps(CALLS, indent=1))
    grew = []
    for label, seen in CALLS.items():
        line = f"{label:42s} {seen['count']:3d}"
        if before is not None and label in before:
            earlier = before[label]["count"]
            line += f"  (was {earlier:3d})"
            if seen["count"] > earlier:
                grew.append(label)
        print(f"{line}  {seen['answer'][:40]}")
    if grew:
        print("more statements than before: " + ", ".join(grew))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
