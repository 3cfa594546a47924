"""A scripted fake model on one loopback port, for the real agent CLIs.

It speaks Anthropic Messages (Claude Code), OpenAI Responses (Codex) and Chat Completions
(Copilot CLI), and Gemini (Gemini CLI), each streamed as SSE when asked. A test gives a list of
turns — tool calls, then a final text — and every request is logged whole, so a test can assert
that a secret reached no request. The server is lenient: a request with tools gets the turn
after as many tool results as it carries (the first turn when none came back yet); a request
without tools (a title, router or next-speaker side call) gets text.

By hand::

    python -m tests.agents.fake_model --port 8765 --script turns.json --log requests.jsonl

where turns.json is ``[{"tool": "Read", "input": {"file_path": "/abs/x"}}, {"say": "done"}]``.
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
import time
from collections.abc import Callable, Iterable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from tests.agents import wire_anthropic, wire_gemini, wire_openai
from tests.agents.turns import Request, Say, Seen, ToolCall, Turn, next_turn

Answer = tuple[str, bytes]


class FakeModel:
    """The server, its script and its request log. Use as a context manager, or start()/stop()."""

    def __init__(self, script: Iterable[Turn] = (), *, port: int = 0, log_file: Path | None = None):
        self.script: list[Turn] = list(script)
        self.requests: list[Request] = []
        self.log_file = log_file
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", port), _handler_for(self))
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, name="fake-model", daemon=True)

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> FakeModel:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> FakeModel:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def reset(self, script: Iterable[Turn]) -> None:
        """A new script and an empty log, for the next run on the same server."""
        with self._lock:
            self.script = list(script)
            self.requests = []

    # ------------------------------------------------------------ what the tests read

    def loop_requests(self, wire: str | None = None) -> list[Request]:
        """The agent-loop requests (those offering tools), in order."""
        with self._lock:
            return [r for r in self.requests if r.seen.has_tools and (wire is None or r.wire == wire)]

    def results(self) -> list[str]:
        """The tool results the agent sent back, as text, from the last loop request."""
        loop = self.loop_requests()
        return [r.text for r in loop[-1].seen.results] if loop else []

    def requests_containing(self, needle: str) -> list[Request]:
        with self._lock:
            return [r for r in self.requests if needle.encode() in r.body or needle in _unescaped(r.body)]

    # ------------------------------------------------------------ serving

    def _record(self, request: Request) -> None:
        with self._lock:
            self.requests.append(request)
            if self.log_file is not None:
                entry = {"method": request.method, "path": request.path, "wire": request.wire, "body": request.text}
                with self.log_file.open("a", encoding="utf-8") as log:
                    log.write(json.dumps(entry) + "\n")

    def answer(self, method: str, target: str, headers: dict[str, str], body: bytes) -> tuple[int, Answer, Request]:
        received = time.monotonic()
        path = urlsplit(target).path
        wire, seen, make = _route(method, path, _json_or_none(body))
        request = Request(method, target, wire, body, headers, seen, received)
        self._record(request)
        if make is None:
            missing = json.dumps({"error": {"message": f"fake model: no {method} {path}"}}).encode()
            return 404, ("application/json", missing), request
        with self._lock:
            turn = next_turn(self.script, seen)
        return 200, make(turn, seen), request


def _route(method: str, path: str, body: Any) -> tuple[str, Seen, Callable[[Turn, Seen], Answer] | None]:
    """Which wire format a request speaks, what it carried, and how to answer it."""
    body = body if isinstance(body, dict) else {}
    nothing = Seen(False)
    if method == "GET":
        if path.rstrip("/").endswith("/models"):
            return "other", nothing, lambda _t, _s: wire_openai.models()
        return "other", nothing, None
    if path.endswith("/messages/count_tokens"):
        return "anthropic", nothing, lambda _t, _s: wire_anthropic.count_tokens()
    if path.endswith("/messages"):
        return "anthropic", wire_anthropic.parse(body), wire_anthropic.reply
    if path.endswith("/responses"):
        return "responses", wire_openai.parse_responses(body), wire_openai.reply_responses
    if path.endswith("/chat/completions"):
        return "chat", wire_openai.parse_chat(body), wire_openai.reply_chat
    if path.endswith(":streamGenerateContent"):
        return "gemini", wire_gemini.parse(body, stream=True), wire_gemini.reply
    if path.endswith(":generateContent"):
        return "gemini", wire_gemini.parse(body, stream=False), wire_gemini.reply
    if path.endswith(":countTokens"):
        return "gemini", nothing, lambda _t, _s: wire_gemini.count_tokens()
    return "other", nothing, None


def _json_or_none(body: bytes) -> Any:
    try:
        return json.loads(body) if body else None
    except ValueError:
        return None


def _unescaped(body: bytes) -> str:
    """The body with JSON string escapes undone (a secret may travel as ``\\u00xx`` or with ``\\n``)."""
    parsed = _json_or_none(body)
    return json.dumps(parsed, ensure_ascii=False) if parsed is not None else body.decode("utf-8", errors="replace")


def _handler_for(model: FakeModel) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def _body(self) -> bytes:
            if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
                chunks: list[bytes] = []
                while True:
                    size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                    if size == 0:
                        self.rfile.readline()
                        return b"".join(chunks)
                    chunks.append(self.rfile.read(size))
                    self.rfile.readline()
            return self.rfile.read(int(self.headers.get("Content-Length") or 0))

        def _serve(self) -> None:
            body = self._body() if self.command != "GET" else b""
            if self.headers.get("Content-Encoding", "").lower() == "gzip":
                import gzip

                body = gzip.decompress(body)
            status, (content_type, payload), request = model.answer(self.command, self.path, dict(self.headers), body)
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(payload)))
            if content_type == "text/event-stream":
                self.send_header("Cache-Control", "no-cache")
            self.end_headers()
            self.wfile.write(payload)
            self.wfile.flush()
            request.answered = time.monotonic()

        do_POST = _serve
        do_GET = _serve

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base class's name
            pass

    return Handler


def turns_from_json(data: list[dict[str, Any]]) -> list[Turn]:
    """``[{"tool": NAME, "input": {...} or "text"}, {"say": TEXT}]`` → turns."""
    turns: list[Turn] = []
    for entry in data:
        if "tool" in entry:
            turns.append(ToolCall(str(entry["tool"]), entry.get("input", {})))
        else:
            turns.append(Say(str(entry.get("say", "done"))))
    return turns


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.agents.fake_model", description=__doc__.split("\n\n")[0])
    parser.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (default: any free one)")
    parser.add_argument("--script", type=Path, help="JSON list of turns (default: answer every request with text)")
    parser.add_argument("--log", type=Path, help="append every request as a JSON line to this file")
    args = parser.parse_args(argv)
    script = turns_from_json(json.loads(args.script.read_text())) if args.script else []
    model = FakeModel(script, port=args.port, log_file=args.log).start()
    print(f"fake model listening on {model.url}", file=sys.stderr, flush=True)
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        pass
    finally:
        model.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
