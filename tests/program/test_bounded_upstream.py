"""A hostile stdio server in front of the real program (issue 13, item 6): a 100 MB answer in
one line, and lines that never end.

The proxy is ``serve -config`` as a host runs it (tests/program/test_serve_process.py's
``proxy``), with two servers from tests/fixtures/hostile_server.py: ``hostile``, whose tools
flood, and ``calm``, whose ``echo`` is the other tool that must keep working. What reaches each
server is counted in its call log. The proxy's peak resident memory (VmHWM, Linux) gets a
generous sanity bound only, one that fully buffering 100 MB (over 500 MB before this change)
would break; the figure itself is measured by bench/oversize_rss.py.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from agentrt_proxy.gate import attempts
from tests.conftest import REPO_ROOT, run_program
from tests.harness import is_error, text_of
from tests.program.test_serve_process import World, proxy

pytestmark = [pytest.mark.program, pytest.mark.anyio, pytest.mark.timeout(120)]

HOSTILE = str(REPO_ROOT / "tests" / "fixtures" / "hostile_server.py")
FLOOD_BYTES = 100 * 1000 * 1000
SANITY_RSS_KB = 300 * 1024


def server(directory: Path, name: str, rules: dict[str, Any]) -> dict[str, Any]:
    return {
        "name": name,
        "command": [sys.executable, HOSTILE],
        "env": {"HOSTILE_BYTES": str(FLOOD_BYTES), "HOSTILE_LOG": str(directory / f"{name}.log")},
        "manifest": f"{name}.manifest.json",
        "default_timeout": "30s",
        "rules": rules,
    }


async def hostile_world(tmp_path: Path, argv: list[str], env: dict[str, str]) -> World:
    rules = {
        "echo": {"side_effect": "read_only"},
        "flood": {"side_effect": "local_mutation"},
        "flood_note": {"side_effect": "local_mutation"},
        "trickle": {"side_effect": "read_only", "timeout": "2s"},
        "endless": {"side_effect": "local_mutation"},
        "twofold": {"side_effect": "local_mutation"},
        "weighty": {"side_effect": "local_mutation"},
    }
    document = {
        "database": "proxy.db",
        "session": "hostile",
        "hold": "0s",
        "servers": [
            server(tmp_path, "hostile", rules),
            server(tmp_path, "calm", {"echo": {"side_effect": "read_only"}}),
        ],
    }
    path = tmp_path / "proxy.json"
    path.write_text(json.dumps(document, indent=2))
    path.chmod(0o600)
    pinned = await anyio.to_thread.run_sync(lambda: run_program(["pin", "-config", str(path)], timeout=30))
    assert pinned.returncode == 0, pinned.stderr
    return World(tmp_path, path, argv, env)


def calls(w: World, name: str) -> list[str]:
    path = w.directory / f"{name}.log"
    return path.read_text().split() if path.exists() else []


def recorded_failures(w: World, goal: str) -> list[str]:
    [run] = [r for r in w.runs() if r.goal == goal]
    with w.store() as store:
        return [
            attempts.observation(s).get("content", {}).get("failure")
            for s in store.steps_of(run.id)
            if attempts.is_tool_call(s)
        ]


def peak_rss_kb(pid: int) -> int:
    with open(f"/proc/{pid}/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    raise AssertionError("no VmHWM")


linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/<pid>/status")


@linux_only
async def test_a_100_mb_answer_is_unrecorded_memory_stays_bounded_and_the_other_server_works(
    tmp_path: Path, program_argv: list[str], program_env: dict[str, str]
) -> None:
    w = await hostile_world(tmp_path, program_argv, program_env)
    async with proxy(w) as host:
        flooded = await host.call("hostile_flood", {})
        text = text_of(flooded)
        # The server answered, so the mutation executed: UNRECORDED, not unknown, not blocked.
        assert text.startswith("UNRECORDED: the server answered this request"), text
        assert "max_message_bytes" in text
        assert w.pending() == []
        # The other server's tool works; the hostile server saw only the flood.
        echoed = await host.call("calm_echo", {"n": 1})
        assert not is_error(echoed) and json.loads(text_of(echoed)) == {"n": 1}
        assert calls(w, "hostile") == ["flood"] and calls(w, "calm") == ["echo"]
        assert peak_rss_kb(host.process.pid) < SANITY_RSS_KB
    # The record keeps the refusal and the answer's first bytes, not 100 MB.
    assert recorded_failures(w, "call hostile_flood") == ["invalid_content"]
    assert Path(w.db).stat().st_size < 10 * 1024 * 1024


@linux_only
async def test_lines_that_never_end_are_dropped_at_the_timeout_or_cut_at_the_bound(
    tmp_path: Path, program_argv: list[str], program_env: dict[str, str]
) -> None:
    w = await hostile_world(tmp_path, program_argv, program_env)
    async with proxy(w) as host:
        # A partial answer that stops: the read times out, and the same server answers next.
        trickled = await host.call("hostile_trickle", {})
        assert is_error(trickled) and "timed out" in text_of(trickled), text_of(trickled)
        echoed = await host.call("hostile_echo", {"n": 2})
        assert not is_error(echoed) and json.loads(text_of(echoed)) == {"n": 2}, text_of(echoed)
        # An answer that never ends at all: cut at the bound, UNRECORDED, the server reset.
        endless = await host.call("hostile_endless", {})
        assert text_of(endless).startswith("UNRECORDED:"), text_of(endless)
        echoed = await host.call("calm_echo", {"n": 3})
        assert not is_error(echoed) and json.loads(text_of(echoed)) == {"n": 3}
        assert calls(w, "hostile") == ["trickle", "echo", "endless"]
        assert peak_rss_kb(host.process.pid) < SANITY_RSS_KB
        assert w.pending() == []
    assert recorded_failures(w, "call hostile_endless") == ["invalid_content"]


async def test_an_answer_that_repeats_its_result_or_outweighs_the_limit_is_refused_not_read_by_its_last_key(
    tmp_path: Path, program_argv: list[str], program_env: dict[str, str]
) -> None:
    """Issue 22, items 5 and 6, from an upstream: an answer whose envelope says two things, and
    an answer of 4.2 million ``{}``, are each refused (UNRECORDED: the server answered, so the
    call may have executed), neither read as its last key or decoded; the server still answers."""
    w = await hostile_world(tmp_path, program_argv, program_env)
    async with proxy(w) as host:
        for tool, said in (("twofold", 'repeats the key "result"'), ("weighty", "500000 JSON values")):
            answered = await host.call(f"hostile_{tool}", {})
            assert text_of(answered).startswith("UNRECORDED: the server answered this request"), text_of(answered)
            assert said in text_of(answered)
        echoed = await host.call("hostile_echo", {"n": 4})
        assert not is_error(echoed) and json.loads(text_of(echoed)) == {"n": 4}, text_of(echoed)
        assert calls(w, "hostile") == ["twofold", "weighty", "echo"]
        assert peak_rss_kb(host.process.pid) < SANITY_RSS_KB
    for tool in ("twofold", "weighty"):
        assert recorded_failures(w, f"call hostile_{tool}") == ["invalid_content"]
