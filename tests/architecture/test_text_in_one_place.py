"""Every sentence a model or an operator reads lives in one place (docs/design.md, "Text in one place").

The walk reads every module of the package with ``ast`` and counts its sentence-like string
literals and f-strings: four or more words (two of them plain words), not a docstring (nor any
other bare string statement), not markup, not a SQL statement and not a regular expression.
``agentrt_proxy/text/`` is where they live; ``config`` cannot import ``text`` (the two are
independent siblings of one layer in the import contracts), so its messages live in
``config/_messages.py``, one module apart; so do those of the lower layers, which may import
only ``canonical`` and ``errors``: ``mcp/_messages.py``, ``scan/_messages.py`` and
``canonical/_messages.py``.

``MOVED`` names the packages and modules whose sentences were moved: they hold none. Every
other module may hold at most the count ``RATCHET`` allows it now; a module not in ``RATCHET``
may hold none, so no new sentence lands outside ``text/`` unnoticed. The counts may only go
down: when you move sentences out of a module, lower its count (or drop it) here.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

import agentrt_proxy

PACKAGE = Path(agentrt_proxy.__file__).resolve().parent
MIN_WORDS = 4  # a value filled in counts as one
MIN_PLAIN_WORDS = 2  # words of letters alone: "{scheme}://{host}/{path} {x}" is no sentence

# Where sentences live.
HOMES = (
    "agentrt_proxy.text",
    "agentrt_proxy.config._messages",
    "agentrt_proxy.mcp._messages",
    "agentrt_proxy.scan._messages",
    "agentrt_proxy.canonical._messages",
)

# Packages and modules whose sentences were moved to a home: they hold none.
MOVED = (
    "agentrt_proxy.cli._deciding",
    "agentrt_proxy.cli.demo",
    "agentrt_proxy.cli._demo_calls",
    "agentrt_proxy.cli._demo_changes",
    "agentrt_proxy.cli._demo_crashes",
    "agentrt_proxy.cli._demo_release",
    "agentrt_proxy.cli._demo_scene",
    "agentrt_proxy.cli._demo_stage",
    "agentrt_proxy.cli._flags",
    "agentrt_proxy.cli._login",
    "agentrt_proxy.cli.main",
    "agentrt_proxy.cli._operator_frame",
    "agentrt_proxy.cli._operator_views",
    "agentrt_proxy.cli._pin",
    "agentrt_proxy.cli._pin_review",
    "agentrt_proxy.cli._pin_scan",
    "agentrt_proxy.cli._reading",
    "agentrt_proxy.cli._recheck_report",
    "agentrt_proxy.cli._review_view",
    "agentrt_proxy.cli._scan",
    "agentrt_proxy.cli._serve",
    "agentrt_proxy.cli._verify_chain",
    "agentrt_proxy.cli._verify_file",
    "agentrt_proxy.cli._watch_out",
    "agentrt_proxy.cli._watch_screen",
    "agentrt_proxy.config",
    "agentrt_proxy.gate",
    "agentrt_proxy.mcp",
    "agentrt_proxy.scan",
    "agentrt_proxy.oauth",
    "agentrt_proxy.proxy",
    "agentrt_proxy.store._audit",
    "agentrt_proxy.store._tx",
    "agentrt_proxy.upstream.checks",
    "agentrt_proxy.upstream.loaded_tool",
    "agentrt_proxy.upstream._manifest",
    "agentrt_proxy.upstream.passthrough",
    "agentrt_proxy.upstream.passthrough_pins",
    "agentrt_proxy.upstream._passthrough_routes",
    "agentrt_proxy.upstream.pins",
    "agentrt_proxy.upstream._registry",
    "agentrt_proxy.upstream.scan_gate",
    "agentrt_proxy.upstream._servers",
    "agentrt_proxy.upstream.supervisor",
    "agentrt_proxy.upstream.validation",
)

# The sentences each module still holds, counted when the walk was written. Only down.
RATCHET: dict[str, int] = {
    "agentrt_proxy.canonical.durations": 1,  # Go's duration format "{sign}{h}h{m}m{s}", no sentence
    "agentrt_proxy.cli._console_assets": 2,
    "agentrt_proxy.cli._console_guard": 1,
    "agentrt_proxy.store._sqlite_errors": 6,  # SQLite's own messages, matched, not said
    "agentrt_proxy.store._states": 39,  # each move's reason in the state table, a docstring kept as data
    "agentrt_proxy.testing.fakebank": 9,  # a fake server's own words (its errors, its tool), not the proxy's
    "agentrt_proxy.upstream.review": 2,  # change kinds: one vocabulary of labels, -json's "kind" values
    "agentrt_proxy.upstream._review_schema": 3,  # the same vocabulary (mostly two-word labels the walk skips)
}

SQL = re.compile(
    r"^\s*(?:SELECT|INSERT|UPDATE|DELETE|CREATE|PRAGMA|WITH|ALTER|DROP|BEGIN|REPLACE)\b"  # a statement
    r"|\s(?:=|<=|>=|<|>)\s\?"  # a fragment: a placeholder compared
    r"|^\s*[a-z_]+(?:, [a-z_]+){3,}\s*$"  # a fragment: a column list
)
# A pattern's own syntax: no sentence a reader is shown writes these.
PATTERN = re.compile(r"\(\?|\\[bswdSWDB]|\[\^|\|\\")


# ------------------------------------------------------------------------------ the walk


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def within(name: str, prefixes: tuple[str, ...]) -> bool:
    return any(name == prefix or name.startswith(prefix + ".") for prefix in prefixes)


def literal_text(node: ast.Constant | ast.JoinedStr) -> str:
    """A literal's words; each ``{value}`` of an f-string stands for one word."""
    if isinstance(node, ast.Constant):
        return str(node.value)
    return "".join(part.value if isinstance(part, ast.Constant) else " {} " for part in node.values)


