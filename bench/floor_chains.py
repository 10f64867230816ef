"""Where a gated proxy in Python can get to: the gate beside the same wire with nothing but the
seed's record (``record_proxy.py``), in one run with direct, ``passthrough`` and fastmcp.

``bench/.venv/bin/python bench/floor_chains.py [PYZ] [-calls 500] [-tput-calls 400] [-rounds 3]``
(PYZ: ``bench/.work/agentrt-proxy.pyz`` unless given). Five sessions, each with the SDK client:
direct, ``passthrough`` (the wire alone), ``floor`` (the wire and the straight-line record, two
durable commits a call), ``agentrt`` (the .pyz as it is) and the fastmcp proxy. Then ``echo``
one call at a time, interleaved call by call as ``run.py`` does (50 warm-up calls first), and
``echo`` with 8 calls in flight, rounds rotated across the sessions, with the CPU each process
spent a call (``cpu.py``: the proxy's, and the client's, the proxy's and the upstream's together)
and the cores the machine kept busy. Prints each chain's added p50 over direct and its share of fastmcp's
added p50, and its calls per second and share of direct's; the floor's rows are verified at the
end (``Store.verify``), or it exits 1.

Read ``floor``'s rows as a bound: what any gate that writes the seed's record from Python on this
machine adds at the least (it checks nothing, and at 8 in flight commits each call alone where the
gate groups them, so its throughput row is a little below what such a gate could reach).
"""

from __future__ import annotations

import shutil
import statistics
import subprocess
import sys
import time
from contextlib import AsyncExitStack
from pathlib import Path

import anyio
import cpu
import run as bench
import throughput_ab


def commands(pyz: Path) -> list[tuple[str, list[str]]]:
    work = bench.WORK / "floor-chains"
    if work.exists():
        shutil.rmtree(work)
    out: list[tuple[str, list[str]]] = [("direct", [bench.VENV_PY, str(bench.BENCH / "upstream.py")])]
    for name, wrapper in (("passthrough", "passthrough.py"), ("floor", "record_proxy.py"), ("agentrt", None)):
        config = bench.write_config(work / name, "runs.db")
        subprocess.run([bench.PY, str(pyz), "pin", "-config", str(config)], check=True, capture_output=True)
        head = [bench.PY, str(bench.BENCH / wrapper)] if wrapper else [bench.PY]
        out.append((name, [*head, str(pyz), "serve", "-config", str(config)]))
    out.append(("fastmcp", [bench.VENV_PY, str(bench.BENCH / "fastmcp_proxy.py"), bench.VENV_PY, str(bench.BENCH / "upstream.py")]))
    return out


async def measure(pyz: Path, calls: int, tput_calls: int, rounds: int) -> dict[str, dict[str, float]]:
    nonce = f"{time.time_ns():x}"
    figures: dict[str, dict[str, float]] = {}
    bench.WORK.mkdir(exist_ok=True)
    with open(bench.WORK / "floor-chains-stderr.log", "a") as errlog:
        async with AsyncExitStack() as stack:
            chains = [await throughput_ab.open_session(stack, n, cmd, errlog) for n, cmd in commands(pyz)]
            await bench.interleaved(chains, 50, lambda c, i: {"text": f"warm {nonce} {i}"}, "echo")
            lat = await bench.interleaved(chains, calls, lambda c, i: {"text": f"floor {nonce} {i}"}, "echo")
            rates: dict[str, list[float]] = {}
            spent: dict[str, list[cpu.Spent]] = {}
            for r in range(rounds):
                k = r % len(chains)
                for c in chains[k:] + chains[:k]:
                    rate, used = await bench.throughput(
                        c, "echo", tput_calls, 8, lambda n, i, r=r: {"text": f"t{nonce}-{n}-{r}-{i}"}
                    )
                    rates.setdefault(c.name, []).append(rate)
                    spent.setdefault(c.name, []).append(used)
    for c in chains:
        figures[c.name] = {
            "p50": bench.pct(lat[c.name], 50),
            "rate": statistics.median(rates[c.name]),
            "cpu_ms": statistics.median(s.head_ms for s in spent[c.name]),
            "all_ms": statistics.median(s.total_ms for s in spent[c.name]),
            "cores": statistics.median(s.machine_cores for s in spent[c.name]),
        }
    return figures


def verified(pyz: Path) -> bool:
    sys.path.insert(0, str(pyz))
    from agentrt_proxy.store import Store

    store = Store.open(str(bench.WORK / "floor-chains" / "floor" / "floor.db"))
    try:
        report = store.verify()
    finally:
        store.close()
    return report.brk is None and report.state is not None and report.state.total == 0


def main(argv: list[str]) -> int:
    builds, opts = throughput_ab.builds_and_options(argv, {"-calls": "500", "-tput-calls": "400", "-rounds": "3"})
    pyz = builds[0] if builds else bench.WORK / "agentrt-proxy.pyz"
    f = anyio.run(measure, pyz, int(opts["-calls"]), int(opts["-tput-calls"]), int(opts["-rounds"]))
    direct, fastmcp = f["direct"], f["fastmcp"]
    added_fastmcp = fastmcp["p50"] - direct["p50"]
    print(f"echo: {opts['-calls']} calls one at a time, interleaved; {opts['-rounds']} rounds of {opts['-tput-calls']} at 8 in flight")
    print(
        "| chain | p50 ms | added p50 | / fastmcp's added | calls/s, 8 in flight | / direct "
        "| the proxy's CPU ms a call | all three's | cores busy |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for name, v in f.items():
        added = v["p50"] - direct["p50"]
        share = "" if name == "direct" else f"{added / added_fastmcp:.2f}×"
        print(
            f"| {name} | {v['p50']:.2f} | {'' if name == 'direct' else f'+{added:.2f}'} | {share} | "
            f"{v['rate']:.0f} | {v['rate'] / direct['rate']:.2f}× | {v['cpu_ms']:.2f} | {v['all_ms']:.2f} | {v['cores']:.2f} |"
        )
    if not verified(pyz):
        print("the floor chain's rows do not verify", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
