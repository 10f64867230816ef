"""The upstream client over streamable HTTP: the SDK's server, and hand-made misbehaviour."""

from __future__ import annotations

import json
import socket
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import anyio
import pytest

from agentrt_proxy.canonical import policy_text
from agentrt_proxy.mcp import ConnectError, ServerSpec, _http_pool, open_connection
from agentrt_proxy.mcp._http import HTTPTransport
from agentrt_proxy.mcp.errors import NotSentError, TransportError
from agentrt_proxy.mcp.outcomes import HttpStatus, NoAnswer, NotSent, Result
from tests.waiting import until as eventually

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


def no_stream(h: BaseHTTPRequestHandler) -> None:
    """The standalone GET stream, as a server that offers none answers it."""
    reply(h, 405, b"")


class Scripted:
    """A tiny HTTP server whose answers the test writes; records every request and counts the
    connections it accepted. ``idle_timeout`` closes a keep-alive connection that carried no
    request for that long, as uvicorn does after 5 s (``reset``: with a TCP reset)."""

    def __init__(
        self,
        behaviour: Behaviour,
        on_get: Callable[[BaseHTTPRequestHandler], None] = no_stream,
        *,
        idle_timeout: float | None = None,
        reset: bool = False,
    ) -> None:
        self.requests: list[tuple[str, dict[str, str], bytes]] = []
        self.connections = 0
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            timeout = idle_timeout

            def setup(self) -> None:
                outer.connections += 1
                super().setup()

            def finish(self) -> None:
                if reset:
                    self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                super().finish()

            def log_error(self, *args: Any) -> None:
                pass

            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                self._record()
                on_get(self)

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
        threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def calls(self, method: str) -> list[dict[str, str]]:
        """The headers of every POST of ``method``, in order."""
        return [headers for verb, headers, body in self.requests if verb == "POST" and body_method(body) == method]


def body_method(body: bytes) -> str | None:
    try:
        method = json.loads(body).get("method")
    except (ValueError, AttributeError):
        return None
    return method if isinstance(method, str) else None


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
def scripted() -> Iterator[Callable[..., Scripted]]:
    servers: list[Scripted] = []

    def make(behaviour: Behaviour, **options: Any) -> Scripted:
        servers.append(Scripted(behaviour, **options))
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
    methods = [r[0] for r in server.requests if r[0] != "GET"]  # the GET stream runs beside them
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
        async with open_connection(
            ServerSpec(name="web", endpoint=server.url, max_message_bytes=16 << 20), timeout_ns=5 * SECOND
        ):
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
        async with open_connection(
            ServerSpec(name="web", endpoint=server.url, max_message_bytes=16 << 20), timeout_ns=20 * SECOND
        ):
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


