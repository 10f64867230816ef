"""Build a proxy database holding N prior calls, by direct SQL in large transactions.

``python build_db.py PYZ OUT.db [-calls 1000000] [-session bench] [-seed SEED.db]``

The schema comes from the proxy itself (``Store.open`` from the .pyz, so the migrations
and indexes are exactly the shipped ones). Each prior call is what the proxy records for
an allowed call that completed (compare a real run with ``sqlite3 runs.db .dump``):
one ``runs`` row (COMPLETED), one ``steps`` row (done, with decision, policy and
observation), the 8 hash-chained ``events`` (run.created naming its index row, run.started, step.started,
step.decided, step.policy, step.tool_started, step.tool_finished, run.finished) and one
``proxy_calls`` row (settled, outcome known). 90 % are ``up_echo`` (read-only), 10 %
``up_pay`` (mutating); request keys are distinct except that one read call in ten
repeats an earlier key (closing its previous row, as the proxy does). The calls are
spread over the 30 days before the last hour, so none falls in the repeat window.
Ids have the proxy's form (docs/decisions/0008): a run id is ``<session>.`` + 10 hex of its
creation millisecond + 6 random hex, a step id 12 hex of its start millisecond + 20
random hex, so the rows are in the order, and the indexes in the shape, that the proxy
writing them one call at a time leaves. The chain is valid and the state agrees with it:
``agentrt-proxy verify`` accepts the file.
"""

from __future__ import annotations

import hashlib
import os
import random
import sqlite3
import sys
import time

BATCH = 50_000
LIMITS = (
    '{"max_steps":3,"max_consecutive_tool_failures":3,"loop_threshold":3,'
    '"approval_ttl":86400000000000,"grant_ttl":86400000000000}'
)


def fmt(ns: int) -> str:
    secs, frac = divmod(ns, 1_000_000_000)
    base = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(secs))
    f = f"{frac:09d}".rstrip("0")
    return base + ("." + f if f else "") + "Z"


