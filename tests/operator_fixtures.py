"""Runs in every state the operator's commands meet, built in a database of a test's own.

Shared by tests/cli and tests/program; the fixtures reach both through pytest_plugins.
"""

from __future__ import annotations

import io
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from agentrt_proxy import canonical
from agentrt_proxy.gate import Decision, Gate, OfferedTool, ProxyPolicy, proxy_limits
from agentrt_proxy.store import Store, new_id
from agentrt_proxy.upstream import ToolSpec

DAY_NS = 86_400_000_000_000


TOOL = "fs_write_file"


ARGS = '{"path":"notes/a.txt","content":"hello\\u001b[2J world"}'


@dataclass
class Waiting:
    db: Path
    run_id: str
    approval_id: str


def _gate(store: Store, outcome: str | None = "require_approval") -> Gate:
    tool = OfferedTool(TOOL, "fs", "write_file", "local_mutation", outcome, {"root": "/home/me/notes"})
    policy = ProxyPolicy({}, {TOOL: tool}, "agentrt-proxy/sha256:test")
    spec = ToolSpec(TOOL, "Write a file", canonical.parse_strict('{"type":"object"}'), "local_mutation",
                    10_000_000_000)
    return Gate(store, policy, [spec])


def pause_run(db: Path, goal: str = "write the notes", args: str = ARGS) -> tuple[str, str]:
    """One run the gate paused on an approval: (run id, approval id)."""
    store = Store.open(str(db))
    try:
        session = _gate(store).begin(new_id(), goal, proxy_limits(DAY_NS, DAY_NS))
        session.step()
        verdict = session.propose(Decision("tool_call", tool=TOOL, args=args))
        assert verdict.approval is not None, verdict
        return session.run_id, verdict.approval.id
    finally:
        store.close()


def running_run(db: Path, goal: str = "a newer run") -> str:
    """A run the policy allowed, left running (its tool never called)."""
    store = Store.open(str(db))
    try:
        session = _gate(store, outcome="allow").begin(new_id(), goal, proxy_limits(DAY_NS, DAY_NS))
        session.step()
        session.propose(Decision("tool_call", tool=TOOL, args='{"path":"b.txt","content":""}'))
        return session.run_id
    finally:
        store.close()


@pytest.fixture
def waiting(tmp_path: Path) -> Waiting:
    db = tmp_path / "proxy.db"
    run_id, approval_id = pause_run(db)
    return Waiting(db, run_id, approval_id)


def approval_row(db: Path, approval_id: str) -> dict[str, Any]:
    conn = sqlite3.connect(db)
    conn.row_factory = sqlite3.Row
    try:
        return dict(conn.execute("SELECT * FROM approvals WHERE id = ?", (approval_id,)).fetchone())
    finally:
        conn.close()


def run_row(db: Path, run_id: str) -> dict[str, Any]:
    conn = sqlite3.connect(db)
    conn.row_factory = sqlite3.Row
    try:
        return dict(conn.execute("SELECT * FROM runs WHERE id = ?", (run_id,)).fetchone())
    finally:
        conn.close()


def one_clear_line(stderr: str) -> str:
    assert "Traceback" not in stderr
    lines = stderr.splitlines()
    assert len(lines) == 1, stderr
    assert lines[0].startswith("agentrt-proxy: ")
    return lines[0]


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def _tamper(db: Path, sql: str, *args: Any) -> None:
    conn = sqlite3.connect(db)
    conn.execute(sql, args)
    conn.commit()
    conn.close()


@pytest.fixture
def locked(waiting: Waiting) -> Iterator[Waiting]:
    conn = sqlite3.connect(waiting.db, isolation_level=None)
    conn.execute("BEGIN EXCLUSIVE")
    try:
        yield waiting
    finally:
        conn.execute("ROLLBACK")
        conn.close()
