"""The language server's stdin reader: a whole JSON-RPC message per thread hop.

pygls's ``StdinAsyncReader`` hands each header line, the blank line and the body
from its reader thread to the event loop one at a time: three hand-offs per
message, each waiting for the interpreter lock, which a worker thread (a scan,
the start-up imports) may hold for up to ``sys.getswitchinterval()`` at a time.
``WholeMessages`` reads the headers and the body in one go in the thread and
gives them to ``pygls.io_.run_async`` from memory, in the same order and with
the same framing rules (``Content-Length``, then a blank line), so the loop sees
exactly what pygls's reader would give it.
"""

from __future__ import annotations

import asyncio
import re
from collections import deque
from concurrent.futures import Executor
from typing import BinaryIO

_CONTENT_LENGTH = re.compile(rb"^Content-Length: (\d+)\r\n$")  # as pygls.io_.run_async matches it


class WholeMessages:
    """pygls's ``AsyncReader`` (``readline``, ``readexactly``) over ``stdin``, one message per hop."""

    def __init__(self, stdin: BinaryIO, executor: Executor | None = None) -> None:
        self._stdin = stdin
        self._executor = executor
        self._ready: deque[bytes] = deque()

    async def readline(self) -> bytes:
        if not self._ready:
            self._ready.extend(await asyncio.get_running_loop().run_in_executor(self._executor, self._read_message))
        return self._ready.popleft()

    async def readexactly(self, n: int) -> bytes:
        if self._ready:
            return self._ready.popleft()
        return await asyncio.get_running_loop().run_in_executor(self._executor, self._stdin.read, n)

    def _read_message(self) -> list[bytes]:
        """Header lines up to the blank line that ends them, then the body: what run_async asks for next.

        Ends early at end of input (an empty line or body, which stops run_async)."""
        parts: list[bytes] = []
        length = 0
        while True:
            line = self._stdin.readline()
            parts.append(line)
            if not line:
                return parts
            if not length:
                match = _CONTENT_LENGTH.fullmatch(line)
                if match:
                    length = int(match.group(1))
            if length and not line.strip():
                parts.append(self._stdin.read(length))
                return parts
