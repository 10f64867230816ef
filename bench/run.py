"""agentrt-proxy benchmark: cold start, per-call latency, throughput, scale, RSS, the SQLite floor.

    bench/.venv/bin/python bench/run.py            # the full run (see bench/README.md)
    bench/.venv/bin/python bench/run.py --quick    # a smoke run: few calls, small database

Everything is measured in one run, interleaved, against the same upstream (the SDK's
``MCPServer``, ``bench/upstream.py``) and with the same client (the SDK's ``ClientSession``,
legacy ``initialize``). Prints a table and writes JSON (``--json``, default
``bench/results.json``).
"""

from __future__ import annotations

import argparse
import calendar
import json
import os
import platform
import shutil
import sqlite3
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import cpu
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
WORK = BENCH / ".work"
VENV_PY = sys.executable  # the bench venv: runs the upstream and the fastmcp proxy
COLD_FIRST = 50  # calls of each kind reported apart after the large database's pages were evicted


def real_python() -> str:
    """The interpreter the .pyz runs on: the real one, never the pyenv shim."""
    base = getattr(sys, "_base_executable", "") or ""
    for candidate in (os.environ.get("BENCH_PYTHON", ""), os.path.realpath(base), "/usr/bin/python3"):
        if candidate and os.path.exists(candidate) and "shims" not in candidate:
            return candidate
    return sys.executable


PY = real_python()


def pct(values: list[float], q: float) -> float:
    s = sorted(values)
    if not s:
        return float("nan")
    k = max(0, min(len(s) - 1, round(q / 100 * len(s) + 0.5) - 1))
    return s[k]


def summary(values: list[float]) -> dict[str, float]:
    return {
        "n": len(values),
        "p50": pct(values, 50),
        "p90": pct(values, 90),
        "p99": pct(values, 99),
        "mean": statistics.fmean(values) if values else float("nan"),
    }


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


# ----------------------------------------------------------------------------- setup


def write_config(directory: Path, database: str, *, delay: float = 0.0) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    server: dict[str, Any] = {
        "name": "up",
        "command": [VENV_PY, str(BENCH / "upstream.py")],
        "manifest": "up.manifest.json",
        "rules": {
            "echo": {"side_effect": "read_only", "timeout": "10s"},
            "pay": {"side_effect": "remote_mutation", "outcome": "allow", "timeout": "10s"},
        },
    }
    if delay:
        server["env"] = [f"BENCH_UPSTREAM_DELAY={delay}"]
    doc = {"database": database, "session": "bench", "hold": "0s", "servers": [server]}
    path = directory / "proxy.json"
    path.write_text(json.dumps(doc, indent=2))
    path.chmod(0o600)
    return path


def built_and_fresh(args: argparse.Namespace, part: str) -> tuple[Path, Path]:
    """The .pyz (built unless ``--no-build``) and an emptied scratch folder for ``part``."""
    WORK.mkdir(exist_ok=True)
    pyz = WORK / "agentrt-proxy.pyz"
    if not args.no_build:
        log("building the .pyz ...")
        subprocess.run([PY, str(REPO / "build_zipapp.py"), "--output", str(pyz)], check=True, stdout=subprocess.DEVNULL)
    run = WORK / part
    if run.exists():
        shutil.rmtree(run)
    return pyz, run


def setup(args: argparse.Namespace) -> dict[str, Any]:
    pyz, run = built_and_fresh(args, "run")
    empty = write_config(run / "empty", "runs.db")
    counting = write_config(run / "counting", "runs.db")
    passthrough = write_config(run / "passthrough", "runs.db")
    floor = write_config(run / "floor", "runs.db")
    delayed = write_config(run / "delayed", "runs.db", delay=args.delay)
    big_db = WORK / f"big-{args.rows}.db"
    big = write_config(run / "big", str(big_db))
    log("pinning the upstream ...")
    subprocess.run(
        [PY, str(pyz), "pin", "-config", str(empty)], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    for other in (counting, delayed, big, passthrough, floor):
        shutil.copy(empty.parent / "up.manifest.json", other.parent / "up.manifest.json")
    if big_db.exists() and not args.rebuild_db and not time_ordered_ids(big_db):
        log(f"{big_db} has ids of the old form (random): rebuilding it")
        args.rebuild_db = True
    if not big_db.exists() or args.rebuild_db:
        log(f"building the database with {args.rows:,} prior calls (once; kept in {big_db}) ...")
        t = time.monotonic()
        subprocess.run(
            [VENV_PY, str(BENCH / "build_db.py"), str(pyz), str(big_db), "-calls", str(args.rows)], check=True
        )
        log(f"  built in {time.monotonic() - t:.0f} s")
    with sqlite3.connect(f"file:{big_db}?mode=ro", uri=True) as c:
        prior = c.execute("SELECT count(*) FROM proxy_calls").fetchone()[0]
    return {
        "pyz": pyz,
        "empty": empty,
        "counting": counting,
        "delayed": delayed,
        "big": big,
        "big_db": big_db,
        "passthrough": passthrough,
        "floor": floor,
        "prior_calls": prior,
    }


def time_ordered_ids(db: Path) -> bool:
    """Whether the database's runs have the ids the proxy writes now, led by their creation
    time (docs/decisions/0008): a database built by an older build_db.py is rebuilt."""
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as c:
        row = c.execute("SELECT id, created_at FROM runs ORDER BY rowid LIMIT 1").fetchone()
    if row is None:
        return False
    run_id, created = row
    seconds = calendar.timegm(time.strptime(created[:19], "%Y-%m-%dT%H:%M:%S"))
    ms = seconds * 1000 + int((created[19:].strip(".Z") + "000")[:3])
    return bool(run_id.rsplit(".", 1)[-1][:10] == f"{ms % (1 << 40):010x}")


def db_files(db: Path) -> list[Path]:
    return [p for p in (db, Path(f"{db}-wal")) if p.exists()]


def warm_cache(db: Path) -> float:
    """Read the database (and its WAL) through once, so its pages are in the OS cache when
    the session opens: the warm case. Answers the seconds it took."""
    t = time.monotonic()
    for path in db_files(db):
        with open(path, "rb", buffering=0) as f:
            while f.read(1 << 20):
                pass
    return time.monotonic() - t


def evict_cache(db: Path) -> None:
    """Drop the database's (and its WAL's) pages from the OS cache: the cold case. Flushed
    first, since DONTNEED drops only clean pages."""
    for path in db_files(db):
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)


