"""MCP tasks on the wire, in both forms (docs/decisions/0020): what a task looks like to a host.

- **2025-11-25** (the handshake era's experimental tasks): the host asks with ``params.task``
  on ``tools/call``, for a tool whose ``execution.taskSupport`` allows it, and gets
  ``{"task": Task}``; ``tasks/get``, ``tasks/result`` (blocking until the task ends),
  ``tasks/list`` and ``tasks/cancel``; ``notifications/tasks/status``. Times ``ttl`` and
  ``pollInterval``.
- **2026-07-28** (the extension ``io.modelcontextprotocol/tasks``): the server decides; a host
  that declared the extension may get ``{"resultType": "task", ...Task}``; ``tasks/get``
  carries the result once the task completed; ``tasks/update`` and ``tasks/cancel`` answer an
  empty result; ``notifications/tasks`` on a ``subscriptions/listen`` stream. Times ``ttlMs``
  and ``pollIntervalMs``.

Pure shaping: the application hands a ``TaskState`` and gets the dict to send.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from agentrt_proxy.canonical.durations import format_time
from agentrt_proxy.canonical.encoder import WIRE, Raw, encode
from agentrt_proxy.mcp import _messages as M
from agentrt_proxy.mcp.spans import raw_members, with_members_in_front

TASKS_EXTENSION = "io.modelcontextprotocol/tasks"
TASKS_VERSION_2025 = "2025-11-25"  # the one handshake revision with tasks
RELATED_TASK_KEY = "io.modelcontextprotocol/related-task"
SUBSCRIPTION_ID_KEY = "io.modelcontextprotocol/subscriptionId"
METHODS_2025 = frozenset({"tasks/get", "tasks/result", "tasks/list", "tasks/cancel"})
METHODS_EXTENSION = frozenset({"tasks/get", "tasks/update", "tasks/cancel"})
STATUS_NOTIFICATION_2025 = "notifications/tasks/status"
STATUS_NOTIFICATION_EXTENSION = "notifications/tasks"
LISTEN_METHOD = "subscriptions/listen"
LISTEN_ACKNOWLEDGED = "notifications/subscriptions/acknowledged"
# a task's status (the MCP schema's TaskStatus); the proxy never sets input_required
TASK_WORKING = "working"
TASK_COMPLETED = "completed"
TASK_FAILED = "failed"
TASK_CANCELLED = "cancelled"
TERMINAL = frozenset({TASK_COMPLETED, TASK_FAILED, TASK_CANCELLED})
CAPABILITIES_2025: Mapping[str, Any] = {"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}}
TASK_SUPPORT = {"taskSupport": "optional"}  # every offered tool: a plain call or a task, the host's choice


@dataclass(frozen=True)
class TaskState:
    """A task as the application knows it; ``result`` is the JSON text of its answer (a
    CallToolResult, or for ``failed`` in the extension a JSON-RPC error object), else None."""

    task_id: str
    status: str
    message: str
    created_at_ns: int
    updated_at_ns: int
    ttl_ms: int
    poll_ms: int
    result: str | None = None


def _common(state: TaskState) -> dict[str, Any]:
    task: dict[str, Any] = {"taskId": state.task_id, "status": state.status}
    if state.message:
        task["statusMessage"] = state.message
    task["createdAt"] = format_time(state.created_at_ns)
    task["lastUpdatedAt"] = format_time(state.updated_at_ns)
    return task


# ------------------------------------------------------------------------------ 2025-11-25


def task_2025(state: TaskState) -> dict[str, Any]:
    """The ``Task`` of 2025-11-25 (``tasks/get``, ``tasks/list``, ``tasks/cancel``, the status
    notification): no result in it, ``tasks/result`` gives that."""
    task = _common(state)
    task["ttl"] = state.ttl_ms
    if state.status not in TERMINAL:
        task["pollInterval"] = state.poll_ms
    return task


def created_2025(state: TaskState) -> dict[str, Any]:
    """The ``CreateTaskResult`` answering a ``tools/call`` that carried ``params.task``."""
    return {"task": task_2025(state)}


def result_2025(text: str, task_id: str) -> Raw:
    """``tasks/result``'s answer: the call's recorded result, byte for byte, its ``_meta``
    naming the task (the one member added, in front of a ``_meta`` the result has; a server's
    own claim to a related task is the proxy's to make, so it is replaced)."""
    related = {"taskId": task_id}
    members = raw_members(text)
    for index, (name, key, value) in enumerate(members):
        if name != "_meta":
            continue
        if not value.lstrip(" \t\r\n").startswith("{"):
            return Raw(text)  # a _meta that is no object: left as it is, the task named nowhere
        meta: dict[str, Any] = {RELATED_TASK_KEY: related}
        meta.update((k, v) for n, k, v in raw_members(value) if n != RELATED_TASK_KEY)
        rebuilt: dict[str, Any] = {k: v for _n, k, v in members[:index]}
        rebuilt[key] = meta
        rebuilt.update((k, v) for _n, k, v in members[index + 1 :])
        return Raw(encode(rebuilt, WIRE))
    return with_members_in_front(text, {"_meta": {RELATED_TASK_KEY: related}})


def with_task_support(tools: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The tool list of a 2025-11-25 session: each tool says it may be called as a task."""
    return [{**tool, "execution": dict(TASK_SUPPORT)} for tool in tools]


# ------------------------------------------------------------------------------ 2026-07-28


def task_extension(state: TaskState, *, detailed: bool = True) -> dict[str, Any]:
    """The extension's ``DetailedTask`` (``tasks/get``, ``notifications/tasks``): a completed
    task carries its ``result`` (a 2026-07-28 ``CallToolResult``: ``resultType: "complete"``,
    as the extension's schema requires of it), a failed one its ``error``."""
    task = _common(state)
    task["ttlMs"] = state.ttl_ms
    if state.status not in TERMINAL:
        task["pollIntervalMs"] = state.poll_ms
    if detailed and state.result:
        if state.status == TASK_COMPLETED:
            task["result"] = complete_result(state.result)
        elif state.status == TASK_FAILED:
            task["error"] = Raw(state.result)
    return task


def complete_result(text: str) -> Raw:
    """A recorded ``CallToolResult`` (handshake-era JSON text) as the modern era carries it:
    ``resultType: "complete"`` in front when it has none, every other byte kept."""
    return with_members_in_front(text, {"resultType": "complete"})


def created_extension(state: TaskState) -> dict[str, Any]:
    """The extension's ``CreateTaskResult``: ``resultType: "task"`` and the seed state."""
    return {"resultType": "task", **task_extension(state, detailed=False)}


def declares_extension(meta: Mapping[str, Any]) -> bool:
    """Whether a modern request's ``_meta`` declares the tasks extension."""
    capabilities = meta.get("io.modelcontextprotocol/clientCapabilities")
    extensions = capabilities.get("extensions") if isinstance(capabilities, dict) else None
    return isinstance(extensions, dict) and TASKS_EXTENSION in extensions


# ---------------------------------------------------------------------------------- params


def task_id_of(params: Mapping[str, Any]) -> str | None:
    """``params.taskId`` when it is a non-empty string."""
    task_id = params.get("taskId")
    return task_id if isinstance(task_id, str) and task_id else None


def listened_task_ids(params: Mapping[str, Any]) -> list[str] | None:
    """``subscriptions/listen``'s ``notifications.taskIds``: None when absent, else the strings
    (anything that is not a list of strings is refused by the caller)."""
    notifications = params.get("notifications")
    if not isinstance(notifications, dict) or "taskIds" not in notifications:
        return None
    ids = notifications["taskIds"]
    if not isinstance(ids, list) or not all(isinstance(i, str) for i in ids):
        raise ValueError(M.TASK_IDS_NOT_STRINGS)
    return list(ids)
