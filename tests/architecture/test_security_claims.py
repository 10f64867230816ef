"""Every claim SECURITY.md makes names a test that exists (issue 22, item 9): each row of its
claim tables names at least one test under ``tests/`` in its Test column, and every test, file
or benchmark it names exists (a ``::name`` is a function defined in that file). A renamed or
deleted test must take its claim with it, or name the test that checks it now; a claim without
a test fails here."""

from __future__ import annotations

import re

import pytest

from tests.conftest import REPO_ROOT

SECURITY = REPO_ROOT / "SECURITY.md"


def references(cell: str) -> list[tuple[str, str | None]]:
    """(file, test name or None) for every `tests/...` or `bench/...` reference in ``cell``, in
    order; a bare `::name` continues the file named before it."""
    refs: list[tuple[str, str | None]] = []
    current: str | None = None
    for token in re.findall(r"`([^`]+)`", cell):
        if token.startswith(("tests/", "bench/")):
            current, _, name = token.partition("::")
            refs.append((current, name or None))
        elif token.startswith("::") and current is not None:
            refs.append((current, token[2:]))
    return refs


def cells(line: str) -> list[str]:
    """A table row's cells (a ``|`` inside backticks does not split one)."""
    parts, depth, cell = [], False, ""
    for char in line.strip().strip("|"):
        if char == "`":
            depth = not depth
        if char == "|" and not depth:
            parts.append(cell.strip())
            cell = ""
        else:
            cell += char
    parts.append(cell.strip())
    return parts


def claims() -> list[tuple[str, list[tuple[str, str | None]]]]:
    """(claim, the references of its Test column) for every row of every claim table."""
    out: list[tuple[str, list[tuple[str, str | None]]]] = []
    header: list[str] | None = None
    for line in SECURITY.read_text().splitlines():
        if not line.startswith("|"):
            header = None
            continue
        row = cells(line)
        if header is None:
            header = row
            assert "Test" in header, f"a table of SECURITY.md has no Test column: {line}"
            continue
        if set("".join(row)) <= set("-: "):
            continue  # the separator row
        claim, test = row[0], row[header.index("Test")] if header.index("Test") < len(row) else ""
        out.append((claim, references(test)))
    return out


def missing(path: str, name: str | None) -> bool:
    target = REPO_ROOT / path
    if not target.exists():
        return True
    if name is None:
        # a test module must hold a test; a directory or a table (a README) must exist
        # (a hypothesis state machine's test is its TestCase bound to a test_ name)
        if target.suffix != ".py" or not path.startswith("tests/"):
            return False
        return re.search(r"def test_|^test_\w+ =", target.read_text(), re.M) is None
    return re.search(rf"def {re.escape(name)}\(|^{re.escape(name)} = ", target.read_text(), re.M) is None


def test_the_claim_tables_were_found() -> None:
    assert len(claims()) > 25


@pytest.mark.parametrize(("claim", "refs"), claims(), ids=[c[:60] for c, _ in claims()])
def test_every_claim_names_a_test_that_exists(claim: str, refs: list[tuple[str, str | None]]) -> None:
    assert any(path.startswith("tests/") for path, _ in refs), f"no test named for: {claim}"
    assert [f"{p}::{n}" if n else p for p, n in refs if missing(p, n)] == []


def test_a_claim_with_no_test_or_a_test_that_does_not_exist_is_caught() -> None:
    # The check itself, on rows it must refuse: it cannot pass a claim with nothing behind it.
    assert not any(p.startswith("tests/") for p, _ in references("a promise, checked by hand"))
    assert missing("tests/program/test_verify_state.py", "test_no_such_test")
    assert missing("tests/no_such_file.py", None)
    named = "test_verify_exits_one_naming_the_row_an_edit_by_sql_changed"
    assert not missing("tests/program/test_verify_state.py", named)