def chain_command(chain: str, cfg: dict[str, Any], *, delay: bool = False) -> tuple[list[str], dict[str, str]]:
    env = dict(os.environ)
    env.pop("BENCH_UPSTREAM_DELAY", None)
    if chain == "direct":
        if delay:
            env["BENCH_UPSTREAM_DELAY"] = str(cfg["delay"])
        return [VENV_PY, str(BENCH / "upstream.py")], env
    if chain == "fastmcp":
        if delay:
            env["BENCH_UPSTREAM_DELAY"] = str(cfg["delay"])
        return [VENV_PY, str(BENCH / "fastmcp_proxy.py"), VENV_PY, str(BENCH / "upstream.py")], env
    if chain == "passthrough":  # the .pyz with its gate taken out (passthrough.py): the wire's floor
        return [PY, str(BENCH / "passthrough.py"), str(cfg["pyz"]), "serve", "-config", str(cfg["passthrough"])], env
    if chain == "floor":  # the .pyz's wire with the seed's record written straight-line (record_proxy.py)
        return [PY, str(BENCH / "record_proxy.py"), str(cfg["pyz"]), "serve", "-config", str(cfg["floor"])], env
    config = cfg["delayed"] if delay else cfg[{"agentrt": "empty", "agentrt-1M": "big", "counting": "counting"}[chain]]
    if chain == "counting":
        return [
            PY,
            str(BENCH / "count_commits.py"),
            str(cfg["pyz"]),
            str(cfg["commit_log"]),
            "serve",
            "-config",
            str(config),
        ], env
    return [PY, str(cfg["pyz"]), "serve", "-config", str(config)], env


# ----------------------------------------------------------------------------- cold start


def cold_start_once(cmd: list[str], env: dict[str, str], timeout: float = 60.0) -> tuple[float, float]:
    """Process launch → ``initialize`` answered, and → ``tools/list`` answered (ms)."""
    init = (
        '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25",'
        '"capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}\n'
    )
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env)
    assert proc.stdin and proc.stdout
    try:
        proc.stdin.write(init.encode())
        proc.stdin.flush()
        t_init = t_list = float("nan")
        deadline = t0 + timeout
        sent_list = False
        while time.perf_counter() < deadline:
            line = proc.stdout.readline()
            if not line:
                raise RuntimeError(f"{cmd[1]} closed stdout")
            msg = json.loads(line)
            if msg.get("id") == 1:
                t_init = (time.perf_counter() - t0) * 1000
                proc.stdin.write(
                    b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n'
                    b'{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{}}\n'
                )
                proc.stdin.flush()
                sent_list = True
            elif msg.get("id") == 2 and sent_list:
                t_list = (time.perf_counter() - t0) * 1000
                if not msg.get("result", {}).get("tools"):
                    raise RuntimeError(f"no tools from {cmd}: {msg}")
                break
        return t_init, t_list
    finally:
        try:
            proc.stdin.close()
            proc.wait(timeout=10)
        except Exception:
            proc.kill()
            proc.wait()


COLD_CHAINS = ("direct", "agentrt", "fastmcp")
SETTLE_S = 0.3


def cold_name(chain: str, delay: float | None) -> str:
    return chain + (f" (upstream +{delay:g}s)" if delay else "")


def quartiles(values: list[float]) -> dict[str, float]:
    """The median and the middle half (p25, p75), interpolated as ``statistics.quantiles`` does."""
    if len(values) < 2:
        v = values[0] if values else float("nan")
        return {"median": v, "p25": v, "p75": v}
    p25, p50, p75 = statistics.quantiles(values, n=4, method="inclusive")
    return {"median": p50, "p25": p25, "p75": p75}


def cold_starts(cfg: dict[str, Any], rounds: int) -> dict[str, Any]:
    """``rounds`` interleaved rounds, each starting every chain once (upstream on time, then late)
    in an order rotated every round; sample i of every chain comes from round i (``cold_gaps``)."""
    variants = [(c, d) for d in (False, True) for c in COLD_CHAINS]
    samples: dict[str, dict[str, list[float]]] = {
        cold_name(c, cfg["delay"] if d else None): {"initialize": [], "tools_list": []} for c, d in variants
    }
    for r in range(rounds):
        order = variants[r % len(variants) :] + variants[: r % len(variants)]
        for chain, delay in order:
            cmd, env = chain_command(chain, cfg, delay=delay)
            # A pause first: the previous start's children (fastmcp's upstream) may still be
            # exiting, and no start should compete with another's teardown for the 2 cores.
            time.sleep(SETTLE_S)
            t_init, t_list = cold_start_once(cmd, env)
            s = samples[cold_name(chain, cfg["delay"] if delay else None)]
            s["initialize"].append(t_init)
            s["tools_list"].append(t_list)
        log(f"  cold start round {r + 1}/{rounds}")
    return {
        name: {k: {**quartiles(v), "min": min(v), "samples": v} for k, v in s.items()} for name, s in samples.items()
    }


def cold_gaps(cs: dict[str, Any], delay: float) -> dict[str, Any]:
    """``tools/list`` through agentrt minus the upstream's own start (direct), round by round:
    both started within seconds of each other, so the machine's load of the moment cancels."""
    gaps = {}
    for key, late in (("on time", None), ("late", delay)):
        a = cs[cold_name("agentrt", late)]["tools_list"]["samples"]
        d = cs[cold_name("direct", late)]["tools_list"]["samples"]
        per_round = [x - y for x, y in zip(a, d, strict=True)]
        gaps[key] = {**quartiles(per_round), "samples": per_round}
    return gaps


