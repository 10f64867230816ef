"""What the program does with an error it did not expect: tells whether an error is one of its
own (the tree, or the system's ``OSError``) even when a task group wrapped it, and keeps a
bug's traceback in a file only its owner can read, so one line can name where it went.

The handlers that catch errors catch only these; everything else is a bug, reaches
``cli/main``'s one frame (or, on a thread no frame covers, ``write_traceback`` directly), and
is never printed as if it were the user's mistake.
"""

from __future__ import annotations

import os

from agentrt_proxy.errors import AgentrtError

TRACEBACK_PREFIX = "agentrt-proxy-error-"


def expected(err: BaseException) -> BaseException | None:
    """``err`` itself when it is one of the program's errors or an ``OSError``; the first of a
    task group's errors when every one inside it is; None for a bug."""
    if isinstance(err, AgentrtError | OSError):
        return err
    inner = getattr(err, "exceptions", None)  # an exception group (anyio, or Python 3.11's own)
    if isinstance(inner, tuple) and inner:
        leaves = [expected(e) for e in inner if isinstance(e, BaseException)]
        if len(leaves) == len(inner) and all(leaf is not None for leaf in leaves):
            return leaves[0]
    return None


def write_traceback(err: BaseException) -> str | None:
    """The traceback of ``err``, in a new file under the temporary directory only its owner can
    read (it may hold arguments); its path, or None when not even that could be written."""
    # Imported here: every command imports this module at its start, and ``serve`` answers
    # ``initialize`` before anything else would import them (~8 ms: shutil, bz2, lzma, random).
    import tempfile
    import traceback

    try:
        fd, path = tempfile.mkstemp(prefix=TRACEBACK_PREFIX, suffix=".txt")
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write("".join(traceback.format_exception(type(err), err, err.__traceback__)))
    except OSError:
        return None
    return path
