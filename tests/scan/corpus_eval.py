"""The evaluation corpus read back and judged: shared by tests/scan/test_corpus.py and bench/scan.py.

Each fixture is one definition with its expected verdict (``clean``, ``soft`` or ``hard``) and
the rules it must raise; poisoned fixtures may name other servers' tools as ``context``. The
real servers' captured listings are benign fixtures with verdict ``clean``.

The class corpus (issue 24: ``attack-classes.json``, ``hard-negatives.json``) is judged by class,
not fixture by fixture: an attack of a hard class is caught by a hard finding, one of a soft class
(``preference``, ``out_of_scope``) by any finding, and a negative is a false positive when it
gets a hard finding. Each entry is a tool, a prompt or a server's instructions, and belongs to
the ``train`` split (the rules were tuned on it) or the ``heldout`` split (they were not).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentrt_proxy.scan import Finding, Listing, instructions_definition, prompt_definition, scan, tool_definition

CORPUS = Path(__file__).resolve().parent / "corpus"
REAL = ("real-filesystem.json", "real-everything.json", "real-memory.json")
SOFT_CLASSES = ("preference", "out_of_scope")


@dataclass(frozen=True)
class Fixture:
    id: str
    poisoned: bool
    verdict: str
    rules: tuple[str, ...]
    listings: tuple[Listing, ...]
    tool: str


def _fixture(entry: dict[str, Any], poisoned: bool) -> Fixture:
    listings = [Listing(entry["server"], (tool_definition(entry["tool"]),))]
    for other in entry.get("context", []):
        listings.append(Listing(other["server"], tuple(tool_definition(t) for t in other["tools"])))
    expect = entry["expect"]
    return Fixture(
        entry["id"], poisoned, expect["verdict"], tuple(expect["rules"]), tuple(listings), entry["tool"]["name"]
    )


def real_listing(name: str) -> Listing:
    data = json.loads((CORPUS / name).read_text(encoding="utf-8"))
    definitions = [tool_definition(tool) for tool in data["tools"]]
    if data.get("instructions"):
        definitions.append(instructions_definition(data["instructions"]))
    definitions.extend(prompt_definition(prompt) for prompt in data.get("prompts") or [])
    return Listing(data["serverInfo"]["name"], tuple(definitions))


def fixtures() -> list[Fixture]:
    out = [_fixture(e, False) for e in json.loads((CORPUS / "benign.json").read_text(encoding="utf-8"))]
    for name in REAL:
        listing = real_listing(name)
        for definition in listing.definitions:
            if definition.kind == "tool":
                out.append(
                    Fixture(
                        f"{name}:{definition.name}",
                        False,
                        "clean",
                        (),
                        (Listing(listing.server, (definition,)),),
                        definition.name,
                    )
                )
    out.extend(_fixture(e, True) for e in json.loads((CORPUS / "poisoned.json").read_text(encoding="utf-8")))
    return out


def findings_of(fixture: Fixture) -> list[Finding]:
    """What the scan finds of the fixture's own tool (not of its context)."""
    server = fixture.listings[0].server
    return [f for f in scan(fixture.listings).findings if f.server == server and f.tool == fixture.tool]


def verdict(found: list[Finding]) -> str:
    if any(f.hard for f in found):
        return "hard"
    return "soft" if found else "clean"


@dataclass(frozen=True)
class ClassFixture:
    id: str
    cls: str
    split: str
    poisoned: bool
    listing: Listing
    label: str  # the definition's name as findings name it

    @property
    def soft_class(self) -> bool:
        return self.cls in SOFT_CLASSES

    def findings(self) -> list[Finding]:
        return [f for f in scan([self.listing]).findings if f.tool == self.label]

    def caught(self, found: list[Finding]) -> bool:
        """An attack caught (a hard finding; any finding for a soft class), or a negative flagged
        (a hard finding)."""
        return bool(found) if self.poisoned and self.soft_class else any(f.hard for f in found)


def _class_fixture(entry: dict[str, Any], poisoned: bool) -> ClassFixture:
    kind = entry.get("kind", "tool")
    if kind == "prompt":
        definition = prompt_definition(entry["prompt"])
        label = f"prompt:{definition.name}"
    elif kind == "instructions":
        definition = instructions_definition(entry["instructions"])
        label = definition.name
    else:
        definition = tool_definition(entry["tool"])
        label = definition.name
    listing = Listing(entry["server"], (definition,))
    return ClassFixture(entry["id"], entry["class"], entry["split"], poisoned, listing, label)


def class_fixtures() -> list[ClassFixture]:
    """The class corpus: every attack, then every negative."""
    out = []
    for name, poisoned in (("attack-classes.json", True), ("hard-negatives.json", False)):
        out.extend(_class_fixture(e, poisoned) for e in json.loads((CORPUS / name).read_text(encoding="utf-8")))
    return out
