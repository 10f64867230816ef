"""Machine instructions per gated call: a figure that does not drift with the machine's pace.

``bench/.venv/bin/python bench/instructions.py BUILD [BUILD ...] [-low 100] [-high 500] [-serve]``

Each BUILD (a .pyz or a source tree) runs ``gate_path.py`` twice under valgrind's cachegrind
(``--cache-sim=no``: it counts instructions only), once with ``-low`` calls and once with
``-high``, and the difference, divided by the calls between them, is what one call costs: the
start-up, the pinning and the imports cancel out. On a shared 2-core VM the CPU time a call
takes moves by ±10 % from one run to the next; this count repeats to within 0.2 %, so a change of
2 % on the call path can be told from noise. It counts the gate's process only (every thread of
it; not the upstream, which ``gate_path.py`` does not call). Needs ``valgrind``; ~40 s a build on
2 cores (the two runs of a build go side by side).

``-serve`` counts the whole proxy instead: the .pyz's ``serve`` under cachegrind (its process
only, not the upstream it starts), driven by the SDK client over pipes as a host would, one
read-only ``echo`` at a time: the wire both ways, the result's mapping and the answer included.
~2 min a build. ``-concurrency N`` (with ``-serve``) keeps N calls in flight instead of one
(the calls then share their COMMITs, as in ``throughput_ab.py``): what a call costs at 8 in
flight, where the figure of one at a time cannot see what group commit shares. ``-chain
passthrough`` or ``-chain floor`` (with ``-serve``) counts the same ``serve`` with its gate taken
out (``passthrough.py``: the wire alone) or replaced by the straight-line record
(``record_proxy.py``: the wire and the seed's record, nothing else). Measurement only.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))
VALGRIND = ["valgrind", "--tool=cachegrind", "--cache-sim=no", "--cachegrind-out-file=/dev/null"]
CHAINS = {"gate": [], "passthrough": [str(BENCH / "passthrough.py")], "floor": [str(BENCH / "record_proxy.py")]}


def instructions(build: str, calls: int) -> int:
    """Every instruction cachegrind counted in one ``gate_path.py`` run of ``calls`` calls."""
    run = subprocess.run(
        [
            *VALGRIND,
            sys.executable,
            str(BENCH / "gate_path.py"),
            build,
            "-calls",
            str(calls),
            "-untimed",
        ],
        capture_output=True,
        text=True,
        cwd=BENCH,
    )
    found = re.search(r"I\s+refs:\s+([\d,]+)", run.stderr)
    if run.returncode != 0 or found is None:
        raise SystemExit(f"{build}: gate_path.py under valgrind failed:\n{run.stderr[-2000:]}")
    return int(found.group(1).replace(",", ""))


def serve_instructions(build: str, calls: int, concurrency: int = 1, chain: str = "gate") -> int:
    """Every instruction cachegrind counted in one ``serve`` process that answered ``calls``
    echo calls (after 20 of warm-up, one at a time; then ``concurrency`` in flight) and then
    saw its stdin close."""
    from contextlib import AsyncExitStack

    import anyio
    import run as bench
    import throughput_ab

    work = bench.WORK / "instructions" / f"{Path(build).stem}-{chain}-{calls}-{concurrency}"
    if work.exists():
        shutil.rmtree(work)
    config = bench.write_config(work, "runs.db")
    subprocess.run([bench.PY, build, "pin", "-config", str(config)], check=True, capture_output=True)
    log = work / "cachegrind.log"
    command = [*VALGRIND, f"--log-file={log}", bench.PY, *CHAINS[chain], build, "serve", "-config", str(config)]

    async def drive() -> None:
        with open(work / "stderr.log", "w") as errlog:
            async with AsyncExitStack() as stack:
                session = await throughput_ab.open_session(stack, "serve", command, errlog)
                for i in range(20):
                    await session.call("echo", {"text": f"warm-up {i}"})

                async def worker(first: int) -> None:
                    for i in range(first, calls, concurrency):
                        await session.call("echo", {"text": f"instructions {i}"})

                async with anyio.create_task_group() as tg:
                    for first in range(concurrency):
                        tg.start_soon(worker, first)

    anyio.run(drive)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:  # valgrind writes its summary as the process exits
        found = re.search(r"I\s+refs:\s+([\d,]+)", log.read_text() if log.exists() else "")
        if found is not None:
            return int(found.group(1).replace(",", ""))
        time.sleep(0.5)
    raise SystemExit(f"{build}: no instruction count in {log}")


def main(argv: list[str]) -> int:
    serve = "-serve" in argv
    argv = [a for a in argv if a != "-serve"]
    from throughput_ab import builds_and_options

    paths, opts = builds_and_options(argv, {"-low": "100", "-high": "500", "-concurrency": "1", "-chain": "gate"})
    builds = [str(path) for path in paths]
    low, high, concurrency = int(opts["-low"]), int(opts["-high"]), int(opts["-concurrency"])
    chain = opts["-chain"]
    if not builds or high <= low or chain not in CHAINS or (chain != "gate" and not serve):
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    for build in builds:
        with ThreadPoolExecutor(2) as pool:
            if serve:
                few, many = pool.map(lambda calls: serve_instructions(build, calls, concurrency, chain), (low, high))
            else:
                few, many = pool.map(lambda calls: instructions(build, calls), (low, high))
        print(f"{build}: {(many - few) / (high - low) / 1e6:.3f} M instructions a call", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
