"""The package's one exception tree, split by who is at fault.

Every error the program raises on purpose derives from ``AgentrtError``; a command picks its
message and exit code from the type, never from an error's text. The branches:

- ``ConfigurationError``: the operator's files (the configuration, a manifest, a rule).
- ``UsageError``: the operator's command line.
- ``StoreError``: the database. ``StoreUnavailable`` and its kinds (locked, full, read-only,
  corrupt, gone) are what every ``sqlite3`` error becomes at the store's boundary; the store's
  own refusals (no such run, a lost compare-and-set) derive from ``StoreError`` too.
- ``UpstreamError``: an upstream server: the request was not sent, the connection dropped
  after it was, it timed out, or the server broke the protocol.
- ``HostProtocolError``: the host's message breaks the protocol.
- ``InvalidValue``: a value refused at a boundary (strict JSON, a duration, a schema); whose
  fault it is depends on where the value came from, which the caller says.

A bug is not in this tree: an illegal state transition raises ``IllegalTransition``, a
``RuntimeError``, so no handler of the tree above ever swallows it.

This package sits at the bottom of the layers and imports nothing of the program.
"""

from __future__ import annotations


class AgentrtError(Exception):
    """The root: every error the program raises on purpose."""


# ----------------------------------------------------------------------------- the operator


class ConfigurationError(AgentrtError):
    """The configuration, a manifest or a rule is wrong; the message names the file and field."""


class UsageError(AgentrtError):
    """The operator's command line is wrong (exit code 2)."""


# ----------------------------------------------------------------------------- the database


class StoreError(AgentrtError):
    """The database refused, or could not do, what was asked."""


class StoreUnavailable(StoreError):
    """The database cannot be used now: a ``sqlite3`` error, mapped at the store's boundary."""


class StoreLocked(StoreUnavailable):
    """Another connection held the write lock past the busy timeout."""


class StoreFull(StoreUnavailable):
    """The disk, or the file's size limit, is full."""


class StoreReadOnly(StoreUnavailable):
    """The file or its directory cannot be written."""


class StoreCorrupt(StoreUnavailable):
    """The file is not a database, or is malformed."""


class StoreGone(StoreUnavailable):
    """The file was deleted, moved or replaced while the program had it open."""


# ----------------------------------------------------------------------------- an upstream


class UpstreamError(AgentrtError):
    """An upstream server could not be reached or used."""


class UpstreamNotSent(UpstreamError):
    """The request never reached the server: nothing can have executed."""


class UpstreamDropped(UpstreamError):
    """The connection ended after the request was sent: the outcome is unknown."""


class UpstreamTimedOut(UpstreamError):
    """The server did not answer in time: the outcome is unknown."""


class UpstreamProtocolError(UpstreamError):
    """The server's messages break the protocol."""


# ----------------------------------------------------------------------------- the host


class HostProtocolError(AgentrtError):
    """The host's message breaks the protocol."""


# ----------------------------------------------------------------------------- values


class InvalidValue(AgentrtError, ValueError):
    """A value refused at a boundary (strict JSON, a duration, a schema)."""


# ----------------------------------------------------------------------------- bugs


class IllegalTransition(RuntimeError):
    """A programming error: a state change the state machine does not allow."""
