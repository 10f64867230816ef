"""The reach check: a stdio server whose command names one of the proxy's files, or a directory
above one, is refused before it ever starts (best effort: it reads the arguments, not the program).

Such a server could rewrite the policy or forge an approval. A file is matched by its identity
(device and inode) when it exists, and by its resolved path when it does not yet (the database
before the first run).
"""

from __future__ import annotations

import os
import urllib.parse
from dataclasses import dataclass, field

from agentrt_proxy.canonical.quoting import go_quote
from agentrt_proxy.config import _messages as T
from agentrt_proxy.config.model import Config, ConfigError


def _identity(path: str) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_dev, st.st_ino)


def _resolve_existing(path: str) -> str:
    """Resolve symbolic links as far as the path exists, keep the rest as written."""
    return os.path.realpath(path)


def _ancestry(path: str) -> list[str]:
    chain = [path]
    while True:
        parent = os.path.dirname(path)
        if parent == path:
            return chain
        chain.append(parent)
        path = parent


@dataclass
class _Protected:
    identities: dict[tuple[int, int], str] = field(default_factory=dict)
    missing: dict[str, str] = field(default_factory=dict)


def _protected(config: Config) -> _Protected:
    protected = _Protected()
    for file in config.protected_files():
        absolute = os.path.abspath(file)
        resolved = _resolve_existing(absolute)
        if _identity(absolute) is None:
            protected.missing[resolved] = str(file)
        for chain in (_ancestry(absolute), _ancestry(resolved)):
            for entry in chain:
                identity = _identity(entry)
                if identity is not None:
                    protected.identities.setdefault(identity, str(file))
    return protected


def reach_candidates(argument: str, home: str | None = None) -> list[str]:
    """The paths one command argument could name, in the spellings the check reads."""
    candidates = [argument]
    for separator in ("=", ":"):
        _, sep, rest = argument.partition(separator)
        if sep:
            candidates.append(rest)
    if argument.startswith("-") and not argument.startswith("--") and len(argument) > 2:
        candidates.append(argument[2:])
    for candidate in list(candidates):
        parsed = urllib.parse.urlsplit(candidate)
        if parsed.scheme.lower() == "file":
            candidates.append(urllib.parse.unquote(parsed.path))
    home = home if home is not None else os.path.expanduser("~")
    expanded = []
    for candidate in candidates:
        if candidate == "~":
            candidate = home
        elif candidate.startswith("~/"):
            candidate = os.path.join(home, candidate[2:])
        if candidate:
            expanded.append(candidate)
    return expanded


def check_reach(config: Config) -> None:
    """Refuse, best effort, a stdio server whose arguments name one of the proxy's files or
    a directory above one: such a server could rewrite the policy or forge an approval."""
    protected = _protected(config)
    for server in config.servers:
        if server.skip_path_check or server.command is None:
            continue
        for argument in server.command[1:]:
            for candidate in reach_candidates(argument):
                absolute = os.path.abspath(candidate)
                identity = _identity(absolute)
                reached = (
                    protected.identities.get(identity)
                    if identity is not None
                    else protected.missing.get(_resolve_existing(absolute))
                )
                if reached is not None:
                    raise ConfigError(
                        T.SERVER_REACHES.format(
                            q_name=go_quote(server.name), q_argument=go_quote(argument), reached=reached
                        )
                    )