def main(argv: list[str]) -> int:
    pyz, out = argv[0], argv[1]
    opts = dict(zip(argv[2::2], argv[3::2], strict=False))
    n = int(opts.get("-calls", 1_000_000))
    session = opts.get("-session", "bench")
    seed = opts.get("-seed")
    sys.path.insert(0, pyz)
    from agentrt_proxy.store import Store, chain_hash

    for suffix in ("", "-wal", "-shm"):
        if os.path.exists(out + suffix):
            os.remove(out + suffix)
    Store.open(out).close()
    os.chmod(out, 0o600)
    conn = sqlite3.connect(out, isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = OFF")  # building only; the proxy opens it with FULL
    specs = {"up_echo": "e" * 64, "up_pay": "p" * 64}
    policy_id = "agentrt-proxy/sha256:" + "0" * 64
    if seed:
        src = sqlite3.connect(seed)
        for h, spec in src.execute("SELECT hash, spec_json FROM tool_specs"):
            conn.execute("INSERT OR IGNORE INTO tool_specs (hash, spec_json) VALUES (?, ?)", (h, spec))
            if '"name":"up_echo"' in spec:
                specs["up_echo"] = h
            elif '"name":"up_pay"' in spec:
                specs["up_pay"] = h
        row = src.execute("SELECT policy_id FROM steps LIMIT 1").fetchone()
        if row:
            policy_id = row[0]
        src.close()
    tools_json = '["{}","{}"]'.format(specs["up_echo"], specs["up_pay"])
    rng = random.Random(8)
    now = time.time_ns()
    start = now - 30 * 86400 * 10**9 - 3600 * 10**9
    step_ns = (30 * 86400 * 10**9) // max(n, 1)
    prev_hash = ""
    row = conn.execute("SELECT seq, hash FROM events ORDER BY seq DESC LIMIT 1").fetchone()
    seq = row[0] if row else 0
    prev_hash = row[1] if row else ""
    open_key_row: dict[str, int] = {}
    read_keys: list[str] = []
    row = conn.execute("SELECT max(id) FROM proxy_calls").fetchone()
    call_id = row[0] or 0
    t0 = time.monotonic()
    done = 0
    while done < n:
        batch = min(BATCH, n - done)
        runs, steps, events, calls, closes = [], [], [], [], []
        position: dict[int, int] = {}
        for j in range(batch):
            i = done + j
            t = start + i * step_ns
            # Each id leads with its row's time (created_at, the step's started_at), as new_run_id
            # and new_id make them; calls are 30 days / n apart (2.6 s for 1,000,000): no two share a ms.
            run_id = f"{session}.{(t // 1_000_000) % (1 << 40):010x}{rng.getrandbits(24):06x}"
            step_id = f"{(t + 2_000_000) // 1_000_000:012x}{rng.getrandbits(80):020x}"
            pay = rng.random() < 0.1
            tool = "up_pay" if pay else "up_echo"
            if pay:
                args = '{"cents":%d,"to":"acct-%d"}' % (rng.randrange(1, 100000), i)
                text = f"paid to acct-{i}"
                side, reason = "remote_mutation", "tool up_pay is allow by the operator's rule"
            else:
                args = '{"text":"prior call %d"}' % i
                text = f"prior call {i}"
                side, reason = "read_only", "side effect read_only is allow by policy"
            content = f'{{"result":"{text}"}}'
            chash = hashlib.sha256(content.encode()).hexdigest()
            if not pay and read_keys and rng.random() < 0.1:
                key = rng.choice(read_keys)
            else:
                key = hashlib.sha256(f"{tool}\0{args}".encode()).hexdigest()
                if not pay:
                    read_keys.append(key)
                    if len(read_keys) > 10_000:
                        read_keys = read_keys[-5_000:]
            at0, at1, at2, at3 = fmt(t), fmt(t + 1_000_000), fmt(t + 2_000_000), fmt(t + 5_000_000)
            summary = f"up/{tool[3:]}: {len(content)} bytes"
            decision = f'{{"kind":"tool_call","tool":"{tool}","args":{args},"origin":"model"}}'
            policy = f'{{"outcome":"allow","reason":"{reason}"}}'
            observation = f'{{"kind":"tool_result","content":{content},"summary":"{summary}","content_hash":"{chash}"}}'
            runs.append(
                (
                    run_id,
                    f"call {tool}",
                    "COMPLETED",
                    "goal_completed",
                    "",
                    LIMITS,
                    1,
                    at0,
                    at0,
                    at3,
                    content,
                    0,
                    0,
                    0,
                    0,
                    0,
                    2,
                    "",
                    "",
                )
            )
            steps.append(
                (step_id, run_id, 0, "done", decision, policy, observation, chash, at2, at3, specs[tool], policy_id)
            )
            record = (
                f'{{"claimed_at":{t},"id":{call_id + 1},"request_key":"{key}","session":"{session}",'
                f'"side_effect":"{side}","tool":"{tool}"}}'
            )  # the index row, as store.call_record has it
            for step, at, type_, payload in (
                (
                    "",
                    at0,
                    "run.created",
                    f'{{"call":{record},"goal":"call {tool}","limits":{LIMITS},"tools":{tools_json}}}',
                ),
                ("", at0, "run.started", "{}"),
                (step_id, at1, "step.started", '{"index":0}'),
                (
                    step_id,
                    at1,
                    "step.decided",
                    f'{{"args":{args},"kind":"tool_call","origin":"model","tool":"{tool}"}}',
                ),
                (
                    step_id,
                    at1,
                    "step.policy",
                    f'{{"outcome":"allow","policy_id":"{policy_id}","reason":"{reason}","spec_hash":"{specs[tool]}"}}',
                ),
                (step_id, at2, "step.tool_started", f'{{"args":{args},"tool":"{tool}"}}'),
                (
                    step_id,
                    at3,
                    "step.tool_finished",
                    f'{{"content_hash":"{chash}","duration_ms":2,"summary":"{summary}","tool":"{tool}"}}',
                ),
                ("", at3, "run.finished", '{"detail":"","reason":"goal_completed","status":"COMPLETED","steps":1}'),
            ):
                seq += 1
                prev_hash = chain_hash(prev_hash, seq, run_id, step, at, type_, payload)
                events.append((seq, run_id, step, at, type_, payload, prev_hash))
            call_id += 1
            previous = open_key_row.get(key)
            if previous is not None:
                if previous in position:  # its row is in this batch: write it closed
                    k = position[previous]
                    calls[k] = (*calls[k][:7], 0, t, *calls[k][9:])
                else:
                    closes.append((t, previous))
            open_key_row[key] = call_id
            position[call_id] = len(calls)
            calls.append((call_id, session, key, tool, side, run_id, t, 1, 0, t + 6_000_000, 2))
        conn.execute("BEGIN")
        conn.executemany(
            "INSERT INTO runs (id, goal, status, reason, reason_detail, limits_json, step_count, "
            "created_at, started_at, finished_at, result_json, model_calls, input_tokens, "
            "output_tokens, cached_input_tokens, estimated_cost_micros, active_ms, lease_owner, "
            "lease_expires_at) VALUES (" + ",".join("?" * 19) + ")",
            runs,
        )
        conn.executemany(
            "INSERT INTO steps (id, run_id, idx, status, decision_json, policy_json, "
            "observation_json, observation_hash, started_at, finished_at, spec_hash, policy_id) "
            "VALUES (" + ",".join("?" * 12) + ")",
            steps,
        )
        conn.executemany(
            "INSERT INTO events (seq, run_id, step_id, at, type, payload_json, hash) VALUES (?, ?, ?, ?, ?, ?, ?)",
            events,
        )
        conn.executemany("UPDATE proxy_calls SET open = 0, closed_at = ? WHERE id = ?", closes)
        conn.executemany(
            "INSERT INTO proxy_calls (id, session, request_key, tool, side_effect, run_id, "
            "created_at, open, closed_at, settled_at, outcome) VALUES (" + ",".join("?" * 11) + ")",
            calls,
        )
        conn.execute("COMMIT")
        done += batch
        print(f"  {done:,} calls ({time.monotonic() - t0:.0f} s)", file=sys.stderr, flush=True)
    # No ANALYZE: the proxy never runs it, so its planner sees no statistics either.
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
