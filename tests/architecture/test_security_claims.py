"""Every test SECURITY.md names as backing a claim exists: a renamed or deleted test must take
its claim with it, or name the test that checks it now."""

from __future__ import annotations

import re

from tests.conftest import REPO_ROOT


def named_tests() -> list[tuple[str, str | None]]:
    """(file, test name or None) for every `tests/...` or `bench/...` reference, in order; a
    bare `::name` continues the file named before it on the same line."""
    refs: list[tuple[str, str | None]] = []
    for line in (REPO_ROOT / "SECURITY.md").read_text().splitlines():
        current: str | None = None
        for token in re.findall(r"`([^`]+)`", line):
            if token.startswith(("tests/", "bench/")):
                current, _, name = token.partition("::")
                refs.append((current, name or None))
            elif token.startswith("::") and current is not None:
                refs.append((current, token[2:]))
    return refs


def test_every_test_security_md_names_exists() -> None:
    refs = named_tests()
    assert len(refs) > 30  # the parse found the tables
    missing = []
    for path, name in refs:
        target = REPO_ROOT / path
        if not target.exists():
            missing.append(path)
        elif name is not None and not re.search(rf"def {re.escape(name)}\(", target.read_text()):
            missing.append(f"{path}::{name}")
    assert missing == []