def ok(h: BaseHTTPRequestHandler, msg: dict[str, Any], text: str = "ok") -> None:
    result = {"content": [{"type": "text", "text": text}]}
    reply(h, 200, json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": result}).encode())


class Sessions:
    """A server that forgets its session when told to (as a restarted one does), then answers a
    request carrying it as ``gone`` does; every initialize starts session s-1, s-2, ..."""

    def __init__(self, gone: Callable[[BaseHTTPRequestHandler], None]) -> None:
        self.gone = gone
        self.current = 0
        self.forgotten = False
        self.refuse_initialize = False
        self.slow_initialize = 0.0

    def __call__(self, h: BaseHTTPRequestHandler, msg: dict[str, Any]) -> None:
        sent = h.headers.get("Mcp-Session-Id")
        if msg.get("method") == "initialize":
            if self.refuse_initialize:
                reply(h, 503, b"starting up")
                return
            time.sleep(self.slow_initialize)
            self.current += 1
            self.forgotten = False
            standard(h, msg, session=f"s-{self.current}")
        elif self.forgotten or sent != f"s-{self.current}":
            self.gone(h)
        elif not standard(h, msg, session=f"s-{self.current}"):
            ok(h, msg, f"ok in {sent}")


def not_found(h: BaseHTTPRequestHandler) -> None:
    reply(h, 404, b'{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Session not found"}}')


def npm_no_session(h: BaseHTTPRequestHandler) -> None:
    body = b'{"jsonrpc":"2.0","error":{"code":-32000,"message":"Bad Request: No valid session ID provided"}}'
    reply(h, 400, body)


@pytest.mark.parametrize("gone", [not_found, npm_no_session], ids=["404", "npm 400"])
async def test_a_call_to_a_session_the_server_forgot_starts_a_new_one_and_is_sent_once_more(
    scripted: Any, gone: Callable[[BaseHTTPRequestHandler], None]
) -> None:
    sessions = Sessions(gone)
    server = scripted(sessions)
    async with open_connection(ServerSpec(name="web", endpoint=server.url), timeout_ns=5 * SECOND) as conn:
        assert isinstance(await conn.call_tool("t", "{}", 5 * SECOND), Result)
        sessions.forgotten = True  # the server restarted between two calls
        out = await conn.call_tool("t", "{}", 5 * SECOND)
        assert isinstance(out, Result) and out.text == "ok in s-2", out
    calls = [headers["Mcp-Session-Id"] for headers in server.calls("tools/call")]
    assert calls == ["s-1", "s-1", "s-2"]  # the refused one, then once more in the new session
    initializes = server.calls("initialize")
    assert len(initializes) == 2 and all("Mcp-Session-Id" not in h for h in initializes)
    assert [h["Mcp-Session-Id"] for h in server.calls("notifications/initialized")] == ["s-1", "s-2"]


async def test_a_session_that_cannot_be_renewed_leaves_the_call_not_sent_and_the_next_call_renews(
    scripted: Any,
) -> None:
    sessions = Sessions(not_found)
    server = scripted(sessions)
    async with open_connection(ServerSpec(name="web", endpoint=server.url), timeout_ns=5 * SECOND) as conn:
        sessions.forgotten = sessions.refuse_initialize = True
        out = await conn.call_tool("t", "{}", 5 * SECOND)
        assert isinstance(out, NotSent), out
        assert 'server "web"' in out.detail and "no new one could be started" in out.detail and "503" in out.detail
        assert len(server.calls("tools/call")) == 1  # the refused one; nothing was processed
        sessions.refuse_initialize = False
        out = await conn.call_tool("t", "{}", 5 * SECOND)
        assert isinstance(out, Result) and out.text == "ok in s-2", out
    assert [h.get("Mcp-Session-Id") for h in server.calls("tools/call")] == ["s-1", "s-2"]  # no id-less call
    assert len(server.calls("initialize")) == 3


async def test_a_call_whose_time_runs_out_while_a_new_session_starts_is_not_sent(scripted: Any) -> None:
    sessions = Sessions(not_found)
    server = scripted(sessions)
    async with open_connection(ServerSpec(name="web", endpoint=server.url), timeout_ns=5 * SECOND) as conn:
        sessions.forgotten, sessions.slow_initialize = True, 1.0
        out = await conn.call_tool("t", "{}", 300_000_000)
        assert out == NotSent('mcp: server "web": tool "t": timed out after 300ms starting a new session')
        assert conn._pending == {}
    assert len(server.calls("tools/call")) == 1  # the refused one


async def test_a_call_refused_again_in_the_new_session_is_the_servers_refusal_never_not_sent_nor_tried_a_third_time(
    scripted: Any,
) -> None:
    def forgetful(h: BaseHTTPRequestHandler, msg: dict[str, Any]) -> None:
        if msg.get("method") == "tools/call":
            not_found(h)
        else:
            standard(h, msg)

    server = scripted(forgetful)
    async with open_connection(ServerSpec(name="web", endpoint=server.url), timeout_ns=5 * SECOND) as conn:
        out = await conn.call_tool("t", "{}", 5 * SECOND)
    # The request reached the server whole, twice: a server forgetting the session it has just begun
    # keeps no promise about what it processed, so the outcome is its refusal, never not-sent.
    assert isinstance(out, HttpStatus) and out.status == 404, out
    assert "again in the session just begun" in out.detail, out
    assert len(server.calls("tools/call")) == 2 and len(server.calls("initialize")) == 2


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


# ------------------------------------------------------------ idle connections


def answering(h: BaseHTTPRequestHandler, msg: dict[str, Any]) -> None:
    if not standard(h, msg):
        ok(h, msg)


async def test_an_idle_connection_the_server_closed_is_replaced_and_the_call_reaches_the_server_once(
    scripted: Any,
) -> None:
    server = scripted(answering, idle_timeout=0.1)
    async with open_connection(ServerSpec(name="web", endpoint=server.url), timeout_ns=5 * SECOND) as conn:
        first = server.connections
        for _ in range(3):
            await anyio.sleep(0.3)  # idle: the server has closed every connection it answered on
            out = await conn.call_tool("t", "{}", 5 * SECOND)
            assert isinstance(out, Result) and out.text == "ok", out
    assert len(server.calls("tools/call")) == 3  # each call reached the server exactly once
    assert server.connections >= first + 3  # each on a fresh connection


async def test_a_connection_reset_before_the_first_byte_is_written_is_replaced(
    scripted: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The check before reuse is blinded, as if the reset arrived between the check and the write.
    monkeypatch.setattr(_http_pool, "_looks_open", lambda conn: conn.sock is not None)
    server = scripted(answering, idle_timeout=0.1, reset=True)
    async with open_connection(ServerSpec(name="web", endpoint=server.url), timeout_ns=5 * SECOND) as conn:
        await anyio.sleep(0.3)
        out = await conn.call_tool("t", "{}", 5 * SECOND)
    assert isinstance(out, Result) and out.text == "ok", out
    assert len(server.calls("tools/call")) == 1


async def test_a_refused_connect_is_not_sent(scripted: Any) -> None:
    server = scripted(answering, idle_timeout=0.1)
    async with open_connection(ServerSpec(name="web", endpoint=server.url), timeout_ns=5 * SECOND) as conn:
        server.close()  # the server is gone: its port refuses, its idle connections close
        await anyio.sleep(0.3)
        out = await conn.call_tool("t", "{}", 5 * SECOND)
    assert isinstance(out, NotSent), out
    assert out.detail.startswith('mcp: server "web": tool "t": POST: connecting failed: ') and "refused" in out.detail
    assert server.calls("tools/call") == []


def test_a_request_is_written_through_a_connection_that_counts_what_the_kernel_took() -> None:
    a, b = socket.socketpair()
    conn = _http_pool._HTTP("127.0.0.1", 1)
    conn.sock = a
    conn.send(b"x" * 1000)
    assert conn.written == 1000 and b.recv(2000) == b"x" * 1000
    b.close()
    a.shutdown(socket.SHUT_WR)
    with pytest.raises(OSError):
        conn.send(b"more")
    assert conn.written == 1000
    a.close()


async def test_a_write_that_fails_after_bytes_went_out_is_not_retried() -> None:
    """A server that takes the first 64 KiB of a request, then resets the connection."""
    listener = socket.create_server(("127.0.0.1", 0))
    accepted: list[int] = []

    def serve() -> None:
        while True:
            try:
                sock, _ = listener.accept()
            except OSError:
                return
            got = 0
            while got < 65536:
                got += len(sock.recv(65536))
            accepted.append(got)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            sock.close()

    threading.Thread(target=serve, daemon=True).start()
    transport = HTTPTransport("web", f"http://127.0.0.1:{listener.getsockname()[1]}/mcp")
    await transport.start(lambda message: None, lambda reason: None)
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "m", "params": {"pad": "x" * (32 << 20)}}).encode()
    try:
        with pytest.raises(TransportError) as info:
            await transport.send(body, expects_answer=True, timeout=10)
        assert not isinstance(info.value, NotSentError), info.value
        assert str(info.value).startswith("POST: ")
        await anyio.sleep(0.2)
        assert len(accepted) == 1  # the server saw part of it: never written again
    finally:
        await transport.aclose()
        listener.close()


