"""Big files through the npm filesystem server and the real program (issue 25, item 4).

The server sends a file's text twice (a text block and ``structuredContent.content``). With the
documented limits (``max_result_bytes`` 32 MiB as recorded, the text once; ``max_message_bytes``
80 MiB a line), a 5 MiB and a 20 MiB file reach the host whole, never cut, and are recorded with
their text once; a 100 MiB file (a line of about 200 MiB) is a clear error naming its size and
the setting. The server is never restarted for any of them (its pid, read from the proxy's
process tree, is unchanged), and an approved write right after executes.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.conftest import run_program
from tests.program.task_host import raw_host
from tests.program.test_results_through_peers import filesystem_command

pytestmark = [pytest.mark.program, pytest.mark.anyio, pytest.mark.timeout(600)]

MIB = 1 << 20
LINE = "line {:08d} of a big text file, read whole and written back\n"


def big_text(size: int) -> str:
    count = size // len(LINE.format(0))
    return "".join(LINE.format(n) for n in range(count))


def configuration(tmp_path: Path) -> tuple[Path, Path]:
    sandbox = tmp_path / "sandbox"
    sandbox.mkdir()
    document = {
        "database": "proxy.db",
        "session": "files",
        "hold": "0s",
        "policy": {"local_mutation": "require_approval"},
        "servers": [
            {
                "name": "fs",
                "command": filesystem_command(sandbox),
                "manifest": "fs.manifest.json",
                "rules": {
                    "read_text_file": {"side_effect": "read_only", "timeout": "120s"},
                    "write_file": {"side_effect": "local_mutation", "timeout": "30s", "allow_hint_mismatch": True},
                },
            }
        ],
    }
    config = tmp_path / "proxy.json"
    config.write_text(json.dumps(document, indent=2))
    config.chmod(0o600)
    pinned = run_program(["pin", "-config", str(config)], timeout=60)
    assert pinned.returncode == 0, pinned.stderr
    return config, sandbox


def children(pid: int) -> list[int]:
    found = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        found += [int(child) for child in (task / "children").read_text().split()]
    return found


def server_pid(proxy_pid: int) -> int:
    """The filesystem server: the proxy's child whose command line names it."""
    (pid,) = [
        child for child in children(proxy_pid) if b"server-filesystem" in Path(f"/proc/{child}/cmdline").read_bytes()
    ]
    return pid


def observation_sizes(db: Path) -> list[int]:
    with sqlite3.connect(db) as conn:
        return [
            row[0]
            for row in conn.execute(
                "SELECT length(CAST(observation_json AS BLOB)) FROM steps"
                ' WHERE instr(observation_json, \'"form":"call_tool_result"\') > 0 ORDER BY rowid'
            )
        ]


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="reads the process tree from /proc")
async def test_5_and_20_mib_files_arrive_whole_100_mib_is_a_clear_error_and_the_server_is_never_restarted(
    tmp_path: Path, program_argv: list[str], program_env: dict[str, str]
) -> None:
    config, sandbox = configuration(tmp_path)
    texts = {size: big_text(size * MIB) for size in (5, 20)}
    for size, text in texts.items():
        (sandbox / f"{size}.txt").write_text(text)
    with (sandbox / "100.txt").open("w") as out:
        chunk = big_text(10 * MIB)
        for _ in range(10):
            out.write(chunk)
    target = sandbox / "written.txt"
    answers: dict[int, Any] = {}
    with anyio.fail_after(540):
        async with raw_host(program_argv, config, program_env, era="2025-11-25", tasks=False) as host:
            before = server_pid(host.process.pid)
            for size in (5, 20, 100):
                answers[size] = await host.request(
                    "tools/call",
                    {"name": "fs_read_text_file", "arguments": {"path": str(sandbox / f"{size}.txt")}},
                    timeout=300,
                )
                assert server_pid(host.process.pid) == before, size  # the same server process
            waiting = await host.call("fs_write_file", {"path": str(target), "content": "written after\n"})
            assert waiting["content"][0]["text"].startswith("PENDING_APPROVAL:"), waiting
            db = str(config.parent / "proxy.db")
            with sqlite3.connect(db) as conn:
                run_id, approval_id = conn.execute(
                    "SELECT run_id, id FROM approvals WHERE status = 'pending'"
                ).fetchone()
            approved = await anyio.to_thread.run_sync(
                lambda: run_program(
                    ["approve", "-db", db, run_id, "-approval", approval_id, "-by", "tester", "-yes"], timeout=60
                )
            )
            assert approved.returncode == 0, approved.stderr
            written = await host.call("fs_write_file", {"path": str(target), "content": "written after\n"})
            assert server_pid(host.process.pid) == before
    for size, text in texts.items():
        result = answers[size]["result"]
        assert result.get("isError") is False, size
        assert [block["text"] for block in result["content"]] == [text], size  # whole, never cut
        assert result["structuredContent"] == {"content": text}, size
    refused = answers[100]["result"]
    assert refused["isError"] is True, refused
    message = refused["content"][0]["text"]
    assert "max_message_bytes" in message and "skipped, not read" in message, message
    size = int(message.split("the answer is ", 1)[1].split(" bytes", 1)[0])
    assert size > 200 * 1000 * 1000, message  # the file's 100 MiB, twice
    assert written.get("isError") is False and target.read_text() == "written after\n", written
    # Recorded with the text once: each read's observation is about the file, not twice it.
    recorded = observation_sizes(tmp_path / "proxy.db")
    assert len(recorded) == 3  # the two reads and the write
    for length, size in zip(recorded, (5, 20), strict=False):
        assert size * MIB < length < 1.2 * size * MIB, (length, size)
