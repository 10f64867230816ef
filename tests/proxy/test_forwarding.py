"""The relay of a server's sampling and elicitation (proxy/_forwarding, issue 25, item 7), against a
host that declares what a test says and a real store: what the server is answered, what is
recorded, and what taints the process for clean-context tools."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest

from agentrt_proxy.canonical.clock import WALL
from agentrt_proxy.proxy._forwarding import Forwarding
from agentrt_proxy.proxy._guarded import UntrustedSource
from agentrt_proxy.store import Store

pytestmark = pytest.mark.anyio

SAMPLED = {"result": {"role": "assistant", "content": {"type": "text", "text": "ok"}, "model": "m"}}


class Host:
    def __init__(self, *declared: str) -> None:
        self.declared = declared
        self.asked: list[str] = []

    def declares(self, capability: str) -> bool:
        return capability in self.declared

    async def request(self, method: str, params: Any, timeout: float) -> dict[str, Any]:
        self.asked.append(method)
        return SAMPLED if method == "sampling/createMessage" else {"result": {"action": "decline"}}


def events(db: Path) -> list[tuple[str, str]]:
    store = Store.open_readonly(str(db))
    try:
        with store.read() as conn:
            rows = conn.execute(
                "SELECT r.status, e.type FROM events e JOIN runs r ON r.id = e.run_id"
                " WHERE e.type LIKE 'passthrough.%' ORDER BY e.rowid"
            ).fetchall()
    finally:
        store.close()
    return [(row[0], row[1]) for row in rows]


@pytest.mark.parametrize(
    ("declared", "method", "asked", "tainted"),
    [
        (("sampling",), "sampling/createMessage", ["sampling/createMessage"], True),
        (("sampling",), "elicitation/create", [], False),  # not declared: refused, nothing sent
        (("elicitation",), "elicitation/create", ["elicitation/create"], False),  # a person answers
        ((), "sampling/createMessage", [], False),  # nothing went before the host's model
    ],
)
async def test_a_request_goes_to_the_host_only_when_it_declared_the_capability(
    tmp_path: Path, declared: tuple[str, ...], method: str, asked: list[str], tainted: bool
) -> None:
    store = Store.open(str(tmp_path / "db"))
    host = Host(*declared)
    untrusted = UntrustedSource(frozenset({"web"}))
    forwarding = Forwarding("s", store, WALL, host, untrusted, lambda _line: None)  # type: ignore[arg-type]
    try:
        answer = await forwarding.relay("web", method, {"x": 1})
    finally:
        store.close()
    assert host.asked == asked
    if asked:
        assert "result" in answer
    else:
        capability = method.split("/")[0].replace("createMessage", "")
        assert (
            answer["error"]["code"] == -32601 and f"declared no {capability} capability" in answer["error"]["message"]
        )
    assert events(tmp_path / "db") == [("COMPLETED" if asked else "FAILED", "passthrough.server_request")]
    assert (untrusted.source is not None) == tainted
    if tainted:
        assert untrusted.source == {
            "server": "web",
            "tool": "sampling/createMessage from web to the host",
            "run_id": untrusted.source["run_id"],
        }


async def test_an_answer_that_cannot_be_recorded_is_withheld_from_the_server(tmp_path: Path) -> None:
    store = Store.open(str(tmp_path / "db"))
    store.close()  # every write now fails as the store's error
    lines: list[str] = []
    forwarding = Forwarding("s", store, WALL, Host("sampling"), None, lines.append)  # type: ignore[arg-type]
    with anyio.fail_after(10):
        answer = await forwarding.relay("web", "sampling/createMessage", None)
    assert answer == {
        "error": {
            "code": -32603,
            "message": "the relayed request could not be recorded, so the host's answer is withheld",
        }
    }
    assert len(lines) == 1 and "sampling/createMessage from web to the host: not recorded" in lines[0]