def cold_report(res: dict[str, Any]) -> list[str]:
    cs, gaps = res["cold_start_ms"], res["cold_gaps_ms"]
    rounds = len(cs["direct"]["initialize"]["samples"])
    lines = [
        f"## Cold start (ms; process launch → answered; raw stdio client; {rounds} interleaved rounds, "
        "median and p25–p75)",
        "",
        "| chain | → `initialize` | p25–p75 | → `tools/list` | p25–p75 |",
        "| --- | --- | --- | --- | --- |",
    ]
    for name, v in cs.items():
        i, t = v["initialize"], v["tools_list"]
        lines.append(
            f"| {name} | {fmt_ms(i['median'])} | {fmt_ms(i['p25'])}–{fmt_ms(i['p75'])} | "
            f"{fmt_ms(t['median'])} | {fmt_ms(t['p25'])}–{fmt_ms(t['p75'])} |"
        )
    g, gl = gaps["on time"], gaps["late"]
    lines += [
        "",
        f"`tools/list` over the upstream's own start, per round (agentrt − direct of the same round): "
        f"median {g['median']:+.0f} ms, p25–p75 {g['p25']:+.0f}…{g['p75']:+.0f}; with the upstream "
        f"+{res['delay_s']:g}s late: {gl['median']:+.0f} ms, {gl['p25']:+.0f}…{gl['p75']:+.0f}",
    ]
    return lines


def cold_targets(res: dict[str, Any]) -> list[dict[str, Any]]:
    cs, gaps = res["cold_start_ms"], res["cold_gaps_ms"]
    init_a = cs["agentrt"]["initialize"]["median"]
    init_f = cs["fastmcp"]["initialize"]["median"]
    init_d = cs[cold_name("agentrt", res["delay_s"])]["initialize"]["median"]
    g, gl = gaps["on time"], gaps["late"]
    return [
        {"target": "cold start → initialize ≤ 100 ms", "measured": f"{init_a:.0f} ms", "met": init_a <= 100},
        {
            "target": "cold start → initialize ≤ 0.1 × fastmcp's",
            "measured": f"{init_a:.0f} / {init_f:.0f} ms = {init_a / init_f:.3f}×",
            "met": init_a <= 0.1 * init_f,
        },
        {
            "target": "initialize with the upstream not up yet ≤ 100 ms",
            "measured": f"{init_d:.0f} ms",
            "met": init_d <= 100,
        },
        {
            "target": "tools/list ≤ upstream's own start + 100 ms (median of per-round agentrt − direct)",
            "measured": f"{g['median']:+.0f} ms (p25–p75 {g['p25']:+.0f}…{g['p75']:+.0f}); upstream "
            f"+{res['delay_s']:g}s: {gl['median']:+.0f} ms ({gl['p25']:+.0f}…{gl['p75']:+.0f})",
            "met": g["median"] <= 100 and gl["median"] <= 100,
        },
    ]


def cold_setup(args: argparse.Namespace) -> dict[str, Any]:
    """What ``--only cold`` needs: the .pyz and a pinned configuration, also with the upstream late."""
    pyz, run = built_and_fresh(args, "cold")
    empty = write_config(run / "empty", "runs.db")
    delayed = write_config(run / "delayed", "runs.db", delay=args.delay)
    subprocess.run(
        [PY, str(pyz), "pin", "-config", str(empty)], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    shutil.copy(empty.parent / "up.manifest.json", delayed.parent / "up.manifest.json")
    return {"pyz": pyz, "empty": empty, "delayed": delayed, "delay": args.delay}


def cold_only(args: argparse.Namespace, res: dict[str, Any]) -> int:
    """``--only cold``: the cold starts and their targets, nothing else (no large database)."""
    cfg = cold_setup(args)
    log("cold starts ...")
    res["cold_start_ms"] = cold_starts(cfg, args.cold)
    res["cold_gaps_ms"] = cold_gaps(res["cold_start_ms"], args.delay)
    res["targets"] = cold_targets(res)
    lines = [*cold_report(res), "", "## Targets (cold start)", "", "| target | measured | met |", "| --- | --- | --- |"]
    lines += [f"| {t['target']} | {t['measured']} | {'yes' if t['met'] else '**no**'} |" for t in res["targets"]]
    print("\n".join(lines))
    path = args.json or str(BENCH / "results-cold.json")
    Path(path).write_text(json.dumps(res, indent=1, default=str))
    log(f"wrote {path}")
    return 0


# ----------------------------------------------------------------------------- sessions


def children_pids(name_part: str) -> list[int]:
    me = os.getpid()
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                cmdline = f.read().replace(b"\0", b" ").decode()
        except (OSError, IndexError, ValueError):
            continue
        if ppid == me and name_part in cmdline:
            found.append(int(entry))
    return found


def vm(pid: int, key: str) -> float:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1]) / 1024
    return float("nan")


class Chain:
    def __init__(self, name: str, session: ClientSession, tools: dict[str, str], pid: int | None = None) -> None:
        self.name, self.session, self.tools = name, session, tools
        self.pid = pid  # the chain's first process (the proxy, or the upstream when direct)

    async def call(self, tool: str, args: dict[str, Any]) -> tuple[float, Any]:
        t = time.perf_counter()
        result = await self.session.call_tool(self.tools[tool], args)
        return (time.perf_counter() - t) * 1000, result


async def open_chain(stack: Any, name: str, cfg: dict[str, Any], errlog: Any) -> Chain:
    cmd, env = chain_command(name, cfg)
    params = StdioServerParameters(command=cmd[0], args=cmd[1:], env=env)
    before = cpu.children_now()
    read, write = await stack.enter_async_context(stdio_client(params, errlog=errlog))
    spawned = sorted(cpu.children_now() - before)
    session = await stack.enter_async_context(ClientSession(read, write))
    await session.initialize()  # legacy handshake
    listed = await session.list_tools()
    tools = {}
    for t in listed.tools:
        for short in ("echo", "pay"):
            if t.name == short or t.name.endswith("_" + short):
                tools[short] = t.name
    return Chain(name, session, tools, spawned[0] if len(spawned) == 1 else None)


