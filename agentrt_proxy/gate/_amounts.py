"""What a call spends: the amount (and currency) a rule's ``amount_field`` names in the arguments.

"Unpriced": a tool with no amount field spends zero. "Unresolved": a declared field that is
absent, not a JSON number (``"12"`` is a string), negative, or past ``MAX_AMOUNT`` (or finer
than ``MIN_EXPONENT``) is refused with a reason of its own, never taken as zero. An amount is
the exact decimal of its JSON literal (``canonical.Number`` keeps it): ``1e2`` is exactly 100,
and no float is ever made. A currency is its ISO 4217 code (``canonical.currency``): a value
that is not three ASCII letters is unresolved too, never a currency no budget counts.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any

from agentrt_proxy.canonical import Number
from agentrt_proxy.canonical.currency import currency_code
from agentrt_proxy.text.record_text import (
    WHY_ABSENT,
    WHY_NEGATIVE,
    WHY_NOT_A_CURRENCY,
    WHY_NOT_A_NUMBER,
    WHY_PAST_BOUND,
)

MAX_AMOUNT = Decimal("1e15")
MIN_EXPONENT = -18  # more decimal places than this is no amount a budget can count


@dataclass(frozen=True)
class Resolved:
    amount: Decimal
    currency: str = ""  # the canonical code; "" when the rule declares no currency_field


@dataclass(frozen=True)
class Unresolved:
    field: str
    why: str  # "absent", WHY_NOT_A_NUMBER, "negative", WHY_PAST_BOUND, "currency ..."


def pointer(args: Any, field: str) -> tuple[bool, Any]:
    """(found, value) of ``field``: a top-level name, or a JSON Pointer (RFC 6901) when it
    begins with ``/``."""
    if not field.startswith("/"):
        if isinstance(args, dict) and field in args:
            return True, args[field]
        return False, None
    node = args
    for raw in field[1:].split("/"):
        token = raw.replace("~1", "/").replace("~0", "~")
        if isinstance(node, dict):
            if token not in node:
                return False, None
            node = node[token]
        elif isinstance(node, list):
            if not token.isdigit() or (token != "0" and token.startswith("0")) or int(token) >= len(node):
                return False, None
            node = node[int(token)]
        else:
            return False, None
    return True, node


def exact(value: Any) -> Decimal | None:
    """The exact decimal of a JSON number literal; None for anything else (a string, a bool)."""
    if not isinstance(value, Number):
        return None
    try:
        return Decimal(str(value))
    except InvalidOperation:
        return None


def resolve(args: Any, amount_field: str, currency_field: str | None) -> Resolved | Unresolved:
    found, value = pointer(args, amount_field)
    if not found:
        return Unresolved(amount_field, WHY_ABSENT)
    amount = exact(value)
    if amount is None:
        return Unresolved(amount_field, WHY_NOT_A_NUMBER)
    if amount < 0:
        return Unresolved(amount_field, WHY_NEGATIVE)
    exponent = amount.as_tuple().exponent
    if amount > MAX_AMOUNT or (isinstance(exponent, int) and exponent < MIN_EXPONENT and amount != 0):
        return Unresolved(amount_field, WHY_PAST_BOUND)
    currency = ""
    if currency_field is not None:
        found, value = pointer(args, currency_field)
        if not found:
            return Unresolved(currency_field, WHY_ABSENT)
        code = currency_code(value)
        if code is None:
            return Unresolved(currency_field, WHY_NOT_A_CURRENCY)
        currency = code
    return Resolved(amount + 0, currency)  # + 0: -0 is 0


def show(amount: Decimal) -> str:
    """An amount as people read it: plain digits, never an exponent (``1E+2`` reads ``100``)."""
    return format(amount, "f")
