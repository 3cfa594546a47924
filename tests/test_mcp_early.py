"""``lsp_bridge.mcp.early``: ``server/discover`` and ``tools/list`` answered while the SDK loads.

The early answers must be the SDK's own, byte for byte once parsed: a corpus of
requests (well-formed, half-formed, hostile) goes to the real ``rootguard mcp``
after the SDK has loaded, and every line ``EarlyAnswers`` would answer must get the
same reply from the SDK. The loop is driven over real pipes, and a whole server over
its stdio must give each request exactly one reply.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from pathlib import Path

import pytest

from lsp_bridge.mcp.early import MAX_ANSWERS, MAX_LINE, MODERN_VERSIONS, EarlyAnswers, EarlyRead, answer_until_ready
from tests.test_mcp_stdio import ENV, Wire, call, line, text_of

META = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "client", "version": "1.0"},
        "io.modelcontextprotocol/clientCapabilities": {}}


def request(id_, method: str, meta: dict | None = None, **params) -> dict:
    return {"jsonrpc": "2.0", "id": id_, "method": method, "params": {**params, "_meta": meta or META}}


def with_meta(**changes) -> dict:
    meta = dict(META)
    for key, value in changes.items():
        full = f"io.modelcontextprotocol/{key}"
        if value is None:
            meta.pop(full)
        else:
            meta[full] = value
    return meta


def corpus() -> list[bytes]:
    """Requests a client might send first; ids are unique so each reply can be matched."""
    messages: list[dict | str] = []
    for method in ("server/discover", "tools/list"):
        messages += [
            request(1, method),
            request("a-string-id", method),
            request(2, method, with_meta(clientCapabilities={"roots": {"listChanged": True}, "sampling": {},
                                                             "elicitation": {"form": {}, "url": {}}})),
            request(3, method, with_meta(clientCapabilities={"elicitation": {}})),
            request(4, method, with_meta(clientCapabilities={"roots": {"listChanged": "yes"}})),
            request(5, method, with_meta(clientCapabilities={"experimental": {"x": {}}})),
            request(6, method, with_meta(clientCapabilities=[])),
            request(7, method, with_meta(clientInfo=None)),
            request(8, method, with_meta(clientInfo={"name": "client"})),
            request(9, method, with_meta(clientInfo={"name": 5, "version": "1"})),
            request(10, method, with_meta(clientInfo={"name": "c", "version": "1", "title": "T"})),
            request(11, method, with_meta(protocolVersion="2025-11-25")),
            request(12, method, with_meta(protocolVersion="1999-01-01")),
            request(13, method, with_meta(protocolVersion=None)),
            request(14, method, with_meta(clientCapabilities=None)),
            request(15, method, {**META, "progressToken": 1}),
            request(16, method, cursor="next"),
            request(1.5, method),
            request(True, method),
            request(None, method),
            {**request(17, method), "jsonrpc": "1.0"},
            {**request(18, method), "extra": 1},
            {"jsonrpc": "2.0", "id": 19, "method": method},
            {"jsonrpc": "2.0", "id": 20, "method": method, "params": None},
        ]
    messages += [request(2**70, "server/discover"), request(-5, "server/discover"), request("", "tools/list"),
                 request("\u00e9\u0000", "tools/list"), request(21, "ping"),
                 request(22, "tools/call", name="list_projects", arguments={}),
                 {"jsonrpc": "2.0", "method": "notifications/initialized"}, "[1, 2]", "{not json"]
    unique = []
    for message in messages:  # the two methods share ids: make them differ
        if isinstance(message, dict) and isinstance(message.get("id"), int) and not isinstance(message["id"], bool):
            message = {**message, "id": message["id"] + 1000 * (message.get("method") == "tools/list")}
        unique.append(message if isinstance(message, str) else json.dumps(message))
    return [text.encode() for text in unique]


def rootguard_wire(tmp_path: Path) -> Wire:
    (tmp_path / "repo" / "src").mkdir(parents=True, exist_ok=True)
    (tmp_path / "repo" / "src" / "a.txt").write_text("alpha\n")
    env = dict(ENV, XDG_STATE_HOME=str(tmp_path / "state"), ROOTGUARD_TRAY_SOCKET=str(tmp_path / "no.sock"))
    return Wire([sys.executable, "-m", "lsp_bridge.cli", "mcp", "--root", str(tmp_path / "repo")],
                cwd=str(tmp_path), env=env)


def test_every_early_answer_is_the_sdks_own_reply(tmp_path):
    wire = rootguard_wire(tmp_path)
    # A ping first (no 2026 method: an error): the early loop leaves it, and every later line, to the SDK.
    wire.send(line(request("first", "ping")))
    wire.answer("first")
    early = EarlyAnswers(["repo"])
    lines = corpus()
    expected = {}
    for raw in lines:
        given = early.answer(raw)
        if given is not None:
            expected[json.dumps(given[1]["id"])] = given[1]
    wire.send(b"".join(raw + b"\n" for raw in lines))
    replies: dict[str, dict] = {}
    while set(expected) - set(replies):
        message = wire.message()
        replies[json.dumps(message.get("id"))] = message
    wire.close()
    # Both methods, string and integer ids, and the capabilities real clients send are answered early;
    # everything the early answers leave is for the SDK.
    assert set(expected) == {json.dumps(i) for i in (1, "a-string-id", 2, 3, 1001, 1002, 1003, 2**70, -5, "",
                                                     "\u00e9\u0000")}
    for key, message in expected.items():
        assert replies[key] == message


def test_the_supported_versions_are_the_sdks():
    from mcp_types.version import MODERN_PROTOCOL_VERSIONS

    assert set(MODERN_VERSIONS) == set(MODERN_PROTOCOL_VERSIONS)


class Loop:
    """``answer_until_ready`` in a thread over real pipes: the client's ends and the ready pipe."""

    def __init__(self, project_ids=("repo",)) -> None:
        self.to_server, self.client_out = os.pipe()
        self.client_in, self.from_server = os.pipe()
        self.ready, self.signal = os.pipe()
        self.result = None
        self.replies = b""
        self.writers: list[threading.Thread] = []
        self.thread = threading.Thread(target=self._run, args=(EarlyAnswers(list(project_ids)),))
        self.thread.start()

    def _run(self, answers: EarlyAnswers) -> None:
        self.result = answer_until_ready(self.to_server, self.from_server, self.ready, answers.answer)

    def send(self, *messages) -> None:
        """Written from a thread: a loop that stops reading leaves the rest in the pipe (finish drains it)."""
        data = b"".join(m if isinstance(m, bytes) else line(m) for m in messages)
        writer = threading.Thread(target=self._write, args=(data,))
        writer.start()
        self.writers.append(writer)

    def _write(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            view = view[os.write(self.client_out, view):]

    def reply(self) -> dict:
        while b"\n" not in self.replies:
            self.replies += os.read(self.client_in, 1 << 16)
        found, self.replies = self.replies.split(b"\n", 1)
        return json.loads(found)

    def finish(self):
        """Signal ready; the loop's result, its ``data`` followed by what it left in the pipe (the SDK
        reads that from the same descriptor)."""
        os.write(self.signal, b"!")
        self.thread.join(timeout=10)
        assert not self.thread.is_alive()
        os.set_blocking(self.to_server, False)
        left = b""
        while True:
            done = not any(w.is_alive() for w in self.writers)
            try:
                while chunk := os.read(self.to_server, 1 << 16):
                    left += chunk
            except BlockingIOError:
                pass
            if done:
                break
            time.sleep(0.01)
        self.read_here = len(self.result.data)
        self.result = EarlyRead(self.result.data + left, self.result.answered)
        for fd in (self.to_server, self.client_out, self.client_in, self.from_server, self.ready, self.signal):
            os.close(fd)
        return self.result


def test_the_loop_answers_until_the_first_line_it_leaves_and_hands_over_every_byte():
    loop = Loop()
    discover, tools = request(1, "server/discover"), request(2, "tools/list")
    loop.send(discover, tools)
    assert loop.reply()["id"] == 1
    assert [t["name"] for t in loop.reply()["result"]["tools"]][:3] == ["list_projects", "read_file",
                                                                       "list_directory"]
    later = request(4, "tools/list")
    loop.send(call(3, "read_file", project_id="repo", relative_path="a.txt"), later, b'{"half": ')
    result = loop.finish()
    sent = line(discover) + line(tools) + line(call(3, "read_file", project_id="repo", relative_path="a.txt")) \
        + line(later) + b'{"half": '
    assert result.data == sent  # in order, answered lines included, the half line too: nothing lost
    assert set(result.answered) == {("int", 1), ("int", 2)}  # not 4: it came after a line left to the SDK


@pytest.mark.parametrize("first", [b"[" * 200_000, b"\xff\xfe not utf-8", b"", b"{}", b"1" * 10_000],
                         ids=["nested 200,000 deep", "not UTF-8", "empty line", "empty object", "huge number"])
def test_a_hostile_first_line_is_left_to_the_sdk_with_everything_after_it(first):
    loop = Loop()
    loop.send(first + b"\n", request(1, "server/discover"))
    result = loop.finish()
    assert result.answered == {}
    assert result.data == first + b"\n" + line(request(1, "server/discover"))


def test_a_line_longer_than_any_early_request_stops_the_reading_there():
    loop = Loop()
    long_line = b'{"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {"x": "' + b"x" * 300_000
    loop.send(long_line + b'"}}\n', request(2, "tools/list"))
    time.sleep(0.2)  # the loop has read what it takes
    result = loop.finish()
    assert result.answered == {}
    assert loop.read_here <= MAX_LINE + 65_536  # the rest was left in the pipe, for the SDK
    assert result.data == long_line + b'"}}\n' + line(request(2, "tools/list"))


def test_no_more_than_max_answers_are_given_early():
    loop = Loop()
    loop.send(*(request(i, "server/discover") for i in range(MAX_ANSWERS + 5)))
    replies = [loop.reply() for _ in range(MAX_ANSWERS)]
    result = loop.finish()
    assert [r["id"] for r in replies] == list(range(MAX_ANSWERS))
    assert len(result.answered) == MAX_ANSWERS


def test_an_id_asked_twice_is_left_to_the_sdk():
    loop = Loop()
    loop.send(request(1, "server/discover"))
    assert loop.reply()["id"] == 1
    loop.send(request(1, "tools/list"))
    result = loop.finish()
    assert list(result.answered) == [("int", 1)]
    assert result.answered[("int", 1)]["result"]["supportedVersions"] == list(MODERN_VERSIONS)


def test_the_end_of_input_ends_reading_not_the_loop():
    loop = Loop()
    loop.send(request(1, "server/discover"))
    assert loop.reply()["id"] == 1
    os.close(loop.client_out)
    loop.client_out = os.open(os.devnull, os.O_WRONLY)  # so finish() closes something
    result = loop.finish()
    assert result.data == line(request(1, "server/discover"))


def test_each_request_gets_exactly_one_reply_through_the_real_server(tmp_path):
    """Through the real server: every request has exactly one reply, answered early or by the SDK."""
    wire = rootguard_wire(tmp_path)
    wire.send(line(request(1, "server/discover")) + line(request(2, "tools/list"))
              + line({**call(3, "read_file", project_id="repo", relative_path="src/a.txt"),
                      "params": {"name": "read_file", "arguments": {"project_id": "repo",
                                                                    "relative_path": "src/a.txt"}, "_meta": META}})
              + line(request(4, "server/discover")))
    replies = [wire.message() for _ in range(4)]
    assert sorted(r["id"] for r in replies) == [1, 2, 3, 4]
    by_id = {r["id"]: r for r in replies}
    assert "repo" in json.dumps(by_id[2]["result"]["tools"][1]["inputSchema"])
    wire.send(line(request(5, "ping")))
    assert wire.message()["id"] == 5  # no second reply to 1 or 2 came before it
    out, err = wire.close()
    assert out == b"", out
    assert wire.proc.returncode == 0, err.decode()
    assert b"differs from the early answer" not in err
    assert text_of(by_id[3]) == "alpha\n"  # the read itself: the SDK and the policy, once loaded


@pytest.mark.parametrize("first", ["initialize", "ping"])
def test_a_client_that_opens_otherwise_is_served_by_the_sdk_alone(tmp_path, first):
    from tests.test_mcp_stdio import INITIALIZE

    wire = rootguard_wire(tmp_path)
    opening = INITIALIZE if first == "initialize" else request(0, "ping")
    wire.send(line(opening) + line(request(1, "server/discover")))
    replies = {m["id"]: m for m in (wire.message(), wire.message())}
    if first == "initialize":  # a handshake connection refuses the 2026 envelope, as the SDK decides
        assert replies[0]["result"]["serverInfo"]["name"] == "rootguard"
        assert "error" in replies[1]
    else:
        assert "result" in replies[1]
    wire.close()
