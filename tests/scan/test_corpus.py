"""Every fixture of the evaluation corpus gets its expected verdict and raises its expected rules."""

from __future__ import annotations

import pytest

from agentrt_proxy.scan import scan
from tests.scan.corpus_eval import REAL, Fixture, findings_of, fixtures, real_listing, verdict

FIXTURES = fixtures()


def test_the_corpus_holds_at_least_80_benign_and_60_poisoned_definitions() -> None:
    assert sum(not f.poisoned for f in FIXTURES) >= 80
    assert sum(f.poisoned for f in FIXTURES) >= 60


@pytest.mark.parametrize("fixture", FIXTURES, ids=[f.id for f in FIXTURES])
def test_each_fixture_gets_its_expected_verdict_and_rules(fixture: Fixture) -> None:
    found = findings_of(fixture)
    shown = [(f.rule, f.severity, f.field, f.span) for f in found]
    assert verdict(found) == fixture.verdict, shown
    assert set(fixture.rules) <= {f.rule for f in found}, shown


@pytest.mark.parametrize("name", REAL)
def test_the_real_npm_servers_listings_instructions_and_prompts_raise_no_finding(name: str) -> None:
    result = scan([real_listing(name)])
    assert result.tools_scanned > 0
    assert result.findings == ()