async def interleaved(
    chains: list[Chain], n: int, make_args: Any, tool: str, check: Any = None
) -> dict[str, list[float]]:
    out: dict[str, list[float]] = {c.name: [] for c in chains}
    for i in range(n):
        k = i % len(chains)
        for c in chains[k:] + chains[:k]:
            ms, result = await c.call(tool, make_args(c.name, i))
            if check is not None:
                check(c.name, result)
            out[c.name].append(ms)
    return out


async def throughput(chain: Chain, tool: str, total: int, concurrency: int, make_args: Any) -> tuple[float, cpu.Spent]:
    """Calls per second with ``concurrency`` in flight, and the CPU each process spent per call."""
    counter = iter(range(total))

    async def worker() -> None:
        for i in counter:
            await chain.call(tool, make_args(chain.name, i))

    t = time.perf_counter()
    with cpu.Meter(chain.pid) as meter:
        async with anyio.create_task_group() as tg:
            for _ in range(concurrency):
                tg.start_soon(worker)
    return total / (time.perf_counter() - t), meter.per_call(total)


def cpu_medians(rounds: list[cpu.Spent]) -> dict[str, float]:
    """Each figure of the throughput rounds' CPU, the median over the rounds."""
    fields = ("client_ms", "head_ms", "behind_ms", "total_ms", "machine_cores")
    return {f: statistics.median(getattr(s, f) for s in rounds) for f in fields}


def text_of(result: Any) -> str:
    return result.content[0].text if result.content else ""


async def sessions(cfg: dict[str, Any], args: argparse.Namespace) -> dict[str, Any]:
    from contextlib import AsyncExitStack

    # Every run's arguments are new, so each database sees request keys it has never held
    # (the large one keeps the rows of earlier runs).
    nonce = f"{time.time_ns():x}"
    out: dict[str, Any] = {}
    errlog = open(WORK / "run" / "stderr.log", "a")
    out["warm_read_s"] = warm_cache(cfg["big_db"])
    log(f"  read the large database through in {out['warm_read_s']:.0f} s (warm)")
    async with AsyncExitStack() as stack:
        names = ["direct", "passthrough", "floor", "agentrt", "fastmcp", "agentrt-1M"]
        chains = []
        for name in names:
            chains.append(await open_chain(stack, name, cfg, errlog))
            log(f"  session open: {name}")
        {c.name: c for c in chains}

        def ok(name: str, result: Any) -> None:
            if result.is_error:
                raise RuntimeError(f"{name}: {text_of(result)[:300]}")

        log("  warm-up ...")
        await interleaved(chains, args.warmup, lambda c, i: {"text": f"warm {nonce} {i}"}, "echo", ok)
        await interleaved(chains, 5, lambda c, i: {"to": f"warm-{nonce}-{c}-{i}", "cents": 1}, "pay", ok)

        log(f"  read-only echo x{args.calls} ...")
        lat = {"echo": await interleaved(chains, args.calls, lambda c, i: {"text": f"hello {nonce} {i}"}, "echo", ok)}
        log(f"  mutating pay x{args.calls} ...")
        lat["pay"] = await interleaved(
            chains, args.calls, lambda c, i: {"to": f"acct-{nonce}-{c}-{i}", "cents": 100 + i}, "pay", ok
        )

        # DUPLICATE: one identical pay made once, then repeated. Only the gate refuses it; the
        # direct and fastmcp paths execute it again (shown for reference).
        for c in chains:
            ok(c.name, (await c.call("pay", {"to": f"dup-{nonce}-{c.name}", "cents": 1}))[1])

        def refused(name: str, result: Any) -> None:
            if name.startswith("agentrt") and not text_of(result).startswith("DUPLICATE"):
                raise RuntimeError(f"{name}: expected DUPLICATE, got {text_of(result)[:200]}")

        log(f"  DUPLICATE pay x{args.calls} ...")
        lat["duplicate"] = await interleaved(
            chains, args.calls, lambda c, i: {"to": f"dup-{nonce}-{c}", "cents": 1}, "pay", refused
        )
        out["latency_ms"] = {kind: {name: summary(v) for name, v in per.items()} for kind, per in lat.items()}

        log(f"  throughput, {args.concurrency} in flight ...")
        tput: dict[str, dict[str, list[float]]] = {"echo": {}, "pay": {}}
        spent: dict[str, dict[str, list[cpu.Spent]]] = {"echo": {}, "pay": {}}
        arguments = {
            "echo": lambda r: lambda n, i: {"text": f"t{nonce}-{r}-{i}"},
            "pay": lambda r: lambda n, i: {"to": f"tp-{nonce}-{n}-{r}-{i}", "cents": 7},
        }
        for r in range(3):
            k = r % len(chains)
            for c in chains[k:] + chains[:k]:
                for kind in ("echo", "pay"):
                    rate, used = await throughput(c, kind, args.tput_calls, args.concurrency, arguments[kind](r))
                    tput[kind].setdefault(c.name, []).append(rate)
                    spent[kind].setdefault(c.name, []).append(used)
        out["throughput_calls_per_s"] = {
            kind: {n: statistics.median(v) for n, v in per.items()} for kind, per in tput.items()
        }
        out["throughput_cpu_ms_per_call"] = {
            kind: {n: cpu_medians(v) for n, v in per.items()} for kind, per in spent.items()
        }

        rss = {}
        for label, part in (
            ("agentrt", str(cfg["empty"])),
            ("agentrt-1M", str(cfg["big"])),
            ("fastmcp", "fastmcp_proxy.py"),
        ):
            pids = children_pids(part)
            if pids:
                rss[label] = {"peak_rss_mb": vm(pids[0], "VmHWM"), "rss_now_mb": vm(pids[0], "VmRSS")}
        out["rss"] = rss
    errlog.close()
    return out


