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

from agentrt_proxy.config import _messages as T
from agentrt_proxy.config.model import ConfigError


def _mode_text(mode: int) -> str:
    return stat.filemode(mode)


def check_owned(path: Path | str, st: os.stat_result) -> None:
    """Refuse a file that is not regular, that group or others can write, or that another
    user owns: whoever can write it can change what the tools may do."""
    name = str(path)
    if not stat.S_ISREG(st.st_mode):
        raise ConfigError(T.FILE_NOT_REGULAR.format(name=name))
    if os.name != "posix":
        return
    if st.st_mode & 0o022:
        raise ConfigError(T.FILE_WRITABLE.format(name=name, mode=_mode_text(st.st_mode)))
    if st.st_uid != os.getuid():
        mode = _mode_text(st.st_mode)
        raise ConfigError(T.FILE_NOT_OURS.format(name=name, mode=mode, uid=st.st_uid))


def read_owned(path: Path | str) -> bytes:
    """Read a file through the ownership check, judged on the opened file itself."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except OSError as err:
        raise ConfigError(T.FILE_UNREADABLE.format(path=path, error=err.strerror)) from None
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
        raise ConfigError(T.FILE_UNREADABLE.format(path=path, error=err.strerror)) from None
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
        raise ConfigError(T.DATABASE_UNREADABLE.format(path=path, error=err.strerror)) from None
    if stat.S_ISLNK(st.st_mode):
        raise ConfigError(T.DATABASE_SYMLINK.format(path=path))
    if not stat.S_ISREG(st.st_mode):
        raise ConfigError(T.DATABASE_NOT_REGULAR.format(path=path))
    try:
        check_owned(path, st)
    except ConfigError as err:
        raise ConfigError(T.DATABASE_REFUSED.format(error=err)) from None
