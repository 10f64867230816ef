"""The store: file safety, schema, the event chain, the call index, concurrent deciders."""

from __future__ import annotations

import json
import multiprocessing
import os
import sqlite3
import stat
from pathlib import Path
from typing import Any

import pytest

from agentrt_proxy.gate import Decision, approvals
from agentrt_proxy.store import (
    ClaimLost,
    InsecureMode,
    NotFound,
    RunStateError,
    SchemaVersionError,
    Store,
    SymlinkRefused,
    UnsafeSchema,
)
from tests.gate_fixtures import LIMITS, FakeClock, make_gate


def test_a_new_database_is_created_owner_only_with_the_runtime_and_index_migrations(tmp_path: Path) -> None:
    path = tmp_path / "a.db"
    Store.open(str(path)).close()
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    conn = sqlite3.connect(path)
    assert conn.execute("SELECT MAX(version) FROM schema_migrations").fetchone()[0] == 6
    assert conn.execute("SELECT MAX(version) FROM proxy_schema_migrations").fetchone()[0] == 5
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    names = {r[0] for r in conn.execute("SELECT name FROM sqlite_master")}
    assert {"runs", "steps", "events", "approvals", "model_calls", "tool_specs", "proxy_calls",
            "proxy_calls_open", "events_run", "approvals_run", "budget_holds", "proxy_tasks",
            "proxy_withheld_tools"} <= names


def test_a_group_writable_database_is_refused_naming_the_fix(tmp_path: Path) -> None:
    path = tmp_path / "a.db"
    Store.open(str(path)).close()
    os.chmod(path, 0o620)
    with pytest.raises(InsecureMode, match="chmod 600"):
        Store.open(str(path))


def test_a_group_readable_database_is_tightened_by_a_writer(tmp_path: Path) -> None:
    path = tmp_path / "a.db"
    Store.open(str(path)).close()
    os.chmod(path, 0o640)
    Store.open(str(path)).close()
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_a_symlinked_database_path_is_refused(tmp_path: Path) -> None:
    Store.open(str(tmp_path / "real.db")).close()
    (tmp_path / "link.db").symlink_to(tmp_path / "real.db")
    with pytest.raises(SymlinkRefused):
        Store.open(str(tmp_path / "link.db"))
    with pytest.raises(SymlinkRefused):
        Store.open_readonly(str(tmp_path / "link.db"))


def test_a_database_from_a_newer_build_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "a.db"
    Store.open(str(path)).close()
    conn = sqlite3.connect(path)
    conn.execute("INSERT INTO schema_migrations VALUES (7, 'x')")
    conn.commit()
    conn.close()
    with pytest.raises(SchemaVersionError, match="version 7"):
        Store.open(str(path))


def test_a_database_with_a_trigger_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "a.db"
    Store.open(str(path)).close()
    conn = sqlite3.connect(path)
    conn.execute("CREATE VIEW v AS SELECT 1")
    conn.commit()
    conn.close()
    with pytest.raises(UnsafeSchema):
        Store.open_readonly(str(path))


def test_a_read_only_open_never_creates_a_file(tmp_path: Path) -> None:
    with pytest.raises(NotFound):
        Store.open_readonly(str(tmp_path / "none.db"))
    assert not (tmp_path / "none.db").exists()


def _three_runs(path: Path) -> Store:
    store = Store.open(str(path))
    gate = make_gate(store, FakeClock())
    for n in range(3):
        sess = gate.begin(f"s.{n}", "call bank_wipe", LIMITS)
        sess.step()
        sess.propose(Decision("tool_call", "bank_wipe", "{}", origin="model"))
        sess.fail("one call per run: the request was denied")
    return store


def test_the_event_chain_verifies_intact(tmp_path: Path) -> None:
    store = _three_runs(tmp_path / "a.db")
    report = store.verify()
    assert report.intact and report.checked == report.head_seq == 27


def test_a_row_edited_behind_the_stores_back_breaks_the_chain_at_that_event(tmp_path: Path) -> None:
    path = tmp_path / "a.db"
    _three_runs(path).close()
    conn = sqlite3.connect(path)
    conn.execute("UPDATE events SET payload_json = '{\"goal\":\"forged\"}' WHERE seq = 10")
    conn.commit()
    conn.close()
    report = Store.open_readonly(str(path)).verify()
    assert not report.intact and report.brk.seq == 10 and report.checked == 9


