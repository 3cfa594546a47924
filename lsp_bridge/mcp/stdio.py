"""The MCP server's stdio on the event loop: the SDK's ``stdio_server`` without a thread per line.

The SDK's ``stdio_server()`` wraps stdin and stdout with ``anyio.wrap_file``: every
line read, every write and every flush is a trip to a worker thread and back, three
per tool call, and on a loaded machine each trip waits for the thread to be
scheduled. ``stdio_server`` also takes the two streams from its caller, so when both
ends are pipes or sockets (how an MCP client starts a server) ``serve_stdio`` hands
it streams the event loop serves itself: ``loop.connect_read_pipe`` for the lines in,
``loop.connect_write_pipe`` for the lines out, with the pipe's back-pressure on
``flush``. The messages, their validation and their framing stay the SDK's.

Anything else (a terminal, a regular file, one socket both ways, a platform without
Unix pipe transports) keeps the SDK's own streams.

While serving, as the SDK does with its own streams, fd 0 reads the null device and
fd 1 writes to stderr, so a stray ``print`` or a child process cannot write into the
protocol or steal its input; both are restored on exit. A line has no length limit,
as with the SDK's streams; reading pauses while ``MAX_QUEUED`` whole lines wait.
"""

from __future__ import annotations

import asyncio
import logging
import os
import stat
import sys
from collections import deque
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from mcp.server.stdio import stdio_server

MAX_QUEUED = 64  # whole lines read ahead of the server before reading pauses
log = logging.getLogger("rootguard.mcp")


@asynccontextmanager
async def serve_stdio() -> AsyncIterator[Any]:
    """``(read_stream, write_stream)`` for ``Server.run``, as ``mcp.server.stdio.stdio_server()``."""
    if not served_as_pipes(0, 1):
        async with stdio_server() as streams:
            yield streams
        return
    wire_in, wire_out = _claim_std_fds()
    loop = asyncio.get_running_loop()
    lines = _Lines(loop)
    replies = _Replies(loop)
    read_transport = write_transport = None
    try:
        # The transports own further copies: wire_in and wire_out stay this function's until fds 0
        # and 1 are given back, so a number a transport closed early is never restored onto them.
        read_transport, _ = await loop.connect_read_pipe(lambda: lines, os.fdopen(os.dup(wire_in), "rb", 0))
        write_transport, _ = await loop.connect_write_pipe(lambda: replies, os.fdopen(os.dup(wire_out), "wb", 0))
        write_transport.set_write_buffer_limits(high=0)  # flush returns once the kernel has every byte
        async with stdio_server(lines, replies) as streams:  # type: ignore[arg-type]
            yield streams
    finally:
        _restore_std_fds(wire_in, wire_out)
        for transport in (read_transport, write_transport):
            if transport is not None:
                transport.close()


def served_as_pipes(stdin: int = 0, stdout: int = 1) -> bool:
    """The wire is two pipes (or sockets), not one socket both ways, on a platform with Unix pipe
    transports: where ``serve_stdio`` serves from the event loop."""
    return sys.platform != "win32" and separate_pipes(stdin, stdout)


def separate_pipes(stdin: int, stdout: int) -> bool:
    """Both are pipes or sockets, and not one socket both ways (inetd style): asyncio's
    write-pipe transport takes its descriptor turning readable for the peer closing, so the
    first request arriving on a shared socket would close the replies' way out."""
    try:
        source, sink = os.fstat(stdin), os.fstat(stdout)
    except OSError:
        return False
    pipes = all(stat.S_ISFIFO(info.st_mode) or stat.S_ISSOCK(info.st_mode) for info in (source, sink))
    return pipes and (source.st_dev, source.st_ino) != (sink.st_dev, sink.st_ino)


