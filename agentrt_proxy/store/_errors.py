"""The store's errors: every one derives from ``agentrt_proxy.errors.StoreError``.

Two kinds. What SQLite could not do (locked, full, read-only, corrupt, gone, anything else) is
``StoreUnavailable`` and its kinds, from the package's tree; ``_sqlite_errors.py`` maps every
``sqlite3`` error onto them at the store's boundary. What the store refused on purpose (no such
row, a lost compare-and-set, a file that is not safe to open) is defined here.
"""

from __future__ import annotations

from agentrt_proxy.errors import (
    StoreCorrupt,
    StoreError,
    StoreFull,
    StoreGone,
    StoreLocked,
    StoreReadOnly,
    StoreUnavailable,
)
from agentrt_proxy.text.record_text import MSG_RUN_LEASED

__all__ = [
    "ApprovalChanged",
    "ApprovalExpired",
    "ApprovalHashError",
    "ClaimLost",
    "InsecureMode",
    "LeaseLost",
    "NotFound",
    "NotPending",
    "RunIdTaken",
    "RunLeased",
    "RunStateError",
    "SchemaVersionError",
    "StoreCorrupt",
    "StoreError",
    "StoreFull",
    "StoreGone",
    "StoreLocked",
    "StoreReadOnly",
    "StoreUnavailable",
    "SymlinkRefused",
    "UnsafeSchema",
    "WouldBlock",
]


# ----------------------------------------------------------------------------- opening the file


class NotFound(StoreError):
    """No such file, run, step or approval."""


class SchemaVersionError(StoreError):
    """The file's schema is newer than this build knows (or, for a reader, older)."""


class UnsafeSchema(StoreError):
    """The file holds a trigger or a view: the runtime creates neither."""


class InsecureMode(StoreError):
    """Group or others can write the file (and so forge approvals), or a sidecar is another user's."""


class SymlinkRefused(StoreError):
    """The path is a symbolic link."""


# ----------------------------------------------------------------------------- compare-and-set lost


class RunStateError(StoreError):
    """The run (or step) was not in the state the change expected: someone else moved it."""


class RunLeased(RunStateError):
    def __init__(self, run_id: str, owner: str, expires_at: str) -> None:
        super().__init__(MSG_RUN_LEASED.format(run_id=run_id, owner=owner, until=expires_at))
        self.run_id, self.owner, self.expires_at = run_id, owner, expires_at


class LeaseLost(StoreError):
    """This gate's lease on the run is gone: taken over, or expired by the wall clock."""


class NotPending(StoreError):
    """The approval was decided already."""


class ApprovalExpired(NotPending):
    def __init__(self, message: str, approval_id: str = "") -> None:
        super().__init__(message)
        self.approval_id = approval_id


class ApprovalChanged(StoreError):
    """The approval is not the one the operator was shown (or no hash was shown)."""


class ApprovalHashError(StoreError):
    """The approval's stored fields no longer hash to its stored hash."""


class ClaimLost(StoreError):
    """Another call claimed the key first: read the index again."""


class RunIdTaken(ClaimLost):
    """Another call's row already has this run id (two calls drew the same id in the same
    millisecond, ids.new_run_id): a lost race too, decided again under a new id."""


# ----------------------------------------------------------------------------- control flow


class WouldBlock(BaseException):
    """A write transaction begun under ``Store.nowait()`` found another connection holding
    the database's write lock: nothing was written; do the work again where it may wait.

    Not in the error tree on purpose: it is control flow, not a failure, and a
    BaseException, so no handler that turns a store failure (or any Exception) into an
    answer catches it on its way back to ``nowait``'s caller."""
