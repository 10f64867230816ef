"""Reading a standalone rules file (the ``examples/rules.json`` shape), strictly (proxy-and-mcp-module §5.13 #10, #11).

Each test names the original Go test it covers.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agentrt_proxy import canonical
from agentrt_proxy.config import ConfigError, Rule, read_rules

SECOND = 1_000_000_000


def test_every_field_of_a_rules_file_converts(tmp_path: Path) -> None:
    # TestReadRules_ConvertsTheOperatorsFormat
    path = tmp_path / "rules.json"
    path.write_text(
        json.dumps(
            {
                "write_file": {
                    "side_effect": "local_mutation",
                    "timeout": "1m30s",
                    "terminal": True,
                    "description": "Write inside the sandbox.",
                    "deny": ["force", "mode"],
                    "fixed": {"root": "/srv/sandbox", "limit": 9007199254740993, "opts": {"a": [1.50, None]}},
                    "rename": "write",
                    "allow_hint_mismatch": True,
                    "outcome": "require_approval",
                    "repeat_window": "10s",
                },
                "read_file": {"side_effect": "read_only"},
            }
        ).replace("1.5,", "1.50,")
    )
    path.chmod(0o600)
    rules = read_rules(path)
    assert set(rules) == {"write_file", "read_file"}
    write = rules["write_file"]
    assert write == Rule(
        side_effect="local_mutation",
        timeout=90 * SECOND,
        description="Write inside the sandbox.",
        deny=("force", "mode"),
        fixed=write.fixed,
        rename="write",
        allow_hint_mismatch=True,
        terminal=True,
        outcome="require_approval",
        repeat_window=10 * SECOND,
    )
    assert canonical.policy_text(write.fixed) == (
        '{"limit":9007199254740993,"opts":{"a":[1.50,null]},"root":"/srv/sandbox"}'
    )  # literals kept as written
    assert rules["read_file"] == Rule(side_effect="read_only")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"t":{"side_effect":"read_only","denny":["x"]}}', r'unknown field "denny" in servers\[rules\]\.rules\.t'),
        ('{"t":{"side_effect":"read_only","timeout":"5"}}', r'tool "t": timeout: .*missing unit'),
        ('{"t":{"side_effect":"read_only","timeout":5}}', r"timeout: a duration is a string"),
        ('{"t":{"side_effect":"read_only"', r"not usable JSON: not valid JSON"),
        ('{"t":{"side_effect":"read_only"}} {}', r"not usable JSON"),
    ],
    ids=["denny", "timeout-without-unit", "timeout-number", "truncated", "trailing-data"],
)
def test_a_rules_file_refuses_what_it_does_not_know_naming_the_file(tmp_path: Path, text: str, message: str) -> None:
    # TestReadRules_RefusesWhatItDoesNotKnow (denny, timeout "5", truncated JSON)
    path = tmp_path / "rules.json"
    path.write_text(text)
    path.chmod(0o600)
    with pytest.raises(ConfigError, match=message) as caught:
        read_rules(path)
    assert str(caught.value).startswith(f"config {path}: ")
