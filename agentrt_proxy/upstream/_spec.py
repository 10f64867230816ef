"""A registered tool as the runtime hashes it: the pin's part of every recorded decision."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

from agentrt_proxy import canonical
from agentrt_proxy.canonical import Number


@dataclass(frozen=True)
class ToolSpec:
    """A registered tool as the runtime hashes it (timeout in nanoseconds)."""

    name: str
    description: str
    input_schema: Any  # a literal-keeping tree
    side_effect: str
    timeout: int
    terminal: bool = False

    def tree(self) -> dict[str, Any]:
        # Go's struct order; canonical encoding sorts, go_json keeps this order.
        out: dict[str, Any] = {
            "name": self.name,
            "description": self.description,
            "input_schema": self.input_schema,
            "side_effect": self.side_effect,
            "timeout": Number(str(self.timeout)),
        }
        if self.terminal:
            out["terminal"] = True
        return out

    def spec_hash(self) -> str:
        return hashlib.sha256(canonical.canonical_bytes(self.tree())).hexdigest()
