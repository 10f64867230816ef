"""The host-facing MCP server session over a byte stream pair (the proxy's stdin/stdout).

It speaks the legacy handshake era (2024-11-05 … 2025-11-25) and, beside it, the 2026-07-28
revision (``modern.py``): the first request decides, once. ``initialize`` opens a handshake
session, served exactly as before the modern era existed; a request whose ``_meta`` names a
protocol version opens a modern one (``server/discover`` answered, every request's envelope
checked, every result shaped). A ``server/discover`` without that envelope, and every unknown
method, is answered at once with -32601 (the Python SDK 2.x client probes first and waits
10 s on silence). It handles requests concurrently, and is the only writer of the output
stream. What tools exist and what a
call does belong to the application (``ToolHandler``, ``_serving``).

The session reads and dispatches the host's lines (a batch included) and writes every line;
``Answering`` (``_server_answers``) answers each request in its era, and ``_server_listen``
serves the tasks extension's ``subscriptions/listen``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

import anyio
import anyio.abc

from agentrt_proxy.mcp import _messages as M
from agentrt_proxy.mcp import jsonrpc
from agentrt_proxy.mcp._bounded_lines import BoundedLines, Oversized
from agentrt_proxy.mcp._host_requests import HostRequests
from agentrt_proxy.mcp._server_answers import LEGACY, MODERN, Answering
from agentrt_proxy.mcp._serving import (
    LATEST_PROTOCOL_VERSION,
    SUPPORTED_PROTOCOL_VERSIONS,
    CallContext,
    JsonRpcError,
    ToolHandler,
    negotiate_version,
    raw_arguments,
)
from agentrt_proxy.mcp.handshake import EarlyInput
from agentrt_proxy.mcp.jsonrpc import (
    INVALID_REQUEST,
    PARSE_ERROR,
    Batch,
    DecodeFailure,
    ErrorResponse,
    Invalid,
    Notification,
    Request,
    RequestId,
    Response,
)
from agentrt_proxy.mcp.levels import passes_level
from agentrt_proxy.mcp.spans import iter_elements

__all__ = [
    "LATEST_PROTOCOL_VERSION",
    "LEGACY",
    "MODERN",
    "SUPPORTED_PROTOCOL_VERSIONS",
    "CallContext",
    "JsonRpcError",
    "ServerSession",
    "ToolHandler",
    "negotiate_version",
    "raw_arguments",
]

BATCH_VERSION = "2025-03-26"  # the only revision that allows JSON-RPC batches
READ_CHUNK = 1 << 16
# The longest line the host may send. The proxy's ``max_message_bytes`` setting bounds the
# upstream side; this is its host-side counterpart, to be wired to the same setting.
MAX_HOST_MESSAGE_BYTES = 16 << 20


class ServerSession:
    """Serve one host over ``receive`` (its requests) and ``send`` (protocol only)."""

    def __init__(
        self,
        receive: anyio.abc.ByteReceiveStream,
        send: anyio.abc.ByteSendStream,
        handler: ToolHandler,
        server_info: dict[str, Any],
        *,
        instructions: str | None = None,
        on_eof: Callable[[], Awaitable[None] | None] | None = None,
        max_message_bytes: int = MAX_HOST_MESSAGE_BYTES,
        early: EarlyInput | None = None,
    ) -> None:
        self._receive = receive
        self._send = send
        self.handler = handler
        self._on_eof = on_eof
        self._max_message_bytes = max_message_bytes
        self._write_lock = anyio.Lock(fast_acquire=True)  # a free one without a turn of the loop
        self._ids: set[tuple[type, RequestId]] = set()  # every request not yet answered
        self._writer_broken = False
        self.protocol_version: str | None = None  # the handshake's version; None in the modern era
        self.era: str | None = None  # LEGACY or MODERN once the first request has said which (``Answering``)
        self.log_level: str | None = None  # the host's logging/setLevel; None: every message goes
        self.initialized = anyio.Event()  # set at notifications/initialized
        self.input_closed = anyio.Event()  # set when the host's stream reaches EOF
        self.host_requests = HostRequests(self.send)  # a server's sampling or elicitation, relayed
        self._answering = Answering(self, server_info, instructions)
        # What ``handshake.answer_initialize_early`` read before the session existed: read first.
        self._unread = b"" if early is None else early.unread
        if early is not None and early.handshake is not None:  # it answered initialize already
            self.era = LEGACY
            self.protocol_version = early.handshake.version
            self.host_requests.capabilities = early.handshake.host_capabilities

    # ------------------------------------------------------------------ output

    async def send(self, message: Any) -> None:
        """Write one message as one line; serialised, and silent once the host is gone."""
        data = jsonrpc.encode(message) + b"\n"
        async with self._write_lock:
            if self._writer_broken:
                return
            try:
                await self._send.send(data)
            except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
                self._writer_broken = True

    async def notify(self, method: str, params: dict[str, Any] | None = None) -> None:
        """Send the host one notification (a relayed log message, a resource update…).

        Nothing goes before ``initialize`` is answered, and a log message only at or above the
        level the host chose with ``logging/setLevel``: the session keeps what the protocol
        promises whoever calls it. A modern session gets none: the revision sends change
        notifications only on a ``subscriptions/listen`` stream, which is not served."""
        if self.protocol_version is None:
            return
        if method == "notifications/message" and not passes_level((params or {}).get("level"), self.log_level):
            return
        await self.send(jsonrpc.notification(method, params))

    # ------------------------------------------------------------------- input

    async def run(self) -> None:
        """Read until EOF, then let in-flight requests finish and their answers be written."""
        buffer = BoundedLines(self._max_message_bytes)
        async with anyio.create_task_group() as tg:
            chunk, self._unread = self._unread, b""
            while True:
                if not chunk:
                    try:
                        chunk = await self._receive.receive(READ_CHUNK)
                    except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
                        break
                lines, chunk = buffer.feed(chunk), b""
                for line in lines:
                    await self._dispatch_line(line, tg)
            rest = buffer.finish()
            if rest is not None:
                await self._dispatch_line(rest, tg)
            self.input_closed.set()
            if self._on_eof is not None:
                maybe = self._on_eof()
                if maybe is not None:
                    await maybe

    async def end_input(self) -> None:
        """Stop reading as if the host's stream had ended: ``run`` returns once the requests
        in flight are answered (for a stream whose ``aclose`` ends a pending read)."""
        await self._receive.aclose()

    async def _dispatch_line(self, line: bytes | Oversized, tg: anyio.abc.TaskGroup) -> None:
        if isinstance(line, Oversized):
            # Never decoded: answered by the id its beginning carries (none: id null, as JSON-RPC
            # answers a request whose id cannot be read).
            reason = M.MESSAGE_TOO_LARGE.format(limit=self._max_message_bytes)
            await self.send(jsonrpc.error(jsonrpc.oversized_request_id(line.head), INVALID_REQUEST, reason))
            return
        decoded = jsonrpc.decode_line(line)
        if decoded is None:
            return
        if isinstance(decoded, DecodeFailure):
            if decoded.request_id is not None:
                # Valid JSON too deep to decode: the request is still answered, by its own id.
                await self.send(jsonrpc.error(decoded.request_id, INVALID_REQUEST, decoded.reason))
            else:
                await self.send(jsonrpc.error(None, PARSE_ERROR, jsonrpc.error_message(PARSE_ERROR)))
            return
        if isinstance(decoded, Batch):
            await self._dispatch_batch(decoded, tg)
            return
        answer = await self._take(decoded, tg, self._answer_single)
        if answer is not None:
            await self.send(answer)

    async def _answer(self, req: Request) -> dict[str, Any] | None:
        """The answer to one request, or ``None`` if the host cancelled it; its id is free again."""
        try:
            return await self._answering.answer(req)
        finally:
            self._ids.discard((type(req.id), req.id))

    async def _answer_single(self, req: Request) -> None:
        answer = await self._answer(req)
        if answer is not None:
            await self.send(answer)

    async def _take(
        self,
        msg: Request | Notification | Response | ErrorResponse | Invalid,
        tg: anyio.abc.TaskGroup,
        start: Callable[[Request], Coroutine[Any, Any, None]],
    ) -> dict[str, Any] | None:
        """Handle one message; return an immediate answer, or start a task for a request."""
        if isinstance(msg, Invalid):
            if msg.is_request or msg.id is not None:
                return jsonrpc.error(msg.id, INVALID_REQUEST, msg.reason)
            return None  # e.g. a stray response: nothing to answer
        if isinstance(msg, (Response, ErrorResponse)):
            self.host_requests.answered(msg)  # an answer to a request of ours, or nothing to match
            return None
        if isinstance(msg, Notification):
            self._notification(msg)
            return None
        key = (type(msg.id), msg.id)
        if key in self._ids:
            return jsonrpc.error(msg.id, INVALID_REQUEST, M.ID_IN_USE)
        self._ids.add(key)
        tg.start_soon(start, msg)
        return None

    async def _dispatch_batch(self, batch: Batch, tg: anyio.abc.TaskGroup) -> None:
        if self.protocol_version != BATCH_VERSION or not batch.items:
            await self.send(jsonrpc.error(None, INVALID_REQUEST, jsonrpc.error_message(INVALID_REQUEST)))
            return
        answers: list[dict[str, Any]] = []
        requests: list[Request] = []
        for (start, end), item in zip(iter_elements(batch.text, 0), batch.items, strict=True):
            msg = jsonrpc.classify(item, batch.text[start:end])
            if isinstance(msg, Request) and msg.method == "initialize":
                answers.append(jsonrpc.error(msg.id, INVALID_REQUEST, M.INITIALIZE_BATCHED))
                continue
            if isinstance(msg, Request):
                key = (type(msg.id), msg.id)
                if key in self._ids:
                    answers.append(jsonrpc.error(msg.id, INVALID_REQUEST, M.ID_IN_USE))
                else:
                    self._ids.add(key)
                    requests.append(msg)
                continue
            immediate = await self._take(msg, tg, self._answer_single)
            if immediate is not None:
                answers.append(immediate)

        async def run_batch() -> None:
            results: list[dict[str, Any] | None] = [None] * len(requests)

            async def one(i: int, req: Request) -> None:
                results[i] = await self._answer(req)

            async with anyio.create_task_group() as inner:
                for i, req in enumerate(requests):
                    inner.start_soon(one, i, req)
            answers.extend(r for r in results if r is not None)
            if answers:
                await self.send(answers)

        tg.start_soon(run_batch)

    def _notification(self, msg: Notification) -> None:
        if msg.method == "notifications/initialized":
            self.initialized.set()
        elif msg.method == "notifications/cancelled":
            request_id = (msg.params or {}).get("requestId")
            if isinstance(request_id, (str, int)) and not isinstance(request_id, bool):
                self._answering.cancel(request_id)
        # Every other notification (progress from the host, roots changes…) is ignored.
