"""The token file: every OAuth token of one configuration, in one file beside its database.

Mode 0600 and the current user's, refused otherwise (a token read is a server used in the
operator's name), and never reached through a link. Entries are keyed by issuer, resource and
client; each names the server it was fetched for. A write goes to a new file that replaces the
old one, so a reader sees the old tokens or the new, never half of them.

Two proxies may refresh the same token at once, and a refresh token that rotates works once:
whoever refreshes holds an exclusive lock (``fcntl.flock`` on a lock file beside it, which holds
nothing) around reading, refreshing and writing, and reads the file again after taking it, so
the second finds the first's fresh token and uses it instead of spending the spent one.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentrt_proxy.config.files import check_owned
from agentrt_proxy.config.model import ConfigError
from agentrt_proxy.errors import ConfigurationError
from agentrt_proxy.text import oauth_text

__all__ = ["Token", "TokenFile", "TokenFileError"]

VERSION = 1


class TokenFileError(ConfigurationError):
    """The token file cannot be used: others may read it, it is a link, or it is not the proxy's."""


@dataclass(frozen=True)
class Token:
    server: str
    issuer: str
    resource: str
    client_id: str
    access_token: str
    token_endpoint: str
    refresh_token: str | None = None
    expires_at: float | None = None  # Unix seconds; None: the server said nothing
    issued_at: float | None = None  # when it was fetched (its lifetime sets how early it is refreshed)
    scope: str = ""
    auth_method: str = "none"  # how the client authenticates at the token endpoint
    client_secret: str | None = None  # only one that registration issued; a configured one is never stored
    grant: str = "authorization_code"
    step_up: str = ""  # a scope a 403 asked for since: the next login asks for it too

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.issuer, self.resource, self.client_id)

    def expires_within(self, seconds: float, now: float) -> bool:
        return self.expires_at is not None and self.expires_at - now <= seconds

    @classmethod
    def from_tree(cls, tree: Any) -> Token | None:
        if not isinstance(tree, dict):
            return None
        names = {f.name for f in dataclasses.fields(cls)}
        try:
            token = cls(**{k: v for k, v in tree.items() if k in names})
        except TypeError:
            return None
        texts = (token.server, token.issuer, token.resource, token.client_id, token.access_token, token.token_endpoint)
        if not all(isinstance(v, str) for v in texts) or not all(
            v is None or (isinstance(v, int | float) and not isinstance(v, bool))
            for v in (token.expires_at, token.issued_at)
        ):
            return None  # an entry written by hand, or by another version: as if there were none
        return token


class TokenFile:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.lock_path = path.with_name(path.name + ".lock")

    # ------------------------------------------------------------------ reading

    def read(self) -> list[Token]:
        """Every token held (none when there is no file yet)."""
        flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
        try:
            fd = os.open(self.path, flags)
        except FileNotFoundError:
            return []
        except OSError as err:
            raise TokenFileError(oauth_text.TOKEN_FILE_ERROR.format(file=self.path, error=err.strerror)) from None
        try:
            self._check(os.fstat(fd))
            with os.fdopen(os.dup(fd), "rb") as handle:
                data = handle.read()
        finally:
            os.close(fd)
        try:
            tree = json.loads(data)
        except ValueError:
            raise TokenFileError(oauth_text.TOKEN_FILE_NOT_JSON.format(file=self.path)) from None
        entries = tree.get("tokens") if isinstance(tree, dict) else None
        if not isinstance(entries, list):
            raise TokenFileError(oauth_text.TOKEN_FILE_NO_LIST.format(file=self.path))
        return [token for token in map(Token.from_tree, entries) if token is not None]

    def _check(self, st: os.stat_result) -> None:
        """The configuration's check (regular, the current user's, nobody else may write it), and
        stricter: nobody else may read it either."""
        try:
            check_owned(self.path, st)
        except ConfigError as err:
            raise TokenFileError(oauth_text.TOKEN_FILE_REFUSED.format(error=err)) from None
        if os.name == "posix" and st.st_mode & 0o077:
            raise TokenFileError(oauth_text.TOKEN_FILE_READABLE.format(file=self.path, mode=stat.filemode(st.st_mode)))

    def find(self, server: str) -> Token | None:
        return next((token for token in self.read() if token.server == server), None)

    # ------------------------------------------------------------------ writing

    @contextlib.contextmanager
    def locked(self) -> Iterator[None]:
        """Hold the exclusive lock: read, refresh and write inside it, never across it."""
        flags = os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
        try:
            fd = os.open(self.lock_path, flags, 0o600)
        except OSError as err:
            raise TokenFileError(oauth_text.TOKEN_FILE_LOCK.format(file=self.lock_path, error=err.strerror)) from None
        try:
            if os.name == "posix":
                import fcntl

                fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)  # releases the lock

    def put(self, token: Token) -> None:
        """Keep ``token`` in place of the server's earlier one (and of any with its key). Lock first."""
        kept = [t for t in self.read() if t.key != token.key and t.server != token.server]
        self._write([*kept, token])

    def remove(self, server: str) -> bool:
        """Forget the server's token; whether there was one. Lock first."""
        tokens = self.read()
        kept = [t for t in tokens if t.server != server]
        if len(kept) == len(tokens):
            return False
        self._write(kept)
        return True

    def _write(self, tokens: list[Token]) -> None:
        document = {"version": VERSION, "tokens": [dataclasses.asdict(t) for t in tokens]}
        data = json.dumps(document, indent=2, sort_keys=True).encode("utf-8") + b"\n"
        temporary = self.path.with_name(f"{self.path.name}.{os.getpid()}.tmp")
        flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
        try:
            fd = os.open(temporary, flags, 0o600)
            try:
                if hasattr(os, "fchmod"):
                    os.fchmod(fd, 0o600)  # whatever the umask made of it
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view) :]
                os.fsync(fd)
            finally:
                os.close(fd)
            os.replace(temporary, self.path)
        except OSError as err:
            with contextlib.suppress(OSError):
                os.unlink(temporary)
            raise TokenFileError(oauth_text.TOKEN_FILE_ERROR.format(file=self.path, error=err.strerror)) from None
