"""The store: the only package that imports sqlite3.

Connection and transactions, rows, schema and migrations, the proxy_calls index, leases, the event
chain, and the mapping of every sqlite3 error to the store's errors.
"""

from agentrt_proxy.store.index import (
    OUTCOME_NONE,
    OUTCOME_UNSEEN,
    ClaimLost,
    ProxyCall,
    RunIdTaken,
)
from agentrt_proxy.store.schema import (
    chain_hash,
)
from agentrt_proxy.store.store import (
    MSG_RUN_STATE,
    Approval,
    ApprovalChanged,
    ApprovalExpired,
    ApprovalHashError,
    Event,
    InsecureMode,
    LeaseLost,
    NotFound,
    NotPending,
    Run,
    RunLeased,
    RunStateError,
    RunSummary,
    SchemaVersionError,
    Step,
    Store,
    StoreError,
    SymlinkRefused,
    Tx,
    UnsafeSchema,
    WouldBlock,
    new_id,
    new_run_id,
)

__all__ = [
    "MSG_RUN_STATE",
    "OUTCOME_NONE",
    "OUTCOME_UNSEEN",
    "Approval",
    "ApprovalChanged",
    "ApprovalExpired",
    "ApprovalHashError",
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
    "StoreError",
    "SymlinkRefused",
    "Tx",
    "UnsafeSchema",
    "WouldBlock",
    "chain_hash",
    "new_id",
    "new_run_id",
]
