"""A currency as budgets compare it: an ISO 4217 code, exactly three ASCII letters, folded to
upper case (``"eur"`` is ``EUR``). Anything else is no currency at all: ``"EUR "``, a Cyrillic
``Е``, a zero-width space inside, a full-width letter. Nothing is stripped or normalised
further, so two spellings a reader cannot tell apart never count in different budgets, and
one the check cannot read is refused rather than counted nowhere (docs/decisions/0017).
"""

from __future__ import annotations

from typing import Any

from agentrt_proxy.canonical._values import Number

__all__ = ["currency_code"]

_ASCII_LETTERS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz")


def currency_code(value: Any) -> str | None:
    """The canonical code of ``value``; None when it is not three ASCII letters (or not text)."""
    if not isinstance(value, str) or isinstance(value, Number):
        return None
    if len(value) != 3 or not all(char in _ASCII_LETTERS for char in value):
        return None
    return value.upper()
