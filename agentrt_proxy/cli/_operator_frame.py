"""The frame every operator subcommand over the database runs in: its arguments, opening the store,
and the one-line refusal.

The commands live by concern: ``reading`` (runs, show), ``deciding`` (approve, reject),
``verify_chain`` (verify), ``budget``, ``export``, ``watch`` and ``console``. Each takes the
arguments after its name and returns the exit code (0 success, 1 failure, 2 usage). Every
argument is checked before the database is opened; the database is never created or migrated
here: readers open it read-only, a decision opens a writer only to decide. A refusal to open
(missing, locked, newer schema, insecure mode, symbolic link) is one line on standard error and
exit 1.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, TextIO

from agentrt_proxy.canonical.encoder import go_json
from agentrt_proxy.cli import _flags as flags
from agentrt_proxy.cli._flags import Flags, UsageError
from agentrt_proxy.config import ConfigError, check_database_file, load_config
from agentrt_proxy.errors import AgentrtError
from agentrt_proxy.store import (
    NotFound,
    Run,
    SchemaVersionError,
    Store,
    StoreError,
    StoreLocked,
    StoreUnavailable,
)
from agentrt_proxy.text import escaping, operator_text

BUSY_WAIT = "5s"  # the store's busy timeout, said in the "locked" line


class OperatorError(AgentrtError):
    """A refusal the operator reads as one line; exit 1 (the cause, when there is one, is a
    configuration or store error this wraps with the words the operator should read)."""


# --------------------------------------------------------------------------- arguments


def parse(argv: list[str], options: tuple[str, ...], switches: tuple[str, ...] = ("json",)) -> Flags:
    return flags.parse(argv, options=("db", "config", *options), switches=switches)


@dataclass(frozen=True)
class Source:
    """Where the database is named: -db FILE, or -config FILE's ``database``."""

    db: str | None
    config: str | None

    def path(self) -> str:
        """The database path; reading the configuration is the first file touched."""
        if self.db is not None:
            return self.db
        try:
            # expand_env off: the operator's shell need not hold the servers' tokens.
            return str(load_config(self.config or "", expand_env=False).database)
        except ConfigError as err:
            raise OperatorError(str(err)) from None


def database(fl: Flags) -> Source:
    """Exactly one of -db and -config (checked before anything is read)."""
    db, config = fl.get("db"), fl.get("config")
    if (db is None) == (config is None):
        raise UsageError(operator_text.OP_NEED_DATABASE if db is None else operator_text.OP_BOTH_DATABASE)
    if not (db or config):
        raise UsageError(operator_text.OP_NEED_DATABASE)
    return Source(db, config)


def no_positionals(fl: Flags) -> None:
    if fl.positionals:
        raise UsageError(f"unexpected argument {escaping.go_quote(escaping.clean(fl.positionals[0], 100))}")


def one_run(fl: Flags) -> str:
    if len(fl.positionals) != 1 or not fl.positionals[0]:
        raise UsageError(operator_text.OP_NEED_RUN)
    return fl.positionals[0]


def non_negative(fl: Flags, name: str, default: int) -> int:
    value = fl.integer(name, default)
    if value < 0:
        raise UsageError(operator_text.OP_NEGATIVE.format(name=name))
    return value


# --------------------------------------------------------------------------- opening


def describe_open_failure(path: str, err: BaseException) -> str:
    detail = str(err).removeprefix("agentrt: ")
    if isinstance(err, ConfigError):
        return str(err)
    if isinstance(err, NotFound):
        return operator_text.OP_DB_MISSING.format(path=path)
    if isinstance(err, SchemaVersionError):
        return operator_text.OP_DB_SCHEMA.format(path=path, detail=detail)
    if isinstance(err, StoreLocked):
        return operator_text.OP_DB_LOCKED.format(path=path, wait=BUSY_WAIT)
    if isinstance(err, StoreUnavailable):
        return operator_text.OP_DB_UNREADABLE.format(path=path, detail=detail)
    return operator_text.OP_DB_REFUSED.format(path=path, detail=detail)


@contextmanager
def opened(path: str, *, writer: bool) -> Iterator[Store]:
    if not os.path.lexists(path):
        raise OperatorError(operator_text.OP_DB_MISSING.format(path=path))
    try:
        check_database_file(path)
        store = Store.open_existing(path) if writer else Store.open_readonly(path)
    except (ConfigError, StoreError) as err:
        raise OperatorError(describe_open_failure(path, err)) from None
    try:
        yield store
    finally:
        store.close()


def guarded(command: str, source: Source, body: Callable[[str], int]) -> int:
    """Resolve the database and run ``body`` on it; every refusal becomes one line on
    standard error and exit 1. Usage errors pass through to the command frame (exit 2)."""
    path = source.db or source.config or ""
    try:
        path = source.path()
        return body(path)
    except OperatorError as err:
        sys.stderr.write(operator_text.operator_command_error(command, str(err)))
    except (StoreError, ConfigError) as err:
        sys.stderr.write(operator_text.operator_command_error(command, describe_open_failure(path, err)))
    return 1


def emit(lines: list[str], out: TextIO | None = None) -> None:
    (out or sys.stdout).write("".join(line + "\n" for line in lines))


def emit_json(value: Any) -> None:
    sys.stdout.write(go_json(value) + "\n")


def read_run(store: Store, run_id: str) -> Run:
    try:
        return store.get_run(run_id)
    except NotFound:
        raise OperatorError(operator_text.OP_UNKNOWN_RUN.format(run=escaping.clean(run_id, 100))) from None
