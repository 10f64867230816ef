"""The host session declares ``logging`` and honours ``logging/setLevel``: log messages the proxy
relays reach the host only at or above the level it chose; before any choice, all of them."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from agentrt_proxy.mcp.levels import LOG_LEVELS, passes_level
from tests.mcp.test_host_session import Harness, init

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def set_level(msg_id: int, level: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": msg_id, "method": "logging/setLevel", "params": {"level": level}}


@pytest.mark.parametrize(
    ("level", "threshold", "passes"),
    [
        ("debug", None, True),
        ("emergency", None, True),
        ("debug", "info", False),
        ("info", "info", True),
        ("warning", "error", False),
        ("critical", "error", True),
        ("emergency", "emergency", True),
        ("alert", "emergency", False),
        ("loud", None, False),  # no client could read it
        (None, None, False),
    ],
)
def test_a_message_passes_at_or_above_the_chosen_level(level: Any, threshold: str | None, passes: bool) -> None:
    assert passes_level(level, threshold) is passes


async def send_every_level(h: Harness) -> None:
    for n, level in enumerate(LOG_LEVELS):
        await h.session.notify("notifications/message", {"level": level, "logger": "fs", "data": n})


def logged(messages: list[Any]) -> list[str]:
    return [m["params"]["level"] for m in messages if m.get("method") == "notifications/message"]


async def test_before_set_level_every_message_goes_and_after_it_only_those_at_or_above() -> None:
    h = Harness()
    async with anyio.create_task_group() as tg:
        tg.start_soon(h.session.run)
        await send_every_level(h)  # before initialize: nothing may go to the host
        await h.write(init())
        await h.wait_for(1)
        await send_every_level(h)
        await h.write(set_level(2, "error"))
        answered = await h.wait_for(10)
        await send_every_level(h)
        messages = await h.wait_for(14)
        await h.close_input()
    assert logged(answered) == list(LOG_LEVELS)
    assert answered[9] == {"jsonrpc": "2.0", "id": 2, "result": {}}
    assert logged(messages[10:]) == ["error", "critical", "alert", "emergency"]
    assert h.session.log_level == "error"


async def test_a_set_level_without_a_known_level_or_before_initialize_is_refused() -> None:
    h = Harness()
    async with anyio.create_task_group() as tg:
        tg.start_soon(h.session.run)
        await h.write(set_level(1, "info"))
        await h.wait_for(1)
        await h.write(init(msg_id=2), set_level(3, "loud"), set_level(4, None))
        messages = {m["id"]: m for m in await h.wait_for(4)}
        await h.close_input()
    assert messages[1]["error"]["code"] == -32600
    assert messages[3]["error"]["code"] == -32602 and "one of: debug, info" in messages[3]["error"]["message"]
    assert messages[4]["error"]["code"] == -32602
    assert h.session.log_level is None  # nothing was chosen: every message still goes
    assert messages[2]["result"]["capabilities"]["logging"] == {}
