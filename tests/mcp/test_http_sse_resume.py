"""Resuming a request's SSE stream (streamable HTTP, 2025-11-25): `retry:`, GET + `Last-Event-ID`.

The conformance suite's `sse-retry` scenario checks the same against the npm suite
(tests/mcp/test_conformance_client.py); these run without Node.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from agentrt_proxy.mcp import ServerSpec, SSEParser, open_connection
from agentrt_proxy.mcp.outcomes import NoAnswer, Result

pytestmark = pytest.mark.anyio
SECOND = 1_000_000_000


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


class Server:
    """initialize / tools/list answered as JSON; tools/call and GET as the test says."""

    def __init__(
        self,
        on_call: Callable[[BaseHTTPRequestHandler, int], None],
        on_get: Callable[..., None],
        on_stream: Callable[[BaseHTTPRequestHandler, Server], None] | None = None,
    ) -> None:
        self.log: list[tuple[str, float, dict[str, str]]] = []
        self.call_id: int | None = None
        self.call_stream_closed = threading.Event()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                if "Last-Event-ID" not in self.headers:  # the session's standalone stream: none unless asked
                    outer.log.append(("GET stream", time.monotonic(), dict(self.headers)))
                    if on_stream is None:
                        self.send_error(405)
                    else:
                        on_stream(self, outer)
                    return
                outer.log.append(("GET", time.monotonic(), dict(self.headers)))
                on_get(self, outer.call_id)

            def do_DELETE(self) -> None:
                self.send_response(405)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def do_POST(self) -> None:
                msg = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                outer.log.append((f"POST {msg.get('method')}", time.monotonic(), dict(self.headers)))
                if msg.get("method") == "tools/call":
                    outer.call_id = msg["id"]
                    on_call(self, msg["id"])
                    outer.call_stream_closed.set()
                    return
                if "id" not in msg:
                    self.send_response(202)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                result: dict[str, Any] = {"tools": [{"name": "t", "inputSchema": {"type": "object"}}]}
                if msg["method"] == "initialize":
                    info = {"name": "x"}
                    result = {"protocolVersion": "2025-11-25", "capabilities": {"tools": {}}, "serverInfo": info}
                body = json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": result}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.send_header("Mcp-Session-Id", "s-9")
                self.end_headers()
                self.wfile.write(body)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/mcp"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def serve() -> Iterator[Callable[..., Server]]:
    servers: list[Server] = []

    def make(
        on_call: Callable[..., None],
        on_get: Callable[..., None] | None = None,
        on_stream: Callable[[BaseHTTPRequestHandler, Server], None] | None = None,
    ) -> Server:
        servers.append(Server(on_call, on_get or (lambda h, call_id: h.send_error(405)), on_stream))
        return servers[-1]

    yield make
    for s in servers:
        s.close()


def open_stream(h: BaseHTTPRequestHandler, first: bytes) -> None:
    h.send_response(200)
    h.send_header("Content-Type", "text/event-stream")
    h.send_header("Connection", "close")
    h.end_headers()
    h.wfile.write(first)
    h.wfile.flush()


def answer_event(call_id: int, text: str) -> bytes:
    result = {"content": [{"type": "text", "text": text}]}
    data = json.dumps({"jsonrpc": "2.0", "id": call_id, "result": result})
    return f"event: message\nid: e-3\ndata: {data}\n\n".encode()


def test_the_sse_parser_keeps_the_last_event_id_and_the_retry_time() -> None:
    parser = SSEParser()
    assert parser.feed(b"id: e-1\nretry: 500\ndata: \n\n") == []  # the priming event
    assert (parser.last_event_id, parser.retry_ms) == ("e-1", 500)
    assert parser.feed(b"retry: soon\nid: a\0b\ndata: {}\n\n") == [b"{}"]
    assert (parser.last_event_id, parser.retry_ms) == ("e-1", 500)  # both ignored, both kept
    parser.feed(b"id:\nretry:1\r\n\r\n")
    assert (parser.last_event_id, parser.retry_ms) == ("", 1)


async def test_a_stream_closed_before_the_answer_is_resumed_by_get_after_the_retry_time(serve: Any) -> None:
    def on_call(h: BaseHTTPRequestHandler, call_id: int) -> None:
        open_stream(h, b"id: e-1\nretry: 300\ndata: \n\n")  # then the server closes it

    def on_get(h: BaseHTTPRequestHandler, call_id: int) -> None:
        open_stream(h, b"id: e-2\ndata: \n\n" + answer_event(call_id, "resumed"))
        time.sleep(5)  # the GET stream stays open after the answer

    server = serve(on_call, on_get)
    async with open_connection(ServerSpec(name="web", endpoint=server.url), timeout_ns=5 * SECOND) as conn:
        started = time.monotonic()
        out = await conn.call_tool("t", "{}", 10 * SECOND)
        took = time.monotonic() - started
    assert isinstance(out, Result) and out.text == "resumed" and not out.is_error
    assert 0.3 <= took < 1.5, took
    (call,) = [entry for entry in server.log if entry[0] == "POST tools/call"]
    (get,) = [entry for entry in server.log if entry[0] == "GET"]
    assert 0.3 <= get[1] - call[1] < 0.5
    headers = get[2]
    assert headers["Last-Event-ID"] == "e-1" and headers["Accept"] == "text/event-stream"
    assert headers["Mcp-Session-Id"] == "s-9" and headers["MCP-Protocol-Version"] == "2025-11-25"


async def test_a_resumed_stream_that_closes_again_is_resumed_from_its_own_last_id(serve: Any) -> None:
    gets: list[str] = []

    def on_call(h: BaseHTTPRequestHandler, call_id: int) -> None:
        open_stream(h, b"retry: 50\nid: e-1\ndata: \n\n")

    def on_get(h: BaseHTTPRequestHandler, call_id: int) -> None:
        gets.append(h.headers["Last-Event-ID"])
        if len(gets) == 1:
            open_stream(h, b"id: e-2\ndata: \n\n")
        else:
            open_stream(h, answer_event(call_id, "second"))

    server = serve(on_call, on_get)
    async with open_connection(ServerSpec(name="web", endpoint=server.url), timeout_ns=5 * SECOND) as conn:
        out = await conn.call_tool("t", "{}", 10 * SECOND)
    assert isinstance(out, Result) and out.text == "second"
    assert gets == ["e-1", "e-2"]


async def test_a_stream_that_ends_without_the_answer_or_an_event_id_fails_at_once(serve: Any) -> None:
    server = serve(lambda h, call_id: open_stream(h, b": nothing here\n\n"))
    async with open_connection(ServerSpec(name="web", endpoint=server.url), timeout_ns=5 * SECOND) as conn:
        started = time.monotonic()
        out = await conn.call_tool("t", "{}", 10 * SECOND)
    assert isinstance(out, NoAnswer) and out.kind == "protocol", out
    assert "ended the answer's event stream without the answer" in out.detail
    assert time.monotonic() - started < 2
    assert [entry[0] for entry in server.log].count("GET") == 0


async def test_a_server_that_refuses_the_resuming_get_fails_the_call(serve: Any) -> None:
    server = serve(lambda h, call_id: open_stream(h, b"id: e-1\nretry: 10\ndata: \n\n"))
    async with open_connection(ServerSpec(name="web", endpoint=server.url), timeout_ns=5 * SECOND) as conn:
        out = await conn.call_tool("t", "{}", 10 * SECOND)
    assert isinstance(out, NoAnswer) and out.kind == "protocol", out
    assert "GET that resumes the answer with HTTP 405" in out.detail


async def test_resuming_gives_up_after_five_reconnections_that_bring_nothing(serve: Any) -> None:
    server = serve(
        lambda h, call_id: open_stream(h, b"id: e-1\nretry: 10\ndata: \n\n"),
        lambda h, call_id: open_stream(h, b": still nothing\n\n"),
    )
    async with open_connection(ServerSpec(name="web", endpoint=server.url), timeout_ns=5 * SECOND) as conn:
        out = await conn.call_tool("t", "{}", 10 * SECOND)
    assert isinstance(out, NoAnswer) and out.kind == "protocol" and "resumed 5 times" in out.detail
    assert [entry[0] for entry in server.log].count("GET") == 5


async def test_closing_the_connection_ends_a_wait_before_resuming(serve: Any) -> None:
    server = serve(lambda h, call_id: open_stream(h, b"id: e-1\nretry: 60000\ndata: \n\n"))
    async with open_connection(ServerSpec(name="web", endpoint=server.url), timeout_ns=5 * SECOND) as conn:
        started = time.monotonic()
        out = await conn.call_tool("t", "{}", 300_000_000)
    assert isinstance(out, NoAnswer) and out.kind == "timeout"
    assert time.monotonic() - started < 2
    assert [entry[0] for entry in server.log].count("GET") == 0


async def test_an_answer_that_came_on_the_standalone_stream_meanwhile_is_not_resumed_for(serve: Any) -> None:
    # The specification forbids it, and the conformance suite's own sse-retry server does it when
    # the session's GET stream opens late: the answer to a call whose stream closed arrives on the
    # standalone stream. The call has its answer; a resuming GET would wait on a stream that has
    # nothing more to say until the call's timeout.
    def on_stream(h: BaseHTTPRequestHandler, server: Server) -> None:
        open_stream(h, b": listening\n\n")
        if server.call_stream_closed.wait(5) and server.call_id is not None:
            h.wfile.write(answer_event(server.call_id, "on the standalone stream"))
            h.wfile.flush()
        time.sleep(5)

    server = serve(lambda h, call_id: open_stream(h, b"id: e-1\nretry: 300\ndata: \n\n"), None, on_stream)
    async with open_connection(ServerSpec(name="web", endpoint=server.url), timeout_ns=5 * SECOND) as conn:
        started = time.monotonic()
        out = await conn.call_tool("t", "{}", 10 * SECOND)
        took = time.monotonic() - started
    assert isinstance(out, Result) and out.text == "on the standalone stream", out
    assert took < 2, took
    assert [entry[0] for entry in server.log].count("GET") == 0  # no resuming GET went out
