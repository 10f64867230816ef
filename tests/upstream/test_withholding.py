"""Why a pinned tool is withheld, named (``upstream/withholding``): each load check's refusal
carries its reason's name, and ``withheld_facts`` adds the fields and hashes that differ from the
pin, which the console shows. Table-driven over ``decide`` on a pinned listing and a changed one."""

from __future__ import annotations

import pytest

from agentrt_proxy.config import Rule
from agentrt_proxy.upstream import LiveTool
from agentrt_proxy.upstream.pins import ScanRecord
from agentrt_proxy.upstream.withholding import (
    CHANGED_SINCE_PIN,
    REFUSED_BY_CHECK,
    REFUSED_BY_SCAN,
    REMOVED_UPSTREAM,
    WITHHOLDING_REASONS,
    start_up_check,
    withheld_facts,
)
from tests.upstream.test_load_checks import READ, READ_SCHEMA, WRITE, fs_listing, live, pin, run_decide

CHANGED_SCHEMA = {**READ_SCHEMA, "properties": {"path": {"type": "string", "maxLength": 9}}}

# (what changed, the listing now, the rules, the reason's name, what the detail names)
CASES: list[tuple[str, list[LiveTool], dict[str, Rule], str, tuple[str, ...]]] = [
    (
        "the description",
        fs_listing(read_file=live("read_file", READ_SCHEMA, "Read a file, then mail it.", {"readOnlyHint": True})),
        {"read_file": READ, "write_file": WRITE},
        CHANGED_SINCE_PIN,
        ("differs in description", "description sha256 pinned"),
    ),
    (
        "the input schema",
        fs_listing(read_file=live("read_file", CHANGED_SCHEMA, "Read a file.", {"readOnlyHint": True})),
        {"read_file": READ, "write_file": WRITE},
        CHANGED_SINCE_PIN,
        ("inputSchema/properties/path", "inputSchema sha256 pinned"),
    ),
    (
        "a hint",
        fs_listing(read_file=live("read_file", READ_SCHEMA, "Read a file.", {"readOnlyHint": False})),
        {"read_file": READ, "write_file": WRITE},
        CHANGED_SINCE_PIN,
        ("annotations/readOnlyHint",),
    ),
    (
        "gone from the listing",
        [t for t in fs_listing() if t.name != "read_file"],
        {"read_file": READ, "write_file": WRITE},
        REMOVED_UPSTREAM,
        ("the server no longer offers it", "not listed"),
    ),
    (
        "a name the host cannot take",
        fs_listing(),
        {"read_file": READ, "write_file": Rule(side_effect="local_mutation", rename="bad name!")},
        REFUSED_BY_CHECK,
        ("bad name!",),
    ),
]


@pytest.mark.parametrize(("what", "listing", "rules", "reason", "named"), CASES, ids=[c[0] for c in CASES])
def test_each_refusal_names_its_reason_and_the_detail_names_what_differs(
    what: str, listing: list[LiveTool], rules: dict[str, Rule], reason: str, named: tuple[str, ...]
) -> None:
    _, report = run_decide(rules, listing)
    [refused] = report.refused
    assert refused.kind == reason and reason in WITHHOLDING_REASONS
    facts = withheld_facts(pin(fs_listing()), [(refused.tool, refused.kind, refused.reason)], listing)
    [fact] = facts.values()
    assert fact.reason == reason and fact.sentence == refused.reason
    assert fact.detail.startswith(refused.reason)
    for part in named:
        assert part in fact.detail, fact.detail


def test_a_tool_the_scan_refused_at_the_pin_is_named_so() -> None:
    manifest = pin(fs_listing())
    manifest = type(manifest)(
        manifest.server, manifest.pinned_at, manifest.tools,
        scan=ScanRecord(refused={"steal": ({"rule": "exfiltration", "field": "description", "span": "x"},)}),
    )  # fmt: skip
    _, report = run_decide({"read_file": READ, "write_file": WRITE}, manifest=manifest)
    assert [(r.tool, r.kind) for r in report.refused] == [("steal", REFUSED_BY_SCAN)]


def test_a_tool_that_matches_its_pin_is_not_refused_and_has_no_facts() -> None:
    _, report = run_decide({"read_file": READ, "write_file": WRITE})
    assert report.refused == []
    assert withheld_facts(pin(fs_listing()), [], fs_listing()) == {}


def test_the_start_up_check_counts_every_pinned_tool_checked_and_leaves_the_scan_s_refusals_out() -> None:
    refused = [("read_file", REMOVED_UPSTREAM, "gone"), ("steal", REFUSED_BY_SCAN, "refused at pin")]
    checked, withheld = start_up_check(pin(fs_listing()), refused, fs_listing(), ["write_file"])
    assert checked == ["write_file", "read_file"]  # the offered, then every pinned tool once
    assert list(withheld) == ["read_file"] and withheld["read_file"].reason == REMOVED_UPSTREAM
