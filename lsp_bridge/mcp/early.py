"""Early answers: ``server/discover`` and ``tools/list`` served while the MCP SDK is still loading.

Importing the official SDK takes about a second (its pydantic models for two protocol
versions, and the HTTP transports ``mcp/__init__`` pulls in). A client that connects
asks ``server/discover`` and ``tools/list`` first, and both answers are fixed once the
roots are known. So ``rootguard mcp`` loads the SDK in a thread and, meanwhile, the
main thread reads the wire and answers those two requests itself, from
``tool_list``: the same definitions the SDK is given.

The SDK stays the authority, and nothing is decided here:

* Only a 2026-07-28 request the SDK would accept is answered: the whole envelope
  checked, nothing unknown in it. Anything else, and everything after it, waits for
  the SDK.
* Every line read is handed to the SDK afterwards, in order, answered or not, so the
  SDK's state (the protocol era its first request sets) is what it would have been.
  Its reply to a request answered here is dropped when it equals the early answer;
  a reply that differs is sent (``stdio._Replies``), and never a reply lost.
* No file is read and no policy is asked: ``tools/call`` always waits for the SDK.

The loop is plain ``poll`` on the two descriptors and a wake-up pipe the loading
thread writes to when it is done (with or without an error).
"""

from __future__ import annotations

import json
import os
import select
import stat
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from lsp_bridge import __version__ as VERSION
from lsp_bridge.mcp.tool_list import INSTRUCTIONS, SERVER_NAME, tool_definitions

MODERN_VERSIONS = ("2026-07-28",)  # what the SDK serves without a handshake (checked against it by the tests)
VERSION_KEY = "io.modelcontextprotocol/protocolVersion"
CLIENT_INFO_KEY = "io.modelcontextprotocol/clientInfo"
CAPABILITIES_KEY = "io.modelcontextprotocol/clientCapabilities"
SERVER_INFO_KEY = "io.modelcontextprotocol/serverInfo"
# Client capabilities an early answer accepts, each with the keys it may hold (their values must be
# empty objects, or booleans for listChanged): anything else is for the SDK to judge.
MAX_ANSWERS = 16  # a client asks each once; more is left to the SDK (each answer is kept until it replies)
MAX_LINE = 65_536  # a request answered here is well under 1 KB: a longer line is the SDK's to read
KNOWN_CAPABILITIES = {"roots": {"listChanged"}, "sampling": set(), "elicitation": {"form", "url"}}

RequestId = tuple[str, Any]  # ("int", 3) or ("str", "a"): 1 and "1" are different requests


