"""The upstream client over stdio: real child processes, the SDK's own server included."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import sys
import time
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

import anyio
import pytest

from agentrt_proxy.canonical import policy_text
from agentrt_proxy.mcp import ConnectError, ServerSpec, ServerSpecError, child_env, open_connection
from agentrt_proxy.mcp.errors import NotSentError, SessionClosed
from agentrt_proxy.mcp.outcomes import NoAnswer, NotSent, Refused, Result, RpcError
from agentrt_proxy.mcp.stdio import StdioTransport
from tests.processes import alive
from tests.upstream.scripted import SCRIPTED, wait_dead, write_script

pytestmark = pytest.mark.anyio

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
RAW = str(FIXTURES / "raw_server.py")
SECOND = 1_000_000_000
MS = 1_000_000


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def raw_spec(mode: str = "normal", env: Sequence[str] = (), **kw: Any) -> ServerSpec:
    return ServerSpec(name="fs", command=[sys.executable, RAW], env=[f"RAW_MODE={mode}", *env], **kw)


# ------------------------------------------------------------ environment


def test_child_env_is_minimal_and_explicit() -> None:  # TestChildEnv_IsMinimalAndExplicit
    host = {"PATH": "/bin", "HOME": "/home/op", "TMPDIR": "/tmp/op", "LANG": "C", "SECRET": "s", "HTTP_PROXY": "p"}
    spec = ServerSpec(
        name="fs", command=["x"], inherit_env=["LANG", "UNSET"], env=["API_KEY=k", "PATH=/opt/bin", "EMPTY="]
    )
    assert list(child_env(spec, host, windows=False).items()) == [
        ("PATH", "/opt/bin"),
        ("HOME", "/home/op"),
        ("TMPDIR", "/tmp/op"),
        ("LANG", "C"),
        ("API_KEY", "k"),
        ("EMPTY", ""),
    ]
    assert child_env(ServerSpec(name="fs", command=["x"]), {}, windows=False) == {}
    win = child_env(ServerSpec(name="fs", command=["x"], env=["path=C:\\x"]), {"Path": "C:\\w"}, windows=True)
    assert win == {"PATH": "C:\\x"}


def test_malformed_env_entries_are_refused() -> None:  # TestServer_RejectsMalformedEnv
    cases = [
        (ServerSpec(name="fs", command=["x"], env=["NOEQUALS"]), 'Env entry "NOEQUALS" is not NAME=value'),
        (ServerSpec(name="fs", command=["x"], env=["=v"]), 'Env entry "=v" is not NAME=value'),
        (ServerSpec(name="fs", command=["x"], inherit_env=["A=B"]), 'InheritEnv entry "A=B" is not a variable name'),
        (ServerSpec(name="fs", command=["x"], inherit_env=[""]), 'InheritEnv entry "" is not a variable name'),
        (ServerSpec(name="fs", command=["x"], endpoint="http://x"), "Command and Endpoint are exclusive"),
        (ServerSpec(name="fs"), "one of Command or Endpoint is required"),
        (ServerSpec(name="", command=["x"]), "mcp: server name is required"),
    ]
    for spec, message in cases:
        with pytest.raises(ServerSpecError, match=message.replace("(", r"\(")):
            spec.validate()


async def test_the_server_gets_only_the_environment_it_is_given(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENT_SECRET", "nope")
    monkeypatch.setenv("SHARED_NAME", "yes")
    spec = raw_spec(inherit_env=["SHARED_NAME"], env=["EXTRA=1"])
    async with open_connection(spec, timeout_ns=10 * SECOND) as conn:
        out = await conn.call_tool("env", "{}", 5 * SECOND)
    assert isinstance(out, Result)
    seen = json.loads(out.text)
    seen.pop("LC_CTYPE", None)  # the interpreter may set this itself
    expected = {k: os.environ[k] for k in ("PATH", "HOME", "TMPDIR") if k in os.environ}
    assert seen == {**expected, "SHARED_NAME": "yes", "RAW_MODE": "normal", "EXTRA": "1"}


# ------------------------------------------------------------ the SDK's own server


async def test_the_sdk_server_over_stdio_lists_and_calls_keeping_big_literals() -> None:
    spec = ServerSpec(name="sdk", command=[sys.executable, str(FIXTURES / "sdk_upstream.py")])
    async with open_connection(spec, timeout_ns=20 * SECOND) as conn:
        assert conn.server_info["name"] == "sdk-upstream"
        tools = {t.name: t for t in conn.tools}
        assert set(tools) == {"echo", "limit", "numbers"}
        assert tools["echo"].description == "Echo the text back."
        assert '"maximum":9007199254740993' in (tools["limit"].input_schema_raw or "")
        out = await conn.call_tool("numbers", None, 10 * SECOND)
        assert isinstance(out, Result) and policy_text(out.content["structuredContent"]) == '{"n":9007199254740993}'
        assert out.content["content"][0]["text"] == '{\n  "n": 9007199254740993\n}'  # the server's own text, beside it
        out = await conn.call_tool("echo", '{"text":"hi"}', 10 * SECOND)
        assert isinstance(out, Result) and out.content["structuredContent"] == {"result": "hi"}
        assert out.content["content"] == [{"type": "text", "text": "hi"}]


# ------------------------------------------------------------ the raw server


async def test_arguments_go_upstream_as_given_and_server_requests_are_answered() -> None:
    async with open_connection(raw_spec(), timeout_ns=10 * SECOND) as conn:
        out = await conn.call_tool("echo", '{"b":1.50,"a":9007199254740993}', 5 * SECOND)
        assert isinstance(out, Result) and out.text.startswith('{"b":1.50,"a":9007199254740993}')
        assert conn.alive


async def test_an_undecodable_answer_to_a_known_id_is_refused() -> None:
    async with open_connection(raw_spec(), timeout_ns=10 * SECOND) as conn:
        out = await conn.call_tool("broken", "{}", 5 * SECOND)
    assert isinstance(out, Refused) and b"NaN" in out.raw


async def test_a_structured_answer_failing_the_boundary_is_refused() -> None:
    spec = raw_spec(env=['RAW_RESULT={"content":[],"structuredContent":{"a":1,"a":2}}'])
    async with open_connection(spec, timeout_ns=10 * SECOND) as conn:
        out = await conn.call_tool("raw", "{}", 5 * SECOND)
    assert isinstance(out, Refused) and out.reason == 'duplicate key "a"'


async def test_a_json_rpc_error_answer_is_an_rpc_error() -> None:
    async with open_connection(raw_spec(env=["RAW_RESULT=null"]), timeout_ns=10 * SECOND) as conn:
        assert await conn.call_tool("rpcerror", "{}", 5 * SECOND) == RpcError(-32602, "unknown tool", "rpcerror")
        assert isinstance(await conn.call_tool("raw", "{}", 5 * SECOND), Refused)  # a null result


async def test_the_call_timeout_is_honoured_even_if_the_server_never_answers() -> None:
    async with open_connection(raw_spec(), timeout_ns=10 * SECOND) as conn:
        started = time.monotonic()
        out = await conn.call_tool("hang", "{}", 100 * MS)
        assert time.monotonic() - started < 2
        assert out == NoAnswer("timeout", 'mcp: server "fs": tool "hang": timed out after 100ms')
        out = await conn.call_tool("echo", "{}", 5 * SECOND)  # the session survives
        assert isinstance(out, Result)


async def test_a_dead_session_fails_every_call_at_once_naming_the_server() -> None:
    async with open_connection(raw_spec(), timeout_ns=10 * SECOND) as conn:
        out = await conn.call_tool("die", "{}", 5 * SECOND)
        assert isinstance(out, NoAnswer) and out.kind == "dropped" and '"fs"' in out.detail
        started = time.monotonic()
        for _ in range(3):
            out = await conn.call_tool("echo", "{}", 5 * SECOND)
            assert isinstance(out, NotSent) and 'server "fs"' in out.detail  # nothing was written
        assert time.monotonic() - started < 1


# ------------------------------------------------------------ a write: nothing sent, or maybe read


@contextlib.asynccontextmanager
async def bare_transport(script: str) -> AsyncIterator[tuple[StdioTransport, list[bytes]]]:
    """The stdio transport alone around ``python -c script``: what ``send`` raises, unclassified."""
    async with anyio.create_task_group() as tg:
        transport = StdioTransport("fs", [sys.executable, "-c", script], {"PATH": os.environ.get("PATH", "")}, tg)
        lines: list[bytes] = []
        await transport.start(lines.append, lambda reason: None)
        try:
            yield transport, lines
        finally:
            await transport.aclose()


async def test_a_write_to_a_server_that_had_exited_is_not_sent() -> None:
    async with bare_transport("import sys; sys.exit(4)") as (transport, _):
        pid = transport.pid
        assert pid is not None
        await anyio.to_thread.run_sync(lambda: os.waitid(os.P_PID, pid, os.WEXITED | os.WNOWAIT))  # exited, unreaped
        with pytest.raises(NotSentError, match=r"^the server exited with status 4 before the request was written$"):
            await transport.send(b"{}", expects_answer=True, timeout=None)
        assert transport.returncode == 4


async def test_a_write_to_a_live_server_that_closed_its_stdin_is_not_sent() -> None:
    script = "import os, time; os.close(0); print('ready', flush=True); time.sleep(30)"
    async with bare_transport(script) as (transport, lines):
        with anyio.fail_after(10):
            while not lines:
                await anyio.sleep(0.01)
        with pytest.raises(NotSentError, match="stdin"):  # closed before, or refused by the first write
            await transport.send(b"{}", expects_answer=True, timeout=None)
        assert transport.returncode is None  # alive: it is the pipe that refused, not an exit


async def test_a_write_the_pipe_took_before_the_server_died_may_have_been_read() -> None:
    # It reads nothing and dies: the pipe took the first 64 KiB, so the server could have read them.
    script = "import os, time; print('ready', flush=True); time.sleep(0.5); os._exit(0)"
    async with bare_transport(script) as (transport, lines):
        with anyio.fail_after(10):
            while not lines:
                await anyio.sleep(0.01)
            with pytest.raises(SessionClosed) as caught:
                await transport.send(b"x" * (4 << 20), expects_answer=True, timeout=None)
        assert not isinstance(caught.value, NotSentError)


async def test_a_call_to_a_server_whose_stdin_is_closed_is_not_sent_rather_than_unanswered() -> None:
    async with open_connection(raw_spec(), timeout_ns=10 * SECOND) as conn:
        assert isinstance(await conn.call_tool("closein", "{}", 5 * SECOND), Result)
        await anyio.sleep(0.2)  # the server has closed its stdin; its stdout stays open
        out = await conn.call_tool("echo", "{}", 5 * SECOND)
        assert isinstance(out, NotSent) and out.detail.startswith('mcp: server "fs": tool "echo": connection closed')
        assert conn.alive  # the session did not end: nothing was answered or dropped


async def test_close_is_safe_twice_and_concurrent_with_a_call() -> None:
    async with open_connection(raw_spec(), timeout_ns=10 * SECOND) as conn:
        outcomes: list[Any] = []

        async def call() -> None:
            outcomes.append(await conn.call_tool("hang", "{}", 10 * SECOND))

        with anyio.fail_after(10):
            async with anyio.create_task_group() as tg:
                tg.start_soon(call)
                await anyio.sleep(0.1)
                tg.start_soon(conn.aclose)
                tg.start_soon(conn.aclose)
            await conn.aclose()
    assert len(outcomes) == 1 and isinstance(outcomes[0], NoAnswer) and outcomes[0].kind == "dropped"


# ------------------------------------------------------------ connect phase


async def test_the_stderr_tail_is_in_a_failed_connect() -> None:
    with pytest.raises(ConnectError) as info:
        async with open_connection(raw_spec("crash-stderr"), timeout_ns=10 * SECOND):
            pass
    message = str(info.value)
    assert message.startswith('mcp: server "fs": connect: ')
    assert "; stderr: " in message and message.endswith('the end"')
    assert len(message) <= 4096 + 500


async def test_the_stderr_tail_is_in_a_failed_listing() -> None:
    with pytest.raises(ConnectError, match=r'list tools: .*stderr: "listing refused: no licence"'):
        async with open_connection(raw_spec("list-error"), timeout_ns=10 * SECOND):
            pass


async def test_a_command_that_cannot_start_fails_the_connect() -> None:
    spec = ServerSpec(name="fs", command=["/nonexistent/server"])
    with pytest.raises(ConnectError, match='mcp: server "fs": connect: start "/nonexistent/server"'):
        async with open_connection(spec, timeout_ns=SECOND):
            pass


# A server that never answers initialize times out at 50 ms as in the original; one that never
# lists gets 1 s, so that its start and initialize fit inside the bound on a loaded machine.
@pytest.mark.parametrize(
    ("mode", "phase", "bound", "said"),
    [("silent-init", "connect", 50 * MS, "50ms"), ("silent-list", "list tools", 1000 * MS, "1s")],
)
async def test_the_connect_timeout_bounds_a_phase_that_never_answers(mode: str, phase: str, bound: int,
                                                                     said: str) -> None:
    started = time.monotonic()
    with pytest.raises(ConnectError) as info:
        async with open_connection(raw_spec(mode), timeout_ns=bound):
            pass
    assert str(info.value).startswith(f'mcp: server "fs": {phase}: timed out after {said}')
    assert time.monotonic() - started < 6  # close's grace included


async def test_the_connect_timeout_does_not_shorten_the_session() -> None:
    async with open_connection(raw_spec(), timeout_ns=1500 * MS) as conn:
        await anyio.sleep(1.6)
        assert isinstance(await conn.call_tool("echo", "{}", 5 * SECOND), Result)


@pytest.mark.parametrize(
    ("mode", "message"),
    [
        ("pages-101", "more than 100 pages"),
        ("repeat-cursor", 'the cursor "x" repeats'),
        ("tools-1001", "more than 1000 tools"),
        ("dup-page", 'the server lists tool "a" twice'),
        ("dup-across", 'the server lists tool "a" twice'),
    ],
)
async def test_the_listing_is_bounded(mode: str, message: str) -> None:
    with pytest.raises(ConnectError, match=f'mcp: server "fs": list tools: {message}'):
        async with open_connection(raw_spec(mode), timeout_ns=20 * SECOND):
            pass


async def test_exactly_1000_tools_and_100_pages_are_allowed() -> None:
    async with open_connection(raw_spec("tools-1000"), timeout_ns=20 * SECOND) as conn:
        assert len(conn.tools) == 1000
    async with open_connection(raw_spec("pages-100"), timeout_ns=20 * SECOND) as conn:
        assert len(conn.tools) == 100


# ------------------------------------------------------------ process group


@pytest.mark.skipif(sys.platform == "win32", reason="process groups are Unix")
async def test_close_kills_the_servers_descendants(tmp_path: Path) -> None:
    pidfile = tmp_path / "pid"
    async with open_connection(raw_spec("grandchild", [f"RAW_PIDFILE={pidfile}"]), timeout_ns=10 * SECOND):
        with anyio.fail_after(5):
            while not pidfile.exists() or not pidfile.read_text():
                await anyio.sleep(0.02)
        grandchild = int(pidfile.read_text())
        assert alive(grandchild)
    deadline = time.monotonic() + 5
    while alive(grandchild) and time.monotonic() < deadline:
        time.sleep(0.05)
    if alive(grandchild):
        os.kill(grandchild, signal.SIGKILL)
        pytest.fail("the grandchild ignoring SIGTERM survived close")


# ------------------------------------------------ proxy-and-mcp-module §5.13 #7: an outer cancellation is not a timeout


@pytest.mark.skipif(sys.platform == "win32", reason="process groups are Unix")
def test_a_callers_cancellation_is_reported_as_itself_not_as_the_phases_timeout(tmp_path: Path) -> None:
    # TestPhaseErr_NamesTheStepOnlyWhenItsOwnDeadlineFired (the cancellation half)
    pidfile = tmp_path / "pid"
    script = write_script(tmp_path / "script.json", list="silent", grandchild_pidfile=str(pidfile))
    spec = ServerSpec(name="fs", command=[sys.executable, SCRIPTED], env=[f"SCRIPT={script}"])
    seen: list[BaseException] = []

    async def cancelled_by_the_caller() -> bool:
        with anyio.move_on_after(0.5) as scope:
            try:
                async with open_connection(spec, timeout_ns=30 * SECOND):
                    pass
            except BaseException as exc:  # record what left open_connection, then let it go on
                seen.append(exc)
                raise
        return scope.cancelled_caught

    assert anyio.run(cancelled_by_the_caller) is True
    assert len(seen) == 1 and isinstance(seen[0], asyncio.CancelledError)  # asyncio is the product's loop
    assert not isinstance(seen[0], ConnectError) and "timed out" not in str(seen[0])
    assert wait_dead(int(pidfile.read_text())), "the server's grandchild survived the cancellation"

    async def deadline_of_the_caller() -> None:
        with anyio.fail_after(0.5):
            async with open_connection(spec, timeout_ns=30 * SECOND):
                pass

    pidfile.unlink()
    with pytest.raises(TimeoutError) as caught:  # the caller's own deadline, not "list tools: timed out after 30s"
        anyio.run(deadline_of_the_caller)
    assert not isinstance(caught.value, ConnectError) and "list tools" not in str(caught.value)
    assert wait_dead(int(pidfile.read_text()))

    async def own_deadline_inside_a_longer_one() -> None:
        with anyio.fail_after(20):
            async with open_connection(spec, timeout_ns=1 * SECOND):
                pass

    pidfile.unlink()
    with pytest.raises(ConnectError, match=r'^mcp: server "fs": list tools: timed out after 1s'):
        anyio.run(own_deadline_inside_a_longer_one)
    assert wait_dead(int(pidfile.read_text()))
