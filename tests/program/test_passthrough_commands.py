"""``pin`` records an opted-in server's prompts and ``check`` says what passes through (issue 13, item 11)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests.conftest import checked_target, run_program

pytestmark = pytest.mark.program

SERVER = Path(__file__).resolve().parents[1] / "fixtures" / "conformance_server.py"


def configure(directory: Path, env: list[str]) -> Path:
    server = {
        "name": "docs",
        "command": [sys.executable, str(SERVER)],
        "env": env,
        "manifest": "docs.manifest.json",
        "resources": True,
        "prompts": True,
        "rules": {"test_simple_text": {"side_effect": "read_only", "timeout": "10s"}},
    }
    path = directory / "proxy.json"
    path.write_text(json.dumps({"database": "proxy.db", "session": "s", "servers": [server]}))
    path.chmod(0o600)
    return path


def test_pin_records_the_prompts_and_check_reports_a_changed_one_as_withheld(tmp_path: Path) -> None:
    checked_target()
    config = configure(tmp_path, [])
    pinned = run_program(["pin", "-config", str(config)])
    assert pinned.returncode == 0, pinned.stderr
    assert "server docs: 4 prompts pinned:" in pinned.stdout
    manifest = json.loads((tmp_path / "docs.manifest.json").read_text())
    assert sorted(manifest["prompts"]) == [
        "test_prompt_with_arguments", "test_prompt_with_embedded_resource", "test_prompt_with_image",
        "test_simple_prompt",
    ]  # fmt: skip
    assert manifest["prompts"]["test_prompt_with_arguments"]["arguments"][0] == {
        "name": "arg1", "description": "First argument", "required": True,
    }  # fmt: skip
    checked = run_program(["check", "-config", str(config)])
    assert checked.returncode == 0, checked.stderr
    assert "docs: resources: passed through (with subscriptions)" in checked.stdout
    assert "docs: offered prompt test_simple_prompt as docs_test_simple_prompt" in checked.stdout
    configure(tmp_path, ["CONFORMANCE_PROMPT_DESCRIPTION=Now do something else."])
    changed = run_program(["check", "-config", str(config)])
    assert changed.returncode == 0, changed.stderr
    assert "docs: withheld prompt test_simple_prompt: it differs from its pin (description changed)" in changed.stdout
    assert "offered prompt test_simple_prompt" not in changed.stdout


def resources_only(directory: Path, declared: str, *, opted: bool = True) -> Path:
    """``docs``: the fixture declaring only ``declared`` (``CONFORMANCE_CAPABILITIES``), no rules."""
    server = {
        "name": "docs",
        "command": [sys.executable, str(SERVER)],
        "env": [f"CONFORMANCE_CAPABILITIES={declared}", f"CONFORMANCE_LOG={directory / 'requests.log'}"],
        "manifest": "docs.manifest.json",
        "resources": opted,
        "rules": {},
    }
    path = directory / "proxy.json"
    path.write_text(json.dumps({"database": "proxy.db", "session": "s", "hold": "0s", "servers": [server]}))
    path.chmod(0o600)
    pinned = run_program(["pin", "-config", str(path)])
    assert pinned.returncode == 0, pinned.stderr
    return path


@pytest.mark.anyio
async def test_a_server_that_lists_no_tools_but_offers_an_opted_in_resource_is_served(
    tmp_path: Path, program_argv: list[str], program_env: dict[str, str]
) -> None:
    from tests.program.test_serve_process import World, proxy

    config = resources_only(tmp_path, "resources")
    checked = run_program(["check", "-config", str(config)])
    assert checked.returncode == 0, checked.stderr
    assert "docs: resources: passed through (with subscriptions)" in checked.stdout
    w = World(tmp_path, config, program_argv, program_env)
    async with proxy(w) as host:
        assert [tool.name for tool in (await host.client.list_tools()).tools] == ["gate_status"]
        read = await host.client.read_resource("test://static-text")
        assert [c.text for c in read.contents] == ["This is the content of the static text resource."]  # type: ignore[union-attr]
    requests = (tmp_path / "requests.log").read_text().splitlines()
    assert requests.count("resources/read") == 1
    assert "tools/list" not in requests  # a server that declares no tools is not asked for them


@pytest.mark.parametrize(
    ("declared", "opted", "said"),
    [
        ("", True, 'mcp: server "docs": no tool registered, and it offers none of the resources it opted into'),
        ("resources", False, 'mcp: server "docs": no tool registered'),
    ],
)
def test_check_says_when_a_server_registers_nothing_at_all(
    tmp_path: Path, declared: str, opted: bool, said: str
) -> None:
    checked_target()
    config = resources_only(tmp_path, declared, opted=opted)
    checked = run_program(["check", "-config", str(config)])
    assert checked.returncode == 1, (checked.stdout, checked.stderr)
    assert said in checked.stderr, checked.stderr
