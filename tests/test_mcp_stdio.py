"""``lsp_bridge.mcp.stdio``: the MCP server's stdio served by the event loop.

A real server process (``event_loop_mcp_server.py`` on ``serve_stdio``, and
``rootguard mcp`` itself) is driven over real pipes by hand-written JSON-RPC lines, so
the tests see the bytes a client sees: stray output kept off the wire, a garbage or
non-UTF-8 line, a 20 MB line, replies the client does not read at once, and a stdout
that is a file rather than a pipe.
"""

from __future__ import annotations

import json
import os
import selectors
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

SERVER = [sys.executable, str(Path(__file__).with_name("event_loop_mcp_server.py"))]
ENV = dict(os.environ, PYTHONPATH=os.pathsep.join([str(Path(__file__).resolve().parents[1]),
                                                   os.environ.get("PYTHONPATH", "")]))
INITIALIZE = {"jsonrpc": "2.0", "id": 0, "method": "initialize",
              "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                         "clientInfo": {"name": "test", "version": "1"}}}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}


def call(id_: int, name: str, **arguments) -> dict:
    return {"jsonrpc": "2.0", "id": id_, "method": "tools/call", "params": {"name": name, "arguments": arguments}}


def line(message: dict) -> bytes:
    return json.dumps(message).encode() + b"\n"


class Wire:
    """One server process and the client's ends of its pipes."""

    def __init__(self, argv: list[str] = SERVER, cwd: str | None = None, env: dict[str, str] = ENV) -> None:
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     env=env, cwd=cwd)
        self.buffer = b""

    def send(self, data: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def line(self, timeout: float = 20.0) -> bytes:
        """The next line on stdout (without its newline)."""
        assert self.proc.stdout is not None
        deadline = time.monotonic() + timeout
        with selectors.DefaultSelector() as sel:
            sel.register(self.proc.stdout, selectors.EVENT_READ)
            while b"\n" not in self.buffer:
                left = deadline - time.monotonic()
                if left <= 0 or not sel.select(left):
                    raise AssertionError(f"no line from the server within {timeout} s; have {self.buffer[:200]!r}")
                chunk = os.read(self.proc.stdout.fileno(), 1 << 20)
                if not chunk:
                    raise AssertionError(f"the server closed stdout; have {self.buffer[:200]!r}")
                self.buffer += chunk
        found, self.buffer = self.buffer.split(b"\n", 1)
        return found

    def message(self, timeout: float = 20.0) -> dict:
        return json.loads(self.line(timeout))

    def answer(self, id_: int) -> dict:
        """The response to request ``id_`` (a notification or an id-less error before it is skipped)."""
        while True:
            message = self.message()
            if message.get("id") == id_:
                return message

    def handshake(self) -> None:
        self.send(line(INITIALIZE))
        assert "result" in self.answer(0)
        self.send(line(INITIALIZED))

    def close(self) -> tuple[bytes, bytes]:
        """Close stdin; (the rest of stdout, stderr) once the server has exited."""
        assert self.proc.stdin is not None and self.proc.stdout is not None and self.proc.stderr is not None
        self.proc.stdin.close()
        self.proc.wait(timeout=20)
        out, err = self.proc.stdout.read(), self.proc.stderr.read()
        return self.buffer + out, err


def rootguard_mcp(tmp_path: Path) -> Wire:
    """``rootguard mcp --root tmp_path/repo``, its audit log and tray socket under ``tmp_path``, after the handshake."""
    env = dict(ENV, XDG_STATE_HOME=str(tmp_path / "state"), ROOTGUARD_TRAY_SOCKET=str(tmp_path / "no.sock"))
    wire = Wire([sys.executable, "-m", "lsp_bridge.cli", "mcp", "--root", str(tmp_path / "repo")],
                cwd=str(tmp_path), env=env)
    wire.handshake()
    return wire


def text_of(response: dict) -> str:
    return response["result"]["content"][0]["text"]


def test_a_handlers_stray_output_and_a_childs_go_to_stderr_not_onto_the_wire():
    wire = Wire()
    wire.handshake()
    wire.send(line(call(1, "stray")))
    assert text_of(wire.answer(1)) == "ok"  # every line before it parsed as JSON-RPC (answer() loads each)
    wire.send(line(call(2, "echo", text="still here")))
    assert text_of(wire.answer(2)) == "10:still here"
    out, err = wire.close()
    assert b"stray" not in out
    assert b"stray print" in err and b"stray write" in err and b"stray child" in err
    assert b"read:\n" in err  # the child read stdin: the null device, not the client's requests
    assert out.strip() == b"after serve"  # fd 1 is the wire again once the session is over
    assert wire.proc.returncode == 0


def test_a_garbage_line_and_invalid_utf8_do_not_end_the_session():
    wire = Wire()
    wire.handshake()
    wire.send(b"{not json\n")
    wire.send(b'{"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {"name": "echo", '
              b'"arguments": {"text": "caf\xe9 \xff"}}}\n')  # Latin-1 bytes: replaced, as the SDK reads
    wire.send(b"\n")
    wire.send(line(call(6, "echo", text="after the garbage")))
    assert text_of(wire.answer(5)) == "6:caf\ufffd \ufffd"
    assert text_of(wire.answer(6)) == "17:after the garbage"
    wire.close()
    assert wire.proc.returncode == 0


def test_a_20_mb_line_is_read_whole():
    wire = Wire()
    wire.handshake()
    big = "ab" * (10 * 1024 * 1024)
    wire.send(line(call(1, "echo", text=big)))
    assert text_of(wire.answer(1)) == f"{len(big)}:{big[:40]}"
    wire.close()


def test_replies_the_client_does_not_read_at_once_wait_for_it_and_arrive_whole():
    wire = Wire()
    wire.handshake()
    count, size = 24, 300_000  # ~7 MB of replies: far more than a pipe holds
    wire.send(b"".join(line(call(i, "sized", n=size + i)) for i in range(1, count + 1)))
    time.sleep(1.0)  # the server fills the pipe and must wait, not drop or interleave
    answers = {}
    while len(answers) < count:
        message = wire.message()
        if "id" in message:
            answers[message["id"]] = len(text_of(message))
    assert answers == {i: size + i for i in range(1, count + 1)}
    wire.close()


def test_the_session_ends_cleanly_when_the_client_closes_stdin():
    wire = Wire()
    wire.handshake()
    wire.send(line(call(1, "echo", text="one")))
    assert text_of(wire.answer(1)) == "3:one"
    started = time.monotonic()
    out, _ = wire.close()
    assert wire.proc.returncode == 0 and time.monotonic() - started < 10
    assert out.strip() == b"after serve"


def test_a_stdout_that_is_a_file_is_served_the_sdks_way(tmp_path):
    """Not a pipe (here a regular file): the SDK's own streams serve it, as before."""
    replies = tmp_path / "replies.jsonl"
    with replies.open("wb") as stdout:
        proc = subprocess.Popen(SERVER, stdin=subprocess.PIPE, stdout=stdout, stderr=subprocess.PIPE, env=ENV)
        assert proc.stdin is not None
        proc.stdin.write(line(INITIALIZE) + line(INITIALIZED) + line(call(1, "echo", text="into a file")))
        proc.stdin.flush()
        deadline = time.monotonic() + 20
        while b'"id":1' not in replies.read_bytes() and time.monotonic() < deadline:
            time.sleep(0.05)
        proc.stdin.close()
        assert proc.wait(timeout=20) == 0
    lines = replies.read_bytes().splitlines()
    messages = [json.loads(raw) for raw in lines[:-1]]
    assert any(m.get("id") == 1 and text_of(m) == "11:into a file" for m in messages)
    assert lines[-1] == b"after serve"


def test_rootguard_mcp_keeps_its_wire_clean_for_a_whole_session(tmp_path):
    """The real server: every byte on stdout is a JSON-RPC message, the session's reads served."""
    (tmp_path / "repo" / "src").mkdir(parents=True)
    (tmp_path / "repo" / "src" / "a.txt").write_text("alpha\n")
    wire = rootguard_mcp(tmp_path)
    wire.send(line(call(1, "read_file", project_id="repo", relative_path="src/a.txt")))
    assert text_of(wire.answer(1)) == "alpha\n"
    wire.send(line(call(2, "list_directory", project_id="repo", relative_path="src")))
    listing = wire.answer(2)
    assert text_of(listing) == "[FILE] a.txt"
    assert listing["result"]["structuredContent"]["counts"] == {"directories": 0, "files": 1, "links": 0, "other": 0}
    out, err = wire.close()
    for raw in out.splitlines():
        json.loads(raw)
    assert wire.proc.returncode == 0, err.decode()


def test_rootguard_mcp_stops_cleanly_when_the_client_closes_its_end_mid_reply(tmp_path):
    """A client that stops reading and closes its end: one line saying so, exit 0, no traceback."""
    (tmp_path / "repo").mkdir()
    (tmp_path / "repo" / "big.txt").write_text("x" * 200_000)  # more than a pipe holds
    wire = rootguard_mcp(tmp_path)
    assert wire.proc.stdout is not None and wire.proc.stdin is not None and wire.proc.stderr is not None
    wire.proc.stdout.close()
    wire.send(b"".join(line(call(i, "read_file", project_id="repo", relative_path="big.txt")) for i in (1, 2)))
    assert wire.proc.wait(timeout=20) == 0
    err = wire.proc.stderr.read().decode()
    assert "the MCP client closed its end of the connection; stopping" in err
    assert "Traceback" not in err and "internal error" not in err
    wire.proc.stdin.close()


@pytest.mark.parametrize("shared", [False, True], ids=["a socket each (as Node spawns)", "one socket both ways"])
def test_sockets_for_stdin_and_stdout_are_served(shared):
    """Node (VS Code) gives a server a socket pair per stream; inetd-style callers give one socket for
    both, where requests arriving must not be taken for the peer closing its reading end (asyncio's
    write-pipe transport reads a readable descriptor that way): that case keeps the SDK's streams."""
    ours_in, theirs_in = socket.socketpair()
    ours_out, theirs_out = (ours_in, theirs_in) if shared else socket.socketpair()
    proc = subprocess.Popen(SERVER, stdin=theirs_in.fileno(), stdout=theirs_out.fileno(), stderr=subprocess.PIPE,
                            env=ENV)
    for end in {theirs_in, theirs_out}:
        end.close()
    with ours_in, ours_out, ours_out.makefile("rb") as reader:
        ours_in.sendall(line(INITIALIZE))
        assert "result" in json.loads(reader.readline())
        ours_in.sendall(line(INITIALIZED) + line(call(1, "echo", text="over sockets")))
        answer = json.loads(reader.readline())
        assert answer["id"] == 1 and text_of(answer) == "12:over sockets"
        ours_in.shutdown(socket.SHUT_WR)
        assert proc.wait(timeout=20) == 0
        assert reader.read().strip() == b"after serve"


def test_pipelined_first_requests_each_get_exactly_one_reply(tmp_path):
    """A 2026-07-28 client's first requests, sent at once before the server is up: one reply each, in any order."""
    meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientInfo": {"name": "client", "version": "1.0"},
            "io.modelcontextprotocol/clientCapabilities": {}}

    def request(id_: int, method: str, **params) -> dict:
        return {"jsonrpc": "2.0", "id": id_, "method": method, "params": {**params, "_meta": meta}}

    (tmp_path / "repo" / "src").mkdir(parents=True)
    (tmp_path / "repo" / "src" / "a.txt").write_text("alpha\n")
    env = dict(ENV, XDG_STATE_HOME=str(tmp_path / "state"), ROOTGUARD_TRAY_SOCKET=str(tmp_path / "no.sock"))
    wire = Wire([sys.executable, "-m", "lsp_bridge.cli", "mcp", "--root", str(tmp_path / "repo")],
                cwd=str(tmp_path), env=env)
    wire.send(line(request(1, "server/discover")) + line(request(2, "tools/list"))
              + line(request(3, "tools/call", name="read_file",
                             arguments={"project_id": "repo", "relative_path": "src/a.txt"}))
              + line(request(4, "server/discover")))
    replies = {r["id"]: r for r in (wire.message() for _ in range(4))}
    assert sorted(replies) == [1, 2, 3, 4]
    assert "repo" in json.dumps(replies[2]["result"]["tools"])
    assert text_of(replies[3]) == "alpha\n"
    wire.send(line(request(5, "ping")))
    assert wire.message()["id"] == 5  # no second reply to any of the first four came before it
    out, err = wire.close()
    assert out == b"", out
    assert wire.proc.returncode == 0, err.decode()
