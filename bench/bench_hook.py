"""``rootguard hook AGENT``: the wall time of one tool call's hook, beside ``python -c pass``.

    python bench/bench_hook.py [--rounds 40] [--dir DIR]

Every tool call an agent makes waits for its pre-tool hook: one process, spawned with the
agent's JSON on stdin, that exits. Each round times, as whole processes (spawn to exit),
alternating so a busy machine slows all alike:

* ``python -c pass`` (the floor of any hook written in Python);
* the hook on a ``Read`` of a file inside the project (allow: no output);
* the hook on a ``Read`` of the repository's ``.env`` (deny: the reason, the audit line);
* the hook on a ``Bash`` call (rewritten to run under ``rootguard run``);
* the same ``Read`` with an editor window published (a real language server's record).

p50 and p95 of each, in milliseconds. The command is the one ``rootguard agents install``
writes (this interpreter, ``-P -m lsp_bridge.cli hook claude``); the package is byte-compiled
first, as an installed package runs. ``--dir`` uses an existing repository (its first
``packages/*`` folder as the agent's project); by default a small monorepo is built in a
temporary directory. The no-op hook in a real agent loop is measured by the end-to-end
harness (the agents' CLIs against the scripted model server).
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def run_once(argv: list[str], data: bytes, env: dict, ok: tuple[int, ...]) -> float:
    started = time.perf_counter()
    done = subprocess.run(argv, input=data, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    elapsed = time.perf_counter() - started
    if done.returncode not in ok:
        sys.exit(f"{argv} exited {done.returncode}: {done.stderr.decode(errors='replace').strip()}")
    return elapsed


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(share * (len(ordered) - 1))))
    return ordered[index]


def build(directory: Path) -> Path:
    from tests.conftest import make_repo

    files = {".env": "STRIPE_KEY=sk_live_x\n", "package.json": "{}\n"}
    for n in range(30):
        files[f"packages/pkg{n:02d}/src/index.ts"] = "export {};\n"
    files["packages/checkout/src/app.ts"] = "export const app = 1;\n"
    make_repo(directory / "shop", files)
    return directory / "shop" / "packages" / "checkout"


class Window:
    """A real language server opened on ``folder``, publishing its window for the hooks."""

    def __init__(self, folder: Path, env: dict) -> None:
        self.proc = subprocess.Popen([sys.executable, "-m", "lsp_bridge"], stdin=subprocess.PIPE,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
        self.send({"id": 1, "method": "initialize", "params": {
            "processId": os.getpid(), "rootUri": None, "capabilities": {},
            "workspaceFolders": [{"uri": folder.as_uri(), "name": folder.name}]}})
        self.send({"method": "initialized", "params": {}})
        sessions = Path(env["XDG_RUNTIME_DIR"]) / "rootguard" / "sessions"
        deadline = time.monotonic() + 60
        while not (sessions.is_dir() and any(sessions.glob("*.json"))):
            if time.monotonic() > deadline:
                sys.exit("the language server did not publish its window")
            time.sleep(0.05)

    def send(self, message: dict) -> None:
        body = json.dumps({"jsonrpc": "2.0", **message}).encode()
        assert self.proc.stdin is not None
        self.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.proc.stdin.flush()

    def close(self) -> None:
        self.send({"id": 2, "method": "shutdown"})
        self.send({"method": "exit"})
        try:
            self.proc.wait(20)
        except subprocess.TimeoutExpired:
            self.proc.kill()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=40)
    parser.add_argument("--dir", type=Path, help="an existing repository (default: a small monorepo, built here)")
    args = parser.parse_args()
    compileall.compile_dir(str(ROOT / "lsp_bridge"), quiet=1)
    with tempfile.TemporaryDirectory(prefix="rg-bench-hook-") as scratch:
        base = Path(scratch)
        if args.dir:
            packages = sorted((args.dir / "packages").glob("*/")) if (args.dir / "packages").is_dir() else []
            project = packages[0] if packages else args.dir
            repository = args.dir
        else:
            project = build(base)
            repository = project.parents[1]
        home = base / "home"
        (home / "run").mkdir(parents=True, mode=0o700)
        env = {**os.environ, "HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config"),
               "XDG_STATE_HOME": str(home / ".state"), "XDG_CACHE_HOME": str(home / ".cache"),
               "XDG_RUNTIME_DIR": str(home / "run"), "PYTHONPATH": str(ROOT),
               "ROOTGUARD_TRAY_SOCKET": str(base / "no-tray.sock")}
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        hook = [sys.executable, "-P", "-m", "lsp_bridge.cli", "hook", "claude"]
        inside = next((p for p in sorted(project.rglob("*")) if p.is_file() and ".git" not in p.parts), project)

        def call(tool: str, tool_input: dict) -> bytes:
            return json.dumps({"session_id": "bench", "transcript_path": "/t", "cwd": str(project),
                               "permission_mode": "default", "hook_event_name": "PreToolUse", "tool_name": tool,
                               "tool_input": tool_input, "tool_use_id": "toolu_bench"}).encode()

        cases = {
            "python -c pass": ([sys.executable, "-c", "pass"], b"", (0,)),
            "hook: Read inside (allow)": (hook, call("Read", {"file_path": str(inside)}), (0,)),
            "hook: Read ../../.env (deny)": (hook, call("Read", {"file_path": str(repository / ".env")}), (2,)),
            "hook: Bash (rewritten)": (hook, call("Bash", {"command": "ls", "description": "list"}), (0,)),
        }
        times: dict[str, list[float]] = {name: [] for name in cases}
        for argv, data, ok in cases.values():
            run_once(argv, data, env, ok)  # warm the page cache
        for _ in range(args.rounds):
            for name, (argv, data, ok) in cases.items():
                times[name].append(run_once(argv, data, env, ok))
        window = Window(project, env)
        try:
            name = "hook: Read inside, editor window published"
            argv, data, ok = cases["hook: Read inside (allow)"]
            run_once(argv, data, env, ok)
            times[name] = [run_once(argv, data, env, ok) for _ in range(args.rounds)]
        finally:
            window.close()
    floor = statistics.median(times["python -c pass"])
    print(f"{'':44} {'p50 ms':>8} {'p95 ms':>8} {'p50 / python -c pass':>22}")
    for name, values in times.items():
        p50, p95 = statistics.median(values), percentile(values, 0.95)
        print(f"{name:44} {p50 * 1000:8.1f} {p95 * 1000:8.1f} {p50 / floor:21.1f}x")
    print(f"({args.rounds} rounds; project {project})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
