"""The conformance suite's SERVER scenarios, run at a URL: the fixture server through the bridge
alone, or the same server behind the proxy behind the bridge (shared by
``tests/program/test_conformance_server.py`` and ``bench/conformance_counts.py``).

``bridge`` starts ``tests/fixtures/stdio_http_bridge.py`` in front of a stdio command (a new child
per HTTP session); ``proxy_command`` writes a configuration in which the proxy serves
``tests/fixtures/conformance_server.py`` (every tool classified ``read_only`` and renamed to its own
name, resources and prompts opted in, the prompts under their own names), pins it, and answers the
command that serves it; ``run_suite`` runs every scenario (``--suite all``) and reads each one's
``checks.json``.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
NODE_DIR = REPO / "tests" / "node"
BRIDGE = REPO / "tests" / "fixtures" / "stdio_http_bridge.py"
SERVER = REPO / "tests" / "fixtures" / "conformance_server.py"

TOOLS = (
    "test_simple_text", "test_image_content", "test_audio_content", "test_embedded_resource",
    "test_multiple_content_types", "test_tool_with_logging", "test_tool_with_progress", "test_error_handling",
    "test_sampling", "test_elicitation", "test_elicitation_sep1034_defaults", "test_elicitation_sep1330_enums",
    "json_schema_2020_12_tool",
)  # fmt: skip
PROMPTS = (
    "test_simple_prompt",
    "test_prompt_with_arguments",
    "test_prompt_with_embedded_resource",
    "test_prompt_with_image",
)


@dataclass(frozen=True)
class Scenario:
    name: str
    passed: bool
    failures: tuple[str, ...]  # "<check id>: <error message>" of each failed check


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def bridge(command: Sequence[str], env: Mapping[str, str] | None = None) -> Iterator[str]:
    """The bridge serving ``command`` at a URL, until the block ends."""
    port = free_port()
    proc = subprocess.Popen([sys.executable, str(BRIDGE), str(port), *command], env=dict(env or os.environ))
    try:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=0.2):
                break
            time.sleep(0.05)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def server_command() -> list[str]:
    return [sys.executable, str(SERVER)]


def proxy_command(
    directory: Path, program: Sequence[str], env: Mapping[str, str], forward: Sequence[str] = ()
) -> list[str]:
    """Configure and pin the proxy in front of the fixture server (relaying the server's requests
    ``forward`` names to the host); the command that serves it."""
    directory.mkdir(parents=True, exist_ok=True)
    server: dict[str, object] = {
        "name": "conf",
        "command": server_command(),
        "manifest": "conf.manifest.json",
        "resources": True,
        "prompts": True,
        "prompt_names": {name: name for name in PROMPTS},
        "rules": {name: {"side_effect": "read_only", "timeout": "30s", "rename": name} for name in TOOLS},
    }
    if forward:
        server["forward"] = list(forward)
    config = directory / "proxy.json"
    document = {"database": "proxy.db", "session": "conformance", "hold": "0s", "servers": [server]}
    config.write_text(json.dumps(document, indent=2))
    config.chmod(0o600)
    subprocess.run(
        [*program, "pin", "-config", str(config)], env=dict(env), check=True, capture_output=True, timeout=60
    )
    return [*program, "serve", "-config", str(config)]


def node_dir(env: Mapping[str, str]) -> Path:
    """Where the npm packages are installed (``AGENTRT_NODE_MODULES``'s parent, else tests/node)."""
    modules = env.get("AGENTRT_NODE_MODULES")
    return Path(modules).parent if modules else NODE_DIR


def run_suite(url: str, output: Path, env: Mapping[str, str], timeout: float = 600) -> dict[str, Scenario]:
    """Every server scenario of the suite against ``url``, by name."""
    output.mkdir(parents=True, exist_ok=True)
    ran = subprocess.run(
        ["npx", "--no-install", "conformance", "server", "--url", url, "--suite", "all", "-o", str(output)],
        cwd=node_dir(env), env=dict(env), capture_output=True, text=True, timeout=timeout, check=False,
    )  # fmt: skip
    found: dict[str, Scenario] = {}
    for checks in sorted(output.glob("server-*/checks.json")):
        name = checks.parent.name[len("server-") :].rsplit("-", 6)[0]  # drop the time stamp
        checked = json.loads(checks.read_text())
        failed = tuple(f"{c['id']}: {c.get('errorMessage', '')}" for c in checked if c["status"] == "FAILURE")
        found[name] = Scenario(name, not failed and bool(checked), failed)
    if not found:
        raise RuntimeError(f"the conformance suite ran no scenario: {ran.stdout[-2000:]}{ran.stderr[-2000:]}")
    return found
