"""Run the proxy from the .pyz with every SQLite statement traced, to count commits.

``python count_commits.py PYZ LOG serve -config FILE``: the proxy as usual, except that
each connection the store opens gets a trace callback. Every transaction that commits
(an explicit ``BEGIN … COMMIT``, or a write statement in autocommit mode, such as the
lease renewal) appends one JSON line to LOG: the write statements it held. Every
statement (reads too) is appended to LOG.sql, for the query plans. Measurement only:
nothing else changes.
"""

from __future__ import annotations

import json
import re
import sys
import threading

pyz, log_path = sys.argv[1], sys.argv[2]
sys.argv = [pyz, *sys.argv[3:]]
sys.path.insert(0, pyz)

from agentrt_proxy.store import _store as store  # noqa: E402

_lock = threading.Lock()
_log = open(log_path, "a", buffering=1)
_sql = open(log_path + ".sql", "a", buffering=1)
_WRITE = re.compile(r"^\s*(INSERT|UPDATE|DELETE|REPLACE)\b[^(]*?\b(?:INTO\s+|)(\w+)", re.I)
_original = store._connect


def _connect(path: str, readonly: bool):  # type: ignore[no-untyped-def]
    conn = _original(path, readonly)
    state = {"tx": False, "writes": [], "unit": 0}

    def trace(statement: str) -> None:
        head = statement.lstrip().upper()
        with _lock:
            _sql.write(json.dumps(statement) + "\n")
            if head.startswith("BEGIN"):
                state["tx"], state["writes"] = True, []
            elif head.startswith("COMMIT") or head.startswith("END"):
                if state["writes"]:
                    _log.write(json.dumps(state["writes"]) + "\n")
                state["tx"], state["writes"] = False, []
            elif head.startswith("SAVEPOINT"):  # a unit of a group commit (docs/decisions/0023)
                state["unit"] = len(state["writes"])
            elif head.startswith("ROLLBACK TO"):  # that unit undone alone
                del state["writes"][state["unit"]:]
            elif head.startswith("ROLLBACK"):
                state["tx"], state["writes"] = False, []
            else:
                m = _WRITE.match(statement)
                if m:
                    what = f"{m.group(1).upper()} {m.group(2)}"
                    if state["tx"]:
                        state["writes"].append(what)
                    else:
                        _log.write(json.dumps([what + " (autocommit)"]) + "\n")

    conn.set_trace_callback(trace)
    return conn


store._connect = _connect

from agentrt_proxy.cli.main import main  # noqa: E402

sys.exit(main())
