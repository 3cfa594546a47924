"""The language server's stdin reader gives pygls's message loop exactly what pygls's own reader gives it."""

from __future__ import annotations

import asyncio
import io
import json
import threading

import pytest
from pygls.io_ import StdinAsyncReader, run_async

from lsp_bridge.lsp.transport import WholeMessages


def frame(message: dict, *, extra: bytes = b"") -> bytes:
    body = json.dumps(message).encode()
    return b"Content-Length: %d\r\n" % len(body) + extra + b"\r\n" + body


class Recorder:
    """What the loop hands to a protocol (pygls's run_async calls structure_message, handle_message)."""

    def __init__(self) -> None:
        self.messages: list = []

    def structure_message(self, data):
        return data

    def handle_message(self, message) -> None:
        self.messages.append(message)


def handled(reader_type, data: bytes) -> list:
    async def go():
        recorder = Recorder()
        await run_async(threading.Event(), reader_type(io.BytesIO(data)), recorder)
        return recorder.messages

    return asyncio.run(go())


STREAMS = {
    "two messages": frame({"jsonrpc": "2.0", "method": "initialized", "params": {}})
    + frame({"jsonrpc": "2.0", "id": 1, "method": "shutdown"}),
    "a Content-Type header": frame({"jsonrpc": "2.0", "method": "exit"},
                                   extra=b"Content-Type: application/vscode-jsonrpc; charset=utf-8\r\n"),
    "non-ASCII body": frame({"jsonrpc": "2.0", "method": "x", "params": {"path": "/tmp/é 文"}}),
    "ends inside the headers": frame({"jsonrpc": "2.0", "method": "a"}) + b"Content-Length: 10\r\n",
    "ends inside the body": frame({"jsonrpc": "2.0", "method": "a"}) + b"Content-Length: 50\r\n\r\n{\"jsonrpc\"",
    "no Content-Length": b"X-Other: 1\r\n\r\n" + frame({"jsonrpc": "2.0", "method": "b"}),
    "empty": b"",
}


@pytest.mark.parametrize("name", sorted(STREAMS))
def test_the_same_messages_as_pyglss_reader(name):
    data = STREAMS[name]
    assert handled(WholeMessages, data) == handled(StdinAsyncReader, data)


def test_one_thread_hop_per_message():
    data = STREAMS["two messages"]
    hops = []

    class Counting(WholeMessages):
        def _read_message(self):
            hops.append(1)
            return super()._read_message()

    assert len(handled(Counting, data)) == 2
    assert len(hops) == 3  # two messages, then the end of input
