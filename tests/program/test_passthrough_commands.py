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
