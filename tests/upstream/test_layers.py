"""The lower layers import nothing above them: read from every module's source, lazy imports too.

``mcp/`` (the wire) imports nothing of the program but ``canonical/`` and ``errors/``; ``canonical/``
only ``errors/``; ``text/`` and ``config/`` only those two (and text never config); ``scan/``
(the description scanner) only ``canonical/`` and ``errors/``; ``oauth/`` (the OAuth client) the
wire's ``http_auth``, ``config/`` and ``text/``; ``upstream/`` any of them.
import-linter states the whole house; this pins the lower floors where they are built.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "agentrt_proxy"

ALLOWED = {
    "canonical": {"canonical", "errors"},
    "text": {"text", "canonical", "errors"},
    "config": {"config", "canonical", "errors"},
    "mcp": {"mcp", "canonical", "errors"},
    "scan": {"scan", "canonical", "errors"},
    "oauth": {"oauth", "mcp", "config", "text", "canonical", "errors"},
    "upstream": {"upstream", "scan", "oauth", "mcp", "config", "text", "canonical", "errors"},
    "testing": {"testing", "mcp", "canonical", "errors"},
}


def imported_packages(path: Path) -> set[str]:
    """The program's packages a module imports (``agentrt_proxy.<package>``), wherever the import is."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            assert node.level == 0, f"{path}: a relative import (the house imports siblings by their full name)"
            module = node.module or ""
            names = [f"{module}.{alias.name}" for alias in node.names] if module == "agentrt_proxy" else [module]
        for name in names:
            parts = name.split(".")
            if parts[0] == "agentrt_proxy" and len(parts) > 1:
                found.add(parts[1])
    return found


@pytest.mark.parametrize("package", sorted(ALLOWED))
def test_a_lower_package_imports_only_the_packages_below_it(package: str) -> None:
    reached = {
        f"{path.relative_to(PACKAGE)} imports {name}"
        for path in sorted((PACKAGE / package).rglob("*.py"))
        for name in imported_packages(path) - ALLOWED[package]
    }
    assert sorted(reached) == []


def test_only_the_store_imports_sqlite3_and_none_of_the_lower_packages_does() -> None:
    for package in ALLOWED:
        for path in (PACKAGE / package).rglob("*.py"):
            assert "sqlite3" not in path.read_text(), path


def test_the_check_sees_an_import_it_must_refuse(tmp_path: Path) -> None:
    wrong = tmp_path / "wrong.py"
    wrong.write_text("def f():\n    from agentrt_proxy.gate import Gate  # a lazy import counts too\n")
    assert imported_packages(wrong) == {"gate"}
