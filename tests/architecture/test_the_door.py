"""The door a newcomer walks in by (issue 23, item 11): a README read in ten minutes, and a
reference that names everything the program accepts.

The configuration's fields are read from the loader's own source (every literal name passed to
one of its field readers), the subcommands from the program's command table, so a field or a
command added without its documentation fails here, not in a user's hands.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from agentrt_proxy.cli.main import COMMANDS

ROOT = Path(__file__).resolve().parents[2]
CONFIG_PACKAGE = ROOT / "agentrt_proxy" / "config"
CONFIG_REFERENCE = ROOT / "docs" / "configuration.md"
OPERATOR_GUIDE = ROOT / "docs" / "operator.md"
README = ROOT / "README.md"

# The methods of config/_loading's field reader (`_Object`) that take a field's name.
FIELD_READERS = frozenset({"get", "string", "boolean", "strings", "duration", "number"})
# A README a newcomer reads in ten minutes, at about 200 words a minute.
README_WORDS = 2_000


def configuration_fields() -> set[str]:
    """Every field name the loader reads, from the literal first argument of a reader call."""
    names: set[str] = set()
    for module in CONFIG_PACKAGE.glob("*.py"):
        for node in ast.walk(ast.parse(module.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr in FIELD_READERS
                and node.args
                and isinstance(node.args[0], ast.Constant)
                and isinstance(node.args[0].value, str)
            ):
                names.add(node.args[0].value)
    return names


def backticked(path: Path) -> set[str]:
    return set(re.findall(r"`([^`\s]+)`", path.read_text(encoding="utf-8")))


def test_the_loader_reads_fields_this_test_can_see() -> None:
    # Guards the extraction itself: if the reader's methods were renamed, every field would
    # vanish from the set and the test below would pass over nothing.
    assert {"database", "session", "servers", "endpoint", "rules", "side_effect", "limit"} <= configuration_fields()


@pytest.mark.parametrize("field", sorted(configuration_fields()))
def test_every_configuration_field_is_in_the_configuration_reference(field: str) -> None:
    assert field in backticked(CONFIG_REFERENCE), f"docs/configuration.md does not document the field `{field}`"


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_every_subcommand_is_in_the_operators_guide(command: str) -> None:
    assert command in backticked(OPERATOR_GUIDE), f"docs/operator.md does not document the command `{command}`"


def test_the_readme_is_read_in_ten_minutes_and_starts_with_the_two_commands() -> None:
    text = README.read_text(encoding="utf-8")
    assert len(text.split()) <= README_WORDS
    quick_start = text.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    commands = re.findall(r"```sh\n(.*?)```", quick_start, re.S)
    assert commands == [
        "python3 build_zipapp.py && python3 dist/agentrt-proxy.pyz demo\n",
        "scripts/test\n",
    ]
    assert "pip install ." in text


def test_every_link_between_the_documents_reaches_a_file_that_exists() -> None:
    for document in [README, ROOT / "SECURITY.md", *sorted((ROOT / "docs").glob("*.md"))]:
        for target in re.findall(r"\]\(([^)\s#]+)(?:#[^)]*)?\)", document.read_text(encoding="utf-8")):
            if target.startswith(("http://", "https://", "mailto:")):
                continue
            assert (document.parent / target).exists(), f"{document.relative_to(ROOT)} links to {target}"