async def test_a_connection_is_retired_before_the_servers_keep_alive_timeout(scripted: Any) -> None:
    def brief(h: BaseHTTPRequestHandler, msg: dict[str, Any]) -> None:
        body = json.dumps({"jsonrpc": "2.0", "id": msg.get("id"), "result": {}}).encode()
        reply(h, 200, body, Keep_Alive="timeout=2")

    server = scripted(brief)
    transport = HTTPTransport("web", server.url)
    await transport.start(lambda message: None, lambda reason: None)
    try:
        await transport.send(b'{"jsonrpc":"2.0","id":1,"method":"m"}', expects_answer=True, timeout=5)
        await transport.send(b'{"jsonrpc":"2.0","id":2,"method":"m"}', expects_answer=True, timeout=5)
        assert server.connections == 1  # reused within the server's timeout
        await anyio.sleep(1.1)  # past timeout - 1 s: the server may close it any moment now
        await transport.send(b'{"jsonrpc":"2.0","id":3,"method":"m"}', expects_answer=True, timeout=5)
        assert server.connections == 2
    finally:
        await transport.aclose()


# ------------------------------------------------------------ the standalone GET stream


def sse_head(h: BaseHTTPRequestHandler) -> None:
    h.send_response(200)
    h.send_header("Content-Type", "text/event-stream")
    h.send_header("Connection", "close")
    h.end_headers()
    h.wfile.flush()


