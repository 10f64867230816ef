"""The process's own stdin/stdout as anyio byte streams (for the host-facing session).

Reads and writes go through threads on duplicates of fds 0 and 1, so they
work for pipes, files and ttys alike (asyncio's pipe transports refuse regular
files) and a read returns whatever the host has written so far.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio
import anyio.abc

__all__ = ["FdReceiveStream", "FdSendStream", "open_stdio"]


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


@asynccontextmanager
async def open_stdio(in_fd: int = 0, out_fd: int = 1) -> AsyncIterator[tuple[FdReceiveStream, FdSendStream]]:
    receive, send = FdReceiveStream(os.dup(in_fd)), FdSendStream(os.dup(out_fd))
    try:
        yield receive, send
    finally:
        await send.aclose()
        await receive.aclose()
