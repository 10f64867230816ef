"""The .pyz's cold start to the ``initialize`` answer and its peak RSS over a session (issue 28,
items 4 and 5), with a raw stdio client and nothing else running in the proxy's place.

    python3 bench/start_and_size.py                       # dist/agentrt-proxy.pyz on /usr/bin/python3
    python3 bench/start_and_size.py BEFORE.pyz AFTER.pyz   # two builds, their starts interleaved
    BENCH_PYTHON=/path/to/python3 python3 bench/start_and_size.py

The upstream is ``bench/upstream.py`` (the SDK's ``MCPServer``), run by the interpreter that runs
this script (it needs ``mcp``: the bench venv or the repo's .venv). The .pyz runs on
``BENCH_PYTHON`` (default ``/usr/bin/python3``, which imports nothing from a ``.pth`` at start).

Cold start: ``-rounds`` rounds, each starting every build given once (in an order rotated every
round), with a pause before each start; each writes
``initialize`` at once and times process launch → its answer line, then → the ``tools/list``
answer. Median, p25–p75 and min of each.

Peak RSS: one session as ``bench/run.py``'s (50 warm-up echo calls and 5 pays, ``-calls`` echo,
pay and duplicate pay one at a time, then 3 rounds of 400 echo and 400 pay with 8 in flight);
``VmHWM`` of the proxy process after start-up (``tools/list`` answered) and at the end.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
PYTHON = os.environ.get("BENCH_PYTHON", "/usr/bin/python3")
INIT = (
    b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25",'
    b'"capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}\n'
)
INITIALIZED = b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n'


def write_config(directory: Path, database: str = "runs.db") -> Path:
    server: dict[str, Any] = {
        "name": "up",
        "command": [sys.executable, str(BENCH / "upstream.py")],
        "manifest": "up.manifest.json",
        "rules": {
            "echo": {"side_effect": "read_only", "timeout": "10s"},
            "pay": {"side_effect": "remote_mutation", "outcome": "allow", "timeout": "10s"},
        },
    }
    path = directory / "proxy.json"
    path.write_text(json.dumps({"database": database, "session": "bench", "hold": "0s", "servers": [server]}))
    path.chmod(0o600)
    return path


def vm_mib(pid: int, key: str) -> float:
    with open(f"/proc/{pid}/status", encoding="ascii") as status:
        for line in status:
            if line.startswith(key + ":"):
                return int(line.split()[1]) / 1024
    raise RuntimeError(f"no {key} in /proc/{pid}/status")


def quartiles(values: list[float]) -> str:
    p25, p50, p75 = statistics.quantiles(values, n=4, method="inclusive")
    return f"median {p50:.1f} ms (p25–p75 {p25:.1f}–{p75:.1f}, min {min(values):.1f}, n={len(values)})"


def cold_once(argv: list[str]) -> tuple[float, float]:
    """Process launch → the ``initialize`` answer, and → the ``tools/list`` answer (ms)."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    assert proc.stdin is not None and proc.stdout is not None
    try:
        proc.stdin.write(INIT)
        proc.stdin.flush()
        if json.loads(proc.stdout.readline()).get("id") != 1:
            raise RuntimeError("the first line is not the initialize answer")
        t_init = (time.perf_counter() - t0) * 1000
        proc.stdin.write(INITIALIZED + b'{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{}}\n')
        proc.stdin.flush()
        while json.loads(proc.stdout.readline()).get("id") != 2:
            pass
        return t_init, (time.perf_counter() - t0) * 1000
    finally:
        proc.stdin.close()
        proc.wait(timeout=20)


