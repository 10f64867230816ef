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
from agentrt_proxy.config import _messages as T
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
        fail(T.FIELD_EMPTY.format(where=where, name=name))
    if value.startswith("/") and _POINTER_ESCAPE.search(value):
        fail(T.FIELD_NOT_POINTER.format(where=where, name=name, q_value=go_quote(value)))


def trust(server: str, value: str | None, fail: Fail) -> str:
    if value is None:
        return UNTRUSTED
    if value not in (TRUSTED, UNTRUSTED):
        fail(T.TRUST_BAD.format(q_server=go_quote(server), q_value=go_quote(value)))
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
        fail(T.BUDGETS_NOT_ARRAY)
    names = registered_names(servers)
    out: list[Budget] = []
    seen: set[str] = set()
    for index, entry in enumerate(value):
        budget = _budget(index, entry, names, fail)
        if budget.name in seen:
            fail(T.BUDGET_NAME_TWICE.format(index=index, q_name=go_quote(budget.name)))
        seen.add(budget.name)
        out.append(budget)
    return tuple(out)


_BUDGET_FIELDS = ("name", "tools", "limit", "window", "currency", "over_budget")


def _budget(index: int, entry: Any, names: dict[str, tuple[ServerConfig, str]], fail: Fail) -> Budget:
    where = T.BUDGET_AT.format(index=index)
    if not isinstance(entry, dict):
        fail(T.NOT_AN_OBJECT.format(where=where))
    for key in entry:
        if key not in _BUDGET_FIELDS:
            fail(T.UNKNOWN_FIELD.format(q_name=go_quote(key), where=T.UNKNOWN_FIELD_IN.format(where=where)))
    name = _string(entry.get("name"), T.BUDGET_NAME_FIELD.format(where=where), fail)
    if name is None or not BUDGET_NAME_PATTERN.fullmatch(name):
        fail(T.BUDGET_NAME_PATTERN.format(where=where))
    where = T.BUDGET_WHERE.format(q_name=go_quote(name))
    tools = entry.get("tools")
    if (
        not isinstance(tools, list)
        or not tools
        or not all(isinstance(t, str) and not isinstance(t, Number) for t in tools)
    ):
        fail(T.BUDGET_TOOLS.format(where=where))
    for tool in tools:
        if tool not in names:
            fail(T.BUDGET_TOOL_UNKNOWN.format(where=where, q_tool=go_quote(tool)))
    limit = _limit(entry.get("limit"), where, fail)
    window = _window(entry.get("window"), where, fail)
    currency = _currency(entry.get("currency"), where, fail)
    if currency is not None:
        for tool in tools:
            server, remote = names[tool]
            if server.rules[remote].currency_field is None:
                fail(
                    T.BUDGET_TOOL_NO_CURRENCY.format(where=where, q_currency=go_quote(currency), q_tool=go_quote(tool))
                )
    over = _string(entry.get("over_budget"), T.BUDGET_FIELD.format(where=where, field="over_budget"), fail) or DENY
    if over not in OVER_BUDGET_OUTCOMES:
        fail(T.BUDGET_OVER.format(where=where, q_value=go_quote(over)))
    return Budget(name, tuple(dict.fromkeys(tools)), limit, window, currency, over)


def _currency(value: Any, where: str, fail: Fail) -> str | None:
    """The budget's currency as calls are compared with it: its ISO 4217 code, upper case."""
    text = _string(value, T.BUDGET_FIELD.format(where=where, field="currency"), fail)
    if text is None:
        return None
    code = currency_code(text)
    if code is None:
        fail(T.BUDGET_CURRENCY.format(where=where, q_value=go_quote(text)))
    return code


def _string(value: Any, label: str, fail: Fail) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or isinstance(value, Number):
        fail(T.MUST_BE_STRING.format(field=label))
    return value


def _limit(value: Any, where: str, fail: Fail) -> Decimal:
    if not isinstance(value, Number):
        shown = T.LIMIT_NOTHING if value is None else canonical.policy_text(value)
        fail(T.LIMIT_NOT_NUMBER.format(where=where, shown=shown))
    try:
        limit = Decimal(str(value))
    except InvalidOperation:
        fail(T.LIMIT_UNREAD.format(where=where, value=value))
    if limit < 0:
        fail(T.LIMIT_NEGATIVE.format(where=where, value=value))
    if limit > MAX_LIMIT:
        fail(T.LIMIT_PAST.format(where=where, value=value, most=format(MAX_LIMIT, "f")))
    return limit


def _window(value: Any, where: str, fail: Fail) -> int | None:
    if value is None:
        return None
    if not isinstance(value, str) or isinstance(value, Number):
        fail(T.WINDOW_NOT_STRING.format(where=where))
    try:
        ns = parse_go(value)
    except DurationError as err:
        fail(T.WINDOW_BAD.format(where=where, error=err))
    if ns <= 0:
        fail(T.WINDOW_NOT_POSITIVE.format(where=where, q_value=go_quote(value)))
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
