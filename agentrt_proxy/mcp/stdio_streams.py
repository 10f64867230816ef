"""The process's own stdin/stdout as anyio byte streams (for the host-facing session).

When fd 0 / fd 1 is a pipe or a socket, the event loop reads and writes it directly
(asyncio's pipe transports on a duplicate of the fd): no thread per read or write. A
thread used to cost ~1 ms per message on 2 cores (a new reader thread per read, whose
``start`` waits for the thread to run, and a worker-thread hop per write).

Anything else (a regular file, a tty, ``/dev/null``: asyncio's pipe transports refuse
them or epoll cannot watch them) falls back to threads on duplicates of the fds, which
work for every kind of file. Threads are also used when fd 0 and fd 1 are one socket
(the write transport's end-of-pipe watch would read it), and for writing when fd 1 shares
its file with fd 2 (the transport makes the file non-blocking, which stderr would then see).

Either way a read returns whatever the host has written so far, a read cut short by
cancellation loses nothing (the next ``receive`` returns it), ``aclose`` ends a pending
read as the end of the stream, and no thread keeps the process from exiting.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import stat
import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio
import anyio.abc

__all__ = ["FdReceiveStream", "FdSendStream", "PipeReceiveStream", "PipeSendStream", "open_stdio"]

PAUSE_READING_AT = 1 << 20  # bytes buffered unread before the loop stops reading the host


def _kind(fd: int) -> tuple[int, int, int] | None:
    """(mode, st_dev, st_ino) of an fd, or None if it cannot be stat'ed."""
    try:
        st = os.fstat(fd)
    except OSError:
        return None
    return stat.S_IFMT(st.st_mode), st.st_dev, st.st_ino


def _pollable(kind: tuple[int, int, int] | None) -> bool:
    return kind is not None and kind[0] in (stat.S_IFIFO, stat.S_IFSOCK)


class FdReceiveStream(anyio.abc.ByteReceiveStream):
    """Reads on a daemon thread of its own, so a read still blocked on a host that keeps
    stdin open never keeps the process from exiting (an anyio worker thread would: the
    interpreter joins it at exit). A read cut short by cancellation is kept for the next
    ``receive``; ``aclose`` ends a pending one as the end of the stream."""

    def __init__(self, fd: int) -> None:
        self._fd = fd
        self._closed = False
        self._pending: asyncio.Future[bytes] | None = None

    def _start_read(self, max_bytes: int) -> asyncio.Future[bytes]:
        loop = asyncio.get_running_loop()
        future: asyncio.Future[bytes] = loop.create_future()

        def deliver(data: bytes, error: OSError | None) -> None:
            if future.done():
                return
            if error is not None:
                future.set_exception(error)
            else:
                future.set_result(data)

        def read() -> None:
            try:
                data, error = os.read(self._fd, max_bytes), None
            except OSError as exc:
                data, error = b"", exc
            with contextlib.suppress(RuntimeError):  # the loop is gone: the process is exiting
                loop.call_soon_threadsafe(deliver, data, error)

        threading.Thread(target=read, name="stdin reader", daemon=True).start()
        return future

    async def receive(self, max_bytes: int = 65536) -> bytes:
        if self._closed:
            raise anyio.ClosedResourceError
        if self._pending is None:
            self._pending = self._start_read(max_bytes)
        data = await asyncio.shield(self._pending)
        self._pending = None
        if not data:
            raise anyio.EndOfStream
        return data

    async def aclose(self) -> None:
        if not self._closed:
            self._closed = True
            if self._pending is not None and not self._pending.done():
                self._pending.set_result(b"")
            os.close(self._fd)


class FdSendStream(anyio.abc.ByteSendStream):
    def __init__(self, fd: int) -> None:
        self._fd = fd
        self._closed = False

    def _write_all(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            view = view[os.write(self._fd, view) :]

    async def send(self, item: bytes) -> None:
        if self._closed:
            raise anyio.ClosedResourceError
        try:
            await anyio.to_thread.run_sync(self._write_all, item)
        except BrokenPipeError as exc:
            raise anyio.BrokenResourceError from exc

    async def aclose(self) -> None:
        if not self._closed:
            self._closed = True
            os.close(self._fd)


# ----------------------------------------------------------------- on the event loop


class _ReadProtocol(asyncio.Protocol):
    def __init__(self) -> None:
        self.buffer = bytearray()
        self.eof = False
        self.error: BaseException | None = None
        self.waiter: asyncio.Future[None] | None = None
        self.transport: asyncio.ReadTransport | None = None
        self.paused = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.ReadTransport)
        self.transport = transport

    def _wake(self) -> None:
        waiter, self.waiter = self.waiter, None
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        if len(self.buffer) >= PAUSE_READING_AT and not self.paused and self.transport is not None:
            self.paused = True
            self.transport.pause_reading()
        self._wake()

    def eof_received(self) -> bool | None:
        self.eof = True
        self._wake()
        return None

    def connection_lost(self, exc: Exception | None) -> None:
        self.eof = True
        if exc is not None and self.error is None:
            self.error = exc
        self._wake()


