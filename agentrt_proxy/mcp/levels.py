"""MCP log levels (RFC 5424 severities, least severe first) and the ``logging/setLevel`` filter."""

from __future__ import annotations

from typing import Any

__all__ = ["LOG_LEVELS", "is_level", "passes_level"]

LOG_LEVELS = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")
_RANK = {level: rank for rank, level in enumerate(LOG_LEVELS)}


def is_level(value: Any) -> bool:
    return isinstance(value, str) and value in _RANK


def passes_level(level: Any, threshold: str | None) -> bool:
    """Whether a message at ``level`` goes to a client whose chosen level is ``threshold``:
    before any ``logging/setLevel`` (``None``) every message does; after it, those at or above
    it. A message without a valid level never does (a client cannot read it)."""
    if not is_level(level):
        return False
    return threshold is None or _RANK[level] >= _RANK.get(threshold, 0)
