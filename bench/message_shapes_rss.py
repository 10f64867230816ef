"""The proxy's peak RSS and answer time for one huge host line of each hostile shape (issue 22,
item 5): 15 MB of 5 million ``{}``, 12.6 MB of 4.2 million ``{}``, 6 MB nested 3 million deep,
1 million keys, 4 million empty strings, a 15 MB text, and the largest call still decoded (just
under 500,000 values).

    python3 bench/message_shapes_rss.py                     # the source tree
    BENCH_TREE=/path/to/older/checkout python3 bench/message_shapes_rss.py   # before

Each shape gets a fresh ``agentrt-proxy serve`` (after ``pin``) in front of
tests/fixtures/hostile_server.py, is sent as one ``tools/call`` of ``calm_echo`` (read-only),
and the proxy's ``VmHWM`` (Linux) is read after its answer; then ``ping`` shows it still serves.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from oversize_rss import REPO, configuration, vm_hwm_kb

SHAPES = {
    "5 M {} (15 MB)": '{"a":[' + ",".join(["{}"] * 5_000_000) + "]}",
    "4.2 M {} (12.6 MB)": '{"a":[' + ",".join(["{}"] * 4_200_000) + "]}",
    "3 M deep (6 MB)": '{"a":' + "[" * 3_000_000 + "]" * 3_000_000 + "}",
    "1 M keys (12 MB)": "{" + ",".join(f'"k{i}":0' for i in range(1_000_000)) + "}",
    "4 M empty strings (12 MB)": '{"a":[' + ",".join(['""'] * 4_000_000) + "]}",
    "one 15 MB text": '{"t":"' + "a," * 7_500_000 + '"}',
    "490 k {} (1.5 MB, decoded)": '{"a":[' + ",".join(["{}"] * 490_000) + "]}",
}


def measure(program: list[str], config: Path, arguments: str) -> tuple[float, float, float, str]:
    proc = subprocess.Popen(
        [*program, "serve", "-config", str(config)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        cwd=REPO,
    )
    assert proc.stdin is not None and proc.stdout is not None

    def send(line: bytes) -> None:
        assert proc.stdin is not None
        proc.stdin.write(line + b"\n")
        proc.stdin.flush()

    def answer(msg_id: int) -> dict[str, object]:
        assert proc.stdout is not None
        while True:
            got = json.loads(proc.stdout.readline())
            if got.get("id") == msg_id:
                return got

    try:
        send(
            json.dumps(
                {
                    "jsonrpc": "2.0",
                    "id": 1,
                    "method": "initialize",
                    "params": {
                        "protocolVersion": "2025-06-18",
                        "capabilities": {},
                        "clientInfo": {"name": "bench", "version": "1"},
                    },
                }
            ).encode()
        )
        answer(1)
        send(b'{"jsonrpc":"2.0","method":"notifications/initialized"}')
        send(b'{"jsonrpc":"2.0","id":2,"method":"tools/list"}')
        answer(2)
        started = vm_hwm_kb(proc.pid)
        line = (
            '{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"calm_echo","arguments":' + arguments + "}}"
        ).encode()
        began = time.monotonic()
        send(line)
        got = answer(3)
        seconds = time.monotonic() - began
        peak = vm_hwm_kb(proc.pid)
        send(b'{"jsonrpc":"2.0","id":4,"method":"ping"}')
        answer(4)
    finally:
        proc.stdin.close()
        proc.wait(60)
    error = got.get("error")
    said = f"error {error['code']}" if isinstance(error, dict) else "answered"
    return started / 1024, peak / 1024, seconds, said


def main() -> int:
    program = [sys.executable, "-m", "agentrt_proxy"]
    print(f"tree: {REPO}")
    print("| shape | line bytes | VmHWM before the line | VmHWM after | answered in | answer |")
    print("|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as scratch:
        config = configuration(Path(scratch), 1000, None, "flood")
        subprocess.run([*program, "pin", "-config", str(config)], check=True, capture_output=True, cwd=REPO)
        for name, arguments in SHAPES.items():
            started, peak, seconds, said = measure(program, config, arguments)
            size = len(arguments.encode()) + 80
            print(f"| {name} | {size:,} | {started:.0f} MiB | {peak:.0f} MiB | {seconds:.2f} s | {said} |", flush=True)
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    sys.exit(main())
