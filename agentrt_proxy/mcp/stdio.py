"""An upstream server as a child process speaking newline-delimited JSON-RPC.

The child gets only the environment it is given (``spec.child_env``), runs in a
process group of its own (so a terminal's Ctrl-C reaches the proxy, not the server,
and close can kill its descendants too), and on Linux receives SIGKILL if the proxy
dies first. Its stderr is always drained (a full pipe would block it) and only the
last 4096 bytes are kept, for error messages; it is never copied anywhere else.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import os
import signal
import sys
from collections.abc import Callable, Sequence

import anyio
import anyio.abc

from .errors import SessionClosed, TransportError, escape, go_quote
from .framing import LineBuffer
from .spec import STDERR_TAIL_BYTES
from .transport import Deliver, OnClosed

__all__ = ["StdioTransport"]

STDERR_WAIT = 2.0  # how long a failure waits for a dead server's stderr to close
CLOSE_GRACE = 2.0  # after closing stdin, and again after SIGTERM
READ_CHUNK = 1 << 16
PR_SET_PDEATHSIG = 1


def _parent_death_hook() -> Callable[[], None] | None:
    """A ``preexec_fn`` setting PR_SET_PDEATHSIG=SIGKILL, or ``None`` off Linux.

    Done with ``ctypes`` (stdlib, so it works from a zip app). libc is loaded here,
    in the parent: the child only makes the one system call between fork and exec.
    The signal fires when the *thread* that forked exits, which is the event-loop
    thread: the proxy's main thread.
    """
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        prctl = libc.prctl
    except (OSError, AttributeError):
        return None
    parent = os.getpid()

    def hook() -> None:
        prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        if os.getppid() != parent:  # the proxy died before the call took effect
            os._exit(1)

    return hook


class StdioTransport:
    def __init__(self, server: str, command: Sequence[str], env: dict[str, str], tg: anyio.abc.TaskGroup):
        self._server = server
        self._command = list(command)
        self._env = env
        self._tg = tg
        self._proc: asyncio.subprocess.Process | None = None
        self._write_lock = anyio.Lock()
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
        try:
            self._proc = await asyncio.create_subprocess_exec(
                *self._command,
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                env=self._env,
                start_new_session=True,
                preexec_fn=_parent_death_hook(),
            )
        except (OSError, ValueError, IndexError) as exc:
            self._stderr_closed.set()
            raise TransportError(f"start {go_quote(self._command[0] if self._command else '')}: {exc}") from exc
        self._tg.start_soon(self._read_stdout, deliver, on_closed)
        self._tg.start_soon(self._drain_stderr)

    async def _read_stdout(self, deliver: Deliver, on_closed: OnClosed) -> None:
        assert self._proc is not None and self._proc.stdout is not None
        buffer = LineBuffer()
        try:
            while chunk := await self._proc.stdout.read(READ_CHUNK):
                for line in buffer.feed(chunk):
                    deliver(line)
        except (OSError, ValueError):
            pass
        finally:
            self._stdout_closed.set()
        rest = buffer.finish()
        if rest:
            deliver(rest)
        on_closed("connection closed" if self._closing else "the server closed the connection")

    async def _drain_stderr(self) -> None:
        assert self._proc is not None and self._proc.stderr is not None
        try:
            while chunk := await self._proc.stderr.read(READ_CHUNK):
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
        proc = self._proc
        if proc is None or proc.stdin is None or self._closing:
            raise SessionClosed("connection closed")
        async with self._write_lock:
            try:
                proc.stdin.write(data + b"\n")
                await proc.stdin.drain()
            except (OSError, RuntimeError) as exc:  # broken pipe, or a transport closing
                raise SessionClosed(f"connection closed: {escape(str(exc))}") from exc

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
        if proc.stdin is not None:
            with contextlib.suppress(OSError, RuntimeError):
                proc.stdin.close()
        with anyio.move_on_after(CLOSE_GRACE):
            await proc.wait()
        if proc.returncode is None:
            self._signal_group(proc.pid, signal.SIGTERM)
            with anyio.move_on_after(CLOSE_GRACE):
                await proc.wait()
        # Always: the server may be gone while its children (node under npx…) live on.
        self._signal_group(proc.pid, signal.SIGKILL)
        await proc.wait()
        # A descendant holding the pipes outlives the server by a moment: let the readers
        # reach the end, then close the process transport, which Python 3.11 leaves open
        # when the pipes close after the exit (an event loop ending then prints a traceback).
        with anyio.move_on_after(STDERR_WAIT):
            await self._stdout_closed.wait()
            await self._stderr_closed.wait()
        transport = getattr(proc, "_transport", None)
        if transport is not None:
            transport.close()

    @staticmethod
    def _signal_group(pgid: int, sig: int) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pgid, sig)