def request_id(value: Any) -> RequestId | None:
    """The key of a JSON-RPC id this module answers (an integer or a string), else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return ("int", value)
    if isinstance(value, str):
        return ("str", value)
    return None


@dataclass
class EarlyRead:
    """What the early loop read and said: every byte read, in order, and the reply sent for each
    request answered, by its id."""

    data: bytes
    answered: dict[RequestId, dict[str, Any]]


class EarlyAnswers:
    """The replies to ``server/discover`` and ``tools/list`` the SDK would give, for one set of projects."""

    def __init__(self, project_ids: Sequence[str]):
        stamp = {SERVER_INFO_KEY: {"name": SERVER_NAME, "version": VERSION}}
        self._results: dict[str, dict[str, Any]] = {
            "server/discover": {
                "cacheScope": "private",
                "capabilities": {"tools": {"listChanged": False}},
                "instructions": INSTRUCTIONS,
                "resultType": "complete",
                "supportedVersions": list(MODERN_VERSIONS),
                "ttlMs": 0,
                "_meta": stamp,
            },
            "tools/list": {
                "cacheScope": "private",
                "resultType": "complete",
                "tools": tool_definitions(project_ids),
                "ttlMs": 0,
                "_meta": stamp,
            },
        }

    def answer(self, line: bytes) -> tuple[RequestId, dict[str, Any]] | None:
        """The reply to one wire line, when it is a request answered here; None: the SDK answers it."""
        try:
            message = json.loads(line)
        except (ValueError, RecursionError):  # not JSON, or nested deeper than Python parses
            return None
        if not isinstance(message, dict) or set(message) != {"jsonrpc", "id", "method", "params"}:
            return None
        key, result = request_id(message["id"]), self._results.get(message["method"])
        if message["jsonrpc"] != "2.0" or key is None or result is None or not _plain_envelope(message["params"]):
            return None
        return key, {"jsonrpc": "2.0", "id": message["id"], "result": result}


def _plain_envelope(params: Any) -> bool:
    """``{"_meta": {version, clientInfo, clientCapabilities}}`` and nothing else, each as the SDK accepts it."""
    if not isinstance(params, dict) or set(params) != {"_meta"}:
        return False
    meta = params["_meta"]
    if not isinstance(meta, dict) or set(meta) != {VERSION_KEY, CLIENT_INFO_KEY, CAPABILITIES_KEY}:
        return False
    info, capabilities = meta[CLIENT_INFO_KEY], meta[CAPABILITIES_KEY]
    return (
        meta[VERSION_KEY] in MODERN_VERSIONS
        and isinstance(info, dict) and set(info) == {"name", "version"}
        and all(isinstance(v, str) for v in info.values())
        and isinstance(capabilities, dict)
        and all(_known_capability(name, value) for name, value in capabilities.items())
    )


def _known_capability(name: str, value: Any) -> bool:
    allowed = KNOWN_CAPABILITIES.get(name)
    if allowed is None or not isinstance(value, dict) or not set(value) <= allowed:
        return False
    return all(v is True or v is False if k == "listChanged" else v == {} for k, v in value.items())


def served_as_pipes(stdin: int = 0, stdout: int = 1) -> bool:
    """The wire is two pipes (or sockets), not one socket both ways, on a platform with Unix pipe
    transports: where ``stdio`` serves from the event loop and early answers are given."""
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


def answer_until_ready(wire_in: int, wire_out: int, ready: int,
                       answer: Callable[[bytes], tuple[RequestId, dict[str, Any]] | None]) -> EarlyRead:
    """Read ``wire_in`` and answer what ``answer`` answers until ``ready`` turns readable.

    Stops at the first line ``answer`` leaves, an id it already answered, a line longer than
    ``MAX_LINE``, after ``MAX_ANSWERS`` answers, or at the end of input: that line and every
    later one are the SDK's, and nothing more is read here (what is read is bounded by what
    was answered and one 64 KiB read). Returns every byte read, in order; the SDK reads the
    rest of the pipe.
    """
    poller = select.poll()
    poller.register(ready, select.POLLIN)
    poller.register(wire_in, select.POLLIN)
    read, pending = bytearray(), bytearray()
    answered: dict[RequestId, dict[str, Any]] = {}
    while True:
        events = dict(poller.poll())
        if ready in events:
            return EarlyRead(bytes(read), answered)
        if wire_in not in events:
            continue
        try:
            data = os.read(wire_in, 65536)
        except BlockingIOError:
            continue
        read += data
        pending += data
        start = 0
        answering = bool(data)  # at the end of input the SDK reads the same end
        while answering:
            end = pending.find(b"\n", start)
            if end < 0:
                answering = len(pending) - start <= MAX_LINE  # no request answered here is that long
                break
            reply = answer(bytes(pending[start:end]))
            start = end + 1
            if reply is None or reply[0] in answered or len(answered) >= MAX_ANSWERS:
                answering = False  # an id asked twice, or more than a client asks first: the SDK's
                break
            key, message = reply
            _write_all(wire_out, (json.dumps(message, separators=(",", ":")) + "\n").encode())
            answered[key] = message
        del pending[:start]
        if not answering:  # the rest stays in the pipe for the SDK: nothing more is read here
            poller.unregister(wire_in)


def _write_all(fd: int, data: bytes) -> None:
    """All of ``data`` to ``fd``, waiting on a non-blocking pipe rather than failing."""
    view = memoryview(data)
    while view:
        try:
            view = view[os.write(fd, view):]
        except BlockingIOError:
            select.select([], [fd], [])
