"""The walk of one ``tools/call`` in docs/design.md ("One tools/call, module by module") names
modules that exist, and lists each stop once: a module renamed, merged or split fails here
until the walk says where the call goes now."""

from __future__ import annotations

import re
from pathlib import Path

import agentrt_proxy

PACKAGE = Path(agentrt_proxy.__file__).resolve().parent
DESIGN = PACKAGE.parent / "docs" / "design.md"
HEADING = "## One tools/call, module by module"

STOP = re.compile(r"^(\d+)\. `([a-z_]+/[a-z_]+)`:", re.MULTILINE)  # "12. `gate/_attach`: ..."
NAMED = re.compile(r"`([a-z_]+/[a-z_]+)(?:\.[A-Za-z_]+)?`")  # any `pkg/module` (or `pkg/module.name`)
GLOB = re.compile(r"`([a-z_]+)/\*`")  # a whole package, `store/*`
# MCP methods are written the same way (`tools/call`): their namespaces are no package.
METHODS = ("tools", "tasks", "resources", "prompts", "notifications", "subscriptions", "sampling", "elicitation")


def section() -> str:
    text = DESIGN.read_text(encoding="utf-8")
    assert HEADING in text, f"docs/design.md has no section {HEADING!r}"
    body = text.split(HEADING, 1)[1]
    return body.split("\n## ", 1)[0]


def exists(name: str) -> bool:
    package, _, module = name.partition("/")
    return (PACKAGE / package / f"{module}.py").is_file() or (PACKAGE / package / module / "__init__.py").is_file()


def test_the_walk_lists_its_stops_in_order_and_each_once() -> None:
    stops = STOP.findall(section())
    assert len(stops) >= 20, "the walk lists too few stops to be the walk of a call"
    assert [int(number) for number, _ in stops] == list(range(1, len(stops) + 1))
    names = [name for _, name in stops]
    twice = sorted({name for name in names if names.count(name) > 1})
    assert twice == [], f"a stop visited twice is a seam: {twice}"


def test_every_module_the_walk_names_exists() -> None:
    text = section()
    named = {name for name in NAMED.findall(text) if name.partition("/")[0] not in METHODS}
    assert named, "the walk names no module"
    missing = sorted(name for name in named if not exists(name))
    assert missing == [], f"the walk names modules that do not exist: {missing}"
    packages = set(GLOB.findall(text))
    assert sorted(p for p in packages if not (PACKAGE / p / "__init__.py").is_file()) == []


def test_the_checks_find_a_missing_module_and_a_stop_listed_twice() -> None:
    assert exists("proxy/_calls") and exists("gate/_attach")
    assert not exists("proxy/no_such_module")
    listed = "1. `proxy/_calls`: decides.\n2. `gate/_gate`: attaches.\n3. `proxy/_calls`: again.\n"
    names = [name for _, name in STOP.findall(listed)]
    assert [name for name in names if names.count(name) > 1] == ["proxy/_calls", "proxy/_calls"]
