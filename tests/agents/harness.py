"""Running an agent CLI against the scripted fake model, from a test or a bench, in a loopback-only
network namespace where the machine allows it (root: ``unshare -n``, then ``ip link set lo up``).

The fake model and the agent run together in one child process (``run_case``), so both live in
the namespace; files, unix sockets (the tray's) and the runtime directory are shared as usual.
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.agents.clis import REPO, Agent
from tests.agents.turns import Request, Seen, ToolCall, ToolResult, Turn

# What the agent process sees of the test's environment: nothing else leaks in (API keys, proxies).
PASSED = ("PATH", "HOME", "XDG_CONFIG_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME", "XDG_RUNTIME_DIR",
          "GIT_CONFIG_GLOBAL", "GIT_CONFIG_NOSYSTEM", "GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_COMMITTER_NAME",
          "GIT_COMMITTER_EMAIL", "ROOTGUARD_CONFIG", "ROOTGUARD_TRAY_SOCKET")


@dataclass
class AgentRun:
    """What one agent run did and what the fake model received."""

    returncode: int | None
    stdout: str
    stderr: str
    seconds: float
    requests: list[Request]
    events: list[dict[str, Any]] = field(default_factory=list)
    netns: bool = False

    def loop(self) -> list[Request]:
        """The agent-loop requests (those offering tools)."""
        return [r for r in self.requests if r.seen.has_tools]

    def results(self) -> list[ToolResult]:
        """The tool results the model saw in the last loop request."""
        loop = self.loop()
        return list(loop[-1].seen.results) if loop else []

    def result_text(self) -> str:
        return "\n".join(r.text for r in self.results())

    def containing(self, needles: Iterable[str]) -> list[tuple[str, str]]:
        """(needle, request path) for every needle found in any request body the model received."""
        found: list[tuple[str, str]] = []
        for request in self.requests:
            text = request.text + "\n" + _unescaped(request.body)
            found.extend((n, request.path) for n in needles if n in text)
        return found

    def describe(self) -> str:
        """For assertion messages: the exit, the output's tail, the tool results."""
        results = [(r.text[:400], r.is_error) for r in self.results()]
        return (f"exit {self.returncode} after {self.seconds:.1f} s (netns: {self.netns}); requests: "
                f"{[(r.wire, r.path.split('?')[0]) for r in self.requests]}; results: {results}\n"
                f"stdout: {self.stdout[-600:]}\nstderr: {self.stderr[-1500:]}")


@functools.cache
def netns_available() -> bool:
    """Whether ``unshare -n`` gives this process's children a loopback-only namespace."""
    if os.geteuid() != 0 or not shutil.which("unshare") or not shutil.which("ip"):
        return False
    probe = subprocess.run(["unshare", "-n", "--", "sh", "-c", "ip link set lo up"], capture_output=True, timeout=30,
                           check=False)
    return probe.returncode == 0


def base_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    env = {k: os.environ[k] for k in PASSED if k in os.environ}
    env.update({"LANG": "C.UTF-8", "TERM": "dumb", "NO_COLOR": "1"})
    env.update(extra or {})
    return env


def run(agent: Agent, home: Path, project: Path, script: Sequence[Turn], *, extra: Sequence[str] = (),
        env: Mapping[str, str] | None = None, argv: Sequence[str] | None = None, sdk: dict | None = None,
        timeout: float = 150, netns: bool | None = None) -> AgentRun:
    """Run ``agent`` in ``project`` with the fake model playing ``script``; the result once it exits."""
    use_netns = netns_available() if netns is None else netns
    full_env = base_env({**agent.env(home), **(env or {})})
    work = Path(tempfile.mkdtemp(prefix="rg-agent-case-"))
    try:
        case = {"argv": list(argv if argv is not None else agent.argv(home, project, tuple(extra))), "env": full_env,
                "cwd": str(project), "script": [_turn_json(t) for t in script], "timeout": timeout,
                "out": str(work / "result.json"), "sdk": sdk}
        (work / "case.json").write_text(json.dumps(case))
        command = [sys.executable, "-m", "tests.agents.run_case", str(work / "case.json")]
        if use_netns:
            command = ["unshare", "-n", "--", "sh", "-c", 'ip link set lo up && exec "$@"', "sh", *command]
        runner_env = {**os.environ, "PYTHONPATH": str(REPO)}
        done = subprocess.run(command, cwd=REPO, env=runner_env, capture_output=True, text=True, timeout=timeout + 60,
                              check=False)
        out = work / "result.json"
        if not out.is_file():
            raise AssertionError(f"the agent runner failed (exit {done.returncode}): {done.stderr[-3000:]}")
        result = json.loads(out.read_text())
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return AgentRun(result["returncode"], result["stdout"], result["stderr"], result["seconds"],
                    [_request(r) for r in result["requests"]], result.get("events") or [], use_netns)


def _turn_json(turn: Turn) -> dict[str, Any]:
    if isinstance(turn, ToolCall):
        return {"tool": turn.name, "input": turn.input}
    return {"say": turn.text}


def _request(data: dict[str, Any]) -> Request:
    seen = Seen(data["has_tools"], tuple(ToolResult(r["text"], r["is_error"]) for r in data["results"]))
    return Request(data["method"], data["path"], data["wire"], data["body"].encode(), {}, seen,
                   data["received"], data["answered"])


def _unescaped(body: bytes) -> str:
    try:
        return json.dumps(json.loads(body), ensure_ascii=False)
    except ValueError:
        return ""
