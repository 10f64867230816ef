"""verify's cost on a large database: the chain walk alone, and with the state check.

    python bench/verify_state.py [-calls 125000] [-db PATH]

Builds (with bench/build_db.py, from this source tree) a database of N completed calls, 8
events each (125,000 calls: 1,000,000 events, 125,000 runs and index rows), unless -db names
one already built. Then runs ``Store.verify`` in a fresh process for each mode, so each peak
RSS is that mode's own, and prints wall time, events per second and peak RSS. A figure, never
an assertion (tests/ hold the behaviour).
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent

CHILD = """
import json, resource, sys, time
sys.path.insert(0, {repo!r})
from agentrt_proxy.gate import approvals
from agentrt_proxy.store import Store
store = Store.open_readonly({db!r})
began = time.perf_counter()
report = store.verify(state={state!r}, approval_hash=approvals.stored_hash)
took = time.perf_counter() - began
state = report.state
print(json.dumps({{"seconds": took, "events": report.checked, "intact": report.intact,
                  "rows": [state.runs, state.approvals, state.calls] if state else None,
                  "findings": state.total if state else None,
                  "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}}))
"""


def measure(db: str, state: bool) -> dict[str, object]:
    done = subprocess.run(
        [sys.executable, "-c", CHILD.format(repo=str(REPO), db=db, state=state)],
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(done.stdout)  # type: ignore[no-any-return]


def main(argv: list[str]) -> int:
    opts = dict(zip(argv[0::2], argv[1::2], strict=False))
    calls = int(opts.get("-calls", 125_000))
    db = opts.get("-db")
    if db is None:
        db = str(Path(tempfile.mkdtemp(prefix="verify-bench-")) / "big.db")
        began = time.monotonic()
        subprocess.run([sys.executable, str(BENCH / "build_db.py"), str(REPO), db, "-calls", str(calls)], check=True)
        print(f"built {calls:,} calls in {time.monotonic() - began:.0f} s: {db}")
    for state in (False, True):
        m = measure(db, state)
        rate = float(m["events"]) / float(m["seconds"])  # type: ignore[arg-type]
        what = "chain + state" if state else "chain only   "
        print(
            f"{what}: {m['events']:,} events in {m['seconds']:.1f} s ({rate:,.0f}/s), peak RSS "
            f"{m['peak_rss_mib']:.0f} MiB, intact {m['intact']}, rows {m['rows']}, findings {m['findings']}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
