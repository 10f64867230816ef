"""Real Node peers around the real program: the npm filesystem server as our upstream, and
the TypeScript SDK as the host (through the MCP Inspector's CLI).

Versions are pinned in tests/node/package-lock.json; scripts/setup-node.sh installs them
and Node 24 (scripts/test runs it and exports AGENTRT_NODE_BIN / AGENTRT_NODE_MODULES).
Every test here skips, with the reason, where they are absent.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters

from tests.conftest import REPO_ROOT, run_program
from tests.harness import is_error, text_of, write_config

pytestmark = [pytest.mark.program, pytest.mark.timeout(120)]

NODE_DIR = REPO_ROOT / "tests" / "node"
FS_TOOLS = [
    "create_directory", "directory_tree", "edit_file", "get_file_info", "list_allowed_directories", "list_directory",
    "list_directory_with_sizes", "move_file", "read_file", "read_media_file", "read_multiple_files", "read_text_file",
    "search_files", "write_file",
]  # fmt: skip
SERVED = ["fs_list_directory", "fs_read_text_file", "fs_write_file", "gate_status"]


def node_bin() -> str:
    """Node 22+ and the pinned packages, or a skip naming what is missing."""
    node = os.environ.get("AGENTRT_NODE_BIN") or str(REPO_ROOT / ".venv" / "node-bin" / "node")
    if not Path(node).is_file():
        pytest.skip("Node 22+ is not installed: run scripts/setup-node.sh")
    version = subprocess.run([node, "--version"], capture_output=True, text=True, check=False).stdout.strip()
    if not version.startswith("v") or int(version[1:].split(".")[0]) < 22:
        pytest.skip(f"Node 22+ is not installed ({node} is {version or 'unusable'}): run scripts/setup-node.sh")
    return node


def node_modules() -> Path:
    modules = Path(os.environ.get("AGENTRT_NODE_MODULES") or NODE_DIR / "node_modules")
    for package in ("server-filesystem", "inspector"):
        if not (modules / "@modelcontextprotocol" / package).is_dir():
            pytest.skip(f"@modelcontextprotocol/{package} is not installed: run scripts/setup-node.sh")
    return modules


def fs_config(tmp_path: Path, **top: Any) -> tuple[Path, Path]:
    """The seed's example configuration (docs "Configuration"): the proxy's files in proxy/,
    the server's root sandbox/ beside it holding none of them. ``hold`` 0s so an approval
    answers at once."""
    node, modules = node_bin(), node_modules()
    proxy_dir, sandbox = tmp_path / "proxy", tmp_path / "sandbox"
    proxy_dir.mkdir()
    sandbox.mkdir()
    (sandbox / "note.txt").write_text("hello from the sandbox\n")
    server = str(modules / "@modelcontextprotocol" / "server-filesystem" / "dist" / "index.js")
    document = {
        "database": "proxy.db",
        "session": "laptop",
        "policy": {"local_mutation": "require_approval"},
        "servers": [
            {
                "name": "fs",
                "command": [node, server, str(sandbox)],
                "connect_timeout": "30s",
                "default_timeout": "5s",
                "manifest": "fs.manifest.json",
                "rules": {
                    "read_text_file": {"side_effect": "read_only", "timeout": "5s"},
                    "list_directory": {"side_effect": "read_only", "timeout": "5s"},
                    "write_file": {"side_effect": "local_mutation", "timeout": "10s", "allow_hint_mismatch": True},
                },
            }
        ],
        **top,
    }
    config = proxy_dir / "proxy.json"
    config.write_text(json.dumps(document, indent=2))
    config.chmod(0o600)
    return config, sandbox


def test_the_npm_filesystem_server_pins_and_checks_as_the_docs_say(tmp_path: Path) -> None:
    config, _sandbox = fs_config(tmp_path)
    pinned = run_program(["pin", "-config", str(config)])
    assert pinned.returncode == 0, pinned.stderr
    assert "server fs: 14 tools pinned in" in pinned.stdout.lower()
    manifest = json.loads((config.parent / "fs.manifest.json").read_text())
    assert (config.parent / "fs.manifest.json").stat().st_mode & 0o777 == 0o600
    assert sorted(manifest_tool_names(manifest)) == FS_TOOLS

    checked = run_program(["check", "-config", str(config)])
    assert checked.returncode == 0, checked.stderr
    lines = checked.stdout.splitlines()
    assert "fs: registered list_directory as fs_list_directory (read_only)" in lines
    assert "fs: registered read_text_file as fs_read_text_file (read_only)" in lines
    (write,) = [line for line in lines if line.startswith("fs: registered write_file ")]
    assert write.startswith("fs: registered write_file as fs_write_file (local_mutation) [hint mismatch allowed:")
    unclassified = [line for line in lines if line.startswith("fs: unclassified ")]
    assert unclassified == [
        f"fs: unclassified {name}: no rule"
        for name in FS_TOOLS
        if name not in ("list_directory", "read_text_file", "write_file")
    ]
    assert len(unclassified) == 11


def manifest_tool_names(manifest: Any) -> list[str]:
    tools = manifest.get("tools") if isinstance(manifest, dict) else manifest
    if isinstance(tools, dict):
        return list(tools)
    return [tool["name"] for tool in tools]


@pytest.mark.anyio
@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_a_python_sdk_host_reads_the_sandbox_through_the_program(
    tmp_path: Path, mode: str, program_argv: list[str], program_env: dict[str, str]
) -> None:
    config, sandbox = fs_config(tmp_path, hold="0s")
    assert run_program(["pin", "-config", str(config)]).returncode == 0
    params = StdioServerParameters(
        command=program_argv[0], args=[*program_argv[1:], "serve", "-config", str(config)], env=program_env
    )
    began = time.monotonic()
    with anyio.fail_after(60):
        async with Client(params, mode=mode) as client:
            connected = time.monotonic() - began
            listed = await client.list_tools()
            assert sorted(tool.name for tool in listed.tools) == SERVED
            listing = await client.call_tool("fs_list_directory", {"path": str(sandbox)})
            assert not is_error(listing) and "note.txt" in text_of(listing)
            read = await client.call_tool("fs_read_text_file", {"path": str(sandbox / "note.txt")})
            assert not is_error(read) and "hello from the sandbox" in text_of(read)
            write = await client.call_tool("fs_write_file", {"path": str(sandbox / "new.txt"), "content": "x"})
            assert "PENDING_APPROVAL" in text_of(write), text_of(write)
    assert connected < 8, f"connecting took {connected:.1f}s (a 10 s stall is the discover fallback)"
    assert not (sandbox / "new.txt").exists()
    assert sorted(p.name for p in sandbox.iterdir()) == ["note.txt"]


def inspector(args: list[str], program_argv: list[str], program_env: dict[str, str], tmp_path: Path) -> Any:
    """`npx mcp-inspector --cli -q --format json <options> <our program> serve ...`: one JSON answer."""
    node = node_bin()
    node_modules()
    env = dict(os.environ)
    env["PATH"] = os.pathsep.join([str(Path(node).parent), env.get("PATH", "")])
    env["MCP_CATALOG_PATH"] = str(tmp_path / "inspector-catalog.json")
    env["MCP_CLIENT_CONFIG_PATH"] = str(tmp_path / "inspector-client.json")
    extra = ["-e", f"PYTHONPATH={program_env['PYTHONPATH']}"] if "PYTHONPATH" in program_env else []
    began = time.monotonic()
    proc = subprocess.run(
        ["npx", "--no-install", "mcp-inspector", "--cli", "-q", "--format", "json", *extra, *args, *program_argv],
        cwd=NODE_DIR, env=env, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    took = time.monotonic() - began
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert took < 8, f"the Inspector took {took:.1f}s (a 10 s stall is the discover fallback)"
    return json.loads(proc.stdout)


def test_the_typescript_sdk_host_lists_and_calls_through_the_inspector_cli(
    tmp_path: Path, program_argv: list[str], program_env: dict[str, str]
) -> None:
    config = write_config(tmp_path)
    assert run_program(["pin", "-config", str(config)]).returncode == 0
    serve = [*program_argv, "serve", "-config", str(config)]
    listed = inspector(["--method", "tools/list"], serve, program_env, tmp_path)
    names = sorted(tool["name"] for tool in listed["result"]["tools"])
    assert names == ["bank_balance", "bank_pay", "bank_refund", "gate_status"]
    called = inspector(
        ["--method", "tools/call", "--tool-name", "bank_balance", "--tool-args-json", '{"account":"x"}'],
        serve, program_env, tmp_path,
    )  # fmt: skip
    assert called["result"]["isError"] is False
    assert called["result"]["content"] == [{"type": "text", "text": "account x holds 120.00 EUR"}]


if __name__ == "__main__":  # pragma: no cover
    sys.exit(pytest.main([__file__, "-q"]))
