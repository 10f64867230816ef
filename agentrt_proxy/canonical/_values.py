"""What the JSON boundary, the encoder and the schema form share: a number kept as the literal it
was written as, and the refusal of JSON the runtime will not take.

Apart from ``strict`` so that the encoder (which ``strict`` uses) can import them too.
"""

from __future__ import annotations

from agentrt_proxy.errors import InvalidValue

__all__ = ["JSONBoundaryError", "Number"]


class JSONBoundaryError(InvalidValue):
    """JSON the runtime refuses where it enters; ``reason`` is the original's wording."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class Number(str):
    """A JSON number, kept as the literal it was written as."""

    __slots__ = ()

    def is_integer_literal(self) -> bool:
        return not any(c in self for c in ".eE")
