"""What an allowed read-only call's record costs when written straight-line: the floor of a
rebuilt record path in Python.

``python bench/record_floor.py [-calls 3000] [-json]`` (from the repository root, any Python with the
runtime's dependencies importable). The database is made by ``Store.open`` (the real schema, every
index), then each call runs 31 statements modelled on the trace of an allowed read-only ``echo``
(``bench/statements_per_call.py``): the rules' read of the key's rows, the two transactions with
their ``busy_timeout`` pragmas, the index row, the run, the step and its three updates, the 8
events (each encoded and hashed by the store's own ``go_json`` and ``chain_hash``), the run's end
and the settlement; and the request key (``canonical.request_key``) and the result's hash. Nothing
else: no rules engine, no policy, no sessions, no validation, no anyio. (The traced call of a key
seen before also reads that key's run, steps and approvals and closes its row: 4 more.)

The rows written verify (``Store.verify``: the chain and the state), or it exits 1.
Prints the CPU per call (this thread's: SQLite's work and the fsync's kernel share included) with
and without the two COMMITs, beside ``gate_path.py``'s figure for the real gate to compare with.
``-json`` prints the figures as one JSON object (``bench/run.py`` reads them for its reference rows).
Measurement only; not part of the .pyz.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, NamedTuple

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from agentrt_proxy import canonical  # noqa: E402
from agentrt_proxy.canonical.encoder import go_json  # noqa: E402
from agentrt_proxy.store import Store  # noqa: E402
from agentrt_proxy.store._chain import chain_hash  # noqa: E402
from agentrt_proxy.upstream import ToolSpec  # noqa: E402

LIMITS = (
    '{"max_steps":3,"max_consecutive_tool_failures":3,"loop_threshold":3,'
    '"approval_ttl":86400000000000,"grant_ttl":86400000000000}'
)
_SPEC = ToolSpec("up_echo", "echo", {"type": "object"}, "read_only", 10_000_000_000)
SPEC, SPEC_JSON = _SPEC.spec_hash(), go_json(_SPEC.tree())  # the row the gate stores once per process
POLICY_ID = "agentrt-proxy/sha256:" + "54" * 32
HEAD = (
    "SELECT (SELECT seq FROM sqlite_sequence WHERE name = 'events'), last.seq, last.hash "
    "FROM (SELECT 1) LEFT JOIN (SELECT seq, hash FROM events ORDER BY seq DESC LIMIT 1) AS last"
)
EVENT = "INSERT INTO events (seq, run_id, step_id, at, type, payload_json, hash) VALUES (?, ?, ?, ?, ?, ?, ?)"
CALL_COLUMNS = "id, session, request_key, tool, side_effect, run_id, created_at, open, closed_at, settled_at, outcome"


def stamp() -> str:
    ns = time.time_ns()
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(ns // 1_000_000_000)) + f".{ns % 1_000_000_000:09d}Z"


class Started(NamedTuple):
    """What the second commit needs of the first."""

    run_id: str
    step_id: str
    row_id: int | None


class Recorder:
    def __init__(self, conn: sqlite3.Connection) -> None:
        self.c = conn
        self.commit_cpu = 0

    def _begin(self) -> None:
        c = self.c
        c.execute("PRAGMA busy_timeout = 0")
        c.execute("BEGIN IMMEDIATE")
        c.execute("PRAGMA busy_timeout = 5000")

    def _commit(self) -> None:
        t = time.thread_time_ns()
        self.c.execute("COMMIT")
        self.commit_cpu += time.thread_time_ns() - t

    def _events(self, run_id: str, rows: list[tuple[str, str, str, dict[str, Any]]]) -> None:
        seq, prev = self._head()
        for step_id, at, kind, payload in rows:
            seq += 1
            # as Tx.append encodes and hashes an event
            text = go_json(dict(sorted(payload.items()))) if payload else "{}"
            prev = chain_hash(prev, seq, run_id, step_id, at, kind, text)
            self.c.execute(EVENT, (seq, run_id, step_id, at, kind, text, prev))

    def _head(self) -> tuple[int, str]:
        counter, last_seq, last_hash = self.c.execute(HEAD).fetchone()
        return max(counter or 0, last_seq or 0), (last_hash or "")

    def call(self, i: int, nonce: str) -> None:
        """One allowed call's whole record, its upstream answering ``"ok"``."""
        self.finish(self.start({"text": f"{nonce} {i}"}), '"ok"', "up/echo: 2 bytes")

    def start(self, args: dict[str, Any], again: int = 0) -> Started:
        """The rules' read and the first commit: the call's start, durable. ``again``: how many
        times these arguments were recorded before (the index holds one row a key: the repeat is
        recorded under the key with ``#again`` after it, where the gate would answer DUPLICATE)."""
        c = self.c
        key = canonical.request_key("up_echo", json.dumps(args))
        assert key is not None
        if again:
            key = f"{key}#{again}"
        # the rules' reads: the key's rows (a DUPLICATE?), then nothing else to read for a new key
        c.execute(
            f"SELECT {CALL_COLUMNS} FROM proxy_calls WHERE session = ? AND request_key = ? ORDER BY id", ("bench", key)
        ).fetchall()
        run_id = f"bench.{time.time_ns() // 1_000_000 % (1 << 40):010x}{os.urandom(3).hex()}"
        step_id = os.urandom(16).hex()
        now_ns = time.time_ns()
        now = stamp()
        # the first commit: the call's start
        self._begin()
        c.execute("SELECT id FROM proxy_calls WHERE session = ? AND request_key = ? AND open = 1", ("bench", key))
        cur = c.execute(
            "INSERT INTO proxy_calls (session, request_key, tool, side_effect, run_id, created_at) "
            "VALUES (?, ?, ?, ?, ?, ?)",
            ("bench", key, "up_echo", "read_only", run_id, now_ns),
        )
        row_id = cur.lastrowid
        c.execute(
            "INSERT INTO runs (id, goal, status, limits_json, created_at, started_at, lease_owner, lease_expires_at) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (run_id, "call up_echo", "RUNNING", LIMITS, now, now, "owner", now),
        )
        c.execute(
            "UPDATE runs SET step_count = 1 WHERE id = ? AND status = 'RUNNING' AND step_count = 0 AND lease_owner = ?",
            (run_id, "owner"),
        )
        c.execute(
            "INSERT INTO steps (id, run_id, idx, status, started_at) VALUES (?, ?, 0, 'deciding', ?)",
            (step_id, run_id, now),
        )
        decision = {"kind": "tool_call", "tool": "up_echo", "args": args, "origin": "model"}
        c.execute(
            "UPDATE steps SET decision_json = ?, spec_hash = ? WHERE id = ? AND status IN ('deciding')",
            (json.dumps(decision, separators=(",", ":")), SPEC, step_id),
        )
        policy = {"outcome": "allow", "reason": "side effect read_only is allow by policy"}
        c.execute(
            "UPDATE steps SET policy_json = ?, policy_id = ?, status = 'executing', started_at = ?, "
            "spec_hash = ? WHERE id = ? AND status IN ('deciding', 'waiting')",
            (json.dumps(policy, separators=(",", ":")), POLICY_ID, now, SPEC, step_id),
        )
        view = {
            "status": "RUNNING",
            "step_count": 1,
            "model_calls": 0,
            "input_tokens": 0,
            "output_tokens": 0,
            "cached_input_tokens": 0,
            "estimated_cost_micros": 0,
            "active_ms": 0,
            "steps": 0,
            "approvals": 0,
        }
        self._events(
            run_id,
            [
                (
                    "",
                    now,
                    "run.created",
                    {
                        "call": {
                            "claimed_at": now_ns,
                            "id": row_id,
                            "request_key": key,
                            "session": "bench",
                            "side_effect": "read_only",
                            "tool": "up_echo",
                        },
                        "goal": "call up_echo",
                        "limits": json.loads(LIMITS),
                        "tools": [SPEC, SPEC],
                    },
                ),
                ("", now, "run.started", {}),
                (step_id, now, "step.started", {"index": 0}),
                (
                    step_id,
                    now,
                    "step.decided",
                    {"args": args, "kind": "tool_call", "origin": "model", "tool": "up_echo"},
                ),
                (step_id, now, "step.policy", {**policy, "policy_id": POLICY_ID, "spec_hash": SPEC, "view": view}),
                (step_id, now, "step.tool_started", {"args": args, "tool": "up_echo"}),
            ],
        )
        self._commit()
        return Started(run_id, step_id, row_id)

    def finish(self, started: Started, result_json: str, summary: str) -> None:
        """The second commit: the call's outcome (``result_json``, the upstream's result as
        JSON text), durable."""
        c = self.c
        run_id, step_id, row_id = started
        content_hash = hashlib.sha256(result_json.encode()).hexdigest()
        done = stamp()
        self._begin()
        c.execute(
            "UPDATE runs SET active_ms = active_ms + 1 WHERE id = ? AND status = 'RUNNING' AND lease_owner = ?",
            (run_id, "owner"),
        )
        observation = {
            "kind": "tool_result",
            "content": json.loads(result_json),
            "summary": summary,
            "content_hash": content_hash,
        }
        c.execute(
            "UPDATE steps SET status = 'done', observation_json = ?, observation_hash = ?, finished_at = ? "
            "WHERE id = ? AND status IN ('executing')",
            (json.dumps(observation, separators=(",", ":")), content_hash, done, step_id),
        )
        c.execute(
            "UPDATE runs SET status = 'COMPLETED', reason = 'goal_completed', reason_detail = '', "
            "finished_at = ?, lease_owner = '', lease_expires_at = '', result_json = ? "
            "WHERE id = ? AND status IN ('RUNNING')",
            (done, result_json, run_id),
        )
        self._events(
            run_id,
            [
                (
                    step_id,
                    done,
                    "step.tool_finished",
                    {"content_hash": content_hash, "duration_ms": 0, "summary": summary, "tool": "up_echo"},
                ),
                (
                    "",
                    done,
                    "run.finished",
                    {"detail": "", "reason": "goal_completed", "status": "COMPLETED", "steps": 1},
                ),
            ],
        )
        c.execute(
            "UPDATE proxy_calls SET outcome = 2, settled_at = CASE WHEN settled_at = 0 THEN ? "
            "ELSE settled_at END WHERE id = ? AND outcome = 0",
            (time.time_ns(), row_id),
        )
        self._commit()


