"""The language server's stdio entry point: answer ``initialize`` before pygls loads.

Importing pygls and lsprotocol takes most of a second on a slow machine (the
``lsprotocol.types`` module builds hundreds of attrs classes), while the
``initialize`` result only needs our static capabilities. So this module, which
imports nothing heavy, reads the first message; when it is ``initialize`` it
answers at once, then starts the real server and replays the same request to it
under a private id whose (identical) answer is dropped. The client's next
messages wait in the pipe meanwhile. ``ROOTGUARD_LSP_EARLY_INIT=0`` turns this
off; a test checks that both paths announce the same capabilities.
"""

from __future__ import annotations

import io
import json
import os
import sys
import uuid

from lsp_bridge import __version__

COMMANDS = ["rootguard.migrateConfig"]
_ENCODINGS = ("utf-8", "utf-16", "utf-32")


def capabilities(params: dict) -> dict:
    """What the server (see ``server.py``) announces, computed without pygls."""
    general = (params.get("capabilities") or {}).get("general") or {}
    encoding = next((e for e in general.get("positionEncodings") or () if e in _ENCODINGS), "utf-16")
    return {
        "positionEncoding": encoding,
        "textDocumentSync": {"openClose": True, "change": 1, "save": True},
        "codeActionProvider": {"codeActionKinds": ["quickfix"]},
        "executeCommandProvider": {"commands": COMMANDS},
        "workspace": {"workspaceFolders": {"supported": True, "changeNotifications": True}, "fileOperations": {}},
    }


def read_message(stream) -> bytes:
    """One raw LSP message (headers and body) from ``stream``; b"" at end of input."""
    raw = bytearray()
    length = None
    while True:
        line = stream.readline()
        if not line:
            return bytes(raw)
        raw += line
        if line in (b"\r\n", b"\n"):
            break
        name, _, value = line.decode("ascii", "replace").partition(":")
        if name.strip().lower() == "content-length" and value.strip().isdigit():
            length = int(value.strip())
    if length is not None:
        raw += stream.read(length)
    return bytes(raw)


def frame(message: dict) -> bytes:
    body = json.dumps(message).encode("utf-8")
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def early_initialize(stdin, stdout, replay_id: str) -> bytes:
    """Answer a leading ``initialize``; return the bytes to hand to the real server."""
    raw = read_message(stdin)
    try:
        message = json.loads(raw.split(b"\r\n\r\n", 1)[1])
    except (IndexError, ValueError):
        return raw  # not what we expected: let the real server deal with it
    if not isinstance(message, dict) or message.get("method") != "initialize" or "id" not in message:
        return raw
    params = message.get("params")
    if not isinstance(params, dict):
        params = {}
    result = {"capabilities": capabilities(params), "serverInfo": {"name": "rootguard", "version": __version__}}
    stdout.write(frame({"jsonrpc": "2.0", "id": message["id"], "result": result}))
    stdout.flush()
    message["id"] = replay_id
    return frame(message)


class ReplayStdin:
    """Serves ``first`` and then the real stdin, with the two calls pygls makes."""

    def __init__(self, first: bytes, rest):
        self._first = io.BytesIO(first)
        self._rest = rest

    def readline(self) -> bytes:
        return self._first.readline() or self._rest.readline()

    def read(self, n: int = -1) -> bytes:
        data = self._first.read(n)
        if n is None or n < 0:
            return data + self._rest.read()
        return data + (self._rest.read(n - len(data)) if len(data) < n else b"")

    def close(self) -> None:
        self._rest.close()


class DropReplayAnswer:
    """Passes everything to stdout except the one answer to the replayed request."""

    def __init__(self, stdout, replay_id: str):
        self._stdout = stdout
        self._marker = replay_id.encode("ascii")
        self._dropped = False

    def write(self, data: bytes) -> None:
        if not self._dropped and self._marker in data:
            self._dropped = True
            return
        self._stdout.write(data)

    def flush(self) -> None:
        self._stdout.flush()

    def close(self) -> None:
        self._stdout.close()


def main(argv: list[str] | None = None) -> int:
    import argparse
    import logging

    parser = argparse.ArgumentParser(prog="rootguard lsp", description="Root Guard language server (stdio)")
    parser.add_argument("--stdio", action="store_true", help="talk LSP on stdin/stdout (the default and only transport)")
    parser.add_argument("--log-level", default=os.environ.get("ROOTGUARD_LOG", "WARNING"),
                        choices=["DEBUG", "INFO", "WARNING", "ERROR", "debug", "info", "warning", "error"],
                        metavar="LEVEL", help="log to stderr from LEVEL up: debug, info, warning (default, "
                        "or $ROOTGUARD_LOG), error")
    args = parser.parse_args(argv)
    logging.basicConfig(stream=sys.stderr, level=args.log_level.upper(), format="rootguard: %(levelname)s %(message)s")
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    if os.environ.get("ROOTGUARD_LSP_EARLY_INIT", "1") != "0":
        replay_id = f"rootguard-early-initialize-{uuid.uuid4().hex}"
        stdin = ReplayStdin(early_initialize(stdin, stdout, replay_id), stdin)
        stdout = DropReplayAnswer(stdout, replay_id)
    from lsp_bridge.lsp.server import server

    server.start_io(stdin, stdout)
    return 0
