"""Real servers' results through the real program, compared with a direct connection
(issue 13, "shows that it holds"; decision 0015): the npm everything server's image, resource
and structured tools and the npm filesystem server's ``read_media_file`` on a PNG reach an SDK
host with the same blocks and base64 bytes; the listing shows the servers' titles, icons and
output schemas, the operator's class as annotations, the servers' other hints; a result over ``max_result_bytes`` is a
clear error, never a cut result.
"""

from __future__ import annotations

import base64
import json
import re
import sqlite3
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters

from agentrt_proxy.testing.fakebank import TINY_PNG
from tests.conftest import run_program
from tests.program.test_node_peers import node_bin, node_modules

pytestmark = [pytest.mark.program, pytest.mark.timeout(180)]

READ = {"side_effect": "read_only", "timeout": "10s"}
EVERYTHING_CALLS: list[tuple[str, dict[str, Any]]] = [
    ("get-tiny-image", {}),
    ("get-resource-reference", {"resourceType": "Text", "resourceId": 2}),
    ("get-resource-reference", {"resourceType": "Blob", "resourceId": 3}),
    ("get-resource-links", {"count": 4}),
    ("get-structured-content", {"location": "Chicago"}),
]


def everything_command() -> list[str]:
    node, modules = node_bin(), node_modules()
    server = modules / "@modelcontextprotocol" / "server-everything" / "dist" / "index.js"
    if not server.is_file():
        pytest.skip("@modelcontextprotocol/server-everything is not installed: run scripts/setup-node.sh")
    return [node, str(server), "stdio"]


def filesystem_command(sandbox: Path) -> list[str]:
    node, modules = node_bin(), node_modules()
    return [node, str(modules / "@modelcontextprotocol" / "server-filesystem" / "dist" / "index.js"), str(sandbox)]


def write_config(tmp_path: Path, **top: Any) -> tuple[Path, Path]:
    proxy_dir, sandbox = tmp_path / "proxy", tmp_path / "sandbox"
    proxy_dir.mkdir()
    sandbox.mkdir()
    (sandbox / "pixel.png").write_bytes(base64.b64decode(TINY_PNG))
    document = {
        "database": "proxy.db",
        "session": "media",
        "hold": "0s",
        "policy": {"local_mutation": "require_approval"},
        "servers": [
            {
                "name": "every",
                "command": everything_command(),
                "manifest": "every.manifest.json",
                "rules": {name: READ for name, _ in EVERYTHING_CALLS},
            },
            {
                "name": "fs",
                "command": filesystem_command(sandbox),
                "manifest": "fs.manifest.json",
                "rules": {
                    "read_media_file": READ,
                    "write_file": {"side_effect": "local_mutation", "timeout": "10s", "allow_hint_mismatch": True},
                },
            },
        ],
        **top,
    }
    config = proxy_dir / "proxy.json"
    config.write_text(json.dumps(document, indent=2))
    config.chmod(0o600)
    assert run_program(["pin", "-config", str(config)]).returncode == 0
    return config, sandbox


def proxied(config: Path, program_argv: list[str], program_env: dict[str, str]) -> StdioServerParameters:
    return StdioServerParameters(
        command=program_argv[0], args=[*program_argv[1:], "serve", "-config", str(config)], env=program_env
    )


def direct(command: list[str]) -> StdioServerParameters:
    return StdioServerParameters(command=command[0], args=command[1:])


_CREATED = re.compile(r"created at [^\"]*$")


def comparable(result: Any) -> dict[str, Any]:
    """The result as a host holds it, minus the clock: the everything server stamps each
    resource it makes with the time (in its text, or inside its base64 blob)."""
    blocks = []
    for block in result.content:
        dumped = block.model_dump(by_alias=True, exclude_none=True)
        resource = dumped.get("resource")
        if isinstance(resource, dict) and "text" in resource:
            resource["text"] = _CREATED.sub("created at T", resource["text"])
        if isinstance(resource, dict) and "blob" in resource:
            resource["blob"] = _CREATED.sub("created at T", base64.b64decode(resource["blob"]).decode())
        blocks.append(dumped)
    return {"content": blocks, "structured": result.structured_content, "is_error": result.is_error}


async def call_all(params: StdioServerParameters, calls: list[tuple[str, dict[str, Any]]]) -> list[Any]:
    async with Client(params, mode="legacy") as client:
        return [await client.call_tool(name, arguments) for name, arguments in calls]


@pytest.mark.anyio
async def test_the_everything_and_filesystem_servers_results_reach_the_host_as_a_direct_connection_gets_them(
    tmp_path: Path, program_argv: list[str], program_env: dict[str, str]
) -> None:
    config, sandbox = write_config(tmp_path)
    media = ("read_media_file", {"path": str(sandbox / "pixel.png")})
    with anyio.fail_after(120):
        through = await call_all(
            proxied(config, program_argv, program_env),
            [(f"every_{name}", arguments) for name, arguments in EVERYTHING_CALLS] + [(f"fs_{media[0]}", media[1])],
        )
        alone = await call_all(direct(everything_command()), EVERYTHING_CALLS)
        alone += await call_all(direct(filesystem_command(sandbox)), [media])
    for (name, _), via_proxy, straight in zip([*EVERYTHING_CALLS, media], through, alone, strict=True):
        assert comparable(via_proxy) == comparable(straight), name
    image = next(block for block in through[0].content if block.type == "image")
    assert image.data == next(block.data for block in alone[0].content if block.type == "image")  # the same bytes
    assert [block.type for block in through[3].content] == ["text"] + ["resource_link"] * 4
    assert through[4].structured_content == {"temperature": 36, "conditions": "Light rain / drizzle", "humidity": 82}
    (png,) = [block for block in through[5].content if block.type == "image"]
    assert base64.b64decode(png.data) == base64.b64decode(TINY_PNG) and png.mime_type == "image/png"


