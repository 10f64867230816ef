"""A server that changes a tool while it serves, through the real program (issue 15, items 1, 2, 6).

The host is the official SDK's ``ClientSession`` over the program's pipes; the server is
``fixtures/changing_server.py``, whose ``flip`` tool switches ``weather``'s definition and sends
``notifications/tools/list_changed``. Each change (a paraphrased description, a widened enum, a
new required parameter, a hint flip) is refused at once, nothing reaching the server, and
``check`` shows it classified; ``pin -accept -expect`` pins exactly what the review showed.
"""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from tests.conftest import REPO_ROOT, run_program
from tests.harness import is_error, text_of
from tests.waiting import until

pytestmark = [pytest.mark.program, pytest.mark.anyio, pytest.mark.timeout(120)]

CHANGING = str(REPO_ROOT / "tests" / "fixtures" / "changing_server.py")


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def changing_config(directory: Path) -> Path:
    server = {
        "name": "wx",
        "command": [sys.executable, CHANGING],
        "env": [f"VARIANT_FILE={directory / 'variant'}", f"CALLS_FILE={directory / 'calls'}"],
        "manifest": "wx.manifest.json",
        "rules": {
            "weather": {"side_effect": "read_only", "timeout": "5s"},
            "flip": {"side_effect": "read_only", "timeout": "5s"},
        },
    }
    document = {"database": "proxy.db", "session": "laptop", "hold": "0s", "servers": [server]}
    path = directory / "proxy.json"
    path.write_text(json.dumps(document, indent=2))
    path.chmod(0o600)
    pinned = run_program(["pin", "-config", str(path)], timeout=30)
    assert pinned.returncode == 0, pinned.stderr
    return path


def calls(directory: Path, *, lists: bool = False) -> list[str]:
    path = directory / "calls"
    seen = path.read_text().splitlines() if path.exists() else []
    return seen if lists else [entry for entry in seen if entry != "(tools/list)"]


class Notes:
    def __init__(self) -> None:
        self.methods: list[str] = []

    async def handle(self, message: Any) -> None:
        method = getattr(message, "method", None) or getattr(getattr(message, "root", None), "method", None)
        if isinstance(method, str):
            self.methods.append(method)


@asynccontextmanager
async def host(argv: list[str], env: dict[str, str], config: Path) -> AsyncIterator[tuple[ClientSession, Notes]]:
    notes = Notes()
    command = [*argv, "serve", "-config", str(config)]
    params = StdioServerParameters(command=command[0], args=command[1:], env=env, cwd=str(config.parent))
    with (config.parent / "stderr.txt").open("w") as errlog:
        async with (
            stdio_client(params, errlog=errlog) as (read, write),
            ClientSession(read, write, message_handler=notes.handle) as session,
        ):
            with anyio.fail_after(60):
                await session.initialize()
            yield session, notes


async def names(session: ClientSession) -> list[str]:
    return sorted(tool.name for tool in (await session.list_tools()).tools)


CHANGES = [
    (
        "paraphrase",
        "tool weather: changed (text only: read it, the structure is unchanged)",
        "+Weather for a city. Always include",
    ),
    ("enum", "widening  inputSchema/properties/unit/enum: enum gained", '["k"]'),
    ("required", "widening  inputSchema/properties/notes: newly required", "parameter added"),
    ("hint", "widening  annotations/readOnlyHint: hint flipped (claims to be less safe): true -> false", ""),
]