def test_deleting_the_newest_events_is_caught_by_the_chain_only_against_a_kept_head(tmp_path: Path) -> None:
    path = tmp_path / "a.db"
    store = _three_runs(path)
    kept = store.chain_head()
    store.close()
    conn = sqlite3.connect(path)
    conn.execute("DELETE FROM events WHERE seq > 20")
    conn.commit()
    conn.close()
    reader = Store.open_readonly(str(path))
    assert reader.verify(state=False).intact  # the cut chain still verifies on its own
    with_head = reader.verify(head=kept, state=False)
    assert not with_head.intact and with_head.kept_head_found is False
    # The state rows still hold what the cut events said: the last run's row disagrees.
    cut = reader.verify()
    assert cut.brk is None and cut.state is not None and not cut.intact
    found = {(m.table, m.key, m.column) for m in cut.state.mismatches}
    assert {f for f in found if f[0] == "runs"} == {("runs", "s.2", "status"), ("runs", "s.2", "step_count")}
    # and the steps whose step.started was cut are rows no event explains
    cut_steps = {(sid,) for (sid,) in sqlite3.connect(path).execute("SELECT id FROM steps WHERE run_id = 's.2'")}
    assert {(f[1],) for f in found if f[0] != "runs"} <= cut_steps
    assert {f[0] for f in found if f[0] != "runs"} == {"steps"} and all(f[2] == "" for f in found if f[0] == "steps")


def test_a_kept_head_that_still_matches_is_reported(tmp_path: Path) -> None:
    store = _three_runs(tmp_path / "a.db")
    report = store.verify(head=store.chain_head())
    assert report.intact and report.kept_head_matches


def test_the_index_allows_one_open_row_per_key_and_signals_a_lost_race(tmp_path: Path) -> None:
    store = Store.open(str(tmp_path / "a.db"))
    first = store.index.claim("s", "k", "bank_pay", "remote_mutation", "s.1", None, 1)
    with pytest.raises(ClaimLost):
        store.index.claim("s", "k", "bank_pay", "remote_mutation", "s.2", None, 2)
    second = store.index.claim("s", "k", "bank_pay", "remote_mutation", "s.2", first.id, 3)
    rows = store.index.for_key("s", "k", 0)
    assert [r.run_id for r in rows] == ["s.2", "s.1"] and rows[0].open == 1 and rows[1].closed_at == 3
    assert store.index.settle(second.id, 3, 4) and not store.index.settle(second.id, 2, 5)
    assert [r.run_id for r in store.index.unknown_for_tool("s", "bank_pay", "other")] == ["s.2"]
    assert store.index.settle_empty(first.id, 6)  # s.1 never began
    assert [r.run_id for r in store.index.attempts("s", "k")] == ["s.2"]
    store.index.unsettle("s.2")
    assert store.index.by_run("s.2").outcome == 0
    assert [r.run_id for r in store.index.unsettled("s")] == ["s.2"]


def test_the_unresolved_calls_query_uses_an_index(tmp_path: Path) -> None:
    store = Store.open(str(tmp_path / "a.db"))
    plan = store._conn.execute(
        "EXPLAIN QUERY PLAN SELECT id FROM proxy_calls AS p INDEXED BY proxy_calls_unresolved "
        "WHERE p.session = 's' AND p.tool = 't' AND p.outcome IN (0, 3)").fetchall()
    assert "USING INDEX proxy_calls_unresolved" in str(plan)


def _decide(path: str, run_id: str, approval_id: str, shown: str, who: str, start, results) -> None:
    store = Store.open(path)
    start.wait()
    try:
        approvals.approve_shown(store, run_id, approval_id, shown, who)
        results.put((who, "won"))
    except Exception as exc:
        results.put((who, type(exc).__name__))


def test_two_operator_processes_deciding_one_approval_exactly_one_wins(tmp_path: Path) -> None:
    path = str(tmp_path / "a.db")
    store = Store.open(path)
    sess = make_gate(store, FakeClock(now=__import__("time").time_ns())).begin("s.1", "call bank_pay", LIMITS)
    sess.step()
    approval = sess.propose(Decision("tool_call", "bank_pay", '{"to":"bob","amount":1}', origin="model")).approval
    ctx = multiprocessing.get_context("spawn")
    start, results = ctx.Event(), ctx.Queue()
    procs = [ctx.Process(target=_decide, args=(path, "s.1", approval.id, approval.hash, f"op{n}", start, results))
             for n in range(2)]
    for p in procs:
        p.start()
    start.set()
    for p in procs:
        p.join(30)
    outcomes = sorted(results.get(timeout=5)[1] for _ in procs)
    assert outcomes == ["NotPending", "won"]
    assert [e.type for e in store.events_of("s.1")].count("approval.decided") == 1


