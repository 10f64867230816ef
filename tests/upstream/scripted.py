"""Helpers for the tests that drive ``fixtures/scripted_server.py``: a stdio server whose listing,
errors and call answers a test writes into a script file, named by one server ``fs`` in a
configuration, pinned and checked through the ``pin`` and ``check`` commands."""

from __future__ import annotations

import io
import json
import os
import signal
import sys
import time
from pathlib import Path
from typing import Any

from agentrt_proxy.cli import _pin as pin
from tests.processes import alive

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
SCRIPTED = str(FIXTURES / "scripted_server.py")
SECOND = 1_000_000_000
MS = 1_000_000
OBJECT = '{"type":"object"}'


def tools_text(*tools: tuple[str, str]) -> str:
    """The raw ``tools`` array for (name, raw inputSchema) pairs."""
    return "[" + ",".join(f'{{"name":"{n}","description":"The {n} tool.","inputSchema":{s}}}' for n, s in tools) + "]"


def write_script(path: Path, **script: Any) -> Path:
    path.write_text(json.dumps(script))
    return path


def scripted_config(tmp_path: Path, script: Path, rules: dict[str, Any] | None = None, **server: Any) -> Path:
    """A configuration with one server ``fs`` run by the scripted fixture."""
    entry = {
        "name": "fs",
        "command": [sys.executable, SCRIPTED],
        "env": [f"SCRIPT={script}"],
        "manifest": "fs.json",
        "default_timeout": "5s",
        "rules": rules or {},
        **server,
    }
    path = tmp_path / "proxy.json"
    path.write_text(json.dumps({"database": "proxy.db", "session": "laptop", "servers": [entry]}))
    path.chmod(0o600)
    return path


def run_pin(config_path: Path) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = pin.pin_command(["-config", str(config_path)], stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


def run_check(config_path: Path) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = pin.check_command(["-config", str(config_path)], stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


def has_control(text: str) -> bool:
    return any(ord(c) < 0x20 or 0x7F <= ord(c) < 0xA0 for c in text)


def wait_dead(pid: int, seconds: float = 5) -> bool:
    """Whether ``pid`` is gone within ``seconds`` (it is killed if not, so no test leaves it)."""
    deadline = time.monotonic() + seconds
    while alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    if alive(pid):
        os.kill(pid, signal.SIGKILL)
        return False
    return True