@pytest.mark.anyio
async def test_the_host_lists_the_servers_titles_and_output_schemas_and_the_hints_the_class_leaves_to_the_server(
    tmp_path: Path, program_argv: list[str], program_env: dict[str, str]
) -> None:
    config, sandbox = write_config(tmp_path)
    with anyio.fail_after(120):
        async with Client(proxied(config, program_argv, program_env), mode="legacy") as client:
            listed = {tool.name: tool for tool in (await client.list_tools()).tools}
            # fs write_file declares an outputSchema and needs an approval: it is offered without
            # the schema, so PENDING_APPROVAL is prose that is no error (issue 25, item 5).
            write = await client.call_tool("fs_write_file", {"path": str(sandbox / "new.txt"), "content": "x"})
        async with Client(direct(everything_command()), mode="legacy") as client:
            servers = {tool.name: tool for tool in (await client.list_tools()).tools}
        async with Client(direct(filesystem_command(sandbox)), mode="legacy") as client:
            servers |= {tool.name: tool for tool in (await client.list_tools()).tools}
    for name, server in servers.items():
        shown = listed.get(f"every_{name}") or listed.get(f"fs_{name}")
        if shown is None:
            continue  # not classified: not offered
        assert shown.title == server.title and shown.title, name
        assert shown.icons == server.icons, name
        side_effect = "local_mutation" if name == "write_file" else "read_only"
        assert shown.output_schema == (None if name == "write_file" else server.output_schema), name
        assert shown.annotations is not None and server.annotations is not None
        hints = shown.annotations.model_dump(by_alias=True, exclude_none=True)
        own = server.annotations
        assert hints == {
            "readOnlyHint": side_effect == "read_only",
            "destructiveHint": False,  # the operator's class, whatever the server claims
            "idempotentHint": bool(own.idempotent_hint),
            "openWorldHint": own.open_world_hint if own.open_world_hint is not None else True,
        }, name
    assert listed["every_get-structured-content"].annotations.open_world_hint is False  # the server's own
    assert listed["fs_write_file"].annotations.idempotent_hint is servers["write_file"].annotations.idempotent_hint
    assert listed["every_get-structured-content"].output_schema is not None
    assert write.is_error is False and write.content[0].text.startswith("PENDING_APPROVAL:")
    assert (write.meta or {}).get("gate/outcome") == "PENDING_APPROVAL"
    assert not (sandbox / "new.txt").exists()


@pytest.mark.anyio
async def test_a_result_over_max_result_bytes_is_a_clear_error_naming_its_size_never_a_cut_result(
    tmp_path: Path, program_argv: list[str], program_env: dict[str, str]
) -> None:
    config, _ = write_config(tmp_path, max_result_bytes=1024)
    with anyio.fail_after(120):
        (result,) = await call_all(proxied(config, program_argv, program_env), [("every_get-tiny-image", {})])
    assert result.is_error is True and [block.type for block in result.content] == ["text"]  # no block of it
    (text,) = [block.text for block in result.content]
    assert "over the limit of 1024 bytes (0.0 MiB, max_result_bytes)" in text and "never cut" in text, text
    size = int(text.split("the result is ", 1)[1].split(" bytes", 1)[0])
    assert size > 5000  # the 5 KB image and its two texts, as recorded
    with sqlite3.connect(config.parent / "proxy.db") as db:
        (observation,) = [json.loads(row[0]) for row in db.execute("SELECT observation_json FROM steps") if row[0]]
    assert observation["content"]["failure"] == "invalid_content"  # the server answered: it executed
    assert f"the result is {size} bytes" in observation["content"]["error"]
    assert len(observation["content"]["content"]) <= 4096  # the answer's first bytes, not the result


@pytest.mark.anyio
async def test_an_approved_write_to_the_npm_filesystem_server_runs_once_as_a_task_with_its_own_result(
    tmp_path: Path, program_argv: list[str], program_env: dict[str, str]
) -> None:
    """A real peer behind a task: the filesystem server's write_file (local_mutation, which this
    configuration makes wait for an operator) is called once by a 2026-07-28 host that declared
    the tasks extension; the real ``approve`` lets the proxy execute it; the task completes with
    the server's own answer and the file holds the text once."""
    from agentrt_proxy.store import Store
    from tests.program.task_host import raw_host

    config, sandbox = write_config(tmp_path)
    target = sandbox / "note.txt"
    db = str(config.parent / "proxy.db")
    with anyio.fail_after(120):
        async with raw_host(program_argv, config, program_env) as host:
            created = await host.call("fs_write_file", {"path": str(target), "content": "hello sandbox\n"})
            assert created["resultType"] == "task", created
            assert not target.exists()  # waiting on the operator: nothing written
            store = Store.open_readonly(db)
            try:
                with store.read() as conn:
                    run_id, approval_id = conn.execute(
                        "SELECT run_id, id FROM approvals WHERE status = 'pending'").fetchone()
            finally:
                store.close()
            approved = await anyio.to_thread.run_sync(lambda: run_program(
                ["approve", "-db", db, run_id, "-approval", approval_id, "-by", "tester", "-yes"], timeout=30))
            assert approved.returncode == 0, approved.stderr
            done = await host.until_terminal(created["taskId"], timeout=60)
    assert done["status"] == "completed", done
    assert not done["result"].get("isError"), done
    assert "note.txt" in json.dumps(done["result"]["content"])  # the server's own words about the write
    assert target.read_text() == "hello sandbox\n"
    assert host.sent_requests("tools/call") == 1