async def cold_scale(cfg: dict[str, Any], args: argparse.Namespace) -> dict[str, Any]:
    """The large database cold: its pages evicted from the OS cache before a new session on
    it opens, interleaved with a new session on the empty database (its process as new), echo
    and pay alternating with new arguments. The first ``COLD_FIRST`` calls of each kind read
    their pages from the disk; the rest show how soon that stops."""
    from contextlib import AsyncExitStack

    nonce = f"{time.time_ns():x}"
    evict_cache(cfg["big_db"])
    errlog = open(WORK / "run" / "stderr.log", "a")
    lat: dict[str, dict[str, list[float]]] = {"echo": {}, "pay": {}}
    async with AsyncExitStack() as stack:
        chains = [await open_chain(stack, name, cfg, errlog) for name in ("agentrt", "agentrt-1M")]
        makers = {
            "echo": lambda c, i: {"text": f"cold {nonce} {i}"},
            "pay": lambda c, i: {"to": f"cold-{nonce}-{c}-{i}", "cents": 100 + i},
        }
        for i in range(args.cold_calls):
            for kind, make in makers.items():
                k = (i + (kind == "pay")) % len(chains)
                for c in chains[k:] + chains[:k]:
                    ms, result = await c.call(kind, make(c.name, i))
                    if result.is_error:
                        raise RuntimeError(f"{c.name}: {text_of(result)[:300]}")
                    lat[kind].setdefault(c.name, []).append(ms)
    errlog.close()
    return {
        kind: {name: {"first": summary(v[:COLD_FIRST]), "rest": summary(v[COLD_FIRST:])} for name, v in per.items()}
        for kind, per in lat.items()
    }


# ----------------------------------------------------------------------------- commits per call


async def commits(cfg: dict[str, Any], n: int = 20) -> dict[str, Any]:
    from contextlib import AsyncExitStack

    logp = Path(cfg["commit_log"])
    for p in (logp, Path(str(logp) + ".sql")):
        p.unlink(missing_ok=True)

    def lines() -> list[list[str]]:
        if not logp.exists():
            return []
        return [json.loads(x) for x in logp.read_text().splitlines() if x.strip()]

    out: dict[str, Any] = {}
    async with AsyncExitStack() as stack:
        chain = await open_chain(stack, "counting", cfg, open(os.devnull, "w"))
        for i in range(5):
            await chain.call("echo", {"text": f"w{i}"})
        await chain.call("pay", {"to": "dup", "cents": 1})
        await anyio.sleep(0.2)
        sql_log = Path(str(logp) + ".sql")
        out["sql_offset"] = len(sql_log.read_text().splitlines())  # the call path starts here
        for kind, make in (
            ("echo", lambda i: ("echo", {"text": f"c{i}"})),
            ("pay", lambda i: ("pay", {"to": f"c{i}", "cents": i + 1})),
            ("duplicate", lambda i: ("pay", {"to": "dup", "cents": 1})),
        ):
            await anyio.sleep(0.2)
            before = len(lines())
            last_before = before
            for i in range(n):
                last_before = len(lines())
                tool, a = make(i)
                await chain.call(tool, a)
            await anyio.sleep(0.2)
            all_lines = lines()
            out[kind] = {"commits_per_call": (len(all_lines) - before) / n, "one_call": all_lines[last_before:]}
    return out


def query_plans(cfg: dict[str, Any]) -> list[dict[str, Any]]:
    """EXPLAIN QUERY PLAN, on the 1,000,000-call database, of every distinct statement
    the proxy executed on the call path (traced by count_commits.py)."""
    import re

    sql_path = Path(str(cfg["commit_log"]) + ".sql")
    seen: dict[str, str] = {}
    for line in sql_path.read_text().splitlines()[cfg.get("sql_offset", 0) :]:
        stmt = json.loads(line)
        head = stmt.lstrip().upper()
        if head.startswith(("BEGIN", "COMMIT", "ROLLBACK", "PRAGMA", "CREATE", "END")):
            continue
        shape = re.sub(r"'(?:[^']|'')*'", "?", stmt)
        shape = re.sub(r"\b\d+\b", "?", shape)
        shape = re.sub(r"\s+", " ", shape).strip()
        seen.setdefault(shape, stmt)
    plans = []
    conn = sqlite3.connect(f"file:{cfg['big_db']}?mode=ro", uri=True)
    try:
        for shape, stmt in seen.items():
            try:
                rows = conn.execute("EXPLAIN QUERY PLAN " + stmt).fetchall()
                plan = [r[3] for r in rows]
            except sqlite3.Error as err:
                plan = [f"(not explained: {err})"]
            full_scan = any(p.startswith("SCAN ") and "USING" not in p and "CONSTANT" not in p for p in plan)
            note = ""
            if full_scan and "FROM sqlite_sequence" in stmt:
                note = "sqlite_sequence holds one row per AUTOINCREMENT table (2 here)"
            elif full_scan and re.search(r"ORDER BY seq DESC LIMIT 1\b", stmt):
                note = "walks the rowid b-tree from its end and stops after one row: O(log n)"
            plans.append({"sql": shape, "plan": plan, "full_scan": full_scan and not note, "note": note})
    finally:
        conn.close()
    return plans


# ----------------------------------------------------------------------------- the floor


def sqlite_floor(n: int = 2000) -> dict[str, float]:
    path = WORK / "floor.db"
    for suffix in ("", "-wal", "-shm"):
        Path(str(path) + suffix).unlink(missing_ok=True)
    conn = sqlite3.connect(str(path), isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = FULL")
    conn.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, payload TEXT)")
    payload = json.dumps({"k": "x" * 180})
    times = []
    for i in range(n + 20):
        conn.execute("BEGIN")
        conn.execute("INSERT INTO t (payload) VALUES (?)", (payload,))
        t = time.perf_counter()
        conn.execute("COMMIT")
        if i >= 20:
            times.append((time.perf_counter() - t) * 1000)
    conn.close()
    return summary(times)


