"""``subscriptions/listen`` (2026-07-28): the tasks extension's status notifications on a stream.

Only task status notifications are offered, for the task ids the request names (the tool list
is fixed, decision 0016). The request is acknowledged first; then it stays open until the host
cancels it (no answer) or the proxy stops or the host's stream ends (a closing result).
"""

from __future__ import annotations

from typing import Any, Protocol

import anyio

from agentrt_proxy.mcp import jsonrpc, modern, tasks_wire
from agentrt_proxy.mcp._serving import CallContext, JsonRpcError, rejected
from agentrt_proxy.mcp.jsonrpc import INVALID_PARAMS, Request, RequestId

__all__ = ["ListeningSession", "listen"]


class ListeningSession(Protocol):
    """What a listen needs of the session that serves it."""

    @property
    def input_closed(self) -> anyio.Event: ...

    async def send(self, message: Any) -> None: ...


async def listen(
    session: ListeningSession,
    handler: Any,
    in_flight: dict[tuple[type, RequestId], CallContext],
    req: Request,
    envelope: modern.Envelope,
) -> dict[str, Any] | None:
    """Serve one ``subscriptions/listen``: its closing result, or None when the host cancelled it
    (``in_flight`` holds its context meanwhile, so a ``notifications/cancelled`` reaches it)."""
    params = req.params or {}
    try:
        task_ids = tasks_wire.listened_task_ids(params)
    except ValueError as exc:
        raise JsonRpcError(INVALID_PARAMS, str(exc)) from exc
    if task_ids is not None:
        refusal = modern.missing_capability(envelope, tasks_wire.TASKS_EXTENSION)
        if refusal is not None:
            raise rejected(refusal)
    tag = {tasks_wire.SUBSCRIPTION_ID_KEY: req.id}

    async def send(method: str, notification: dict[str, Any]) -> None:
        meta = notification.get("_meta")
        merged = {**meta, **tag} if isinstance(meta, dict) else dict(tag)
        await session.send(jsonrpc.notification(method, {**notification, "_meta": merged}))

    agreed = await handler.listen_tasks(task_ids, send) if task_ids else []
    ctx = CallContext(request_id=req.id, progress_token=None, meta={}, protocol_version=envelope.version)
    key = (type(req.id), req.id)
    in_flight[key] = ctx
    try:
        acknowledged: dict[str, Any] = {"taskIds": agreed} if task_ids is not None else {}
        await session.send(
            jsonrpc.notification(tasks_wire.LISTEN_ACKNOWLEDGED, {"_meta": dict(tag), "notifications": acknowledged})
        )
        async with anyio.create_task_group() as tg:

            async def until(event: anyio.Event) -> None:
                await event.wait()
                tg.cancel_scope.cancel()

            tg.start_soon(until, ctx.cancelled)
            tg.start_soon(until, session.input_closed)
            closing = getattr(handler, "stopping", None)
            if isinstance(closing, anyio.Event):
                tg.start_soon(until, closing)
    finally:
        if task_ids:
            handler.unlisten_tasks(send)
        in_flight.pop(key, None)
    if ctx.cancelled.is_set():
        return None
    return {"_meta": dict(tag)}
