"""The store: the only package that imports sqlite3.

Connection and transactions, rows, schema and migrations, the proxy_calls index, leases, the event
chain, and the mapping of every sqlite3 error to
the store's errors. Code outside the package imports these names from here.
"""

from agentrt_proxy.store.chain import ChainBreak, VerifyReport, chain_hash
from agentrt_proxy.store.errors import (
    ApprovalChanged,
    ApprovalExpired,
    ApprovalHashError,
    ClaimLost,
    InsecureMode,
    LeaseLost,
    NotFound,
    NotPending,
    RunIdTaken,
    RunLeased,
    RunStateError,
    SchemaVersionError,
    StoreCorrupt,
    StoreError,
    StoreFull,
    StoreGone,
    StoreLocked,
    StoreReadOnly,
    StoreUnavailable,
    SymlinkRefused,
    UnsafeSchema,
    WouldBlock,
)
from agentrt_proxy.store.ids import new_id, new_run_id
from agentrt_proxy.store.index import OUTCOME_KNOWN, OUTCOME_NONE, OUTCOME_UNKNOWN, OUTCOME_UNSEEN, ProxyCall
from agentrt_proxy.store.rows import Approval, Event, Run, RunSummary, Step
from agentrt_proxy.store.schema import DEFAULT_LEASE_TTL_NS
from agentrt_proxy.store.store import Store
from agentrt_proxy.store.tx import Tx
from agentrt_proxy.text.record_text import MSG_RUN_STATE

__all__ = [
    "DEFAULT_LEASE_TTL_NS",
    "MSG_RUN_STATE",
    "OUTCOME_KNOWN",
    "OUTCOME_NONE",
    "OUTCOME_UNKNOWN",
    "OUTCOME_UNSEEN",
    "Approval",
    "ApprovalChanged",
    "ApprovalExpired",
    "ApprovalHashError",
    "ChainBreak",
    "ClaimLost",
    "Event",
    "InsecureMode",
    "LeaseLost",
    "NotFound",
    "NotPending",
    "ProxyCall",
    "Run",
    "RunIdTaken",
    "RunLeased",
    "RunStateError",
    "RunSummary",
    "SchemaVersionError",
    "Step",
    "Store",
    "StoreCorrupt",
    "StoreError",
    "StoreFull",
    "StoreGone",
    "StoreLocked",
    "StoreReadOnly",
    "StoreUnavailable",
    "SymlinkRefused",
    "Tx",
    "UnsafeSchema",
    "VerifyReport",
    "WouldBlock",
    "chain_hash",
    "new_id",
    "new_run_id",
]