def record_floor(calls: int = 2000) -> dict[str, float] | None:
    """``record_floor.py``'s figures: the CPU a call's record takes written straight-line (the
    floor of any gate that writes it in Python), with and without its two COMMITs."""
    run = subprocess.run(
        [VENV_PY, str(BENCH / "record_floor.py"), "-calls", str(calls), "-json"], capture_output=True, text=True
    )
    if run.returncode != 0:
        log(f"  record_floor.py failed: {run.stderr.strip()[-500:]}")
        return None
    figures: dict[str, float] = json.loads(run.stdout)
    return figures


# ----------------------------------------------------------------------------- report


def fmt_ms(v: float) -> str:
    return f"{v:.2f}" if v < 100 else f"{v:.0f}"


def report(res: dict[str, Any]) -> str:
    L: list[str] = []
    lat = res["latency_ms"]
    L.extend(cold_report(res))
    L.append("")
    L.append(f"## Per-call latency (ms; SDK client, legacy; {res['args']['calls']} calls each, interleaved)")
    L.append("")
    L.append(
        "`passthrough` is the same .pyz with its gate taken out (`passthrough.py`: each call forwarded, nothing "
        "recorded): what the proxy's wire alone adds. `floor` is the same wire with the seed's record written "
        "straight-line around each call (`record_proxy.py`: two durable commits, nothing checked): what any gate "
        "that writes that record in Python adds at the least."
    )
    L.append("")
    L.append("| call | chain | p50 | p90 | p99 | added p50 vs direct |")
    L.append("| --- | --- | --- | --- | --- | --- |")
    for kind in ("echo", "pay", "duplicate"):
        label = {
            "echo": "read-only `echo`",
            "pay": "mutating `pay`",
            "duplicate": "DUPLICATE `pay` (refused by agentrt; executed again by the others)",
        }[kind]
        base = lat[kind]["direct"]["p50"]
        for name in ("direct", "passthrough", "floor", "agentrt", "fastmcp", "agentrt-1M"):
            if name not in lat[kind]:
                continue
            s = lat[kind][name]
            added = "" if name == "direct" else f"{s['p50'] - base:+.2f}"
            L.append(f"| {label} | {name} | {s['p50']:.2f} | {s['p90']:.2f} | {s['p99']:.2f} | {added} |")
    L.append("")
    L.extend(scale_report(res))
    L.append("")
    L.append(f"## Throughput ({res['args']['concurrency']} calls in flight, different arguments; calls/s, median of 3)")
    L.append("")
    L.append("| call | " + " | ".join(res["throughput_calls_per_s"]["echo"].keys()) + " |")
    L.append("| --- |" + " --- |" * len(res["throughput_calls_per_s"]["echo"]))
    for kind, per in res["throughput_calls_per_s"].items():
        L.append(f"| {kind} | " + " | ".join(f"{v:.0f}" for v in per.values()) + " |")
    L.append("")
    L.extend(cpu_report(res))
    L.append("## Memory and the floor")
    L.append("")
    for name, v in res["rss"].items():
        L.append(f"- peak RSS of the {name} proxy process: {v['peak_rss_mb']:.1f} MB (now {v['rss_now_mb']:.1f} MB)")
    f = res["sqlite_floor_ms"]
    L.append(
        f"- one durable SQLite commit (WAL + synchronous=FULL, 1 row): p50 {f['p50']:.3f} ms, p99 {f['p99']:.3f} ms"
    )
    for kind, v in res["commits"].items():
        L.append(f"- commits per {kind} call: {v['commits_per_call']:.2f}")
    L.append(f"- prior calls in the large database: {res['prior_calls']:,}")
    L.append("")
    L.append("## Query plans on the call path (the 1,000,000-call database)")
    L.append("")
    for q in res["query_plans"]:
        flag = " **FULL SCAN**" if q["full_scan"] else ""
        note = f" ({q['note']})" if q["note"] else ""
        L.append(f"- `{q['sql'][:160]}`{flag}{note}")
        for p in q["plan"]:
            L.append(f"    - {p}")
    L.append("")
    L.append("## Targets")
    L.append("")
    L.append("| target | measured | met |")
    L.append("| --- | --- | --- |")
    for t in res["targets"]:
        L.append(f"| {t['target']} | {t['measured']} | {'yes' if t['met'] else '**no**'} |")
    return "\n".join(L)


