"""CPU time by process, read from /proc: where a throughput run's cores went.

At 8 calls in flight on a small machine the client, the proxy and the upstream share the
cores, so a chain's calls per second are bounded by the CPU all three spend per call, not by
the proxy's alone. ``Meter`` reads, over one stretch of calls, the CPU seconds of this process
(the client), of a chain's first process (the proxy, or the upstream when direct) and of that
process's descendants (the upstream behind a proxy), and how busy the whole machine was.
Measurement only; Linux only (elsewhere every figure reads as NaN).
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass

_TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def _stat_fields(pid: int) -> list[str]:
    with open(f"/proc/{pid}/stat") as f:
        # The command name, in parentheses, may hold spaces: the fields start after the last ")".
        return f.read().rsplit(")", 1)[1].split()


def _cpu_s(pid: int) -> float:
    """User + system CPU seconds of one process (its threads included); 0 once it is gone."""
    try:
        fields = _stat_fields(pid)
    except (OSError, IndexError):
        return 0.0
    return (int(fields[11]) + int(fields[12])) / _TICK


def descendants(pid: int) -> list[int]:
    """Every process below ``pid`` (children, their children, …), as now."""
    parents: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            ppid = int(_stat_fields(int(entry))[1])
        except (OSError, IndexError, ValueError):
            continue
        parents.setdefault(ppid, []).append(int(entry))
    out: list[int] = []
    todo = list(parents.get(pid, []))
    while todo:
        child = todo.pop()
        out.append(child)
        todo.extend(parents.get(child, []))
    return out


def children_now() -> set[int]:
    """This process's direct children, as now (to find the one a chain just spawned)."""
    return {p for p in descendants(os.getpid()) if _parent(p) == os.getpid()}


def _parent(pid: int) -> int:
    try:
        return int(_stat_fields(pid)[1])
    except (OSError, IndexError, ValueError):
        return -1


def _machine_busy_s() -> float:
    """CPU seconds the whole machine has spent busy (all cores, since boot)."""
    try:
        with open("/proc/stat") as f:
            parts = [int(x) for x in f.readline().split()[1:]]
    except OSError:
        return float("nan")
    idle = parts[3] + (parts[4] if len(parts) > 4 else 0)  # idle + iowait
    return (sum(parts[:8]) - idle) / _TICK


@dataclass
class Spent:
    """CPU milliseconds per call over one stretch, by process, and the machine's busy cores."""

    client_ms: float
    head_ms: float  # the chain's first process: the proxy, or the upstream when direct
    behind_ms: float  # its descendants: the upstream behind a proxy (0 when direct)
    machine_cores: float  # cores busy on average over the stretch, every process of the machine

    @property
    def total_ms(self) -> float:
        return self.client_ms + self.head_ms + self.behind_ms


class Meter:
    """Around one stretch of ``calls`` calls through the chain whose first process is ``head``."""

    def __init__(self, head: int | None) -> None:
        self.head = head

    def _read(self) -> tuple[float, float, float, float, float]:
        head = _cpu_s(self.head) if self.head else float("nan")
        behind = sum(_cpu_s(p) for p in descendants(self.head)) if self.head else float("nan")
        return time.perf_counter(), time.process_time(), head, behind, _machine_busy_s()

    def __enter__(self) -> Meter:
        self._start = self._read()
        return self

    def __exit__(self, *_exc: object) -> None:
        self._end = self._read()

    def per_call(self, calls: int) -> Spent:
        (t0, c0, h0, b0, m0), (t1, c1, h1, b1, m1) = self._start, self._end
        return Spent(
            client_ms=(c1 - c0) * 1000 / calls,
            head_ms=(h1 - h0) * 1000 / calls,
            behind_ms=(b1 - b0) * 1000 / calls,
            machine_cores=(m1 - m0) / (t1 - t0),
        )
