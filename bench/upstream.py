"""The benchmark's upstream: the official SDK's ``MCPServer`` over stdio.

Two tools: ``echo`` (read-only, returns its text) and ``pay`` (mutating: appends one line
to an in-memory ledger and answers with a receipt). ``BENCH_UPSTREAM_DELAY`` (seconds)
delays the start, before anything is imported, to stand for an upstream that is slow to
come up ("none reachable yet").
"""

from __future__ import annotations

import os
import time

_delay = float(os.environ.get("BENCH_UPSTREAM_DELAY", "0") or 0)
if _delay > 0:
    time.sleep(_delay)

from mcp.server import MCPServer  # noqa: E402

server = MCPServer("bench-upstream")
_ledger: list[str] = []


@server.tool()
def echo(text: str) -> str:
    """Echo the text back (read-only)."""
    return text


@server.tool()
def pay(to: str, cents: int) -> str:
    """Pay an amount to someone (changes the ledger)."""
    _ledger.append(f"{to}:{cents}")
    return f"paid {cents} to {to}, receipt {len(_ledger)}"


if __name__ == "__main__":
    server.run()
