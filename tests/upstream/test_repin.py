"""Pinning again, bound to the review (issue 15, items 1 and 2), with a fake wire: a bare ``pin``
never takes a change silently, ``-accept -tools`` takes only the named tools' changes, and a new
tool on a pinned server is shown in full by ``check`` and never offered until pinned."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

from agentrt_proxy.cli import _pin as pin
from agentrt_proxy.upstream import LiveTool, live_tool, read_manifest
from tests.upstream.test_pin_and_check import BANK, FakeConnection, FakeWire, bank_rules, pin_all, write_config

PAY_WIDER = live_tool(
    "pay", "Send a payment.", {"destructiveHint": False}, '{"type":"object","properties":{"to":{},"memo":{}}}'
)
BALANCE_SAFER = live_tool("balance", "Report an account's balance.", {"readOnlyHint": True, "openWorldHint": False},
                          '{"type":"object"}')  # fmt: skip
EXPORT = live_tool("export", "Export every account to a URL.", None, '{"type":"object","properties":{"url":{}}}')


class ListingWire(FakeWire):
    """A fake wire whose connections keep their listing, as a real one does (what check reviews)."""

    def __call__(self, server: Any) -> Any:
        async def connect(timeout: float) -> tuple[FakeConnection, list[LiveTool]]:
            connection = FakeConnection(server.name)
            connection.tools = self.listings[server.name]  # type: ignore[attr-defined]
            return connection, self.listings[server.name]

        return connect


def changed_bank() -> list:
    return [BALANCE_SAFER, PAY_WIDER, BANK[2]]


def test_a_bare_pin_of_a_changed_server_asks_and_takes_nothing_unless_told_yes(tmp_path: Path) -> None:
    config = write_config(tmp_path, [{"name": "bank", "rules": bank_rules()}])
    pin_all(config, FakeWire({"bank": BANK}))
    before = (tmp_path / "bank.json").read_text()
    asked: list[str] = []

    def say(answer: bool):  # type: ignore[no-untyped-def]
        def ask(question: str) -> bool:
            asked.append(question)
            return answer

        return ask

    out, err = io.StringIO(), io.StringIO()
    wire = FakeWire({"bank": changed_bank()})
    code = pin.pin_command(["-config", str(config)], stdout=out, stderr=err, connector=wire, ask=say(False))
    assert code == 1 and (tmp_path / "bank.json").read_text() == before
    assert asked == ['pin these changes to server "bank"? [y/N] ']
    assert "hint flipped (claims to be safer)" in out.getvalue() and "-accept bank -expect sha256:" in out.getvalue()
    assert 'server "bank" changed since its pin and was not pinned again' in err.getvalue()

    code = pin.pin_command(["-config", str(config)], stdout=io.StringIO(), connector=FakeWire({"bank": changed_bank()}),
                           ask=say(True))  # fmt: skip
    assert code == 0
    assert read_manifest(tmp_path / "bank.json").tools["balance"].annotations == {
        "openWorldHint": False, "readOnlyHint": True,
    }  # fmt: skip
    asked.clear()
    assert pin.pin_command(["-config", str(config)], stdout=io.StringIO(), connector=FakeWire({"bank": changed_bank()}),
                           ask=say(False)) == 0  # fmt: skip
    assert asked == []  # nothing changed: nothing to ask


def test_accept_with_tools_takes_only_the_named_tools_changes(tmp_path: Path) -> None:
    config = write_config(tmp_path, [{"name": "bank", "rules": bank_rules()}])
    pin_all(config, FakeWire({"bank": BANK}))
    wire = FakeWire({"bank": changed_bank()})
    shown = io.StringIO()
    assert pin.pin_command(["-config", str(config), "-review", "-json"], stdout=shown, connector=wire) == 0
    [review] = json.loads(shown.getvalue())["servers"]
    assert [(i["name"], i["status"], i["widening"]) for i in review["items"]] == [
        ("balance", "changed", True), ("pay", "changed", False),
    ]  # fmt: skip
    args = ["-config", str(config), "-accept", "bank", "-tools", "pay", "-expect", review["fingerprint"]]
    assert pin.pin_command(args, stdout=io.StringIO(), connector=wire) == 0
    pinned = read_manifest(tmp_path / "bank.json")
    assert b"memo" in pinned.tools["pay"].input_schema  # taken
    assert pinned.tools["balance"].annotations == {"readOnlyHint": True}  # left as pinned


def test_check_shows_a_new_tool_in_full_and_it_is_never_offered(tmp_path: Path) -> None:
    config = write_config(tmp_path, [{"name": "bank", "rules": bank_rules()}])
    pin_all(config, FakeWire({"bank": BANK}))
    out, err = io.StringIO(), io.StringIO()
    wire = ListingWire({"bank": [*BANK, EXPORT]})
    assert pin.check_command(["-config", str(config)], stdout=out, stderr=err, connector=wire) == 0
    text = out.getvalue()
    assert "bank: unpinned export: not in the manifest" in text
    assert "  tool export: new: not pinned, never offered until pinned" in text
    assert "    +Export every account to a URL." in text
    assert '    inputSchema: {"properties":{"url":{}},"type":"object"}' in text
    assert "registered export" not in text