def event(message: dict[str, Any], event_id: str | None = None) -> bytes:
    head = f"id: {event_id}\n" if event_id is not None else ""
    return f"{head}event: message\ndata: {json.dumps(message)}\n\n".encode()


LIST_CHANGED = {"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}
SAMPLING = {"jsonrpc": "2.0", "id": "srv-1", "method": "sampling/createMessage", "params": {"messages": []}}


async def test_the_get_stream_carries_server_requests_to_their_answer_and_list_changed_to_its_handler(
    scripted: Any,
) -> None:
    release, done = threading.Event(), threading.Event()

    def stream(h: BaseHTTPRequestHandler) -> None:
        sse_head(h)
        release.wait(5)
        h.wfile.write(event(SAMPLING) + event(LIST_CHANGED))
        h.wfile.flush()
        done.wait(5)  # the stream stays open, as a server's does

    server = scripted(answering, on_get=stream)
    changed: list[str] = []
    try:
        async with open_connection(ServerSpec(name="web", endpoint=server.url), timeout_ns=5 * SECOND) as conn:
            conn.notification_handlers["notifications/tools/list_changed"] = lambda note: changed.append(note.method)
            release.set()
            await eventually("the sampling request's answer", lambda: any(
                b'"srv-1"' in body for verb, _, body in server.requests if verb == "POST"
            ))  # fmt: skip
            await eventually("the list_changed handler", lambda: changed != [])
    finally:
        done.set()
    (answer,) = [json.loads(body) for verb, _, body in server.requests if verb == "POST" and b'"srv-1"' in body]
    assert answer["id"] == "srv-1" and "error" in answer and "result" not in answer
    assert changed == ["notifications/tools/list_changed"]
    (get,) = [headers for verb, headers, _ in server.requests if verb == "GET"]
    assert get["Accept"] == "text/event-stream" and get["Mcp-Session-Id"] == "s-1"
    assert get["MCP-Protocol-Version"] == "2025-06-18" and "Last-Event-ID" not in get


async def test_a_server_that_answers_the_get_stream_405_is_not_asked_again(scripted: Any) -> None:
    server = scripted(answering)
    async with open_connection(ServerSpec(name="web", endpoint=server.url), timeout_ns=5 * SECOND):
        await eventually("the GET", lambda: any(verb == "GET" for verb, _, _ in server.requests))
        await anyio.sleep(1.3)  # past the first backoff
    assert [verb for verb, _, _ in server.requests].count("GET") == 1


async def test_a_get_stream_that_ends_is_opened_again_from_its_last_event_id(scripted: Any) -> None:
    gets: list[str | None] = []
    done = threading.Event()

    def stream(h: BaseHTTPRequestHandler) -> None:
        gets.append(h.headers.get("Last-Event-ID"))
        sse_head(h)
        if len(gets) == 1:
            h.wfile.write(b"retry: 50\n" + event(LIST_CHANGED, "g-1"))  # then the server ends it
            return
        h.wfile.write(event(LIST_CHANGED, "g-2"))
        h.wfile.flush()
        done.wait(5)

    server = scripted(answering, on_get=stream)
    changed: list[str] = []
    try:
        async with open_connection(ServerSpec(name="web", endpoint=server.url), timeout_ns=5 * SECOND) as conn:
            conn.notification_handlers["notifications/tools/list_changed"] = lambda note: changed.append(note.method)
            await eventually("the second GET's event", lambda: len(gets) == 2 and len(changed) >= 1)
    finally:
        done.set()
    assert gets == [None, "g-1"]


async def test_closing_does_not_wait_for_an_open_get_stream(scripted: Any) -> None:
    done = threading.Event()

    def stream(h: BaseHTTPRequestHandler) -> None:
        sse_head(h)
        done.wait(10)  # open, silent, until the test ends

    server = scripted(answering, on_get=stream)
    transport: Any = None
    try:
        async with open_connection(ServerSpec(name="web", endpoint=server.url), timeout_ns=5 * SECOND) as conn:
            transport = conn._transport
            await eventually("the GET", lambda: any(verb == "GET" for verb, _, _ in server.requests))
            started = time.monotonic()
        assert time.monotonic() - started < 1
        await eventually("the GET stream's thread to end", lambda: not transport._listener.running, timeout=1)
    finally:
        done.set()
