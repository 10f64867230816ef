"""The review as the operator reads it (``check``, ``pin -review``, a bare ``pin`` that finds
changes) and as data (``-json``): one server's changes since its pin, each marked.

Every piece of a server's text is escaped for a terminal line (a poisoned description may
carry control or invisible characters meant to hide itself); values are shown in their
canonical JSON, clipped.
"""

from __future__ import annotations

from typing import Any

from agentrt_proxy import canonical
from agentrt_proxy.text import cli_text, escaping
from agentrt_proxy.text.cli_text import program_invocation
from agentrt_proxy.upstream.review import ItemReview, ServerReview

__all__ = ["accept_hint", "review_data", "review_lines"]

VALUE_BYTES = 160
_STATUS = {
    "new": cli_text.REVIEW_NEW,
    "gone": cli_text.REVIEW_GONE,
    "changed": "changed",
}


def _value(value: Any) -> str:
    if value is None:
        return "(none)"
    return escaping.clean(canonical.policy_text(value), VALUE_BYTES)


def accept_hint(review: ServerReview, config_path: str) -> str:
    """What to type to pin exactly what the review showed."""
    return cli_text.REVIEW_ACCEPT_HINT.format(
        program=program_invocation(),
        config=escaping.sanitize(config_path),
        server=escaping.sanitize(review.server),
        fingerprint=review.fingerprint,
    )


def _item_lines(item: ItemReview) -> list[str]:
    s = escaping.sanitize
    status = _STATUS[item.status]
    if item.status == "changed":
        if item.widening:
            status += " (widening)"
        elif all(change.direction == "text" for change in item.changes):
            status += cli_text.REVIEW_TEXT_ONLY
        else:
            status += " (narrowing)"
    lines = [f"  {item.kind} {s(item.name)}: {status}"]
    lines.extend(f"    {s(line)}" for line in item.description_diff)
    for change in item.changes:
        if change.where == "description":
            continue  # the diff above shows it
        detail = f"{_value(change.before)} -> {_value(change.after)}"
        lines.append(f"    {change.direction:<9} {s(change.where)}: {s(change.kind)}: {detail}")
    if item.status == "new" and item.after is not None:
        for key, value in item.after.items():
            if key != "description" and value is not None:
                lines.append(f"    {key}: {_value(value)}")
    return lines


def review_lines(review: ServerReview, config_path: str) -> list[str]:
    """The text form; nothing when the server matches its pin."""
    if not review.items:
        return []
    counts: dict[str, int] = {}
    for item in review.items:
        counts[item.status] = counts.get(item.status, 0) + 1
    summary = ", ".join(f"{n} {status}" for status, n in sorted(counts.items()))
    lines = [
        cli_text.REVIEW_HEAD.format(
            q_server=escaping.go_quote(review.server), summary=summary, fingerprint=review.fingerprint
        )
    ]
    for item in review.items:
        lines.extend(_item_lines(item))
    lines.append(accept_hint(review, config_path))
    return lines


def _item_data(item: ItemReview) -> dict[str, Any]:
    return {
        "kind": item.kind,
        "name": item.name,
        "status": item.status,
        "widening": item.widening,
        "description_diff": list(item.description_diff),
        "changes": [
            {"where": c.where, "kind": c.kind, "direction": c.direction, "before": c.before, "after": c.after}
            for c in item.changes
        ],
        "before": item.before,
        "after": item.after,
    }


def review_data(review: ServerReview) -> dict[str, Any]:
    """The same review as data (``-json``)."""
    return {
        "server": review.server,
        "fingerprint": review.fingerprint,
        "items": [_item_data(item) for item in review.items],
    }
