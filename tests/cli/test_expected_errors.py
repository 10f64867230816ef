"""Which errors a command words as the user's and which are bugs (errors/bugs.py): the one
frame in cli/main takes what ``expected`` refuses; a task group's wrapping changes nothing."""

from __future__ import annotations

from builtins import ExceptionGroup  # Python 3.11 and later: what anyio raises from a task group

import pytest

from agentrt_proxy.errors import ConfigurationError, StoreLocked, UpstreamNotSent
from agentrt_proxy.errors.bugs import expected

CONFIG = ConfigurationError("config x: unknown field")
LOCKED = StoreLocked("locked")
GONE = FileNotFoundError("no such file")
BUG = KeyError("a bug")


@pytest.mark.parametrize(
    ("raised", "worded"),
    [
        (CONFIG, CONFIG),
        (LOCKED, LOCKED),
        (GONE, GONE),
        (BUG, None),
        (ZeroDivisionError(), None),
        (ExceptionGroup("one server", [UpstreamNotSent("down")]), "down"),
        (ExceptionGroup("two", [CONFIG, ExceptionGroup("inner", [LOCKED])]), CONFIG),
        (ExceptionGroup("a bug among them", [CONFIG, BUG]), None),
    ],
    ids=["config", "store", "os", "bug", "zero", "group of one", "nested groups", "group with a bug"],
)
def test_an_error_of_the_tree_or_the_system_is_worded_and_anything_else_is_a_bug(
    raised: BaseException, worded: BaseException | str | None
) -> None:
    found = expected(raised)
    if worded is None:
        assert found is None
    elif isinstance(worded, str):
        assert found is not None and str(found) == worded
    else:
        assert found is worded