def open_recorder(path: str) -> Recorder:
    """A recorder on the database at ``path``: made by ``Store.open`` (the real schema and
    indexes), then a plain connection in WAL with durable commits, the tool's spec stored once
    (as the gate stores it once a process)."""
    Store.open(path).close()
    conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = FULL")
    conn.execute("INSERT OR IGNORE INTO tool_specs (hash, spec_json) VALUES (?, ?)", (SPEC, SPEC_JSON))
    return Recorder(conn)


def main(argv: list[str]) -> int:
    as_json = "-json" in argv
    argv = [a for a in argv if a != "-json"]
    opts = dict(zip(argv[::2], argv[1::2], strict=False))
    measured = measure(int(opts.get("-calls", 3000)))
    if measured is None:
        return 1
    calls, total, commit = measured
    if as_json:  # for bench/run.py's reference rows
        print(json.dumps({"calls": calls, "cpu_ms": total, "commits_cpu_ms": commit, "rest_cpu_ms": total - commit}))
        return 0
    print(
        f"straight-line record of an allowed read, {calls} calls: CPU per call median {total:.3f} ms "
        f"(the 2 COMMITs {commit:.3f} ms; the rest {total - commit:.3f} ms)"
    )
    return 0


def measure(calls: int) -> tuple[int, float, float] | None:
    """(calls, the median CPU ms a call, of which its 2 COMMITs), or None (said) when the rows
    written do not verify."""
    directory = Path(tempfile.mkdtemp(prefix="record-floor-"))
    path = str(directory / "runs.db")
    recorder = open_recorder(path)
    conn = recorder.c
    nonce = os.urandom(4).hex()
    for i in range(200):
        recorder.call(i, nonce + "w")
    cpu: list[int] = []
    commits: list[int] = []
    for i in range(calls):
        recorder.commit_cpu = 0
        t = time.thread_time_ns()
        recorder.call(i, nonce)
        cpu.append(time.thread_time_ns() - t)
        commits.append(recorder.commit_cpu)
    conn.close()
    store = Store.open(path)
    try:
        report = store.verify()  # the rows written are the real ones: the chain and the state verify
    finally:
        store.close()
    if report.brk is not None or report.state is None or report.state.total != 0:
        print(f"the straight-line rows do not verify: {report}", file=sys.stderr)
        return None
    return calls, statistics.median(cpu) / 1e6, statistics.median(commits) / 1e6


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