def cpu_report(res: dict[str, Any]) -> list[str]:
    """Where the throughput rounds' cores went: CPU per call by process (bench/cpu.py)."""
    per_kind = res.get("throughput_cpu_ms_per_call")
    if not per_kind:
        return []
    L = [
        f"CPU per call in those rounds (ms, median of 3; {os.cpu_count()} cores): the client, the chain's first "
        "process (the proxy; the upstream when direct), the upstream behind it, and the cores the whole machine "
        "kept busy.",
        "",
        "| call | chain | client | proxy (or upstream) | upstream behind | all three | cores busy |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for kind, per in per_kind.items():
        for name, v in per.items():
            L.append(
                f"| {kind} | {name} | {v['client_ms']:.2f} | {v['head_ms']:.2f} | {v['behind_ms']:.2f} "
                f"| {v['total_ms']:.2f} | {v['machine_cores']:.2f} |"
            )
    L.append("")
    return L


def scale_ratios(res: dict[str, Any]) -> dict[str, dict[str, float]]:
    """p50 on the large database / p50 on the empty one: warm (the main session), and cold
    (calls 1-50 after eviction, then the rest)."""
    lat, cold = res["latency_ms"], res["scale_cold_ms"]
    out = {"warm": {k: lat[k]["agentrt-1M"]["p50"] / lat[k]["agentrt"]["p50"] for k in ("echo", "pay", "duplicate")}}
    for part in ("first", "rest"):
        out[f"cold_{part}"] = {k: cold[k]["agentrt-1M"][part]["p50"] / cold[k]["agentrt"][part]["p50"] for k in cold}
    return out


def scale_report(res: dict[str, Any]) -> list[str]:
    lat, cold, n = res["latency_ms"], res["scale_cold_ms"], res["args"]["cold_calls"]
    ratios = scale_ratios(res)
    first, rest = f"cold, calls 1–{COLD_FIRST}", f"cold, calls {COLD_FIRST + 1}–{n}"
    L = [
        f"## Scale: {res['prior_calls']:,} prior calls, warm and cold (p50 ms)",
        "",
        f"Warm: the database file read through once before the session ({res['warm_read_s']:.0f} s); the "
        "session above. Cold: its pages evicted from the OS cache (`posix_fadvise` DONTNEED, the file and its "
        f"WAL) before a new session on it, interleaved with a new session on the empty database, {n} calls of "
        "each kind alternating.",
        "",
        "| call | database pages | empty | 1M | 1M / empty |",
        "| --- | --- | --- | --- | --- |",
    ]
    for kind, label in (("echo", "read-only `echo`"), ("pay", "mutating `pay`")):
        L.append(
            f"| {label} | warm | {lat[kind]['agentrt']['p50']:.2f} | {lat[kind]['agentrt-1M']['p50']:.2f} | "
            f"{ratios['warm'][kind]:.2f}× |"
        )
        for part, phase in (("first", first), ("rest", rest)):
            empty, big = cold[kind]["agentrt"][part]["p50"], cold[kind]["agentrt-1M"][part]["p50"]
            L.append(f"| {label} | {phase} | {empty:.2f} | {big:.2f} | {ratios['cold_' + part][kind]:.2f}× |")
    return L


def targets(res: dict[str, Any]) -> list[dict[str, Any]]:
    lat = res["latency_ms"]
    added_a = lat["echo"]["agentrt"]["p50"] - lat["echo"]["direct"]["p50"]
    added_f = lat["echo"]["fastmcp"]["p50"] - lat["echo"]["direct"]["p50"]
    through = lat["echo"].get("passthrough")
    floor = through["p50"] - lat["echo"]["direct"]["p50"] if through else None
    ratios = scale_ratios(res)
    scale = ratios["warm"]
    cold = "; cold, calls 1–{}: {}; then: {}".format(
        COLD_FIRST,
        ", ".join(f"{k} {v:.2f}×" for k, v in ratios["cold_first"].items()),
        ", ".join(f"{k} {v:.2f}×" for k, v in ratios["cold_rest"].items()),
    )
    rss = max(v["peak_rss_mb"] for k, v in res["rss"].items() if k.startswith("agentrt"))
    return [
        {
            "target": "read-only added p50 ≤ 0.5 × fastmcp's added p50",
            "measured": f"+{added_a:.2f} ms vs +{added_f:.2f} ms = {added_a / added_f:.2f}×"
            + (
                f" (the wire, gate bypassed: +{floor:.2f} ms; the gate: +{added_a - floor:.2f} ms)"
                if floor is not None
                else ""
            ),
            "met": added_a <= 0.5 * added_f,
        },
        *promise_floor(res, added_f, floor),
        *throughput_targets(res),
        *cold_targets(res),
        {
            "target": "p50 with 1,000,000 calls ≤ 1.2 × empty (judged warm)",
            "measured": "warm: " + ", ".join(f"{k} {v:.2f}×" for k, v in scale.items()) + cold,
            "met": all(v <= 1.2 for v in scale.values()),
        },
        {"target": "peak RSS < 40 MB", "measured": f"{rss:.1f} MB", "met": rss < 40},
    ]


def promise_floor(res: dict[str, Any], added_f: float, wire: float | None) -> list[dict[str, Any]]:
    """What no gated call can go under while keeping its promises: the proxy's wire (the
    ``passthrough`` chain) plus the two durable COMMITs of a call (start before the upstream
    request, outcome before the answer), each at this disk's p50 of one durable commit."""
    if wire is None or "sqlite_floor_ms" not in res:
        return []
    commits = 2 * res["sqlite_floor_ms"]["p50"]
    least = wire + commits
    rows = [
        {
            "target": "(a reference) the least a gated call adds, the wire + 2 durable commits, ≤ 0.5 × fastmcp's added p50",
            "measured": f"+{wire:.2f} + {commits:.2f} ms = +{least:.2f} ms = {least / added_f:.2f}× fastmcp's",
            "met": least <= 0.5 * added_f,
        }
    ]
    measured = res["latency_ms"]["echo"].get("floor")
    if measured is not None:
        # The record on the wire as a chain of its own (record_proxy.py), in this same session:
        # the sum below left out what the chain meets (commits of 15 pages, not 1; caches the
        # other chains evict), and read 0.47x where the chain read 0.78-0.80x (bench/RESULTS.md).
        added = measured["p50"] - res["latency_ms"]["echo"]["direct"]["p50"]
        rows.append(
            {
                "target": "(a reference, measured) the wire + the seed's record straight-line (the `floor` chain, "
                "`record_proxy.py`), ≤ 0.5 × fastmcp's added p50",
                "measured": f"+{added:.2f} ms = {added / added_f:.2f}× fastmcp's",
                "met": added <= 0.5 * added_f,
            }
        )
        return rows
    record = res.get("record_floor")
    if record:
        # The record's own work besides its COMMITs (CPU; it waits on nothing), written
        # straight-line: what any gate that writes this record in Python adds at the least.
        rest = record["rest_cpu_ms"]
        with_record = least + rest
        rows.append(
            {
                "target": "(a reference) the same + the record written straight-line (`record_floor.py`, its "
                "COMMITs apart), ≤ 0.5 × fastmcp's added p50",
                "measured": f"+{least:.2f} + {rest:.2f} ms = +{with_record:.2f} ms = {with_record / added_f:.2f}× "
                "fastmcp's",
                "met": with_record <= 0.5 * added_f,
            }
        )
    return rows


def throughput_targets(res: dict[str, Any]) -> list[dict[str, Any]]:
    tput = res.get("throughput_calls_per_s", {})
    rows = []
    for kind, per in tput.items():
        if "agentrt" in per and per.get("direct"):
            ratio = per["agentrt"] / per["direct"]
            rows.append(
                {
                    "target": f"{kind}, 8 in flight: agentrt ≥ 0.8 × direct",
                    "measured": f"{per['agentrt']:.0f} vs {per['direct']:.0f} calls/s = {ratio:.2f}×"
                    + (f" (fastmcp {per['fastmcp'] / per['direct']:.2f}×)" if per.get("fastmcp") else ""),
                    "met": ratio >= 0.8,
                }
            )
            if per.get("floor"):
                spent = res.get("throughput_cpu_ms_per_call", {}).get(kind, {}).get("floor", {})
                rows.append(
                    {
                        "target": f"(a reference, measured) {kind}, 8 in flight: the `floor` chain (the wire + the "
                        "seed's record straight-line, each call committing alone) ≥ 0.8 × direct",
                        "measured": f"{per['floor']:.0f} vs {per['direct']:.0f} calls/s = {per['floor'] / per['direct']:.2f}×"
                        + (f" (its CPU a call {spent['head_ms']:.2f} ms)" if "head_ms" in spent else ""),
                        "met": per["floor"] >= 0.8 * per["direct"],
                    }
                )
            else:
                rows.extend(throughput_floor(res, kind, 0.8 * per["direct"]))
    return rows


def throughput_floor(res: dict[str, Any], kind: str, rate: float) -> list[dict[str, Any]]:
    """What ``rate`` calls a second leave the proxy, against the least it can spend a call.

    The proxy has one event loop: at most ``1000 / rate`` ms a call. The machine's cores, less
    what the client and the upstream spend a call at such a rate (the client's in the direct
    rounds, the upstream's behind the passthrough chain: both chains near that rate), leave it
    ``cores × 1000 / rate − client − upstream`` ms of CPU a call. The least it can spend: its
    wire (the passthrough chain's CPU a call) and the record written straight-line without its
    COMMITs (``record_floor.py``): a lower bound, the shared COMMITs' CPU left out."""
    spent = res.get("throughput_cpu_ms_per_call", {}).get(kind, {})
    record = res.get("record_floor")
    if not record or not {"agentrt", "passthrough", "direct"} <= spent.keys():
        return []
    cores = os.cpu_count() or 1
    ours = spent["agentrt"]
    others = spent["direct"]["client_ms"] + spent["passthrough"]["behind_ms"]
    budget = min(1000 / rate, cores * 1000 / rate - others)
    least = spent["passthrough"]["head_ms"] + record["rest_cpu_ms"]
    return [
        {
            "target": f"(a reference) {kind} at {rate:.0f} calls/s: the least the proxy spends a call (the wire + "
            f"the record straight-line, COMMITs apart) ≤ what {cores} cores and one loop leave it",
            "measured": f"{spent['passthrough']['head_ms']:.2f} + {record['rest_cpu_ms']:.2f} = {least:.2f} ms vs "
            f"{budget:.2f} ms left (the gate today: {ours['head_ms']:.2f} ms)",
            "met": least <= budget,
        }
    ]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=500)
    ap.add_argument("--warmup", type=int, default=50)
    ap.add_argument("--cold", type=int, default=15, help="cold-start rounds (each starts every chain once)")
    ap.add_argument("--only", choices=("cold",), help="run only this part (cold: the cold starts, ~2.5 min)")
    ap.add_argument("--concurrency", type=int, default=8)
    ap.add_argument("--tput-calls", type=int, default=400)
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--cold-calls", type=int, default=200, help="calls of each kind on the large database cold")
    ap.add_argument("--delay", type=float, default=1.0, help="the slow upstream's start delay (s)")
    ap.add_argument(
        "--json",
        help="where the raw samples go (default bench/results.json; with --only cold, bench/results-cold.json)",
    )
    ap.add_argument("--no-build", action="store_true")
    ap.add_argument("--rebuild-db", action="store_true")
    ap.add_argument("--quick", action="store_true", help="smoke run: 60 calls, 3 cold starts, 20,000 rows")
    args = ap.parse_args()
    if args.quick:
        args.calls, args.warmup, args.cold, args.tput_calls, args.rows = 60, 10, 3, 80, 20_000
        args.cold_calls = 60
    if args.only == "cold":
        return cold_only(args, run_header(args))
    cfg = setup(args)
    cfg["delay"] = args.delay
    cfg["commit_log"] = WORK / "run" / "commits.log"
    res = run_header(args)
    res["prior_calls"] = cfg["prior_calls"]
    log("SQLite floor ...")
    res["sqlite_floor_ms"] = sqlite_floor()
    log("the record written straight-line ...")
    res["record_floor"] = record_floor()
    log("commits per call ...")
    res["commits"] = anyio.run(commits, cfg)
    cfg["sql_offset"] = res["commits"].pop("sql_offset")
    res["query_plans"] = query_plans(cfg)
    log("cold starts ...")
    res["cold_start_ms"] = cold_starts(cfg, args.cold)
    res["cold_gaps_ms"] = cold_gaps(res["cold_start_ms"], args.delay)
    log("sessions ...")
    res.update(anyio.run(sessions, cfg, args))
    log(f"the large database cold, x{args.cold_calls} ...")
    res["scale_cold_ms"] = anyio.run(cold_scale, cfg, args)
    res["scale_p50_ratio"] = scale_ratios(res)
    res["targets"] = targets(res)
    table = report(res)
    print(table)
    path = args.json or str(BENCH / "results.json")
    Path(path).write_text(json.dumps(res, indent=1, default=str))
    log(f"wrote {path}")
    return 0


def run_header(args: argparse.Namespace) -> dict[str, Any]:
    return {
        "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
        "machine": {
            "platform": platform.platform(),
            "cpus": os.cpu_count(),
            "cpu": cpu_model(),
            "python_pyz": PY,
            "python_pyz_version": subprocess.run([PY, "-V"], capture_output=True, text=True).stdout.strip(),
            "sqlite": sqlite3.sqlite_version,
        },
        "command": " ".join([os.path.relpath(sys.executable, REPO), os.path.relpath(sys.argv[0], REPO), *sys.argv[1:]]),
        "args": vars(args),
        "delay_s": args.delay,
    }


def cpu_model() -> str:
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


if __name__ == "__main__":
    sys.exit(main())