class PipeReceiveStream(anyio.abc.ByteReceiveStream):
    """Reads a pipe or socket on the event loop (asyncio's read-pipe transport)."""

    def __init__(self, fd: int) -> None:
        self._fd = fd
        self._file = os.fdopen(fd, "rb", buffering=0, closefd=True)
        self._protocol = _ReadProtocol()
        self._transport: asyncio.ReadTransport | None = None
        self._closed = False

    async def _open(self) -> None:
        loop = asyncio.get_running_loop()
        self._transport, _ = await loop.connect_read_pipe(lambda: self._protocol, self._file)

    async def receive(self, max_bytes: int = 65536) -> bytes:
        if self._closed:
            raise anyio.ClosedResourceError
        p = self._protocol
        while not p.buffer:
            if p.eof or self._closed:
                if p.error is not None and not isinstance(p.error, (BrokenPipeError, ConnectionResetError)):
                    raise anyio.BrokenResourceError from p.error
                raise anyio.EndOfStream
            if p.waiter is None or p.waiter.done():
                p.waiter = asyncio.get_running_loop().create_future()
            await asyncio.shield(p.waiter)
        if len(p.buffer) <= max_bytes:
            data = bytes(p.buffer)
            p.buffer.clear()
        else:
            data = bytes(p.buffer[:max_bytes])
            del p.buffer[:max_bytes]
        if p.paused and len(p.buffer) < PAUSE_READING_AT and self._transport is not None and not p.eof:
            p.paused = False
            self._transport.resume_reading()
        return data

    async def aclose(self) -> None:
        if not self._closed:
            self._closed = True
            self._protocol._wake()  # a pending read ends as the end of the stream
            if self._transport is not None:
                self._transport.close()
            else:
                self._file.close()


class _WriteProtocol(asyncio.BaseProtocol):
    def __init__(self) -> None:
        self.can_write = asyncio.Event()
        self.can_write.set()
        self.lost = False

    def pause_writing(self) -> None:
        self.can_write.clear()

    def resume_writing(self) -> None:
        self.can_write.set()

    def connection_lost(self, exc: Exception | None) -> None:
        self.lost = True
        self.can_write.set()


class PipeSendStream(anyio.abc.ByteSendStream):
    """Writes a pipe or socket from the event loop (asyncio's write-pipe transport): the
    data goes out at once when the pipe has room, and ``send`` waits while the host is
    behind (the transport's high-water mark)."""

    def __init__(self, fd: int) -> None:
        self._fd = fd
        self._file = os.fdopen(fd, "wb", buffering=0, closefd=True)
        self._protocol = _WriteProtocol()
        self._transport: asyncio.WriteTransport | None = None
        self._closed = False

    async def _open(self) -> None:
        loop = asyncio.get_running_loop()
        self._transport, _ = await loop.connect_write_pipe(lambda: self._protocol, self._file)

    async def send(self, item: bytes) -> None:
        if self._closed:
            raise anyio.ClosedResourceError
        transport = self._transport
        if transport is None or self._protocol.lost or transport.is_closing():
            raise anyio.BrokenResourceError
        transport.write(item)
        if transport.is_closing():  # the write failed: the host is gone
            raise anyio.BrokenResourceError
        if not self._protocol.can_write.is_set():
            await self._protocol.can_write.wait()
            if self._protocol.lost:
                raise anyio.BrokenResourceError

    async def aclose(self) -> None:
        if self._closed:
            return
        self._closed = True
        transport = self._transport
        if transport is None:
            self._file.close()
            return
        if not self._protocol.lost and not transport.is_closing() and transport.get_write_buffer_size():
            # Let what was written reach the host (as the blocking writes did), unless it is gone.
            with anyio.move_on_after(5):
                while transport.get_write_buffer_size() and not self._protocol.lost:
                    await asyncio.sleep(0.01)
        if transport.get_write_buffer_size():
            transport.abort()  # the host reads no more: what is left is dropped, never blocks
        else:
            transport.close()


# ----------------------------------------------------------------------------- open


@asynccontextmanager
async def open_stdio(
    in_fd: int = 0, out_fd: int = 1, err_fd: int = 2
) -> AsyncIterator[tuple[anyio.abc.ByteReceiveStream, anyio.abc.ByteSendStream]]:
    in_kind, out_kind, err_kind = _kind(in_fd), _kind(out_fd), _kind(err_fd)
    same_in_out = in_kind is not None and out_kind is not None and in_kind[1:] == out_kind[1:]
    same_out_err = out_kind is not None and err_kind is not None and out_kind[1:] == err_kind[1:]
    receive: anyio.abc.ByteReceiveStream = FdReceiveStream(os.dup(in_fd))
    send: anyio.abc.ByteSendStream = FdSendStream(os.dup(out_fd))
    if _pollable(in_kind) and not same_in_out:
        pipe_in = PipeReceiveStream(os.dup(in_fd))
        try:
            await pipe_in._open()
        except (OSError, ValueError):
            await pipe_in.aclose()
        else:
            await receive.aclose()
            receive = pipe_in
    if _pollable(out_kind) and not same_in_out and not same_out_err:
        pipe_out = PipeSendStream(os.dup(out_fd))
        try:
            await pipe_out._open()
        except (OSError, ValueError):
            await pipe_out.aclose()
        else:
            await send.aclose()
            send = pipe_out
    try:
        yield receive, send
    finally:
        await send.aclose()
        await receive.aclose()
        # The transports made the files non-blocking, and fds 0 and 1 share them: leave them as found.
        for fd, stream in ((in_fd, receive), (out_fd, send)):
            if isinstance(stream, (PipeReceiveStream, PipeSendStream)):
                with contextlib.suppress(OSError):
                    os.set_blocking(fd, True)
