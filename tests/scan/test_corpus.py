"""Every fixture of the evaluation corpus gets its expected verdict and raises its expected rules."""

from __future__ import annotations

import pytest

from agentrt_proxy.scan import scan
from tests.scan.corpus_eval import REAL, Fixture, class_fixtures, findings_of, fixtures, real_listing, verdict

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


CLASS_FIXTURES = class_fixtures()
SPLITS = ("train", "heldout", "blind", "blind2", "blind3")


@pytest.mark.parametrize("split", SPLITS)
def test_each_split_of_the_class_corpus_meets_the_issues_bar(split: str) -> None:
    """Issue 24's bar on every split: recall of 0.80 or more on the hard classes, at least half of
    every class, a finding on at least half of each soft class, at most 2 % of ordinary tools
    and at most 15 % of hard negatives with a hard finding."""
    mine = [c for c in CLASS_FIXTURES if c.split == split]
    caught = {c.id: c.caught(c.findings()) for c in mine}
    attacks = [c for c in mine if c.poisoned]
    hard = [c for c in attacks if not c.soft_class]
    assert sum(caught[c.id] for c in hard) >= 0.80 * len(hard)
    for cls in {c.cls for c in attacks}:
        group = [c for c in attacks if c.cls == cls]
        assert sum(caught[c.id] for c in group) >= 0.5 * len(group), cls
    ordinary = [c for c in mine if not c.poisoned and c.cls in ("benign",)]
    tricky = [c for c in mine if not c.poisoned and c.cls not in ("benign",)]
    assert sum(caught[c.id] for c in ordinary) <= 0.02 * len(ordinary)
    assert sum(caught[c.id] for c in tricky) <= 0.15 * max(len(tricky), 1)


def test_the_class_corpus_holds_every_class_and_kind_of_negative_in_every_split() -> None:
    for split in SPLITS:
        classes = {c.cls for c in CLASS_FIXTURES if c.split == split and c.poisoned}
        assert classes == {
            "redirection",
            "dependency",
            "network",
            "shadowing",
            "override",
            "preference",
            "out_of_scope",
        }
    kinds = {c.cls for c in CLASS_FIXTURES if not c.poisoned}
    assert {"quoted", "sample", "install", "capability", "own-use", "deprecation", "params"} <= kinds
