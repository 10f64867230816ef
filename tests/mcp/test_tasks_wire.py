"""Tasks on the wire (``mcp/tasks_wire.py``), table-driven: each era's Task, the extension's
result and error, 2025-11-25's ``tasks/result`` naming its task byte for byte, and the params."""

from __future__ import annotations

import json
from typing import Any

import pytest

from agentrt_proxy.mcp import jsonrpc
from agentrt_proxy.mcp.tasks_wire import (
    RELATED_TASK_KEY,
    TaskState,
    created_2025,
    created_extension,
    declares_extension,
    listened_task_ids,
    result_2025,
    task_2025,
    task_extension,
    task_id_of,
    with_task_support,
)

T0 = 1_764_590_400_000_000_000  # 2025-12-01T12:00:00Z


def state(status: str, result: str | None = None, message: str = "") -> TaskState:
    return TaskState("t1", status, message, T0, T0 + 1_500_000_000, 60_000, 1000, result)


def wire(value: Any) -> Any:
    return json.loads(jsonrpc.encode(value))


@pytest.mark.parametrize(
    ("task", "expected"),
    [
        (state("working", message="waiting"),
         {"taskId": "t1", "status": "working", "statusMessage": "waiting", "createdAt": "2025-12-01T12:00:00Z",
          "lastUpdatedAt": "2025-12-01T12:00:01.5Z", "ttl": 60_000, "pollInterval": 1000}),
        (state("completed", '{"content":[]}'),
         {"taskId": "t1", "status": "completed", "createdAt": "2025-12-01T12:00:00Z",
          "lastUpdatedAt": "2025-12-01T12:00:01.5Z", "ttl": 60_000}),  # no result in a 2025 Task; no poll once ended
    ],
)
def test_a_2025_task_has_its_times_ttl_and_poll_interval_and_never_its_result(task: TaskState, expected: Any) -> None:
    assert wire(task_2025(task)) == expected
    assert wire(created_2025(task)) == {"task": expected}


@pytest.mark.parametrize(
    ("task", "extra"),
    [
        (state("working"), {"pollIntervalMs": 1000}),
        (state("completed", '{"content":[{"type":"text","text":"paid"}],"isError":false}'),
         {"result": {"resultType": "complete", "content": [{"type": "text", "text": "paid"}], "isError": False}}),
        (state("completed", '{}'), {"result": {"resultType": "complete"}}),
        (state("completed", '{"resultType":"complete","content":[]}'),
         {"result": {"resultType": "complete", "content": []}}),  # never twice
        (state("failed", '{"code":-32602,"message":"unknown tool: x"}'),
         {"error": {"code": -32602, "message": "unknown tool: x"}}),
        (state("cancelled", '{"content":[]}'), {}),  # a cancelled task carries neither
    ],
)
def test_an_extension_task_carries_its_result_or_error_once_ended(task: TaskState, extra: dict[str, Any]) -> None:
    base = {"taskId": "t1", "status": task.status, "createdAt": "2025-12-01T12:00:00Z",
            "lastUpdatedAt": "2025-12-01T12:00:01.5Z", "ttlMs": 60_000}
    assert wire(task_extension(task)) == {**base, **extra}
    created = wire(created_extension(task))
    assert created["resultType"] == "task" and "result" not in created and "error" not in created


def test_a_recorded_result_keeps_its_bytes_in_an_extension_task() -> None:
    text = '{"content":[{"type":"text","text":"1e400"}],"structuredContent":{"n":12345678901234567890.5}}'
    assert '{"resultType":"complete",' + text[1:] in jsonrpc.encode(task_extension(state("completed", text))).decode()


@pytest.mark.parametrize(
    "text",
    [
        '{"content":[],"isError":false}',
        '{"content":[],"_meta":{"gate/untrusted":true}}',
        '{ "_meta" : { } , "content":[] }',
        "{}",
        '{"content":[{"type":"text","text":"{\\"_meta\\":1}"}]}',
    ],
)
def test_tasks_result_names_its_task_in_meta_and_keeps_everything_else(text: str) -> None:
    shaped = json.loads(result_2025(text, "t1"))
    assert shaped["_meta"][RELATED_TASK_KEY] == {"taskId": "t1"}
    original = json.loads(text)
    assert {k: v for k, v in shaped.items() if k != "_meta"} == {k: v for k, v in original.items() if k != "_meta"}
    assert {k: v for k, v in shaped["_meta"].items() if k != RELATED_TASK_KEY} == original.get("_meta", {})


@pytest.mark.parametrize(
    ("text", "written"),
    [
        ('{"content":[],"_meta":"x"}', '{"content":[],"_meta":"x"}'),
        (
            '{"content":[1.50],"_meta":{"a":1,"io.modelcontextprotocol/related-task":{"taskId":"other"}}}',
            '{"content":[1.50],"_meta":{"io.modelcontextprotocol/related-task":{"taskId":"t1"},"a":1}}',
        ),
        ('{"content":[1.50]}', '{"_meta":{"io.modelcontextprotocol/related-task":{"taskId":"t1"}},"content":[1.50]}'),
    ],
    ids=["a _meta that is no object", "a server's own claim", "no _meta"],
)
def test_tasks_result_names_the_task_once_and_only_in_an_object(text: str, written: str) -> None:
    assert result_2025(text, "t1") == written


def test_every_tool_of_a_2025_session_may_be_called_as_a_task() -> None:
    tools = [{"name": "a", "inputSchema": {}}, {"name": "b", "inputSchema": {}}]
    assert [t["execution"] for t in with_task_support(tools)] == [{"taskSupport": "optional"}] * 2
    assert "execution" not in tools[0]  # the served list itself is not changed


@pytest.mark.parametrize(
    ("meta", "declared"),
    [
        ({"io.modelcontextprotocol/clientCapabilities": {"extensions": {"io.modelcontextprotocol/tasks": {}}}}, True),
        ({"io.modelcontextprotocol/clientCapabilities": {"extensions": {}}}, False),
        ({"io.modelcontextprotocol/clientCapabilities": {}}, False),
        ({"io.modelcontextprotocol/clientCapabilities": "tasks"}, False),
        ({}, False),
    ],
)
def test_only_a_request_that_declares_the_extension_may_get_a_task(meta: dict[str, Any], declared: bool) -> None:
    assert declares_extension(meta) is declared


@pytest.mark.parametrize(("params", "task_id"), [({"taskId": "t1"}, "t1"), ({"taskId": ""}, None),
                                                 ({"taskId": 7}, None), ({}, None)])
def test_a_task_id_is_a_non_empty_string(params: dict[str, Any], task_id: str | None) -> None:
    assert task_id_of(params) == task_id


@pytest.mark.parametrize(
    ("params", "ids"),
    [({"notifications": {"taskIds": ["a", "b"]}}, ["a", "b"]), ({"notifications": {"toolsListChanged": True}}, None),
     ({}, None)],
)
def test_a_listen_names_task_ids_or_none(params: dict[str, Any], ids: list[str] | None) -> None:
    assert listened_task_ids(params) == ids


@pytest.mark.parametrize("bad", [{"taskIds": "a"}, {"taskIds": [1]}])
def test_a_listen_whose_task_ids_are_not_strings_is_refused(bad: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match="taskIds"):
        listened_task_ids({"notifications": bad})
