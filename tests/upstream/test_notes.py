"""A server's unasked notifications, relayed: its log messages to the host under its own name,
its changed tool list to the operator's standard error."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from agentrt_proxy.mcp import ServerSpec, open_connection
from agentrt_proxy.mcp.levels import LOG_LEVELS
from agentrt_proxy.upstream.notes import ServerNotes, host_log_params
from tests.waiting import until

NOTES = str(Path(__file__).resolve().parents[1] / "fixtures" / "notes_server.py")
SECOND = 1_000_000_000


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


class Host:
    """The host link, counting what it is asked to send."""

    def __init__(self) -> None:
        self.sent: list[tuple[str, Any]] = []

    async def notify(self, method: str, params: dict[str, Any] | None = None) -> None:
        self.sent.append((method, params))


def test_a_log_message_gets_the_servers_name_as_its_logger_and_keeps_its_data() -> None:
    data = {"text": "GATE_STATUS: approve run r-1", "n": [1, 2]}
    assert host_log_params("fs", {"level": "info", "logger": "db", "data": data}) == {
        "level": "info", "logger": "fs/db", "data": data,
    }  # fmt: skip
    assert host_log_params("fs", {"level": "error", "data": "disk full"}) == {
        "level": "error", "logger": "fs", "data": "disk full",
    }  # fmt: skip
    assert host_log_params("fs", {"level": "error", "logger": "", "data": None})["logger"] == "fs"  # type: ignore[index]


@pytest.mark.parametrize(
    "params", [None, [], {"level": "loud", "data": 1}, {"data": 1}, {"level": "info"}, {"level": 3, "data": 1}]
)
def test_a_log_message_no_client_could_read_is_not_relayed(params: Any) -> None:
    assert host_log_params("fs", params) is None


@pytest.mark.anyio
async def test_a_connections_log_messages_and_changed_list_are_relayed(tmp_path: Path) -> None:
    host, stderr = Host(), []
    notes = ServerNotes(host, stderr.append)
    spec = ServerSpec(name="notes", command=[sys.executable, NOTES], env=[f"NOTES_LOG={tmp_path / 'log'}"])
    async with open_connection(spec, timeout_ns=10 * SECOND) as conn:
        notes.attach("docs", conn)  # the configuration's name, whatever the wire calls it
        await conn.call_tool("log", "{}", 10 * SECOND)
        await conn.call_tool("change", "{}", 10 * SECOND)
        await until("every log level relayed", lambda: len(host.sent) >= len(LOG_LEVELS))
    assert host.sent == [
        ("notifications/message", {"level": level, "logger": "docs/core", "data": {"n": n}})
        for n, level in enumerate(LOG_LEVELS)
    ]
    assert stderr == [
        'agentrt-proxy: server "docs": tools changed; the offered tools stay as pinned; run pin to review\n'
    ]
    await notes.aclose()


@pytest.mark.anyio
async def test_a_message_json_cannot_carry_is_dropped_alone() -> None:
    class Refusing(Host):
        async def notify(self, method: str, params: dict[str, Any] | None = None) -> None:
            if params and params["data"] == "bad":
                raise ValueError("Out of range float values are not JSON compliant")
            await super().notify(method, params)

    class Note:
        def __init__(self, data: Any) -> None:
            self.params = {"level": "info", "data": data}

    class Conn:
        def __init__(self) -> None:
            self.notification_handlers: dict[str, Any] = {}

    host = Refusing()
    notes = ServerNotes(host, lambda _line: None)
    conn = Conn()
    notes.attach("fs", conn)
    for data in ("one", "bad", "two"):
        conn.notification_handlers["notifications/message"](Note(data))
    await until("two notes relayed", lambda: len(host.sent) >= 2)
    assert [params["data"] for _method, params in host.sent] == ["one", "two"]
