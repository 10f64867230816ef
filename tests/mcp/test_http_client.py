"""The upstream client over streamable HTTP: the SDK's server, and hand-made misbehaviour."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from agentrt_proxy.canonical import policy_text
from agentrt_proxy.mcp import ConnectError, ServerSpec, open_connection
from agentrt_proxy.mcp.http import HTTPTransport
from agentrt_proxy.mcp.outcomes import NoAnswer, NotSent, Result

pytestmark = pytest.mark.anyio

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
SECOND = 1_000_000_000


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(params=["sse", "json"])
def sdk_endpoint(request: pytest.FixtureRequest) -> Iterator[str]:
    port = free_port()
    args = [sys.executable, str(FIXTURES / "sdk_upstream.py"), "http", str(port)]
    if request.param == "json":
        args.append("json")
    proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    pytest.fail("the SDK server did not start")
                time.sleep(0.05)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.terminate()
        proc.wait(10)


async def test_the_sdk_server_over_http_keeps_big_literals(sdk_endpoint: str) -> None:
    spec = ServerSpec(name="web", endpoint=sdk_endpoint, headers={"Authorization": "Bearer secret-token"})
    async with open_connection(spec, timeout_ns=20 * SECOND) as conn:
        tools = {t.name: t for t in conn.tools}
        assert '"maximum":9007199254740993' in (tools["limit"].input_schema_raw or "")
        out = await conn.call_tool("numbers", None, 10 * SECOND)
        assert isinstance(out, Result) and policy_text(out.content["structuredContent"]) == '{"n":9007199254740993}'
        assert out.content["content"][0]["text"] == '{\n  "n": 9007199254740993\n}'  # the server's own text, beside it
        out = await conn.call_tool("echo", '{"text":"hi"}', 10 * SECOND)
        assert isinstance(out, Result) and out.content["structuredContent"] == {"result": "hi"}
        assert out.content["content"] == [{"type": "text", "text": "hi"}]
        assert conn._transport.session_id is not None  # type: ignore[attr-defined]


# ------------------------------------------------------------ a scriptable server

Behaviour = Callable[[BaseHTTPRequestHandler, dict[str, Any]], None]


class Scripted:
    """A tiny HTTP server whose answers the test writes; records every request."""

    def __init__(self, behaviour: Behaviour) -> None:
        self.requests: list[tuple[str, dict[str, str], bytes]] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def _record(self) -> dict[str, Any]:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length)
                outer.requests.append((self.command, dict(self.headers), body))
                return json.loads(body) if body else {}

            def do_POST(self) -> None:
                behaviour(self, self._record())

            def do_DELETE(self) -> None:
                self._record()
                self.send_response(405)
                self.send_header("Content-Length", "0")
                self.end_headers()

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/mcp"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def reply(h: BaseHTTPRequestHandler, status: int, body: bytes, ctype: str = "application/json", **headers: str) -> None:
    h.send_response(status)
    h.send_header("Content-Type", ctype)
    h.send_header("Content-Length", str(len(body)))
    for k, v in headers.items():
        h.send_header(k.replace("_", "-"), v)
    h.end_headers()
    h.wfile.write(body)


def standard(h: BaseHTTPRequestHandler, msg: dict[str, Any], *, session: str = "s-1") -> bool:
    """Answer initialize / initialized / a one-tool listing; False for anything else."""
    method = msg.get("method")
    if method == "initialize":
        result = {"protocolVersion": "2025-06-18", "capabilities": {"tools": {}}, "serverInfo": {"name": "x"}}
        reply(
            h, 200, json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": result}).encode(), Mcp_Session_Id=session
        )
    elif "id" not in msg:
        reply(h, 202, b"")
    elif method == "tools/list":
        tools = [{"name": "t", "inputSchema": {"type": "object", "maximum": 9007199254740993}}]
        body = json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": {"tools": tools}})
        sse = f": comment\r\nid: 7\r\nevent: message\r\ndata: {body}\r\n\r\n".encode()
        h.send_response(200)
        h.send_header("Content-Type", "text/event-stream")
        h.send_header("Content-Length", str(len(sse)))
        h.end_headers()
        h.wfile.write(sse)
    else:
        return False
    return True


@pytest.fixture
def scripted() -> Iterator[Callable[[Behaviour], Scripted]]:
    servers: list[Scripted] = []

    def make(behaviour: Behaviour) -> Scripted:
        servers.append(Scripted(behaviour))
        return servers[-1]

    yield make
    for s in servers:
        s.close()


async def test_headers_session_and_version_ride_on_every_request(scripted: Any) -> None:
    def behaviour(h: BaseHTTPRequestHandler, msg: dict[str, Any]) -> None:
        if not standard(h, msg):
            text = {"content": [{"type": "text", "text": "ok"}]}
            reply(h, 200, json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": text}).encode())

    server = scripted(behaviour)
    spec = ServerSpec(name="web", endpoint=server.url, headers={"Authorization": "Bearer tok"})
    async with open_connection(spec, timeout_ns=5 * SECOND) as conn:
        assert conn.tools[0].input_schema_raw == '{"type": "object", "maximum": 9007199254740993}'
        assert isinstance(await conn.call_tool("t", "{}", 5 * SECOND), Result)
    methods = [r[0] for r in server.requests]
    assert methods == ["POST", "POST", "POST", "POST", "DELETE"]
    first, *later = [r[1] for r in server.requests]
    assert first["Accept"] == "application/json, text/event-stream" and first["Content-Type"] == "application/json"
    assert "Mcp-Session-Id" not in first and first["Authorization"] == "Bearer tok"
    for headers in later:
        assert headers["Mcp-Session-Id"] == "s-1" and headers["MCP-Protocol-Version"] == "2025-06-18"


async def test_a_redirect_is_not_followed(scripted: Any) -> None:
    target = scripted(lambda h, msg: reply(h, 500, b""))

    def redirect(h: BaseHTTPRequestHandler, msg: dict[str, Any]) -> None:
        reply(h, 307, b"", Location=target.url)

    server = scripted(redirect)
    spec = ServerSpec(name="web", endpoint=server.url, headers={"Authorization": "Bearer secret-token"})
    with pytest.raises(ConnectError) as info:
        async with open_connection(spec, timeout_ns=5 * SECOND):
            pass
    assert 'mcp: server "web": connect: ' in str(info.value) and "307" in str(info.value)
    assert "secret-token" not in str(info.value)
    assert target.requests == []


async def test_a_body_over_the_cap_by_content_length_fails_at_once(scripted: Any) -> None:
    def huge(h: BaseHTTPRequestHandler, msg: dict[str, Any]) -> None:
        h.send_response(200)
        h.send_header("Content-Type", "application/json")
        h.send_header("Content-Length", str((16 << 20) + 1))
        h.end_headers()
        h.wfile.write(b"{")

    server = scripted(huge)
    with pytest.raises(ConnectError, match="mcp: response body of 16777217 bytes exceeds 16777216"):
        async with open_connection(ServerSpec(name="web", endpoint=server.url), timeout_ns=5 * SECOND):
            pass


async def test_a_streamed_body_past_the_cap_fails(scripted: Any) -> None:
    def streamed(h: BaseHTTPRequestHandler, msg: dict[str, Any]) -> None:
        h.send_response(200)
        h.send_header("Content-Type", "text/event-stream")
        h.send_header("Connection", "close")
        h.end_headers()
        h.wfile.write(b": " + b"x" * ((16 << 20) + 10) + b"\n\n")

    server = scripted(streamed)
    with pytest.raises(ConnectError, match="mcp: response body exceeds 16777216 bytes"):
        async with open_connection(ServerSpec(name="web", endpoint=server.url), timeout_ns=20 * SECOND):
            pass


async def test_the_body_limit_is_exact(scripted: Any) -> None:  # TestLimitedTransport_FailsABodyPastTheLimit
    sizes = iter([10, 11])

    def sized(h: BaseHTTPRequestHandler, msg: dict[str, Any]) -> None:
        n = next(sizes)
        h.send_response(200)
        h.send_header("Content-Type", "application/json")
        h.send_header("Connection", "close")
        h.end_headers()
        h.wfile.write(b" " * (n - 2) + b"{}")

    server = scripted(sized)
    transport = HTTPTransport("web", server.url, max_body=10)
    got: list[bytes] = []
    await transport.start(got.append, lambda reason: None)
    await transport.send(b'{"jsonrpc":"2.0","id":1,"method":"m"}', expects_answer=True, timeout=5)
    assert got == [b"        {}"]
    with pytest.raises(Exception, match="mcp: response body exceeds 10 bytes"):
        await transport.send(b'{"jsonrpc":"2.0","id":2,"method":"m"}', expects_answer=True, timeout=5)
    await transport.aclose()


async def test_an_expired_session_is_a_dead_session(scripted: Any) -> None:
    def expiring(h: BaseHTTPRequestHandler, msg: dict[str, Any]) -> None:
        if not standard(h, msg):
            reply(h, 404, b'{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Session not found"}}')

    server = scripted(expiring)
    async with open_connection(ServerSpec(name="web", endpoint=server.url), timeout_ns=5 * SECOND) as conn:
        out = await conn.call_tool("t", "{}", 5 * SECOND)
        assert isinstance(out, NoAnswer) and out.kind == "dropped"
        assert 'server "web"' in out.detail and "404" in out.detail
        posts = len(server.requests)
        started = time.monotonic()
        out = await conn.call_tool("t", "{}", 5 * SECOND)
        assert isinstance(out, NotSent) and time.monotonic() - started < 1
        assert len(server.requests) == posts  # not retried


async def test_the_npm_servers_400_no_valid_session_is_a_dead_session(scripted: Any) -> None:
    def npm(h: BaseHTTPRequestHandler, msg: dict[str, Any]) -> None:
        if not standard(h, msg):
            body = b'{"jsonrpc":"2.0","error":{"code":-32000,"message":"Bad Request: No valid session ID provided"}}'
            reply(h, 400, body)

    server = scripted(npm)
    async with open_connection(ServerSpec(name="web", endpoint=server.url), timeout_ns=5 * SECOND) as conn:
        out = await conn.call_tool("t", "{}", 5 * SECOND)
    assert isinstance(out, NoAnswer) and out.kind == "dropped" and "400" in out.detail


async def test_a_call_timeout_over_http_is_honoured(scripted: Any) -> None:
    def slow(h: BaseHTTPRequestHandler, msg: dict[str, Any]) -> None:
        if not standard(h, msg):
            if msg.get("method") == "tools/call":
                time.sleep(3)
            reply(h, 202, b"")

    server = scripted(slow)
    async with open_connection(ServerSpec(name="web", endpoint=server.url), timeout_ns=5 * SECOND) as conn:
        started = time.monotonic()
        out = await conn.call_tool("t", "{}", 200_000_000)
        assert out == NoAnswer("timeout", 'mcp: server "web": tool "t": timed out after 200ms')
        assert time.monotonic() - started < 2
