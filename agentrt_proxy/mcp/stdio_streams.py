"""The process's own stdin/stdout as anyio byte streams (for the host-facing session).

Reads and writes go through worker threads on duplicates of fds 0 and 1, so they
work for pipes, files and ttys alike (asyncio's pipe transports refuse regular
files) and a read returns whatever the host has written so far.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio
import anyio.abc

__all__ = ["FdReceiveStream", "FdSendStream", "open_stdio"]


class FdReceiveStream(anyio.abc.ByteReceiveStream):
    def __init__(self, fd: int) -> None:
        self._fd = fd
        self._closed = False

    async def receive(self, max_bytes: int = 65536) -> bytes:
        if self._closed:
            raise anyio.ClosedResourceError
        data = await anyio.to_thread.run_sync(os.read, self._fd, max_bytes, abandon_on_cancel=True)
        if not data:
            raise anyio.EndOfStream
        return data

    async def aclose(self) -> None:
        if not self._closed:
            self._closed = True
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
