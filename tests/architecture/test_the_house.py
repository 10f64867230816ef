"""The house rules that no linter states: module sizes, no cycles, one error tree, visible imports.

The layers' arrows themselves are import-linter's contracts (pyproject.toml), run by
scripts/test; these tests check what those contracts cannot express.
"""

from __future__ import annotations

import ast
import inspect
import pkgutil
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

import agentrt_proxy
from agentrt_proxy import errors

PACKAGE = Path(agentrt_proxy.__file__).resolve().parent
MAX_LINES = 600
MAX_CLASS_LINES = 300
# Classes still longer than MAX_CLASS_LINES, each being split by concern. Only shrinks: a class
# brought under the limit leaves the list, and no other class may join it.
def modules() -> Iterator[tuple[str, Path, ast.Module]]:
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE.parent).with_suffix("")
        parts = list(rel.parts)
        if parts[-1] == "__init__":
            parts.pop()
        yield ".".join(parts), path, ast.parse(path.read_text(encoding="utf-8"))


def imported_modules(name: str, path: Path, tree: ast.Module, known: set[str]) -> set[str]:
    """Every module of the package ``tree`` imports, at any depth (lazy imports included)."""
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    found: set[str] = set()
    for node in ast.walk(tree):  # imports under TYPE_CHECKING count: a type a module names is a dependency
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            # ``from pkg import sub`` imports the module pkg.sub; ``from pkg import name`` imports pkg.
            targets = [f"{module}.{a.name}" if f"{module}.{a.name}" in known else module for a in node.names]
        for target in targets:
            while target and target not in known:
                target = target.rpartition(".")[0]
            if target and target != name and target.startswith("agentrt_proxy"):
                found.add(target)
    return found


def test_no_module_but_init_and_main_sits_at_the_package_root() -> None:
    loose = sorted(p.name for p in PACKAGE.glob("*.py"))
    assert loose == ["__init__.py", "__main__.py"]


def test_no_module_is_longer_than_600_lines_without_saying_why_at_its_top() -> None:
    too_long = []
    for name, path, tree in modules():
        lines = path.read_text(encoding="utf-8").count("\n")
        doc = ast.get_docstring(tree) or ""
        if lines > MAX_LINES and "longer than" not in doc:
            too_long.append(f"{name}: {lines} lines")
    assert too_long == []


def class_sizes() -> dict[str, int]:
    """Every class of the package (nested ones too) and its length, from ``class`` to its last line."""
    sizes = {}
    for name, _, tree in modules():
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                assert node.end_lineno is not None
                sizes[f"{name}.{node.name}"] = node.end_lineno - node.lineno + 1
    return sizes


def test_no_class_is_longer_than_300_lines() -> None:
    sizes = class_sizes()
    assert {name: size for name, size in sizes.items() if size > MAX_CLASS_LINES} == {}
    assert len(sizes) > 200  # the walk itself sees the package's classes


def test_no_module_imports_itself_through_others() -> None:
    """No cycle between modules, counting lazy imports inside functions: a cycle is a design
    knot even when Python happens to tolerate it. Importing a package's ``__init__`` counts as
    importing what it re-exports, so a module may not import its own package. Names imported
    under ``TYPE_CHECKING`` count too: a type a module names is a dependency, and a helper
    names the narrow protocol it needs instead of the class that calls it."""
    graph: dict[str, set[str]] = {}
    parsed = list(modules())
    known = {name for name, _, _ in parsed}
    for name, path, tree in parsed:
        graph[name] = imported_modules(name, path, tree, known)
    cycles: list[list[str]] = []
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                cycles.append([*stack[stack.index(nxt):], nxt])
            elif nxt not in state:
                visit(nxt)
        stack.pop()
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node)
    assert cycles == []


def test_no_module_imports_by_a_string() -> None:
    found = [name for name, path, _ in modules() if re.search(r"\bimport_module\(|__import__\(", path.read_text())]
    assert found == []


def exception_classes() -> list[type[BaseException]]:
    classes: dict[str, type[BaseException]] = {}
    for info in pkgutil.walk_packages([str(PACKAGE)], prefix="agentrt_proxy."):
        if info.name.endswith("__main__"):
            continue
        module = __import__(info.name, fromlist=["_"])
        for _, value in inspect.getmembers(module, inspect.isclass):
            if issubclass(value, BaseException) and value.__module__ == info.name:
                classes[f"{value.__module__}.{value.__qualname__}"] = value
    return list(classes.values())


