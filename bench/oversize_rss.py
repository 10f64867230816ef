"""The proxy's peak RSS while a stdio server answers with one 100 MB line (issue 13, item 6).

    python3 bench/oversize_rss.py                  # the source tree, 100 MB, the default bound
    python3 bench/oversize_rss.py --pyz dist/agentrt-proxy.pyz --bytes 200000000

Starts ``agentrt-proxy serve`` (after ``pin``) in front of tests/fixtures/hostile_server.py,
speaks raw JSON lines to it as a host, calls ``hostile_flood`` (one line of ``--bytes``), then
``calm_echo`` on a second server (the hostile one skips the flood and keeps running), and prints the proxy's
``VmHWM`` (Linux) after start-up and after the flood, with both answers' first words. Before
the bound, the same line peaked at 546 MB; issue 13 asked for under 100 MB, which a bound of
16 MiB gives (55 MiB); issue 25 raised the default to 80 MiB so a 20 MiB file read passes whole,
and the same line now peaks at about 119 MiB (the bound, held once, plus start-up).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
REPO = Path(os.environ.get("BENCH_TREE", BENCH.parent))  # another checkout, to compare
HOSTILE = BENCH.parent / "tests" / "fixtures" / "hostile_server.py"


def vm_hwm_kb(pid: int) -> int:
    with open(f"/proc/{pid}/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    raise RuntimeError("no VmHWM in /proc/<pid>/status")


def configuration(directory: Path, size: int, limit: int | None, tool: str) -> Path:
    def server(name: str, rules: dict[str, Any]) -> dict[str, Any]:
        return {
            "name": name,
            "command": [sys.executable, str(HOSTILE)],
            "env": [f"HOSTILE_BYTES={size}"],  # the array form: the same script measures older trees
            "manifest": f"{name}.manifest.json",
            "default_timeout": "60s",
            "rules": rules,
        }

    document: dict[str, Any] = {
        "database": "proxy.db",
        "session": "bench",
        "hold": "0s",
        "servers": [
            server("hostile", {tool: {"side_effect": "local_mutation"}}),
            server("calm", {"echo": {"side_effect": "read_only"}}),
        ],
    }
    if limit is not None:
        document["max_message_bytes"] = limit
    path = directory / "proxy.json"
    path.write_text(json.dumps(document))
    path.chmod(0o600)
    return path


class RawHost:
    def __init__(self, argv: list[str]) -> None:
        self.proc = subprocess.Popen(
            argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, cwd=REPO
        )
        self.next_id = 0

    def request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.next_id += 1
        message = {"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params}
        self.proc.stdin.write(json.dumps(message).encode() + b"\n")
        self.proc.stdin.flush()
        while True:
            answer = json.loads(self.proc.stdout.readline())
            if answer.get("id") == self.next_id:
                return answer

    def notify(self, method: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps({"jsonrpc": "2.0", "method": method}).encode() + b"\n")
        self.proc.stdin.flush()

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(30)


def first_words(answer: dict[str, Any]) -> str:
    content = answer.get("result", {}).get("content", [])
    text = "".join(block.get("text", "") for block in content)
    return text[:100]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bytes", type=int, default=100 * 1000 * 1000, help="the flood line's size")
    parser.add_argument("--limit", type=int, default=None, help="max_message_bytes (default: the default)")
    parser.add_argument(
        "--tool", default="flood", choices=("flood", "flood_id_last"), help="id first (Python SDK) or last (TypeScript)"
    )
    parser.add_argument("--pyz", default=None, help="run this .pyz instead of the source tree")
    args = parser.parse_args()
    program = [sys.executable, "-I", args.pyz] if args.pyz else [sys.executable, "-m", "agentrt_proxy"]
    with tempfile.TemporaryDirectory() as scratch:
        path = configuration(Path(scratch), args.bytes, args.limit, args.tool)
        subprocess.run([*program, "pin", "-config", str(path)], check=True, capture_output=True, cwd=REPO)
        host = RawHost([*program, "serve", "-config", str(path)])
        try:
            host.request("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                        "clientInfo": {"name": "bench", "version": "1"}})  # fmt: skip
            host.notify("notifications/initialized")
            host.request("tools/list", {})
            started = vm_hwm_kb(host.proc.pid)
            began = time.monotonic()
            flooded = host.request("tools/call", {"name": f"hostile_{args.tool}", "arguments": {}})
            seconds = time.monotonic() - began
            echoed = host.request("tools/call", {"name": "calm_echo", "arguments": {"n": 1}})
            peak = vm_hwm_kb(host.proc.pid)
        finally:
            host.close()
    print(f"line: {args.bytes} bytes ({args.tool}); max_message_bytes: {args.limit or 'default (80 MiB)'}")
    print(f"proxy VmHWM after start-up: {started / 1024:.1f} MiB")
    print(f"proxy VmHWM after the flood: {peak / 1024:.1f} MiB (the flood answered in {seconds:.2f} s)")
    print(f"flood answer: {first_words(flooded)!r}")
    print(f"next call (calm_echo): {first_words(echoed)!r}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
