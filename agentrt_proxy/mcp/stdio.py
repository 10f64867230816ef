"""An upstream server as a child process speaking newline-delimited JSON-RPC.

The process is started by ``spawn.spawn`` (the environment, its own process group, the
parent-death signal: see there), or was started early by ``serve`` and is adopted here
(``spawn.adopt``, decision 0007). Its pipes are read and written through asyncio pipe
transports. Its stderr is always drained (a full pipe would block it) and only the last
4096 bytes are kept, for error messages; it is never copied anywhere else.

Its stdout is framed in lines of at most ``max_message_bytes`` (``_framing``). A longer line is
handed on as an ``Oversize`` (when it passes the bound, and at its end) and skipped to its end,
the server left running: the call it answers gets a clear error, every other call goes on
(decision 0015; a server answering a big file must not be restarted for it). Only a line
that goes on past ``SKIP_FACTOR`` times the bound is taken as one that will never end: then the
connection is reset (the server is closed, and whoever supervises it starts it again). A
partial line is dropped when the call it answers times out (``drop_partial``), so it never
outlives its call.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import subprocess
from collections.abc import Sequence

import anyio
import anyio.abc

from agentrt_proxy.canonical.quoting import go_escape, go_quote
from agentrt_proxy.mcp import _messages as M
from agentrt_proxy.mcp import spawn
from agentrt_proxy.mcp._framing import BoundedLineBuffer
from agentrt_proxy.mcp._oversize import partial_id
from agentrt_proxy.mcp._transport import Deliver, OnClosed
from agentrt_proxy.mcp.errors import NotSentError, SessionClosed, TransportError
from agentrt_proxy.mcp.spec import DEFAULT_MAX_MESSAGE_BYTES, STDERR_TAIL_BYTES

__all__ = ["StdioTransport", "exit_text"]

STDERR_WAIT = 2.0  # how long a failure waits for a dead server's stderr to close
CLOSE_GRACE = 2.0  # after closing stdin, and again after SIGTERM
READ_CHUNK = 1 << 16
EXIT_POLL = (0.001, 0.05)  # waiting for the exit: the first and the longest pause between looks
SKIP_FACTOR = 16  # an over-long line past this many times max_message_bytes: the server is reset


class StdioTransport:
    def __init__(
        self,
        server: str,
        command: Sequence[str],
        env: dict[str, str],
        tg: anyio.abc.TaskGroup,
        *,
        max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
    ):
        self._server = server
        self._lines = BoundedLineBuffer(max_message_bytes)
        self._skip_ceiling = SKIP_FACTOR * max_message_bytes
        self._reset: str | None = None  # why the reader reset the connection
        self._command = list(command)
        self._env = env
        self._tg = tg
        self._proc: subprocess.Popen[bytes] | None = None
        self._stdin: asyncio.StreamWriter | None = None
        self._pipes: list[asyncio.BaseTransport] = []
        # Taken without a turn of the loop when free (two a call otherwise, each a full turn);
        # a held one still goes to its waiters in order.
        self._write_lock = anyio.Lock(fast_acquire=True)
        self._tail = bytearray()
        self._stderr_closed = anyio.Event()
        self._stdout_closed = anyio.Event()
        self._closing = False
        self._closed = anyio.Event()
        self._close_started = False

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc else None

    async def start(self, deliver: Deliver, on_closed: OnClosed) -> None:
        proc = spawn.adopt(self._server, self._command, self._env)
        if proc is None:
            try:
                proc = spawn.spawn(self._command, self._env)
            except (OSError, ValueError, IndexError) as exc:
                self._stderr_closed.set()
                raise TransportError(f"start {go_quote(self._command[0] if self._command else '')}: {exc}") from exc
        self._proc = proc
        try:
            loop = asyncio.get_running_loop()
            stdout = await self._read_pipe(loop, proc.stdout)
            stderr = await self._read_pipe(loop, proc.stderr)
            transport, protocol = await loop.connect_write_pipe(
                lambda: asyncio.StreamReaderProtocol(asyncio.StreamReader()), proc.stdin
            )
            self._pipes.append(transport)
            self._stdin = asyncio.StreamWriter(transport, protocol, None, loop)
        except BaseException:
            self._stdout_closed.set()  # no reader will run: close does not wait for one
            self._stderr_closed.set()
            raise
        self._tg.start_soon(self._read_stdout, stdout, deliver, on_closed)
        self._tg.start_soon(self._drain_stderr, stderr)

    async def _read_pipe(self, loop: asyncio.AbstractEventLoop, pipe: object) -> asyncio.StreamReader:
        reader = asyncio.StreamReader()
        transport, _ = await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), pipe)
        self._pipes.append(transport)
        return reader

    async def _read_stdout(self, stdout: asyncio.StreamReader, deliver: Deliver, on_closed: OnClosed) -> None:
        buffer = self._lines
        try:
            while chunk := await stdout.read(READ_CHUNK):
                for line in buffer.feed(chunk):
                    deliver(line)
                if buffer.skipping > self._skip_ceiling:
                    self._reset_for(buffer.skipping)
        except (OSError, ValueError):
            pass
        finally:
            self._stdout_closed.set()
        rest = buffer.finish()
        if rest:
            deliver(rest)
        if self._reset is not None:
            on_closed(self._reset)
        else:
            on_closed("connection closed" if self._closing else M.SERVER_CLOSED)

    def _reset_for(self, skipped: int) -> None:
        """Close the server whose over-long line does not end; reading goes on until its stdout ends."""
        if self._reset is None and not self._close_started:
            self._reset = M.LINE_NEVER_ENDS.format(skipped=skipped, factor=SKIP_FACTOR)
            self._tg.start_soon(self.aclose)

    def drop_partial(self, msg_id: int, *, alone: bool) -> None:
        """A call timed out: forget the line under way if it is that call's answer, or if no
        other request waits (it can be nobody else's answer)."""
        head = self._lines.partial_head()
        if head and (alone or partial_id(head) == msg_id):
            self._lines.drop()

    async def _drain_stderr(self, stderr: asyncio.StreamReader) -> None:
        try:
            while chunk := await stderr.read(READ_CHUNK):
                self._tail += chunk
                if len(self._tail) > STDERR_TAIL_BYTES:
                    del self._tail[: len(self._tail) - STDERR_TAIL_BYTES]
        except (OSError, ValueError):
            pass
        finally:
            self._stderr_closed.set()

    def stderr_tail(self) -> str:
        return bytes(self._tail).decode("utf-8", "replace").strip()

    async def failure_detail(self) -> str:
        with anyio.move_on_after(STDERR_WAIT):
            await self._stderr_closed.wait()
        tail = self.stderr_tail()
        return f"; stderr: {go_quote(tail)}" if tail else ""

    async def send(self, data: bytes, *, expects_answer: bool, timeout: float | None) -> None:
        """Write one message. A failure says whether the server can have read any of it, which
        is the difference between "nothing ran" and "maybe ran" for a tool call:

        - ``NotSentError``: provably not one byte of this message reached the server's pipe.
          The transport is not started or is closing; the process this transport started had
          already exited (seen before writing, and then nothing is written: a descendant still
          holding the pipe can read nothing of it); the pipe was already closed (asyncio would
          drop the write silently); or the first write raised before the pipe took a byte.
        - ``SessionClosed``: the pipe took the message, or a part of it, and failed afterwards
          (draining the rest failed): the server may have read it, so the outcome is unknown.
        """
        stdin = self._stdin
        if stdin is None or self._closing:
            raise NotSentError("connection closed")
        async with self._write_lock:
            proc = self._proc
            status = proc.poll() if proc is not None else None
            if status is not None:
                raise NotSentError(M.EXITED_BEFORE_WRITE.format(exit=exit_text(status)))
            transport = stdin.transport
            if transport.is_closing():  # lost earlier (the server closed its stdin): a write is dropped
                raise NotSentError(M.STDIN_CLOSED)
            try:
                stdin.write(data + b"\n")
            except (OSError, RuntimeError) as exc:  # raised before the transport wrote anything
                raise NotSentError(M.STDIN_FAILED.format(q_error=go_escape(str(exc)))) from exc
            if transport.is_closing():
                # asyncio's pipe transport writes at once, in one os.write, only into an empty
                # buffer, and closes itself in write() only when that os.write raised: a call
                # that failed took no byte. (A later failure is the drain's, below.)
                raise NotSentError(M.STDIN_REFUSED)
            try:
                await stdin.drain()
            except (OSError, RuntimeError) as exc:  # broken pipe after the pipe took bytes: maybe read
                raise SessionClosed(f"connection closed: {go_escape(str(exc))}") from exc

    @property
    def returncode(self) -> int | None:
        """The server's exit status once it has exited and been reaped (None before), for the
        operator's line about a server that went down."""
        return self._proc.returncode if self._proc is not None else None

    async def aclose(self) -> None:
        """Close stdin, wait, SIGTERM the group, then SIGKILL the group (descendants too)."""
        if self._close_started:
            await self._closed.wait()
            return
        self._close_started = True
        self._closing = True
        with anyio.CancelScope(shield=True):
            try:
                await self._shutdown()
            finally:
                self._closed.set()

    async def _shutdown(self) -> None:
        proc = self._proc
        if proc is None:
            return
        with contextlib.suppress(OSError, RuntimeError):
            if self._stdin is not None:
                self._stdin.close()
            elif proc.stdin is not None:
                proc.stdin.close()
        await _wait_exit(proc, CLOSE_GRACE)
        if proc.returncode is None:
            spawn.signal_group(proc.pid, signal.SIGTERM)
            await _wait_exit(proc, CLOSE_GRACE)
        # Always: the server may be gone while its children (node under npx…) live on.
        spawn.signal_group(proc.pid, signal.SIGKILL)
        await _wait_exit(proc, None)
        # A descendant holding the pipes outlives the server by a moment: let the readers
        # reach the end, then close the pipes whatever is left holding them.
        with anyio.move_on_after(STDERR_WAIT):
            await self._stdout_closed.wait()
            await self._stderr_closed.wait()
        for transport in self._pipes:
            transport.close()
        for pipe in (proc.stdin, proc.stdout, proc.stderr):  # also one never handed to a transport
            if pipe is not None:
                with contextlib.suppress(OSError):
                    pipe.close()


def exit_text(status: int) -> str:
    """A process's exit status as a phrase: "exited with status 1", "was killed by signal 9 (SIGKILL)"."""
    if status >= 0:
        return M.EXITED.format(status=status)
    try:
        name = f" ({signal.Signals(-status).name})"
    except ValueError:
        name = ""
    return M.KILLED.format(signal=-status, name=name)


async def _wait_exit(proc: subprocess.Popen[bytes], timeout: float | None) -> None:
    """Wait until the process has exited (and is reaped), at most ``timeout`` seconds."""
    pause = EXIT_POLL[0]
    with anyio.move_on_after(timeout):
        while proc.poll() is None:
            await anyio.sleep(pause)
            pause = min(pause * 2, EXIT_POLL[1])
