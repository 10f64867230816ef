"""Process helpers shared by the tests that check what a close or a crash leaves running."""

from __future__ import annotations

import os


def alive(pid: int) -> bool:
    """Running, and not a zombie waiting for a parent that may never reap it."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie still answers kill(0); read its state
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:  # off Linux: kill(0) is all there is
        return True
