"""Who decides: the operator's name when ``-by`` is not given.

``$USER`` first (what the shell says), then the account name the system knows
(``getpass.getuser()``: ``LOGNAME``, ``USER``, ``LNAME``, ``USERNAME``, then the password
database), then the uid itself: a service account with no name in the password database
still decides as someone the record can name.
"""

from __future__ import annotations

import getpass
import os


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