def test_go_json_writes_plain_trees_and_objects_of_literals_through_the_c_encoder_exactly_as_the_walk_does() -> None:
    import random

    from agentrt_proxy.canonical import Number
    from agentrt_proxy.canonical.encoder import Raw, _go_json, go_json

    rng = random.Random(7)
    chars = 'ab<>&\u2028\u2029"\\\n\x01é😀 '

    def text() -> str:
        return "".join(rng.choice(chars) for _ in range(rng.randint(0, 8)))

    def tree(depth: int = 0) -> Any:
        r = rng.random()
        if depth > 3 or r < 0.5:
            return rng.choice([text(), rng.randint(-10**20, 10**20), rng.random() * 1e5, True, False, None,
                               float("nan"), 1e300, -0.0, Number("1.50"), Raw('{"x":1}')])
        if r < 0.75:
            keys = [text() if rng.random() > 0.1 else rng.choice([1, True, None]) for _ in range(rng.randint(0, 4))]
            return {k: tree(depth + 1) for k in keys}
        return rng.choice([list, tuple])(tree(depth + 1) for _ in range(rng.randint(0, 4)))

    for _ in range(20000):
        t = tree()
        assert go_json(t) == _go_json(t)
    # An object whose members are plain trees or literals (a recorded decision: its args a Raw;
    # a server's raw text, < > & unescaped), written member by member: a literal verbatim.
    def member() -> Any:
        r = rng.random()
        if r < 0.2:
            return Raw(go_json(tree()))
        if r < 0.4:
            return Raw(json.dumps(text(), ensure_ascii=False))
        return tree()

    for _ in range(5000):
        members = {text(): member() for _ in range(rng.randint(1, 5))}
        assert go_json(members) == _go_json(members)
    assert go_json({"a": "<&>\u2028", "b": [1, 2.5, None]}) == '{"a":"\\u003c\\u0026\\u003e\\u2028","b":[1,2.5,null]}'


def test_the_serving_writer_caches_at_most_a_mebibyte_of_pages(tmp_path: Path) -> None:
    # The proxy's memory (bench/start_and_size.py): SQLite's default cache is 2,000 KiB.
    store = Store.open(str(tmp_path / "runs.db"))
    try:
        with store.read() as conn:
            assert conn.execute("PRAGMA cache_size").fetchone()[0] == -1024
    finally:
        store.close()


def _open_temp_files() -> list[str]:
    # SQLite unlinks a temp file as it opens it ("etilqs_..."): only the descriptor shows it.
    found = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        if "etilqs_" in target:
            found.append(target)
    return found


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="reads /proc/self/fd (Linux)")
def test_the_serving_writer_keeps_a_savepoints_journal_out_of_temp_files(tmp_path: Path) -> None:
    # A group commit's units are savepoints: their statement journal must not cost file writes.
    store = Store.open(str(tmp_path / "runs.db"))
    try:
        with store._db.write() as tx:
            tx.conn.execute("INSERT INTO tool_specs (hash, spec_json) VALUES ('seed', '{}')")
            tx.conn.execute("SAVEPOINT unit")
            for n in range(200):  # about 400 KiB of pages changed inside the savepoint
                tx.conn.execute("INSERT INTO tool_specs (hash, spec_json) VALUES (?, ?)", (f"h{n}", "x" * 2000))
            tx.conn.execute("UPDATE tool_specs SET spec_json = spec_json || 'y'")
            assert _open_temp_files() == []
            tx.conn.execute("RELEASE unit")
    finally:
        store.close()


@pytest.mark.parametrize(
    ("status", "owner", "refused"),
    [
        ("RUNNING", "owner-1", False),
        ("RUNNING", "owner-2", True),  # another gate took the run over
        ("WAITING_FOR_APPROVAL", "owner-1", True),  # moved on under this lease
    ],
)
def test_completing_a_run_while_adding_its_active_time_is_one_cas_on_its_status_and_lease_owner(
    tmp_path: Path, status: str, owner: str, refused: bool
) -> None:
    store = Store.open(str(tmp_path / "cas.db"))
    try:
        with store.write() as tx:
            tx.insert_run("s.1", "goal", "{}", "2026-12-03T10:00:00Z", owner, "2026-12-03T10:00:30Z")
            assert tx.add_active_ms("s.1", 7, owner)
            if status != "RUNNING":
                tx.update_run("s.1", expect="RUNNING", status=status)
        try:
            with store.write() as tx:
                run = tx.update_run_adding_active_ms("s.1", 5, expect="RUNNING", owner="owner-1",
                                                     status="COMPLETED", lease_owner="")
        except RunStateError:
            assert refused
            after = store.get_run("s.1")
            assert (after.status, after.active_ms, after.lease_owner) == (status, 7, owner)  # nothing written
        else:
            assert not refused
            assert (run.status, run.active_ms, run.lease_owner) == ("COMPLETED", 12, "")
            assert store.get_run("s.1") == run  # the row as the update left it, committed
    finally:
        store.close()
