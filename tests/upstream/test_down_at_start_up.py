"""A server that does not answer at start-up (issue 13, item 5), with a fake wire: its tools are
offered from its manifest exactly as a matching listing would offer them, and answer not-sent;
what the configuration must fix stays fatal; ``check`` fails naming it.
"""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import anyio
import pytest

from agentrt_proxy.cli import _pin as pin
from agentrt_proxy.config import load_config
from agentrt_proxy.mcp.outcomes import NotSent
from agentrt_proxy.upstream import OpenError, open_servers
from tests.upstream.test_pin_and_check import BANK, FakeConnection, FakeWire, bank_rules, pin_all, write_config

SERVERS = [
    {"name": "bank", "rules": bank_rules()},
    {"name": "shop", "rules": bank_rules(refund={"side_effect": "destructive"})},
]


class HalfDownWire(FakeWire):
    """The fake wire, except that the servers named in ``down`` refuse to connect, counted."""

    def __init__(self, down: set[str]) -> None:
        super().__init__({"bank": BANK, "shop": BANK})
        self.down = down
        self.refused: list[str] = []

    def __call__(self, server: Any) -> Any:
        connect = super().__call__(server)

        async def maybe(timeout: float) -> tuple[FakeConnection, Any]:
            if server.name in self.down:
                self.refused.append(server.name)
                raise ConnectionRefusedError(f'mcp: server "{server.name}": connect: connection refused')
            return await connect(timeout)

        return maybe


def pinned(tmp_path: Path) -> tuple[Path, HalfDownWire]:
    config_path = write_config(tmp_path, [dict(server) for server in SERVERS])
    wire = HalfDownWire(set())
    pin_all(config_path, wire)
    return config_path, wire


def test_a_down_server_is_offered_from_its_manifest_as_a_matching_listing_would_offer_it(tmp_path: Path) -> None:
    config_path, wire = pinned(tmp_path)
    config = load_config(config_path)
    live = anyio.run(lambda: open_servers(config, connector=wire))
    anyio.run(live.aclose)

    wire.down = {"shop"}
    opened = anyio.run(lambda: open_servers(config, connector=wire, keep_down=True))
    try:
        assert [tool.name for tool in opened.tools] == [tool.name for tool in live.tools]
        for offered, listed in zip(opened.tools, live.tools, strict=True):  # the same to the host and the gate
            assert (offered.schema_text, offered.description, offered.spec) == (
                listed.schema_text,
                listed.description,
                listed.spec,
            )
        assert [report.server for report in opened.reports] == ["bank"]
        [down] = opened.down
        assert down.server == "shop" and down.error == 'mcp: server "shop": connect: connection refused'
        assert [s.name for s in opened.connections] == ["bank", "shop"]
        assert [s.up for s in opened.connections] == [True, False]

        shop_pay = opened.by_name()["shop_pay"]
        outcome = anyio.run(lambda: shop_pay.call('{"to":"kim"}'))
        assert isinstance(outcome, NotSent) and outcome.detail.startswith('server "shop" is down')
        assert wire.refused == ["shop"]  # no supervision started: nothing is retried
    finally:
        anyio.run(opened.aclose)


def test_without_keep_down_a_server_that_does_not_answer_fails_the_open(tmp_path: Path) -> None:
    config_path, wire = pinned(tmp_path)
    wire.down = {"shop"}
    with pytest.raises(OpenError, match=r'^mcp: server "shop": connect: connection refused$'):
        anyio.run(lambda: open_servers(load_config(config_path), connector=wire))
    assert all(connection.closed for connection in wire.connections)


def test_what_the_configuration_must_fix_stays_fatal_with_the_server_down(tmp_path: Path) -> None:
    config_path, wire = pinned(tmp_path)
    wire.down = {"shop"}
    document = json.loads(config_path.read_text())
    document["servers"][1]["rules"]["transfer"] = {"side_effect": "remote_mutation"}  # not pinned
    config_path.write_text(json.dumps(document))
    with pytest.raises(OpenError, match="rules name tools the manifest does not pin: transfer"):
        anyio.run(lambda: open_servers(load_config(config_path), connector=wire, keep_down=True))
    del document["servers"][1]["rules"]["transfer"]
    config_path.write_text(json.dumps(document))
    (tmp_path / "shop.json").unlink()
    with pytest.raises(OpenError, match=r'^server "shop": manifest: .*shop\.json: No such file or directory$'):
        anyio.run(lambda: open_servers(load_config(config_path), connector=wire, keep_down=True))
    assert all(connection.closed for connection in wire.connections)


def test_check_reports_the_servers_that_answered_and_fails_naming_the_one_down(tmp_path: Path) -> None:
    config_path, wire = pinned(tmp_path)
    wire.down = {"shop"}
    out, err = io.StringIO(), io.StringIO()
    assert pin.check_command(["-config", str(config_path)], stdout=out, stderr=err, connector=wire) == 1
    assert out.getvalue().splitlines() == [
        "bank: registered balance as bank_balance (read_only)",
        "bank: registered pay as bank_pay (remote_mutation)",
        "bank: unclassified refund: no rule",
    ]
    assert err.getvalue() == (
        'agentrt-proxy: error: server "shop" is down: mcp: server "shop": connect: connection refused\n'
    )
    assert all(connection.closed for connection in wire.connections)