# Outside the tree on purpose, each for the reason its docstring gives.
NOT_IN_THE_TREE = {
    "IllegalTransition",  # a bug: no handler of the tree may swallow it
    "WouldBlock",  # control flow inside the store (a BaseException), never raised to a caller
    "Refusal",  # control flow inside upstream/checks: always caught, it becomes a report line
    "GroupLost",  # a group commit lost while the process lives on (tests): as a kill, nothing may answer over it
}


def test_every_exception_the_program_raises_derives_from_the_one_root() -> None:
    outside = sorted(
        f"{c.__module__}.{c.__qualname__}"
        for c in exception_classes()
        if not issubclass(c, errors.AgentrtError)
        and c.__name__ not in NOT_IN_THE_TREE
        and not c.__name__.startswith("_")
    )
    assert outside == []


def test_no_two_classes_share_a_name() -> None:
    """One name, one thing: no two classes of the package (exceptions, values, protocols, nested
    ones alike) are called the same, so a name read anywhere means one class."""
    seen: dict[str, str] = {}
    clashes = []
    for name, _, tree in modules():
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                where = f"{name}.{node.name}"
                if node.name in seen and seen[node.name] != where:
                    clashes.append(f"{node.name}: {seen[node.name]} and {where}")
                seen.setdefault(node.name, where)
    assert len(seen) > 200  # the walk itself sees the package's classes
    assert clashes == []


@pytest.mark.parametrize(
    "module", ["agentrt_proxy.mcp", "agentrt_proxy.scan", "agentrt_proxy.canonical", "agentrt_proxy.errors"]
)
def test_the_lower_layers_import_nothing_above_them(module: str) -> None:
    """A double check of the contracts on the layers that must stand alone (with lazy imports)."""
    allowed = {"agentrt_proxy.mcp": ("agentrt_proxy.mcp", "agentrt_proxy.canonical", "agentrt_proxy.errors"),
               "agentrt_proxy.scan": ("agentrt_proxy.scan", "agentrt_proxy.canonical", "agentrt_proxy.errors"),
               "agentrt_proxy.canonical": ("agentrt_proxy.canonical", "agentrt_proxy.errors"),
               "agentrt_proxy.errors": ("agentrt_proxy.errors",)}[module]
    parsed = list(modules())
    known = {name for name, _, _ in parsed}
    bad = sorted(
        f"{name} -> {target}"
        for name, path, tree in parsed
        if name == module or name.startswith(module + ".")
        for target in imported_modules(name, path, tree, known)
        if not target.startswith(allowed) and target != "agentrt_proxy"
    )
    assert bad == []


def package_of(module: str) -> str:
    """The package a module belongs to: ``agentrt_proxy.store`` for ``agentrt_proxy.store._tx``."""
    return ".".join(module.split(".")[:2]) if module.count(".") >= 2 else module


def is_private(module: str) -> bool:
    last = module.rpartition(".")[2]
    return last.startswith("_") and not last.startswith("__")


def importers() -> dict[str, set[str]]:
    """Each module of the package and the modules that import it (type-only and lazy imports count)."""
    parsed = list(modules())
    known = {name for name, _, _ in parsed}
    found: dict[str, set[str]] = {name: set() for name in known}
    for name, path, tree in parsed:
        for target in imported_modules(name, path, tree, known):
            found[target].add(name)
    return found


# Public though no module of the program imports them, each for the reason given.
DOORS_WITHOUT_AN_IMPORTER = {
    "agentrt_proxy.testing.fakebank",  # the demo runs it as a server by name (runpy, cli/_demo_stage)
}


def test_no_module_outside_a_package_imports_its_private_modules() -> None:
    """A module named ``_x`` is its package's own (as h11 marks its modules): callers import the
    package, or one of its public modules."""
    trespass = sorted(
        f"{importer} -> {module}"
        for module, by in importers().items()
        if is_private(module)
        for importer in by
        if package_of(importer) != package_of(module)
    )
    assert trespass == []


def test_a_module_only_its_own_package_imports_is_marked_private() -> None:
    """A module nothing outside its package imports is that package's own, and its name says so;
    the package's ``__init__`` and ``__main__`` and the doors listed above are the exceptions."""
    by = importers()
    assert len(by) > 150  # the walk itself sees the package's modules
    unmarked = sorted(
        module
        for module, importers_of in by.items()
        if module.count(".") >= 2
        and not module.rpartition(".")[2].startswith("_")
        and module not in DOORS_WITHOUT_AN_IMPORTER
        and all(package_of(i) == package_of(module) for i in importers_of)
    )
    assert unmarked == []
