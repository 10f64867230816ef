"""The configuration's fields for spending budgets and untrusted output (docs/decisions/0017):
a rule's ``amount_field`` and ``currency_field`` (an argument name or a JSON Pointer), the
top-level ``budgets``, a server's ``trust``. Strict like the rest: each refusal names its field.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from decimal import Decimal, InvalidOperation
from typing import Any, NoReturn

from agentrt_proxy import canonical
from agentrt_proxy.canonical import Number
from agentrt_proxy.canonical.currency import currency_code
from agentrt_proxy.canonical.durations import DurationError, parse_go
from agentrt_proxy.canonical.quoting import go_quote
from agentrt_proxy.config.model import DENY, OVER_BUDGET_OUTCOMES, TRUSTED, UNTRUSTED, Budget, ServerConfig

Fail = Callable[[str], NoReturn]

BUDGET_NAME_PATTERN = re.compile(r"[A-Za-z0-9_.-]{1,64}")
# A limit past this is no allowance at all; it also keeps every sum exact and short.
MAX_LIMIT = Decimal("1e15")
_POINTER_ESCAPE = re.compile(r"~(?![01])")


def check_field(where: str, name: str, value: str | None, fail: Fail) -> None:
    """An argument name (``amount``) or a JSON Pointer into the arguments (``/payment/amount``)."""
    if value is None:
        return
    if not value:
        fail(f"{where}: {name} must not be empty")
    if value.startswith("/") and _POINTER_ESCAPE.search(value):
        fail(f"{where}: {name} {go_quote(value)} is not a JSON Pointer ('~' must be followed by 0 or 1)")


def trust(server: str, value: str | None, fail: Fail) -> str:
    if value is None:
        return UNTRUSTED
    if value not in (TRUSTED, UNTRUSTED):
        fail(f"server {go_quote(server)}: trust {go_quote(value)} is not trusted or untrusted")
    return value


def registered_names(servers: Iterable[ServerConfig]) -> dict[str, tuple[ServerConfig, str]]:
    """Every registered tool name (rename, else <server>_<tool>) -> its server and rule key."""
    out: dict[str, tuple[ServerConfig, str]] = {}
    for server in servers:
        for remote, rule in server.rules.items():
            out[rule.rename or f"{server.name}_{remote}"] = (server, remote)
    return out


def budgets(value: Any, servers: Iterable[ServerConfig], fail: Fail) -> tuple[Budget, ...]:
    if value is None:
        return ()
    if not isinstance(value, list):
        fail("budgets must be an array of budget entries")
    names = registered_names(servers)
    out: list[Budget] = []
    seen: set[str] = set()
    for index, entry in enumerate(value):
        budget = _budget(index, entry, names, fail)
        if budget.name in seen:
            fail(f"budgets[{index}]: the name {go_quote(budget.name)} is used twice")
        seen.add(budget.name)
        out.append(budget)
    return tuple(out)


_BUDGET_FIELDS = ("name", "tools", "limit", "window", "currency", "over_budget")


def _budget(index: int, entry: Any, names: dict[str, tuple[ServerConfig, str]], fail: Fail) -> Budget:
    where = f"budgets[{index}]"
    if not isinstance(entry, dict):
        fail(f"{where} must be a JSON object")
    for key in entry:
        if key not in _BUDGET_FIELDS:
            fail(f"unknown field {go_quote(key)} in {where}")
    name = _string(entry.get("name"), f"{where}.name", fail)
    if name is None or not BUDGET_NAME_PATTERN.fullmatch(name):
        fail(f"{where}.name must be 1 to 64 letters, digits, '_', '.' or '-'")
    where = f"budget {go_quote(name)}"
    tools = entry.get("tools")
    if (
        not isinstance(tools, list)
        or not tools
        or not all(isinstance(t, str) and not isinstance(t, Number) for t in tools)
    ):
        fail(f"{where}: tools must be a non-empty array of registered tool names")
    for tool in tools:
        if tool not in names:
            fail(f"{where}: tools: {go_quote(tool)} is not a registered tool name (rename, else <server>_<tool>)")
    limit = _limit(entry.get("limit"), where, fail)
    window = _window(entry.get("window"), where, fail)
    currency = _currency(entry.get("currency"), where, fail)
    if currency is not None:
        for tool in tools:
            server, remote = names[tool]
            if server.rules[remote].currency_field is None:
                named = f"{where}: names currency {go_quote(currency)}"
                fail(f"{named}, and tool {go_quote(tool)} declares no currency_field")
    over = _string(entry.get("over_budget"), f"{where}: over_budget", fail) or DENY
    if over not in OVER_BUDGET_OUTCOMES:
        fail(f"{where}: over_budget {go_quote(over)} is not deny or require_approval")
    return Budget(name, tuple(dict.fromkeys(tools)), limit, window, currency, over)


def _currency(value: Any, where: str, fail: Fail) -> str | None:
    """The budget's currency as calls are compared with it: its ISO 4217 code, upper case."""
    text = _string(value, f"{where}: currency", fail)
    if text is None:
        return None
    code = currency_code(text)
    if code is None:
        shown = go_quote(text)
        fail(f'{where}: currency {shown} is not a currency code (ISO 4217: three ASCII letters, such as "EUR")')
    return code


def _string(value: Any, label: str, fail: Fail) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or isinstance(value, Number):
        fail(f"{label} must be a string")
    return value


def _limit(value: Any, where: str, fail: Fail) -> Decimal:
    if not isinstance(value, Number):
        shown = "nothing" if value is None else canonical.policy_text(value)
        fail(f"{where}: limit must be a JSON number, not {shown}")
    try:
        limit = Decimal(str(value))
    except InvalidOperation:
        fail(f"{where}: limit {value} is not a number")
    if limit < 0:
        fail(f"{where}: limit {value} is negative")
    if limit > MAX_LIMIT:
        fail(f"{where}: limit {value} is past {format(MAX_LIMIT, 'f')}")
    return limit


def _window(value: Any, where: str, fail: Fail) -> int | None:
    if value is None:
        return None
    if not isinstance(value, str) or isinstance(value, Number):
        fail(f'{where}: window is a duration string such as "24h"')
    try:
        ns = parse_go(value)
    except DurationError as err:
        fail(f"{where}: window: {err}")
    if ns <= 0:
        fail(f"{where}: window {go_quote(value)} must be longer than zero")
    return ns


def unpriced(servers: Iterable[ServerConfig], budgets: Iterable[Budget]) -> list[tuple[str, str, str, str]]:
    """(budget, registered tool, server, rule key) for each budgeted tool that declares no
    amount field: every call to it is refused, and each start says so loudly."""
    names = registered_names(servers)
    out = []
    for budget in budgets:
        for tool in budget.tools:
            server, remote = names[tool]
            if server.rules[remote].amount_field is None:
                out.append((budget.name, tool, server.name, remote))
    return out
