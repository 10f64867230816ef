"""Builds of the proxy side by side at 8 calls in flight, against the upstream served directly.

``bench/.venv/bin/python bench/throughput_ab.py PYZ [PYZ ...] [-rounds 6] [-calls 400] [-concurrency 8]``

Each .pyz gets its own empty database and serves the same pinned upstream (``upstream.py``); one
more session talks to the upstream directly. Every round runs ``-calls`` read-only ``echo`` and
``-calls`` mutating ``pay`` calls on each session in turn (the order rotated every round, so the
machine's pace of the moment falls on all of them alike), then prints, per build, the median over
the rounds of its calls per second, that as a share of direct's, and the CPU its process spent
per call (``cpu.py``). What ``run.py``'s throughput rows measure, for comparing a change to the
call path with what it replaces before running the whole benchmark. Measurement only.
"""

from __future__ import annotations

import shutil
import statistics
import subprocess
import sys
import time
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import anyio
import cpu
import run as bench
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

KINDS = ("echo", "pay")


async def open_session(stack: AsyncExitStack, name: str, cmd: list[str], errlog: Any) -> bench.Chain:
    before = cpu.children_now()
    params = StdioServerParameters(command=cmd[0], args=cmd[1:])
    read, write = await stack.enter_async_context(stdio_client(params, errlog=errlog))
    spawned = sorted(cpu.children_now() - before)
    session = await stack.enter_async_context(ClientSession(read, write))
    await session.initialize()
    tools = {}
    for t in (await session.list_tools()).tools:
        for short in KINDS:
            if t.name == short or t.name.endswith("_" + short):
                tools[short] = t.name
    return bench.Chain(name, session, tools, spawned[0] if len(spawned) == 1 else None)


def configs(builds: list[Path]) -> list[tuple[str, list[str]]]:
    """(name, command) of each session: direct first, then each build on a fresh database."""
    work = bench.WORK / "ab"
    if work.exists():
        shutil.rmtree(work)
    out = [("direct", [bench.VENV_PY, str(bench.BENCH / "upstream.py")])]
    for i, pyz in enumerate(builds):
        config = bench.write_config(work / f"b{i}", "runs.db")
        subprocess.run([bench.PY, str(pyz), "pin", "-config", str(config)], check=True, capture_output=True)
        out.append((f"b{i}", [bench.PY, str(pyz), "serve", "-config", str(config)]))
    return out


async def main_async(builds: list[Path], rounds: int, calls: int, concurrency: int) -> int:
    nonce = f"{time.time_ns():x}"
    rates: dict[str, dict[str, list[float]]] = {k: {} for k in KINDS}
    spent: dict[str, dict[str, list[float]]] = {k: {} for k in KINDS}
    bench.WORK.mkdir(exist_ok=True)
    with open(bench.WORK / "ab-stderr.log", "a") as errlog:
        async with AsyncExitStack() as stack:
            chains = [await open_session(stack, name, cmd, errlog) for name, cmd in configs(builds)]
            arguments = {
                "echo": lambda r: lambda n, i: {"text": f"ab{nonce}-{n}-{r}-{i}"},
                "pay": lambda r: lambda n, i: {"to": f"ab-{nonce}-{n}-{r}-{i}", "cents": 7},
            }
            for kind in KINDS:  # warm-up, not counted
                for c in chains:
                    await bench.throughput(c, kind, 50, concurrency, arguments[kind](-1))
            for r in range(rounds):
                k = r % len(chains)
                for c in chains[k:] + chains[:k]:
                    for kind in KINDS:
                        rate, used = await bench.throughput(c, kind, calls, concurrency, arguments[kind](r))
                        rates[kind].setdefault(c.name, []).append(rate)
                        spent[kind].setdefault(c.name, []).append(used.head_ms)
    names = ["direct"] + [f"b{i}" for i in range(len(builds))]
    print(f"{rounds} rounds of {calls} calls, {concurrency} in flight; medians")
    print("| session | build | echo calls/s | vs direct | CPU ms/call | pay calls/s | vs direct | CPU ms/call |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for i, name in enumerate(names):
        label = "the upstream" if name == "direct" else str(builds[i - 1])
        cells = []
        for kind in KINDS:
            rate = statistics.median(rates[kind][name])
            direct = statistics.median(rates[kind]["direct"])
            cells += [f"{rate:.0f}", f"{rate / direct:.2f}×", f"{statistics.median(spent[kind][name]):.2f}"]
        print(f"| {name} | {label} | " + " | ".join(cells) + " |")
    return 0


def builds_and_options(argv: list[str], defaults: dict[str, str]) -> tuple[list[Path], dict[str, str]]:
    """The builds named (resolved) and the options given (``-name value``), over ``defaults``."""
    opts = dict(defaults)
    builds: list[Path] = []
    it = iter(argv)
    for arg in it:
        if arg in opts:
            opts[arg] = next(it)
        else:
            builds.append(Path(arg).resolve())
    return builds, opts


def main(argv: list[str]) -> int:
    builds, opts = builds_and_options(argv, {"-rounds": "6", "-calls": "400", "-concurrency": "8"})
    if not builds:
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    return anyio.run(main_async, builds, int(opts["-rounds"]), int(opts["-calls"]), int(opts["-concurrency"]))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
