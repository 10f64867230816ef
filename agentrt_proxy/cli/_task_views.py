"""How ``runs``, ``show`` and ``approve`` show a run that a host follows as an MCP task.

A task (``proxy_tasks``, proxy/_tasks.py) names the run it drives once the run exists; these are
pure functions of the rows ``Store.tasks.of_runs`` read. The status message is the proxy's own
text to the host, sanitized and bounded like every stored value the operator reads.
"""

from __future__ import annotations

from typing import Any

from agentrt_proxy.store import TaskRow
from agentrt_proxy.text import escaping, operator_text

MESSAGE_BYTES = 1000


def task_cell(task: TaskRow | None) -> str:
    """The TASK column of ``runs``: the task's status, ``-`` for a plain run."""
    return "-" if task is None else escaping.clean(task.status, 40)


def task_lines(task: TaskRow | None) -> list[str]:
    """The line ``show`` prints under the run's header, or nothing for a plain run."""
    if task is None:
        return []
    message = escaping.clean(task.status_message, MESSAGE_BYTES)
    if task.expired:
        message += operator_text.OP_TASK_RESULT_DROPPED
    return [
        operator_text.op_task(
            escaping.sanitize(task.id), escaping.clean(task.era, 40), escaping.clean(task.status, 40), message
        )
    ]


def task_json(task: TaskRow) -> dict[str, Any]:
    """The ``task`` object of a run's JSON in ``runs -json`` and ``show -json``."""
    out: dict[str, Any] = {"id": task.id, "era": task.era, "status": task.status}
    if task.status_message:
        out["status_message"] = task.status_message
    if task.expired:
        out["expired"] = True
    return out


def with_task(run: dict[str, Any], task: TaskRow | None) -> dict[str, Any]:
    """A run's JSON with its task's object, when it has one."""
    if task is not None:
        run["task"] = task_json(task)
    return run


def after_approval(task: TaskRow | None) -> list[str]:
    """What ``approve`` adds when a working task waits on the run it decided."""
    if task is None or task.terminal:
        return []
    return [operator_text.op_task_executes(escaping.sanitize(task.id))]
