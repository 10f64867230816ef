"""The file checks: a file the proxy reads must be the current user's and nobody else's to write,
and the database must not be reached through a link.

Whoever can write the configuration, a manifest or the database can change what the tools may
do or forge an approval, so each is judged on the file itself (the opened descriptor, or
``lstat``), never on a name that could be swapped after the check.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from agentrt_proxy.config.model import ConfigError


def _mode_text(mode: int) -> str:
    return stat.filemode(mode)


def check_owned(path: Path | str, st: os.stat_result) -> None:
    """Refuse a file that is not regular, that group or others can write, or that another
    user owns: whoever can write it can change what the tools may do."""
    name = str(path)
    if not stat.S_ISREG(st.st_mode):
        raise ConfigError(f"{name} is not a regular file")
    if os.name != "posix":
        return
    if st.st_mode & 0o022:
        raise ConfigError(
            f"{name} has mode {_mode_text(st.st_mode)}, which lets its group or others write it: chmod go-w it"
        )
    if st.st_uid != os.getuid():
        mode = _mode_text(st.st_mode)
        raise ConfigError(f"{name} (mode {mode}) is owned by uid {st.st_uid}, not by the current user")


def read_owned(path: Path | str) -> bytes:
    """Read a file through the ownership check, judged on the opened file itself."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except OSError as err:
        raise ConfigError(f"{path}: {err.strerror}") from None
    try:
        check_owned(path, os.fstat(fd))
        chunks = []
        while True:
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                break
            chunks.append(chunk)
        return b"".join(chunks)
    except OSError as err:
        raise ConfigError(f"{path}: {err.strerror}") from None
    finally:
        os.close(fd)


def check_database_file(path: Path | str) -> None:
    """Run before the store opens the database and again after: absent is fine, a symbolic
    link or a file others can write is refused."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return
    except OSError as err:
        raise ConfigError(f"database: {path}: {err.strerror}") from None
    if stat.S_ISLNK(st.st_mode):
        raise ConfigError(f"database: {path} is a symbolic link; name the database file itself")
    if not stat.S_ISREG(st.st_mode):
        raise ConfigError(f"database: {path} is not a regular file")
    try:
        check_owned(path, st)
    except ConfigError as err:
        raise ConfigError(f"database: {err}") from None