def _claim_std_fds() -> tuple[int, int]:
    """Private copies of fds 0 and 1 for the wire; fd 0 then reads /dev/null and fd 1 writes to stderr."""
    import fcntl

    sys.stdout.flush()
    wire_in = fcntl.fcntl(0, fcntl.F_DUPFD_CLOEXEC, 3)
    wire_out = fcntl.fcntl(1, fcntl.F_DUPFD_CLOEXEC, 3)
    null = os.open(os.devnull, os.O_RDONLY)
    try:
        os.dup2(null, 0)
    finally:
        os.close(null)
    try:
        os.dup2(2, 1)
    except OSError:  # no stderr: stray output goes nowhere rather than onto the wire
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, 1)
        os.close(null)
    return wire_in, wire_out


def _restore_std_fds(wire_in: int, wire_out: int) -> None:
    """fds 0 and 1 back on the wire, blocking again as the process found them; the copies closed."""
    sys.stdout.flush()
    for wire, fd in ((wire_in, 0), (wire_out, 1)):
        try:
            os.set_blocking(wire, True)  # the transports made the pipe non-blocking
            os.dup2(wire, fd)
        finally:
            os.close(wire)


class _Lines(asyncio.Protocol):
    """The lines of a read pipe, in order, as ``str`` (invalid UTF-8 replaced, as the SDK reads)."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._partial = bytearray()
        self._lines: deque[bytes] = deque()
        self._waiter: asyncio.Future[None] | None = None
        self._transport: asyncio.ReadTransport | None = None
        self._paused = False
        self._ended = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.ReadTransport)
        self._transport = transport

    def data_received(self, data: bytes) -> None:
        self._partial += data
        if b"\n" not in data:
            return
        end = self._partial.rfind(b"\n")
        self._lines.extend(bytes(self._partial[:end]).split(b"\n"))
        del self._partial[: end + 1]
        if len(self._lines) >= MAX_QUEUED and self._transport is not None and not self._paused:
            self._paused = True
            self._transport.pause_reading()
        self._wake()

    def eof_received(self) -> bool:
        self._end()
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        self._end()

    def _end(self) -> None:
        if not self._ended:
            self._ended = True
            if self._partial:  # a last line without its newline is still a line
                self._lines.append(bytes(self._partial))
                self._partial.clear()
        self._wake()

    def _wake(self) -> None:
        waiter, self._waiter = self._waiter, None
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def __aiter__(self) -> _Lines:
        return self

    async def __anext__(self) -> str:
        while not self._lines:
            if self._ended:
                raise StopAsyncIteration
            self._waiter = self._loop.create_future()
            await self._waiter
        line = self._lines.popleft()
        if self._paused and len(self._lines) < MAX_QUEUED // 2 and self._transport is not None:
            self._paused = False
            self._transport.resume_reading()
        return line.decode("utf-8", "replace")


class _Replies(asyncio.Protocol):
    """What ``stdio_server`` asks of its stdout (``write`` a line, ``flush`` it) on a write pipe:
    ``flush`` waits until the transport has handed every byte to the kernel (its high mark is
    0), as the SDK's blocking ``flush`` does."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._transport: asyncio.WriteTransport | None = None
        self._resumed: asyncio.Future[None] | None = None
        self._lost: BaseException | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.WriteTransport)
        self._transport = transport

    def pause_writing(self) -> None:
        if self._resumed is None:
            self._resumed = self._loop.create_future()

    def resume_writing(self) -> None:
        self._release()

    def connection_lost(self, exc: Exception | None) -> None:
        self._lost = exc or BrokenPipeError("the MCP client closed its end of stdout")
        self._release()

    def _release(self) -> None:
        resumed, self._resumed = self._resumed, None
        if resumed is not None and not resumed.done():
            resumed.set_result(None)

    async def write(self, text: str) -> None:
        if self._lost is not None:
            raise self._lost
        assert self._transport is not None  # connected before stdio_server is given it
        self._transport.write(text.encode("utf-8"))

    async def flush(self) -> None:
        if self._resumed is not None:
            await self._resumed
        if self._lost is not None:
            raise self._lost
