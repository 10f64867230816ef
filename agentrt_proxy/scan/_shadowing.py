"""The cross-server rules: a tool named like another server's, and a description that names
another server's tool.

``shadowing.name``: a name that reads as another server's tool name but is not it (the same
letters under look-alikes, case or separators: ``send_emaіl`` with a Cyrillic i) is hard; the
same name exactly, or one edit away, is soft. A name mixing Latin letters with look-alikes
from another script is hard on its own. ``shadowing.cross_server``: a description naming a
tool that only another server has is soft, and hard when the sentence also directs the model
(a directive, a changed argument): that is how one server steers another's tools.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterator, Sequence

from agentrt_proxy.scan import _messages as M
from agentrt_proxy.scan import _phrases as P
from agentrt_proxy.scan._model import HARD, SOFT, Finding, Listing
from agentrt_proxy.scan._normal import escape_span, normalise, sentences

__all__ = ["cross_server", "skeleton"]

NAME_RULE = "shadowing.name"
REFERENCE_RULE = "shadowing.cross_server"
MIN_NEAR = 6  # shorter names are too often one edit apart by chance (get, set, list)


def skeleton(name: str) -> str:
    """What a name reads as: look-alikes mapped, case folded, separators dropped."""
    return re.sub(r"[\s_\-./:]+", "", normalise(name).casefold())


def _mixed_script(name: str) -> bool:
    latin = any("a" <= ch.lower() <= "z" for ch in name)
    foreign = any(ch.isalpha() and ord(ch) > 0x24F and "LATIN" not in unicodedata.name(ch, "") for ch in name)
    return latin and foreign and normalise(name) != name


def _one_edit(a: str, b: str) -> bool:
    if a == b or abs(len(a) - len(b)) > 1:
        return False
    if len(a) == len(b):
        diff = [i for i in range(len(a)) if a[i] != b[i]]
        return len(diff) == 1 or (
            len(diff) == 2 and diff[1] == diff[0] + 1 and a[diff[0]] == b[diff[1]] and a[diff[1]] == b[diff[0]]
        )
    short, long_ = (a, b) if len(a) < len(b) else (b, a)
    return any(long_[:i] + long_[i + 1 :] == short for i in range(len(long_)))


def _distinctive(name: str) -> bool:
    """A name specific enough that naming it points at that tool (not ``search`` or ``echo``)."""
    return len(name) >= 5 and bool(re.search(r"[_\-.]|[a-z][A-Z]", name))


def cross_server(listings: Sequence[Listing]) -> Iterator[Finding]:
    names = {listing.server: set(listing.tool_names()) for listing in listings}
    for listing in listings:
        others = {(server, tool) for server, tools in names.items() if server != listing.server for tool in tools}
        own = names[listing.server]
        for definition in listing.definitions:
            if definition.kind != "tool":
                continue
            name = definition.name
            if _mixed_script(name):
                yield Finding(
                    listing.server, name, NAME_RULE, HARD, "name", escape_span(name), "mixed scripts", "shadow_name"
                )
            for server, other in sorted(others):
                if other == name:
                    yield Finding(
                        listing.server, name, NAME_RULE, SOFT, "name", escape_span(name), f"also on {server}",
                        "shadow_name", escape_span(other),
                    )  # fmt: skip
                elif skeleton(other) == skeleton(name):
                    reads = M.READS_AS.format(server=server, tool=other)
                    yield Finding(
                        listing.server, name, NAME_RULE, HARD, "name", escape_span(name), reads,
                        "shadow_name", escape_span(other),
                    )  # fmt: skip
                elif min(len(other), len(name)) >= MIN_NEAR and _one_edit(skeleton(other), skeleton(name)):
                    yield Finding(
                        listing.server,
                        name,
                        NAME_RULE,
                        SOFT,
                        "name",
                        escape_span(name),
                        M.ONE_EDIT_FROM.format(server=server, tool=other),
                        "shadow_name",
                        escape_span(other),
                    )
            foreign = sorted(tool for _, tool in others if tool not in own and _distinctive(tool))
            if not foreign:
                continue
            for text in definition.texts:
                if text.kind == "name":
                    continue
                prose = normalise(text.text)
                for tool in foreign:
                    found = re.search(rf"(?<![\w\-]){re.escape(tool)}(?![\w\-])", prose)
                    if found is None:
                        continue
                    sentence = next((s for start, s in sentences(prose) if start <= found.start() < start + len(s)), "")
                    steered = P.CONTEXT.search(sentence) or re.search(
                        r"\b(?:change|set|replace|override|redirect|instead|always|must|should|when(?:ever)?|before|after)\b",
                        sentence,
                        re.I,
                    )
                    yield Finding(
                        listing.server,
                        name,
                        REFERENCE_RULE,
                        HARD if steered else SOFT,
                        text.path,
                        escape_span(sentence or tool),
                        M.NAMES_OTHER.format(tool=tool),
                        "steer_tool" if steered else "names_other",
                        escape_span(tool),
                    )