def is_sentence(text: str) -> bool:
    words = [word for word in text.split() if re.search(r"[A-Za-z{}]", word)]
    plain = [word for word in words if re.fullmatch(r"[A-Za-z'-]+[,.:;]?", word)]
    return (
        len(words) >= MIN_WORDS
        and len(plain) >= MIN_PLAIN_WORDS
        and not text.lstrip().startswith("<")  # markup: a page's words are filled into it
        and not SQL.search(text)
        and not PATTERN.search(text)
    )


def sentences(tree: ast.Module) -> list[tuple[int, str]]:
    """Every sentence-like literal of a module, with its line: bare string statements (docstrings)
    and the pieces of an f-string (counted once, as the f-string) are not walked."""
    skipped: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
            skipped.add(id(node.value))  # a docstring, or a string standing as a statement
        elif isinstance(node, ast.JoinedStr):
            skipped.update(id(inner) for part in node.values for inner in ast.walk(part))
    found = []
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.JoinedStr) or (isinstance(node, ast.Constant) and isinstance(node.value, str)):
            text = literal_text(node)
            if is_sentence(text):
                found.append((node.lineno, text))
    return found


def counts() -> dict[str, list[tuple[int, str]]]:
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        name = module_name(path)
        if within(name, HOMES):
            continue
        held = sentences(ast.parse(path.read_text(encoding="utf-8")))
        if held:
            found[name] = held
    return found


COUNTS = counts()


def shown(held: list[tuple[int, str]]) -> str:
    return "\n".join(f"  line {line}: {text[:100]!r}" for line, text in held)


# ----------------------------------------------------------------------------- the tests


def test_the_walk_counts_sentences_and_skips_docstrings_sql_patterns_and_short_words() -> None:
    source = '''
"""A module's docstring is not counted, however long it is."""
def f(x):
    """Nor a function's docstring, nor a string standing as a statement."""
    "a bare string statement with many words"
    a = "this message is a sentence"
    b = f"run {x} was not found here"
    c = "three words only"
    d = "SELECT seq, hash FROM events WHERE run_id = ? ORDER BY seq"
    j = " AND (owner = ? OR lease_until <= ?)"
    k = "budget, currency, run_id, amount, at, state"
    e = r"\\b(?:call|use) the other tool first\\b"
    h = f'<p class="muted" id="live-note">{x}</p>'
    i = f"{x}://json-schema.org/{x}"
    g = ("one sentence written " "as two pieces")
    return f"{x}: {x}"
'''
    assert [text for _, text in sentences(ast.parse(source))] == [
        "this message is a sentence",
        "run  {}  was not found here",
        "one sentence written as two pieces",
    ]


def test_a_module_whose_sentences_were_moved_holds_none() -> None:
    held = {name: found for name, found in COUNTS.items() if within(name, MOVED)}
    assert held == {}, "\n".join(f"{name}:\n{shown(found)}" for name, found in held.items())


@pytest.mark.parametrize("name", sorted(COUNTS), ids=sorted(COUNTS))
def test_no_module_holds_more_sentences_outside_text_than_the_ratchet_allows(name: str) -> None:
    held = COUNTS[name]
    allowed = RATCHET.get(name, 0)
    assert len(held) <= allowed, (
        f"{name} holds {len(held)} sentences, {allowed} allowed: put the new ones in agentrt_proxy/text/\n{shown(held)}"
    )


def test_the_ratchet_names_only_modules_that_exist_and_none_that_were_moved() -> None:
    known = {module_name(path) for path in PACKAGE.rglob("*.py")}
    assert set(RATCHET) <= known, set(RATCHET) - known
    assert [name for name in RATCHET if within(name, MOVED) or within(name, HOMES)] == []
