"""What the console's read-only pages read besides the database: the manifests' scan records
and the configured budgets (cli/_console_read.py), from files a test writes."""

from __future__ import annotations

from pathlib import Path

from agentrt_proxy.cli import _console_read as console_read
from agentrt_proxy.config import load_config
from agentrt_proxy.store import Store
from agentrt_proxy.upstream import write_manifest
from agentrt_proxy.upstream.pins import Manifest, ScanRecord
from tests.program.test_serve_process import write_config

FINDING = {"rule": "hidden-instructions", "severity": "hard", "field": "description", "span": "ignore \u202e all"}


def test_a_tool_the_scan_refused_at_the_pin_is_listed_with_its_rule_and_escaped_span(tmp_path: Path) -> None:
    config = load_config(str(write_config(tmp_path)), expand_env=False)
    manifest = Manifest("bank", "2026-01-01T00:00:00Z", {}, scan=ScanRecord(refused={"steal": (FINDING,)}))
    write_manifest(config.servers[0].manifest, manifest)
    rows, trouble = console_read.refused_tools(config)
    assert rows == [["bank", "steal", "hidden-instructions", "description: ignore \\u{202e} all"]] and trouble == []


def test_an_unreadable_manifest_is_said_and_the_rest_still_listed(tmp_path: Path) -> None:
    config = load_config(str(write_config(tmp_path)), expand_env=False)
    rows, trouble = console_read.refused_tools(config)  # never pinned: no manifest file
    assert rows == [] and len(trouble) == 1 and trouble[0].startswith("server bank: its manifest cannot be read")


def test_each_configured_budget_shows_its_limit_and_window_beside_nothing_spent(tmp_path: Path) -> None:
    budgets = [
        {"name": "daily", "tools": ["bank_pay"], "limit": 100, "window": "24h"},
        {"name": "ever", "tools": ["bank_pay"], "limit": 2.5},
    ]
    config = load_config(str(write_config(tmp_path, budgets=budgets)), expand_env=False)
    store = Store.open(str(tmp_path / "proxy.db"))
    try:
        assert console_read.budgets(store, config) == [
            ["daily", "0", "0", "100", "86400s"],
            ["ever", "0", "0", "2.5", "lifetime"],
        ]
    finally:
        store.close()


HOSTILE_DETAIL = "the description changed since the pin; <script>alert(1)</script> \u202e\x1b[2J" + "d" * 2000


def test_a_withheld_tool_is_listed_escaped_and_bounded_as_show_escapes_and_the_page_never_carries_it_raw(
    tmp_path: Path,
) -> None:
    from agentrt_proxy.cli import _console_pages as console_pages

    store = Store.open(str(tmp_path / "proxy.db"))
    try:
        store.withheld.observe("wx", ["weather", "radar"], {"weather": ("changed-since-pin", HOSTILE_DETAIL),
                                                            "radar": ("removed-upstream", "gone")},
                               session="laptop", now_ns=1_700_000_000_000_000_000)  # fmt: skip
        store.withheld.observe("wx", ["radar"], {}, session="laptop", now_ns=1_700_000_001_000_000_000)
        now, cleared = console_read.withheld_now(store), console_read.withheld_cleared(store)
    finally:
        store.close()
    [row] = now
    assert row[:3] == ["wx", "weather", "changed-since-pin"] and row[6] == "laptop"
    assert "\\u{202e}" in row[3] and "\x1b" not in row[3] and "bytes" in row[3]  # escaped, the rest counted
    assert len(row[3].encode()) < console_read.WITHHELD_DETAIL_BYTES + 100
    assert [c[:3] for c in cleared] == [["wx", "radar", "removed-upstream"]]
    page = console_pages.tools_page(now, cleared, console_read.CLEARED_SHOWN, [], [])
    assert "<script>alert" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert page.count('<section class="withheld"><h2>') == 1 and page.count("<tr><td>wx</td>") == 2
