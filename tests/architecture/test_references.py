"""References a reader can follow (issue 23, item 8): every section the code cites is in a
document this repository holds, and the code cites no issue tracker a checkout does not have.

A citation reads ``<document> §N[.N…]`` (a list may go on with ``, §M``, which names the same
document), where ``<document>`` is a file of ``docs/reference/``; ``N`` must be a heading of that
file, or lie under one (``proxy-and-mcp-module §1.11 check 4`` is an item of its 1.11); ``RFC
NNNN §N`` cites a public standard, which anyone can read. The code's reasons for a design
are decision records, cited as ``decision NNNN`` or ``docs/decisions/NNNN``: each must exist.
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
REFERENCE = ROOT / "docs" / "reference"
DECISIONS = ROOT / "docs" / "decisions"
CITED_FROM = ("agentrt_proxy", "tests", "bench", "scripts")

DOCUMENT = r"(?P<doc>[a-z]+(?:-[a-z]+)+|RFC \d+)"
SECTION = r"§\s?(?P<sec>\d+(?:\.\d+)*)"
NAMED = re.compile(DOCUMENT + r" " + SECTION)
ANY = re.compile(SECTION)
# What may stand between a named citation and the next bare one on the same line: a list.
LIST_GAP = re.compile(r"^(?:[\s,;]|and|–|-|\d|\.|#|items?|§)*$")


@cache
def headings(document: str) -> frozenset[str]:
    text = (REFERENCE / f"{document}.md").read_text(encoding="utf-8")
    return frozenset(re.findall(r"^#+ (\d+(?:\.\d+)*)\.? ", text, re.M))


def under_a_heading(document: str, section: str) -> bool:
    parts = section.split(".")
    return any(".".join(parts[:n]) in headings(document) for n in range(len(parts), 0, -1))


def python_files() -> list[Path]:
    found: list[Path] = []
    for top in CITED_FROM:
        # Not a virtualenv's packages (bench/README.md makes bench/.venv): only this project's code.
        for path in (ROOT / top).rglob("*.py"):
            parts = path.relative_to(ROOT).parts
            if "__pycache__" not in parts and not any(part.startswith(".") for part in parts):
                found.append(path)
    return sorted(found)


def citations() -> list[tuple[str, int, str | None, str]]:
    """Every § in the code: (file, line, the document it names or inherits, the section)."""
    found = []
    for path in python_files():
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            named = {m.start(): m.group("doc") for m in NAMED.finditer(line)}
            document, last_end = None, 0
            for m in ANY.finditer(line):
                name_start = next((s for s in named if line.find("§", s) == m.start()), None)
                if name_start is not None:
                    document = named[name_start]
                elif document is not None and not LIST_GAP.match(line[last_end : m.start()]):
                    document = None  # a bare § after prose names nothing
                found.append((str(path.relative_to(ROOT)), number, document, m.group("sec")))
                last_end = m.end()
    return found


def test_the_reference_documents_are_in_the_repository() -> None:
    assert {p.stem for p in REFERENCE.glob("*.md")} >= {"runtime-core", "proxy-and-mcp-module", "mcp-protocol"}
    assert len(citations()) > 100  # the scan itself sees the code's citations


@pytest.mark.parametrize(("where", "line", "document", "section"), citations(), ids=lambda v: str(v))
def test_every_cited_section_is_a_heading_of_a_reference_document(
    where: str, line: int, document: str | None, section: str
) -> None:
    assert document is not None, f"{where}:{line}: §{section} names no document of docs/reference/"
    if document.startswith("RFC "):
        return  # a public standard, cited by its number: anyone can read it
    assert (REFERENCE / f"{document}.md").is_file(), f"{where}:{line}: no docs/reference/{document}.md"
    assert under_a_heading(document, section), f"{where}:{line}: {document} has no section {section}"


def test_the_code_cites_no_issue_number_and_only_decisions_that_exist() -> None:
    records = {p.name[:4] for p in DECISIONS.glob("[0-9][0-9][0-9][0-9]-*.md")}
    for path in (ROOT / "agentrt_proxy").rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        where = path.relative_to(ROOT)
        assert not re.search(r"\bissues? \d+", text), f"{where} cites an issue number the repository does not hold"
        for number in re.findall(r"decisions? (\d{4})|docs/decisions/(\d{4})", text):
            cited = number[0] or number[1]
            assert cited in records, f"{where} cites decision {cited}, which docs/decisions/ does not hold"
