"""What a server asks its client, answered at once by the upstream client; its progress reaches
only the call it belongs to. Against ``fixtures/notes_server.py``, which logs what it receives."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from agentrt_proxy.mcp import ServerSpec, open_connection
from agentrt_proxy.mcp.outcomes import Result

pytestmark = pytest.mark.anyio

NOTES = str(Path(__file__).resolve().parents[1] / "fixtures" / "notes_server.py")
SECOND = 1_000_000_000


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def notes_spec(log: Path) -> ServerSpec:
    return ServerSpec(name="notes", command=[sys.executable, NOTES], env=[f"NOTES_LOG={log}"])


def received(log: Path) -> list[Any]:
    return [json.loads(line) for line in log.read_text().splitlines()]


async def test_sampling_elicitation_and_roots_are_refused_at_once_and_ping_is_answered(tmp_path: Path) -> None:
    log = tmp_path / "received.jsonl"
    async with open_connection(notes_spec(log), timeout_ns=10 * SECOND) as conn:
        with anyio.fail_after(10):  # the server waits up to 20 s for each: a hang fails here
            outcome = await conn.call_tool("ask", "{}", 30 * SECOND)
    assert isinstance(outcome, Result) and not outcome.is_error
    answers = json.loads(outcome.text)
    for method in ("elicitation/create", "sampling/createMessage", "roots/list"):
        assert answers[method]["code"] == -32601
        assert answers[method]["message"] == (
            f"the agentrt-proxy client offers no sampling, elicitation or roots: {method} is refused"
        )
    assert answers["ping"] == {"result": {}}
    # What reached the server: one answer to each of its four requests, each by its own id.
    answered = [m["id"] for m in received(log) if isinstance(m.get("id"), str) and m["id"].startswith("asked-")]
    assert answered == ["asked-0", "asked-1", "asked-2", "asked-3"]


async def test_a_calls_progress_reaches_its_own_callback_and_nothing_unreadable_does(tmp_path: Path) -> None:
    log = tmp_path / "received.jsonl"
    seen: list[tuple[float, float | None, str | None]] = []
    steps = [[1, 3, "one"], [True, None, None], [2, True, None], [3, 3, None]]
    async with open_connection(notes_spec(log), timeout_ns=10 * SECOND) as conn:
        outcome = await conn.call_tool(
            "work", json.dumps({"progress": steps}), 10 * SECOND, on_progress=lambda *a: seen.append(a)
        )
        quiet = await conn.call_tool("work", json.dumps({"progress": steps}), 10 * SECOND)
    assert isinstance(outcome, Result) and isinstance(quiet, Result)
    assert seen == [(1.0, 3.0, "one"), (2.0, None, None), (3.0, 3.0, None)]  # a boolean is no number
    calls = [m for m in received(log) if m.get("method") == "tools/call"]
    assert calls[0]["params"]["_meta"] == {"progressToken": calls[0]["id"]}  # the wire's own token
    assert "_meta" not in calls[1]["params"]  # no callback: the server is asked for no progress


async def test_a_forwarded_request_is_declared_and_relayed_and_the_rest_still_refused(tmp_path: Path) -> None:
    log = tmp_path / "received.jsonl"
    relayed: list[tuple[str, Any]] = []

    async def relay(method: str, params: dict[str, Any] | None) -> dict[str, Any]:
        relayed.append((method, params))
        return {"result": {"role": "assistant", "content": {"type": "text", "text": "sampled"}, "model": "m"}}

    spec = ServerSpec(name="notes", command=[sys.executable, NOTES], env=[f"NOTES_LOG={log}"], forward=("sampling",))
    async with open_connection(spec, timeout_ns=10 * SECOND) as conn:
        conn.request_handlers["sampling/createMessage"] = relay
        conn.request_handlers["elicitation/create"] = relay  # set, but not named by forward: refused
        with anyio.fail_after(10):
            outcome = await conn.call_tool("ask", "{}", 30 * SECOND)
    assert isinstance(outcome, Result) and not outcome.is_error
    answers = json.loads(outcome.text)
    assert answers["sampling/createMessage"] == {
        "result": {"role": "assistant", "content": {"type": "text", "text": "sampled"}, "model": "m"}
    }
    assert [method for method, _ in relayed] == ["sampling/createMessage"]  # relayed once, with its params
    assert answers["elicitation/create"]["code"] == -32601 and answers["roots/list"]["code"] == -32601
    (initialize,) = [m for m in received(log) if m.get("method") == "initialize"]
    assert initialize["params"]["capabilities"] == {"sampling": {}}  # declared only what is forwarded
