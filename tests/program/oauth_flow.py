"""What the OAuth program tests share: a configuration for the test world, ``login`` run as an
operator runs it (``-no-browser``, the URL it prints followed with urllib, as a browser would),
and a host over the SDK's stdio client whose standard error is kept."""

from __future__ import annotations

import json
import subprocess
import urllib.error
import urllib.request
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from tests.conftest import checked_target, target_argv, target_env
from tests.fixtures.oauth_world import World

RULES = {
    "read_note": {"side_effect": "read_only", "timeout": "20s"},
    "send": {"side_effect": "remote_mutation", "outcome": "allow", "timeout": "20s"},
}


def write_config(directory: Path, world: World, auth: dict[str, Any] | None = None) -> Path:
    server: dict[str, Any] = {
        "name": "notes",
        "endpoint": world.endpoint,
        "connect_timeout": "20s",
        "manifest": "notes.manifest.json",
        "rules": RULES,
    }
    if auth is not None:
        server["auth"] = auth
    document = {"database": "proxy.db", "session": "laptop", "hold": "0s", "servers": [server]}
    path = directory / "proxy.json"
    path.write_text(json.dumps(document, indent=2))
    path.chmod(0o600)
    return path


@dataclass
class Login:
    returncode: int
    stdout: str
    stderr: str
    url: str | None
    callback_status: int | None


def follow(url: str) -> int:
    """Open ``url`` as a browser would (the redirect to the callback followed); the last status."""
    try:
        with urllib.request.urlopen(url, timeout=30) as resp:
            return int(resp.status)
    except urllib.error.HTTPError as err:
        return int(err.code)


def login(config: Path, *, before: Any = None, env: dict[str, str] | None = None, server: str = "notes") -> Login:
    """``login -config FILE SERVER -no-browser``; the printed URL is followed (``before(url)`` first)."""
    argv = [*target_argv(checked_target()), "login", "-config", str(config), server, "-no-browser"]
    proc = subprocess.Popen(
        argv,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=target_env(checked_target(), env),
    )
    assert proc.stdout is not None
    lines: list[str] = []
    url = None
    status = None
    for line in proc.stdout:
        lines.append(line)
        if line.strip().startswith("http://") and "/authorize?" in line:
            url = line.strip()
            if before is not None:
                before(url)
            status = follow(url)
            break
    out, err = proc.communicate(timeout=60)
    return Login(proc.returncode, "".join(lines) + out, err, url, status)


@asynccontextmanager
async def host(config: Path) -> AsyncIterator[ClientSession]:
    """The SDK's client session over ``serve``; its standard error to ``serve.stderr`` beside the config."""
    argv = target_argv(checked_target())
    params = StdioServerParameters(
        command=argv[0], args=[*argv[1:], "serve", "-config", str(config)], env=target_env(checked_target())
    )
    with (config.parent / "serve.stderr").open("w") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as session:
            with anyio.fail_after(60):
                await session.initialize()
            yield session
