"""A result's text recorded once when the server sent it twice (decision 0015).

Many servers answer a tool call with the same text in a content block and inside their
structured content: the npm filesystem server's ``read_text_file`` sends a file as
``content: [{"type": "text", "text": T}]`` and ``structuredContent: {"content": T}``. Recorded as
sent, a 20 MiB file costs 40 MiB in the record (and its cap). So a text block whose whole text
equals a string of the structured content (at least ``SHARED_MIN`` characters: a short one costs
nothing worth saving) is recorded with an empty ``text``, and the record's
``textFromStructured`` names the block and where the string is:
``[{"block": 0, "path": ["content"]}]``. ``expand`` puts the text back, so a reader of the record
(the host's answer, DUPLICATE's quote) sees the result exactly as the server sent it.
"""

from __future__ import annotations

from typing import Any

from agentrt_proxy.canonical import Number
from agentrt_proxy.canonical.encoder import SCHEMA, encode

__all__ = ["SHARED_KEY", "SHARED_MIN", "entries_size", "expand", "share"]

SHARED_KEY = "textFromStructured"
SHARED_MIN = 1024  # characters: a shorter text is recorded twice, as sent
_WALK_NODES = 100_000  # the structured content's nodes looked at, at most (a huge tree is not walked whole)

Path = list[str | int]


def _strings(structured: Any) -> dict[str, Path]:
    """Every long string of the structured content, with the path of its first occurrence."""
    found: dict[str, Path] = {}
    stack: list[tuple[Any, Path]] = [(structured, [])]
    seen = 0
    while stack and seen < _WALK_NODES:
        value, path = stack.pop()
        seen += 1
        if isinstance(value, str):
            if len(value) >= SHARED_MIN:
                found.setdefault(value, path)
        elif isinstance(value, dict):
            stack.extend((item, [*path, key]) for key, item in reversed(value.items()))
        elif isinstance(value, list):
            stack.extend((item, [*path, index]) for index, item in reversed(list(enumerate(value))))
    return found


def share(blocks: list[Any], structured: Any) -> tuple[list[Any], list[dict[str, Any]]]:
    """The blocks to record (a shared text emptied) and the entries naming where each text is."""
    if structured is None:
        return blocks, []
    strings: dict[str, Path] | None = None
    kept: list[Any] = []
    entries: list[dict[str, Any]] = []
    for index, block in enumerate(blocks):
        text = block.get("text") if isinstance(block, dict) and block.get("type") == "text" else None
        if isinstance(text, str) and len(text) >= SHARED_MIN:
            strings = _strings(structured) if strings is None else strings
            path = strings.get(text)
            if path is not None:
                kept.append({**block, "text": ""})
                entries.append({"block": index, "path": path})
                continue
        kept.append(block)
    return kept, entries


def _index(value: Any) -> int | None:
    """A whole number as recorded: an ``int`` as built, a ``Number`` literal as read back."""
    if isinstance(value, Number):
        return int(value) if value.isdigit() else None
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _at(tree: Any, path: Any) -> Any:
    for step in path if isinstance(path, list) else [None]:
        if isinstance(tree, dict) and isinstance(step, str) and not isinstance(step, Number):
            tree = tree.get(step)
        elif isinstance(tree, list) and (index := _index(step)) is not None and index < len(tree):
            tree = tree[index]
        else:
            return None
    return tree


def expand(record: dict[str, Any]) -> dict[str, Any]:
    """``record`` with every shared text back in its block (and without ``SHARED_KEY``)."""
    entries = record.get(SHARED_KEY)
    if not isinstance(entries, list):
        return record
    blocks = list(record.get("content") or [])
    for entry in entries:
        if not isinstance(entry, dict):
            continue
        index = _index(entry.get("block"))
        text = _at(record.get("structuredContent"), entry.get("path"))
        if index is not None and index < len(blocks) and isinstance(blocks[index], dict) and isinstance(text, str):
            blocks[index] = {**blocks[index], "text": text}
    return {key: value for key, value in record.items() if key != SHARED_KEY} | {"content": blocks}


def entries_size(entries: list[dict[str, Any]]) -> int:
    """What the entries add to the record's canonical form: ``,"textFromStructured":[…]``."""
    if not entries:
        return 0
    return len(f',"{SHARED_KEY}":') + len(encode(entries, SCHEMA).encode("utf-8"))
