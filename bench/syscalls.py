"""The system calls one proxy process makes a call at 8 in flight, by call and by what it touches.

``bench/.venv/bin/python bench/syscalls.py PYZ [PYZ ...] [-calls 300] [-concurrency 8] [-tool echo|pay]``

Each .pyz serves the pinned upstream (``upstream.py``) on its own empty database, as in
``throughput_ab.py``; after 50 calls of warm-up, ``strace -f`` follows its process (every thread)
while ``-calls`` calls run with ``-concurrency`` in flight, and the calls it saw are counted per
call, by system call and by the file each descriptor named (the database, its ``-wal`` and ``-shm``,
an SQLite temp file, a pipe, a socket). strace slows the process it follows, so only the counts
mean anything, not the pace. A write to a temp file, or a COMMIT's worth of ``pwrite`` more, shows
here and not in ``instructions.py`` (valgrind counts no kernel work). Measurement only; needs
``strace``.
"""

from __future__ import annotations

import collections
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from contextlib import AsyncExitStack
from pathlib import Path

import anyio
import run as bench
import throughput_ab

LINE = re.compile(r"^\d+\s+(?P<call>[a-z_0-9]+)\((?P<first>[^,)]*)")
FD_CALLS = frozenset({"read", "write", "pread64", "pwrite64", "fdatasync", "fsync", "fcntl", "close",
                      "ftruncate", "fstat", "newfstatat", "lseek", "writev", "readv", "epoll_ctl"})


def kind_of(target: str) -> str:
    """What a descriptor's link names, as a short kind."""
    if "etilqs_" in target:
        return "sqlite temp file"
    for suffix, kind in (("-wal", "database -wal"), ("-shm", "database -shm"), (".db", "database")):
        if target.endswith(suffix) or target.endswith(suffix + " (deleted)"):
            return kind
    if target.startswith("pipe:"):
        return "pipe"
    if target.startswith("socket:"):
        return "socket"
    if target.startswith("anon_inode:"):
        return target.split(":", 1)[1].strip("[]")
    return target


def descriptors(pid: int) -> dict[str, str]:
    found = {}
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            found[fd] = kind_of(os.readlink(f"/proc/{pid}/fd/{fd}"))
        except OSError:
            continue
    return found


def tally(trace: Path, fds: dict[str, str]) -> collections.Counter[tuple[str, str]]:
    counts: collections.Counter[tuple[str, str]] = collections.Counter()
    for line in trace.read_text(errors="replace").splitlines():
        m = LINE.match(line)
        if m is None:
            continue  # a resumed or an exit line
        call, first = m.group("call"), m.group("first").strip()
        target = ""
        if call in FD_CALLS and first.isdigit():
            target = fds.get(first, "sqlite temp file" if call == "pwrite64" else f"fd {first}")
        elif call == "openat" and "etilqs_" in line:
            target = "sqlite temp file"
        counts[(call, target)] += 1
    return counts


async def measure(pyz: Path, calls: int, concurrency: int, tool: str, errlog: object) -> tuple[int, dict]:
    nonce = f"{time.time_ns():x}"
    work = bench.WORK / "syscalls" / pyz.stem
    if work.exists():
        shutil.rmtree(work)
    config = bench.write_config(work, "runs.db")
    subprocess.run([bench.PY, str(pyz), "pin", "-config", str(config)], check=True, capture_output=True)
    args = {
        "echo": lambda r: lambda n, i: {"text": f"sys{nonce}-{n}-{r}-{i}"},
        "pay": lambda r: lambda n, i: {"to": f"sys-{nonce}-{n}-{r}-{i}", "cents": 7},
    }[tool]
    async with AsyncExitStack() as stack:
        chain = await throughput_ab.open_session(stack, pyz.stem, [bench.PY, str(pyz), "serve", "-config",
                                                                    str(config)], errlog)
        assert chain.pid is not None, "the proxy's process was not found"
        await bench.throughput(chain, tool, 50, concurrency, args(-1))
        with tempfile.TemporaryDirectory() as tmp:
            trace = Path(tmp) / "trace.txt"
            tracer = subprocess.Popen(["strace", "-f", "-qq", "-o", str(trace), "-p", str(chain.pid)],
                                      stderr=subprocess.DEVNULL)
            await anyio.sleep(0.5)  # strace attaches to every thread
            await bench.throughput(chain, tool, calls, concurrency, args(0))
            fds = descriptors(chain.pid)
            tracer.send_signal(signal.SIGINT)
            tracer.wait(timeout=30)
            return calls, tally(trace, fds)


async def main_async(builds: list[Path], calls: int, concurrency: int, tool: str) -> int:
    bench.WORK.mkdir(exist_ok=True)
    results = []
    with open(bench.WORK / "syscalls-stderr.log", "a") as errlog:
        for pyz in builds:
            results.append(await measure(pyz, calls, concurrency, tool, errlog))
    keys = sorted({k for _n, counts in results for k in counts}, key=lambda k: -results[0][1].get(k, 0))
    print(f"system calls a `{tool}` call, {concurrency} in flight, {calls} calls under strace")
    print("| call | on | " + " | ".join(str(b) for b in builds) + " |")
    print("| --- | --- | " + " | ".join("---" for _ in builds) + " |")
    for key in keys:
        cells = [f"{counts.get(key, 0) / n:.2f}" for n, counts in results]
        if all(c == "0.00" for c in cells):
            continue
        print(f"| {key[0]} | {key[1] or '-'} | " + " | ".join(cells) + " |")
    totals = [f"{sum(counts.values()) / n:.1f}" for n, counts in results]
    print("| all | | " + " | ".join(totals) + " |")
    return 0


def main(argv: list[str]) -> int:
    builds, opts = throughput_ab.builds_and_options(argv, {"-calls": "300", "-concurrency": "8", "-tool": "echo"})
    if not builds or shutil.which("strace") is None:
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    return anyio.run(main_async, builds, int(opts["-calls"]), int(opts["-concurrency"]), opts["-tool"])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
