"""The proxy's own work per call, without pipes or an upstream: where the added latency goes.

``python gate_path.py PYZ [-calls 2000] [-tool echo|pay] [-db DIR] [-profile OUT.prof] [-untimed] [-thrash MB]``

Opens the proxy's runtime from the .pyz against ``bench/upstream.py`` (so the tools are
pinned and registered exactly as in ``serve``), then replaces the upstream connection's
``call_tool`` with one that answers at once with a fixed result. Each call then goes
through everything the proxy does for a host's ``tools/call`` except the two JSON-RPC
sessions: the request key, the rules across calls, the gate's begin/step/propose/start
(one durable commit), the "upstream" call, the recording (one durable commit), the
result's answer. Prints p50/p90/p99 per call, the event loop thread's CPU per call (median and mean), and the split of one call's time between
SQLite (every statement timed) and Python. ``-thrash MB`` walks that many MB of memory
between calls, evicting the CPU caches as the other processes of an interleaved session
do (the end-to-end bench runs five chains in turn). Measurement only; not part of the .pyz.
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent


def route_store_connections(factory: type, on_connect: Callable[[Any, Any], None] | None = None) -> None:
    """Open every connection the store makes from now on as ``factory`` (a ``sqlite3.Connection``
    subclass), then hand it to ``on_connect(database, conn)``. Call it after the .pyz is on
    ``sys.path``: it replaces the ``sqlite3`` the store's connection module sees."""
    import sqlite3

    from agentrt_proxy.store import _connection as store_connection

    real_connect = sqlite3.connect

    def connect(database: Any, *args: Any, **kwargs: Any) -> sqlite3.Connection:
        kwargs["factory"] = factory
        conn = real_connect(database, *args, **kwargs)
        if on_connect is not None:
            on_connect(database, conn)
        return conn

    shim = type(sys)(f"sqlite3_{factory.__name__}")
    shim.__dict__.update(sqlite3.__dict__)
    shim.connect = connect  # type: ignore[attr-defined]
    store_connection.sqlite3 = shim  # type: ignore[attr-defined]


def main(argv: list[str]) -> int:
    timed = "-untimed" not in argv
    argv = [a for a in argv if a != "-untimed"]
    pyz = argv[0]
    opts = dict(zip(argv[1::2], argv[2::2], strict=False))
    calls = int(opts.get("-calls", 2000))
    tool_name = "up_" + opts.get("-tool", "echo")
    sys.path.insert(0, pyz)
    import sqlite3

    import anyio

    sys.path.insert(0, str(BENCH))
    import run as bench_run

    from agentrt_proxy.config import load_config
    from agentrt_proxy.mcp.outcomes import Result
    from agentrt_proxy.mcp.server import CallContext
    from agentrt_proxy.proxy._runtime import open_runtime
    from agentrt_proxy.upstream import pin_server, write_manifest

    sql_ns: list[int] = [0]
    commit_ns: list[int] = [0]

    class TimedConnection(sqlite3.Connection):
        def execute(self, sql: str, *args: Any) -> sqlite3.Cursor:  # type: ignore[override]
            t = time.perf_counter_ns()
            try:
                return super().execute(sql, *args)
            finally:
                spent = time.perf_counter_ns() - t
                sql_ns[0] += spent
                if sql == "COMMIT":
                    commit_ns[0] += spent

        def commit(self) -> None:
            t = time.perf_counter_ns()
            try:
                super().commit()
            finally:
                sql_ns[0] += time.perf_counter_ns() - t

    if timed:
        route_store_connections(TimedConnection)

    directory = Path(opts["-db"]) if "-db" in opts else Path(tempfile.mkdtemp(prefix="gate-path-"))
    directory.mkdir(parents=True, exist_ok=True)
    config_path = bench_run.write_config(directory, "runs.db")
    config = load_config(str(config_path))

    async def go() -> None:
        for server in config.servers:
            write_manifest(server.manifest, await pin_server(server))
        runtime = await open_runtime(config, lambda _text: None, anyio.Event())
        try:
            tool = runtime.tools[tool_name]
            upstream = tool.upstream
            assert upstream is not None

            async def answer(name: str, arguments_text: str | None, timeout_ns: int | None, **_: Any) -> Result:
                return Result("ok", "ok", f"up/{name}: 2 bytes", False, False)

            upstream.call_tool = answer  # type: ignore[method-assign]
            nonce = os.urandom(4).hex()
            samples: list[int] = []
            sql: list[int] = []
            commits: list[int] = []
            cpu: list[int] = []  # the loop thread's CPU per call (fsync waits are not CPU)
            profile = None
            if "-profile" in opts:
                import cProfile

                profile = cProfile.Profile()
            thrash = bytearray(int(float(opts.get("-thrash", 0)) * 1024 * 1024))
            for i in range(calls + int(opts.get("-warmup", 200))):
                if thrash:
                    thrash[::64] = bytes(len(thrash[::64]))  # touch every cache line
                ctx = CallContext(i, None, {}, "2025-06-18")
                text = f'{{"text":"{nonce} {i}"}}' if tool_name == "up_echo" else f'{{"to":"{nonce}","cents":{i + 1}}}'
                if i == int(opts.get("-warmup", 200)) and profile is not None:
                    profile.enable()
                sql_ns[0] = commit_ns[0] = 0
                t, c = time.perf_counter_ns(), time.thread_time_ns()
                result = await runtime.call(tool_name, text, ctx)
                elapsed, used = time.perf_counter_ns() - t, time.thread_time_ns() - c
                if result.get("isError"):
                    raise SystemExit(f"call {i} refused: {result}")
                if i >= int(opts.get("-warmup", 200)):
                    samples.append(elapsed)
                    sql.append(sql_ns[0])
                    commits.append(commit_ns[0])
                    cpu.append(used)
            if profile is not None:
                profile.disable()
                profile.dump_stats(opts["-profile"])
        finally:
            await runtime.close()
        samples.sort()

        def pct(q: float) -> float:
            return samples[min(len(samples) - 1, int(q * len(samples)))] / 1e6

        total = statistics.median(samples) / 1e6
        print(f"{tool_name}: {calls} calls  p50 {pct(0.5):.3f} ms  p90 {pct(0.9):.3f}  p99 {pct(0.99):.3f}")
        print(
            f"  the loop thread's CPU per call: median {statistics.median(cpu) / 1e6:.3f} ms, "
            f"mean {statistics.fmean(cpu) / 1e6:.3f} ms"
        )
        if timed:
            s, c = statistics.median(sql) / 1e6, statistics.median(commits) / 1e6
            print(
                f"  of p50: SQLite {s:.3f} ms (the 2 COMMITs {c:.3f} ms, the other statements {s - c:.3f} ms), "
                f"Python {total - s:.3f} ms"
            )

    anyio.run(go)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