@pytest.mark.parametrize(("variant", "classified", "also"), CHANGES, ids=[c[0] for c in CHANGES])
async def test_a_tool_changed_while_serving_is_refused_at_once_and_check_shows_the_change_classified(
    tmp_path: Path, program_argv: list[str], program_env: dict[str, str], variant: str, classified: str, also: str
) -> None:
    config = changing_config(tmp_path)
    async with host(program_argv, program_env, config) as (session, notes):
        assert text_of(await session.call_tool("wx_weather", {"city": "Oslo"})) == "sunny"
        assert text_of(await session.call_tool("wx_flip", {"variant": variant})) == "flipped"
        with anyio.fail_after(15):
            while "notifications/tools/list_changed" not in notes.methods:
                await anyio.sleep(0.02)
        assert await names(session) == ["gate_status", "wx_flip"]  # withheld from the listing
        refused = await session.call_tool("wx_weather", {"city": "Oslo"})
        assert is_error(refused)
        assert "the tool changed, and an operator must review the change" in text_of(refused)
        assert "nothing was sent" in text_of(refused)
    assert calls(tmp_path) == ["weather", "flip"]  # the refused call never reached the server
    stderr = (tmp_path / "stderr.txt").read_text()
    [line] = [entry for entry in stderr.splitlines() if "changed while serving" in entry]
    assert 'tool "weather"' in line and f"pin -config {config} -review" in line

    checked = run_program(["check", "-config", str(config)], timeout=30)
    assert "wx: refused weather: " in checked.stdout
    assert classified in checked.stdout, checked.stdout
    assert also in checked.stdout
    data = json.loads(run_program(["check", "-config", str(config), "-json"], timeout=30).stdout)
    [item] = data["servers"][0]["items"]
    assert item["name"] == "weather" and item["status"] == "changed"
    assert item["widening"] is (variant != "paraphrase")


async def test_a_listing_that_changed_nothing_offered_changes_nothing_and_notifies_no_one(
    tmp_path: Path, program_argv: list[str], program_env: dict[str, str]
) -> None:
    config = changing_config(tmp_path)
    async with host(program_argv, program_env, config) as (session, notes):
        assert text_of(await session.call_tool("wx_flip", {"variant": "pinned"})) == "flipped"
        await until("the proxy's next tools/list", lambda: calls(tmp_path, lists=True)[-1] == "(tools/list)")
        assert await names(session) == ["gate_status", "wx_flip", "wx_weather"]
        assert text_of(await session.call_tool("wx_weather", {"city": "Oslo"})) == "sunny"
    assert "notifications/tools/list_changed" not in notes.methods
    assert calls(tmp_path, lists=True)[-4:] == ["(tools/list)", "flip", "(tools/list)", "weather"]  # listed again
    assert 'server "wx"' not in (tmp_path / "stderr.txt").read_text()  # and the operator told nothing


def test_pin_takes_a_change_only_with_the_fingerprint_of_the_review_that_showed_it(tmp_path: Path) -> None:
    config = changing_config(tmp_path)
    before = (tmp_path / "wx.manifest.json").read_text()
    (tmp_path / "variant").write_text("enum")
    bare = run_program(["pin", "-config", str(config)], timeout=30)  # no terminal: never taken silently
    assert bare.returncode == 1 and "changed since its pin and was not pinned again" in bare.stderr
    assert (tmp_path / "wx.manifest.json").read_text() == before
    review = run_program(["pin", "-config", str(config), "-review"], timeout=30)
    assert review.returncode == 0 and "enum gained" in review.stdout
    [accept] = [line.split(": ", 1)[1] for line in review.stdout.splitlines() if "-accept wx -expect" in line]
    fingerprint = accept.rsplit(" ", 1)[1]

    (tmp_path / "variant").write_text("required")  # changed again after the review was printed
    late = run_program(["pin", "-config", str(config), "-accept", "wx", "-expect", fingerprint], timeout=30)
    assert late.returncode == 1 and "not those the review showed" in late.stderr
    assert "newly required" in late.stdout  # the review as it is now
    assert (tmp_path / "wx.manifest.json").read_text() == before

    (tmp_path / "variant").write_text("enum")
    taken = run_program(["pin", "-config", str(config), "-accept", "wx", "-tools", "weather", "-expect", fingerprint],
                        timeout=30)  # fmt: skip
    assert taken.returncode == 0, taken.stderr
    pinned = json.loads((tmp_path / "wx.manifest.json").read_text())
    assert pinned["tools"]["weather"]["input_schema"]["properties"]["unit"]["enum"] == ["c", "f", "k"]
    checked = run_program(["check", "-config", str(config)], timeout=30)
    assert checked.returncode == 0 and "wx: registered weather as wx_weather (read_only)" in checked.stdout
    assert "review of server" not in checked.stdout
