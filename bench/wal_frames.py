"""Which b-trees each durable commit of a gated call writes to the WAL, and how many frames.

``python wal_frames.py PYZ [-calls 300] [-tool echo|pay]`` runs ``gate_path.py``'s calls (the
proxy's own work, no pipes) with the store's connection wrapped: after every COMMIT it reads the
frames that commit appended to the WAL (automatic checkpoints off, so the WAL only grows) and
notes each frame's page. At the end each page is named by the b-tree that owns it (SQLite's
``dbstat``) and the script prints frames a commit and, per b-tree, the frames it took a call.
Each frame is two ``pwrite``s and 4 KiB the commit's fsync must carry. Measurement only.
"""

from __future__ import annotations

import collections
import os
import struct
import sys
import urllib.parse
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
WAL_HEADER = 32
FRAME_HEADER = 24


def main(argv: list[str]) -> int:
    pyz = argv[0]
    opts = dict(zip(argv[1::2], argv[2::2], strict=False))
    calls = int(opts.get("-calls", 300))
    sys.path.insert(0, pyz)
    sys.path.insert(0, str(BENCH))
    import sqlite3

    import gate_path

    commits: list[list[int]] = []  # per COMMIT: the page of each frame it appended
    statements: list[list[str]] = [[]]  # per COMMIT: what ran in its transaction
    state: dict[str, Any] = {"offset": WAL_HEADER, "page_size": 4096, "database": None}

    class FrameCountingConnection(sqlite3.Connection):
        def execute(self, sql: str, *args: Any) -> sqlite3.Cursor:  # type: ignore[override]
            cur = super().execute(sql, *args)
            statements[-1].append(" ".join(sql.split())[:150])
            if sql == "COMMIT":
                commits.append(new_frames())
                statements.append([])
            return cur

        def executemany(self, sql: str, rows: Any) -> sqlite3.Cursor:  # type: ignore[override]
            rows = list(rows)
            statements[-1].append(f"{len(rows)}x " + " ".join(sql.split())[:150])
            return super().executemany(sql, rows)

    def new_frames() -> list[int]:
        wal = Path(str(state["database"]) + "-wal")
        if not wal.exists():
            return []
        frame = FRAME_HEADER + state["page_size"]
        pages = []
        with wal.open("rb") as f:
            f.seek(state["offset"])
            while len(header := f.read(FRAME_HEADER)) == FRAME_HEADER:
                pages.append(struct.unpack(">I", header[:4])[0])
                f.seek(state["page_size"], os.SEEK_CUR)
                state["offset"] += frame
        return pages

    def note_the_database(database: Any, conn: sqlite3.Connection) -> None:
        if str(database).endswith("runs.db"):  # the store opens it by URI: file:<quoted path>
            state["database"] = urllib.parse.unquote(str(database).removeprefix("file:"))
            conn.execute("PRAGMA wal_autocheckpoint = 0")

    gate_path.route_store_connections(FrameCountingConnection, note_the_database)

    owners: dict[int, str] = {}
    real_close = FrameCountingConnection.close

    def close(self: sqlite3.Connection) -> None:  # the last look before the WAL is checkpointed away
        if not owners and state["database"] is not None:
            try:
                owners.update({int(p): str(n) for n, p in self.execute("SELECT name, pageno FROM dbstat")})
            except sqlite3.Error as exc:
                print(f"dbstat unavailable ({exc}): pages are shown by number", file=sys.stderr)
        real_close(self)

    FrameCountingConnection.close = close  # type: ignore[method-assign]
    warmup = 100
    gate_path.main([pyz, "-calls", str(calls), "-warmup", str(warmup), "-tool", opts.get("-tool", "echo"), "-untimed"])

    measured = commits[-2 * calls :]  # two commits a call; the warm-up and the pinning before
    per_tree: collections.Counter[str] = collections.Counter()
    for pages in measured:
        per_tree.update(owners.get(p, f"page {p}") for p in pages)
    frames = [len(p) for p in measured]
    starts, finishes = frames[0::2], frames[1::2]
    print(f"{calls} calls, {len(measured)} commits: frames a commit {sum(frames) / len(frames):.2f} "
          f"(the start's {sum(starts) / len(starts):.2f}, the outcome's {sum(finishes) / len(finishes):.2f})")
    print(f"{'b-tree':32} frames a call")
    for name, n in per_tree.most_common():
        print(f"{name:32} {n / calls:6.2f}")
    if "-show" in opts:  # the last call's two transactions: their statements, then their frames
        for pages, sqls in zip(commits[-2:], statements[-3:-1], strict=True):
            print("\n".join(["--- a transaction:", *sqls]))
            print("    frames:", dict(collections.Counter(owners.get(p, f"page {p}") for p in pages)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
