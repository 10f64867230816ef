"""The file beside the database that says a console is running for it: ``DB.console``.

It holds the console's port and process id, never its token: ``watch -notify`` names the
console's address in its notification, and the address alone opens nothing. Only a browser
that exchanged the printed link holds the session cookie; any other reader of the file (a
program of the same user could read the database itself anyway, SECURITY.md's scope) gets the
page that says to open the printed link. The file is the user's own (0600, no symbolic link
followed, its owner checked when read) and removed when the console stops; one left by a
console that was killed names a process that is gone and is ignored.
"""

from __future__ import annotations

import contextlib
import json
import os

MAX_BYTES = 200


def beacon_path(database: str) -> str:
    return os.path.abspath(database) + ".console"


def write(database: str, port: int) -> None:
    path = beacon_path(database)
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)  # a killed console's: never written through (O_EXCL below)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(json.dumps({"port": port, "pid": os.getpid()}))


def remove(database: str) -> None:
    """Remove the file when it is still this process's (a later console may have replaced it)."""
    if _read(beacon_path(database)).get("pid") == os.getpid():
        with contextlib.suppress(OSError):
            os.unlink(beacon_path(database))


def running_url(database: str) -> str | None:
    """The address of the console running for ``database`` (no token), or None."""
    found = _read(beacon_path(database))
    port, pid = found.get("port"), found.get("pid")
    if not isinstance(port, int) or not 0 < port < 65536 or not isinstance(pid, int) or pid <= 0:
        return None
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return None
    except PermissionError:
        return None  # another user's process now holds that number
    return f"http://127.0.0.1:{port}/"


def _read(path: str) -> dict[str, object]:
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return {}
    try:
        if hasattr(os, "getuid") and os.fstat(fd).st_uid != os.getuid():
            return {}
        data = os.read(fd, MAX_BYTES + 1)
    finally:
        os.close(fd)
    try:
        value = json.loads(data) if len(data) <= MAX_BYTES else None
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}
