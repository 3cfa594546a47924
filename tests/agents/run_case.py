"""One agent run against the fake model, in one process: ``python -m tests.agents.run_case CASE.json``.

The fake model and the agent run side by side in this process, so the pair can be put in a
loopback-only network namespace together (``harness.run``): the agent then reaches nothing
but the fake model. CASE.json::

    {"argv": [...], "env": {...}, "cwd": "...", "script": [turn...], "timeout": 120,
     "out": "result.json", "sdk": {"send": [message...], "host_deny_after": 20}}

``{MODEL_URL}`` in argv and env values becomes the fake model's address. With ``sdk`` the
agent speaks Claude Code's stream-json on stdin/stdout: the messages are sent in order (an
entry ``{"wait_for": {"path", "text", "timeout"}}`` pauses until that file holds the text), a permission
request the agent puts to its host is answered "deny" only after ``host_deny_after`` seconds
(so the agent's own ``PermissionRequest`` hook decides first), and stdin closes at the result.
The result file holds the exit status, output, and every request the model received.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from tests.agents.fake_model import FakeModel, turns_from_json

PLACEHOLDER = "{MODEL_URL}"


def _fill(value: str, url: str) -> str:
    return value.replace(PLACEHOLDER, url)


def run(case: dict[str, Any]) -> dict[str, Any]:
    with FakeModel(turns_from_json(case["script"])) as model:
        argv = [_fill(a, model.url) for a in case["argv"]]
        env = {k: _fill(v, model.url) for k, v in case["env"].items()}
        started = time.monotonic()
        if case.get("sdk"):
            returncode, stdout, stderr, events = _run_sdk(argv, env, case["cwd"], case["sdk"], case["timeout"])
        else:
            returncode, stdout, stderr, events = _run_plain(argv, env, case["cwd"], case["timeout"])
        seconds = time.monotonic() - started
        requests = [{"method": r.method, "path": r.path, "wire": r.wire, "body": r.text, "has_tools": r.seen.has_tools,
                     "results": [{"text": x.text, "is_error": x.is_error} for x in r.seen.results],
                     "received": r.received, "answered": r.answered} for r in model.requests]
    return {"returncode": returncode, "stdout": stdout, "stderr": stderr, "seconds": seconds, "events": events,
            "requests": requests}


def _run_plain(argv: list[str], env: dict[str, str], cwd: str, timeout: float) -> tuple[int | None, str, str, list]:
    try:
        done = subprocess.run(argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL, capture_output=True, timeout=timeout,
                              check=False)
    except subprocess.TimeoutExpired as err:
        return None, _text(err.stdout), _text(err.stderr) + f"\n(run_case: no exit within {timeout:g} s)", []
    return done.returncode, _text(done.stdout), _text(done.stderr), []


def _text(data: bytes | str | None) -> str:
    if data is None:
        return ""
    return data if isinstance(data, str) else data.decode("utf-8", errors="replace")


def _run_sdk(argv: list[str], env: dict[str, str], cwd: str, sdk: dict[str, Any],
             timeout: float) -> tuple[int | None, str, str, list]:
    """Claude Code's stream-json: send, watch, answer the host's permission requests late."""
    proc = subprocess.Popen(argv, cwd=cwd, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    stdin, stdout, stderr = proc.stdin, proc.stdout, proc.stderr
    assert stdin is not None and stdout is not None and stderr is not None
    errors: list[str] = []
    reader = threading.Thread(target=lambda: errors.append(stderr.read()), daemon=True)
    reader.start()
    lock = threading.Lock()
    events: list[dict[str, Any]] = []
    timers: list[threading.Timer] = []

    def send(message: dict[str, Any]) -> None:
        with lock:
            try:
                stdin.write(json.dumps(message) + "\n")
                stdin.flush()
            except (BrokenPipeError, ValueError):
                pass

    for message in sdk.get("send", []):
        if "wait_for" in message:
            _wait_for(**message["wait_for"])
        else:
            send(message)
    killer = threading.Timer(timeout, proc.kill)
    killer.start()
    for line in stdout:
        try:
            event = json.loads(line)
        except ValueError:
            continue
        events.append(event)
        request = event.get("request") if event.get("type") == "control_request" else None
        if isinstance(request, dict) and request.get("subtype") == "can_use_tool":
            answer = {"type": "control_response", "response": {
                "subtype": "success", "request_id": event["request_id"],
                "response": {"behavior": "deny", "message": "run_case: the test host denies (no hook decided)"}}}
            timer = threading.Timer(float(sdk.get("host_deny_after", 20)), send, args=(answer,))
            timer.start()
            timers.append(timer)
        if event.get("type") == "result":
            with lock:
                stdin.close()
            break
    for timer in timers:
        timer.cancel()
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(10)
    killer.cancel()
    reader.join(10)
    return proc.returncode, "".join(json.dumps(e) + "\n" for e in events), "".join(errors), events


def _wait_for(path: str, text: str, timeout: float = 30) -> None:
    """Until the file at ``path`` holds ``text`` (an effect of the agent's hook), at most ``timeout`` s."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if text in Path(path).read_text(errors="replace"):
                return
        except OSError:
            pass
        time.sleep(0.1)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m tests.agents.run_case CASE.json", file=sys.stderr)
        return 2
    case = json.loads(Path(args[0]).read_text())
    result = run(case)
    out = Path(case["out"])
    tmp = out.with_suffix(".tmp")
    tmp.write_text(json.dumps(result))
    os.replace(tmp, out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