class Session:
    """A raw host over pipes: requests are written whole, answers matched by id."""

    def __init__(self, argv: list[str]) -> None:
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        self.next_id = 0
        self.tools: dict[str, str] = {}  # short name → the name the proxy lists

    def send(self, method: str, params: dict[str, Any]) -> int:
        assert self.proc.stdin is not None
        self.next_id += 1
        message = {"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params}
        self.proc.stdin.write(json.dumps(message).encode() + b"\n")
        self.proc.stdin.flush()
        return self.next_id

    def answer(self) -> dict[str, Any]:
        assert self.proc.stdout is not None
        while True:
            message: dict[str, Any] = json.loads(self.proc.stdout.readline())
            if "id" in message:
                if "error" in message:
                    raise RuntimeError(f"error answer: {message}")
                return message

    def call(self, tool: str, arguments: dict[str, Any]) -> None:
        self.send("tools/call", {"name": self.tools[tool], "arguments": arguments})
        self.answer()

    def in_flight(self, tool: str, make: Any, total: int, width: int) -> None:
        sent = 0
        while sent < min(width, total):
            self.send("tools/call", {"name": self.tools[tool], "arguments": make(sent)})
            sent += 1
        for _ in range(total):
            self.answer()
            if sent < total:
                self.send("tools/call", {"name": self.tools[tool], "arguments": make(sent)})
                sent += 1

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(timeout=20)


def session_rss(argv: list[str], calls: int) -> tuple[float, float]:
    """``VmHWM`` (MiB) after start-up and after the whole session."""
    nonce = f"{time.time_ns():x}"
    host = Session(argv)

    def stage(name: str) -> None:
        if os.environ.get("BENCH_STAGES"):
            print(
                f"  after {name}: VmHWM {vm_mib(host.proc.pid, 'VmHWM'):.1f}, VmRSS {vm_mib(host.proc.pid, 'VmRSS'):.1f} MiB"
            )

    try:
        assert host.proc.stdin is not None
        host.proc.stdin.write(INIT)
        host.proc.stdin.flush()
        host.next_id = 1
        host.answer()
        host.proc.stdin.write(INITIALIZED)
        host.send("tools/list", {})
        for tool in host.answer()["result"]["tools"]:
            host.tools[tool["name"].rpartition("_")[2]] = tool["name"]
        started = vm_mib(host.proc.pid, "VmHWM")
        for i in range(50):
            host.call("echo", {"text": f"warm {nonce} {i}"})
        for i in range(5):
            host.call("pay", {"to": f"warm-{nonce}-{i}", "cents": 1})
        stage("warm-up")
        for i in range(calls):
            host.call("echo", {"text": f"hello {nonce} {i}"})
        stage("echo")
        for i in range(calls):
            host.call("pay", {"to": f"acct-{nonce}-{i}", "cents": 100 + i})
        stage("pay")
        for _ in range(calls + 1):
            host.call("pay", {"to": f"dup-{nonce}", "cents": 1})
        stage("duplicate")
        for r in range(3):
            host.in_flight("echo", lambda i, r=r: {"text": f"t{nonce}-{r}-{i}"}, 400, 8)
            stage(f"8 in flight echo {r}")
            host.in_flight("pay", lambda i, r=r: {"to": f"tp-{nonce}-{r}-{i}", "cents": 7}, 400, 8)
            stage(f"8 in flight pay {r}")
        return started, vm_mib(host.proc.pid, "VmHWM")
    finally:
        host.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("pyz", nargs="*", default=[str(REPO / "dist" / "agentrt-proxy.pyz")])
    parser.add_argument("-rounds", type=int, default=15)
    parser.add_argument("-calls", type=int, default=500)
    parser.add_argument("-no-session", dest="session", action="store_false")
    parser.add_argument("-db", help="the database (default: a new one; e.g. one build_db.py filled)")
    args = parser.parse_args()
    builds = [Path(p).resolve() for p in args.pyz]
    work = Path(tempfile.mkdtemp(prefix="agentrt-start-"))
    try:
        config = write_config(work, str(Path(args.db).resolve()) if args.db else "runs.db")
        subprocess.run([PYTHON, str(builds[0]), "pin", "-config", str(config)], check=True, capture_output=True)
        samples: dict[Path, tuple[list[float], list[float]]] = {pyz: ([], []) for pyz in builds}
        for r in range(args.rounds):
            # Builds interleaved, in an order rotated every round: the machine's load of the moment
            # falls on each alike.
            for pyz in builds[r % len(builds) :] + builds[: r % len(builds)]:
                time.sleep(0.3)  # the previous start's upstream is still exiting
                t_init, t_list = cold_once([PYTHON, str(pyz), "serve", "-config", str(config)])
                samples[pyz][0].append(t_init)
                samples[pyz][1].append(t_list)
        for pyz in builds:
            print(f"{pyz} ({pyz.stat().st_size:,} bytes) on {PYTHON}")
            print(f"  cold start → initialize: {quartiles(samples[pyz][0])}")
            print(f"  cold start → tools/list: {quartiles(samples[pyz][1])}")
            if args.session:
                started, peak = session_rss([PYTHON, str(pyz), "serve", "-config", str(config)], args.calls)
                print(f"  VmHWM after start-up {started:.1f} MiB; peak over the session {peak:.1f} MiB")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
