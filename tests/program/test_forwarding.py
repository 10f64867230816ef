"""A server's sampling and elicitation through the real program (issue 25, item 7).

``fixtures/notes_server.py``'s ``ask`` sends its client ``elicitation/create``,
``sampling/createMessage``, ``roots/list`` and ``ping`` mid-call and answers with what it got.
Behind a server configured ``"forward": ["sampling", "elicitation"]``, a Python SDK host that
declares both (it gives the callbacks) answers the two itself: each callback runs once, the
server receives its answer, and each relayed request is one recorded run with a
``passthrough.server_request`` event. A host that declares neither gets the server an error
naming the missing capability (recorded too); a server without ``forward`` is refused as before,
and nothing is recorded for it.
"""

from __future__ import annotations

import json
import sqlite3
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters, types

from tests.conftest import REPO_ROOT, run_program
from tests.harness import text_of

pytestmark = [pytest.mark.program, pytest.mark.anyio, pytest.mark.timeout(180)]

NOTES = str(REPO_ROOT / "tests" / "fixtures" / "notes_server.py")
NOT_OFFERED = "the agentrt-proxy client offers no sampling, elicitation or roots: {} is refused"


def configuration(tmp_path: Path) -> Path:
    def server(name: str, **extra: Any) -> dict[str, Any]:
        return {
            "name": name,
            "command": [sys.executable, NOTES],
            "env": {"NOTES_LOG": str(tmp_path / f"{name}.log")},
            "manifest": f"{name}.manifest.json",
            "rules": {"ask": {"side_effect": "read_only", "timeout": "60s"}},
            **extra,
        }

    document = {
        "database": "proxy.db",
        "session": "asking",
        "hold": "0s",
        "servers": [server("asked", forward=["sampling", "elicitation"]), server("plain")],
    }
    config = tmp_path / "proxy.json"
    config.write_text(json.dumps(document, indent=2))
    config.chmod(0o600)
    pinned = run_program(["pin", "-config", str(config)], timeout=60)
    assert pinned.returncode == 0, pinned.stderr
    return config


def params(config: Path, argv: list[str], env: dict[str, str]) -> StdioServerParameters:
    return StdioServerParameters(command=argv[0], args=[*argv[1:], "serve", "-config", str(config)], env=env)


def server_requests(db: Path) -> list[tuple[str, dict[str, Any]]]:
    with sqlite3.connect(db) as conn:
        rows = conn.execute(
            "SELECT r.status, e.payload_json FROM events e JOIN runs r ON r.id = e.run_id"
            " WHERE e.type = 'passthrough.server_request' ORDER BY e.rowid"
        ).fetchall()
    return [(status, json.loads(payload)) for status, payload in rows]


async def test_sampling_and_elicitation_reach_a_host_that_declares_them_and_are_refused_otherwise(
    tmp_path: Path, program_argv: list[str], program_env: dict[str, str]
) -> None:
    config = configuration(tmp_path)
    asked: list[str] = []

    async def sample(context: Any, request: types.CreateMessageRequestParams) -> types.CreateMessageResult:
        asked.append(f"sampling: {request.messages[0].content.text}")  # type: ignore[union-attr]
        return types.CreateMessageResult(
            role="assistant", content=types.TextContent(type="text", text="sampled"), model="host-model"
        )

    async def elicit(context: Any, request: types.ElicitRequestParams) -> types.ElicitResult:
        asked.append(f"elicitation: {request.message}")
        return types.ElicitResult(action="accept", content={"name": "Ada"})

    with anyio.fail_after(150):
        async with Client(
            params(config, program_argv, program_env),
            mode="legacy",
            sampling_callback=sample,
            elicitation_callback=elicit,
        ) as host:
            relayed = json.loads(text_of(await host.call_tool("asked_ask", {})))
            plain = json.loads(text_of(await host.call_tool("plain_ask", {})))
        async with Client(params(config, program_argv, program_env), mode="legacy") as bare:
            refused = json.loads(text_of(await bare.call_tool("asked_ask", {})))
    # The host that declared both answered each request once; the server got those answers.
    assert asked == ["elicitation: Your name?", "sampling: hi"]
    assert relayed["elicitation/create"] == {"result": {"action": "accept", "content": {"name": "Ada"}}}
    assert relayed["sampling/createMessage"]["result"]["content"] == {"type": "text", "text": "sampled"}
    assert relayed["sampling/createMessage"]["result"]["model"] == "host-model"
    assert relayed["roots/list"]["message"] == NOT_OFFERED.format("roots/list")  # never forwarded
    # A server that did not opt in is refused as before.
    for method in ("elicitation/create", "sampling/createMessage"):
        assert plain[method]["message"] == NOT_OFFERED.format(method)
    # A host that declared neither: the server hears which capability is missing.
    assert refused["elicitation/create"] == {
        "code": -32601,
        "message": "the host declared no elicitation capability: elicitation/create is refused",
    }
    assert refused["sampling/createMessage"]["message"] == (
        "the host declared no sampling capability: sampling/createMessage is refused"
    )
    # Each relayed or refused request of the opted-in server is one recorded run; none of plain's.
    recorded = server_requests(tmp_path / "proxy.db")
    assert [(status, p["server"], p["method"], "error" in p) for status, p in recorded] == [
        ("COMPLETED", "asked", "elicitation/create", False),
        ("COMPLETED", "asked", "sampling/createMessage", False),
        ("FAILED", "asked", "elicitation/create", True),
        ("FAILED", "asked", "sampling/createMessage", True),
    ]
    assert all(p["bytes"] > 0 for _, p in recorded)
    verified = run_program(["verify", "-db", str(tmp_path / "proxy.db")], timeout=60)
    assert verified.returncode == 0, verified.stdout + verified.stderr
