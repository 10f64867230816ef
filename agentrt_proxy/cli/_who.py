"""Who decides: the operator's name when ``-by`` is not given.

``$USER`` first (what the shell says), then the account name the system knows
(``getpass.getuser()``: ``LOGNAME``, ``USER``, ``LNAME``, ``USERNAME``, then the password
database), then the uid itself: a service account with no name in the password database
still decides as someone the record can name.
"""

from __future__ import annotations

import getpass
import os

from agentrt_proxy.errors import UsageError
from agentrt_proxy.text import operator_text


def deciding_user() -> str | None:
    name = os.environ.get("USER")
    if name is not None:
        return name
    try:
        return getpass.getuser()
    except (OSError, KeyError, ImportError):
        pass
    getuid = getattr(os, "getuid", None)
    return f"uid {getuid()}" if getuid is not None else None


def decider(given: str | None) -> str:
    """The deciding name: ``-by``'s when given, else ``deciding_user()``; a usage error when there
    is none, or when the name given is blank (a decision must name someone)."""
    by = given if given is not None else deciding_user()
    if by is None:
        raise UsageError(operator_text.OP_NEED_BY)
    if not by.strip():
        raise UsageError(operator_text.OP_BLANK_BY)
    return by
