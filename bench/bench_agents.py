"""The hook's cost per tool call inside a real agent loop: ``rootguard hook`` beside a no-op hook (``true``).

    python bench/bench_agents.py [--calls 12] [--rounds 2] [--agents claude,codex,gemini,copilot] [--no-editor]

Each agent CLI (pinned, installed by scripts/install_agents.sh) runs against the scripted fake
model (tests/agents/fake_model.py) in a loopback-only network namespace where the machine allows
it, in a small demo monorepo with an editor window (a real language server) opened at
``packages/checkout``. One run is one agent loop of ``--calls`` tool calls of one kind, then a
final answer; the fake model timestamps every request, so each tool call's time is the gap from
the model's answer (the tool call) to the agent's next request: the agent dispatching the call,
its hook, the tool itself, the next request. Runs alternate between the hook ``rootguard agents
install`` writes and the no-op hook ``true`` in the same place, ``--rounds`` times, so a busy
machine slows both alike. Two kinds of call:

* ``read``: the agent's file-reading tool on a file of its own package (the hook allows: no output;
  Codex's ``view_image``, its one file tool that calls the hook besides ``apply_patch``);
* ``shell``: its shell tool running ``cat`` on that file (``rootguard hook`` rewrites it to run under
  ``rootguard run``, so the sandbox's start is in the figure; under ``true`` it runs unconfined).

Printed per agent and kind: p50 and p95 per tool call under each hook, and the difference of the
medians (what a person feels per tool call); ``python -c pass`` beside them as the floor of any
hook written in Python.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

FILES = 40  # in packages/checkout: a different file per call (Gemini stops a loop of identical calls)


def own_file(index: int) -> str:
    return f"src/m{index // 20:03d}/f{index % 20:02d}.ts"


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(share * (len(ordered) - 1))))]


def isolate(base: Path) -> Path:
    """A fresh home and XDG directories for everything this bench starts."""
    home = base / "home"
    (home / "run").mkdir(parents=True, mode=0o700)
    os.environ.update({"HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config"),
                       "XDG_STATE_HOME": str(home / ".local" / "state"), "XDG_CACHE_HOME": str(home / ".cache"),
                       "XDG_RUNTIME_DIR": str(home / "run"), "ROOTGUARD_TRAY_SOCKET": str(base / "no-tray.sock")})
    for key in ("ROOTGUARD_CONFIG", "ROOTGUARD_ROOTS"):
        os.environ.pop(key, None)
    return home


def install_hook(agent, home: Path, project: Path, hook: str) -> None:
    """``rootguard agents install`` (hook = "rootguard") or the no-op ``true`` written by hand."""
    agent.prepare(home, project)
    for stale in (project / ".claude" / "settings.json", home / ".copilot" / "hooks" / "rootguard.json",
                  home / ".copilot" / "hooks" / "bench.json"):
        stale.unlink(missing_ok=True)
    if hook == "true":
        agent.write_hook(home, project, "true")
        return
    scope = ["--project", "--folder", str(project)] if agent.hook_scope == "project" else ["--user"]
    done = subprocess.run([sys.executable, "-m", "lsp_bridge.cli", "agents", "install", agent.name, *scope],
                          capture_output=True, text=True, env={**os.environ, **agent.env(home)}, timeout=120)
    if done.returncode != 0:
        sys.exit(f"agents install {agent.name}: {done.stderr.strip()}")


def tool_call(agent, kind: str, project: Path, index: int):
    from tests.agents.turns import ToolCall

    name = own_file(index)
    if kind == "shell":
        return agent.shell(f"cat {name}")
    if agent.name == "codex":
        return ToolCall("view_image", {"path": str(project / name)})
    return agent.read(str(project / name))


def one_loop(agent, home: Path, project: Path, kind: str, calls: int) -> list[float]:
    """Seconds per tool call in one agent loop of ``calls`` calls."""
    from tests.agents import harness
    from tests.agents.turns import Say

    script = [tool_call(agent, kind, project, i % FILES) for i in range(calls)] + [Say("done")]
    run = harness.run(agent, home, project, script, timeout=60 + 10 * calls)
    loop = run.loop()
    if len(loop) != calls + 1:
        sys.exit(f"{agent.name} {kind}: {len(loop) - 1} of {calls} tool calls came back\n{run.describe()}")
    return [after.received - before.answered for before, after in zip(loop, loop[1:], strict=False)]


def python_floor(rounds: int = 20) -> list[float]:
    times = []
    for _ in range(rounds):
        started = time.perf_counter()
        subprocess.run([sys.executable, "-c", "pass"], check=True)
        times.append(time.perf_counter() - started)
    return times


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=12, help="tool calls per agent loop (default 12)")
    parser.add_argument("--rounds", type=int, default=2, help="loops per hook, alternating (default 2)")
    parser.add_argument("--agents", default="claude,codex,gemini,copilot")
    parser.add_argument("--kinds", default="read,shell")
    parser.add_argument("--no-editor", action="store_true", help="no editor window: the project folder is the boundary")
    args = parser.parse_args()

    from lsp_bridge.cli.demo_repo import build_monorepo
    from tests.agents import harness
    from tests.agents.clis import AGENTS, installed

    why = installed()
    if why is not None:
        sys.exit(why)
    base = Path(tempfile.mkdtemp(prefix="rg-bench-agents-"))
    home = isolate(base)
    demo = build_monorepo(str(base / "ws"), packages=3, files_per_package=4, narrow_files=FILES + 2, worktree=False)
    project = Path(demo.narrow)
    window = None
    if not args.no_editor:
        from tests.agents.editor import EditorWindow

        window = EditorWindow([project]).__enter__()
    print(f"# agent loops against the fake model; netns: {harness.netns_available()}; editor window: "
          f"{'yes' if window else 'no'}; {args.calls} calls x {args.rounds} rounds per hook")
    floor = python_floor()
    print(f"python -c pass: p50 {statistics.median(floor) * 1000:.0f} ms, p95 {percentile(floor, 0.95) * 1000:.0f} ms")
    print(f"{'agent':<8} {'version':<9} {'call':<6} {'hook':<10} {'n':>3} {'p50 ms':>7} {'p95 ms':>7}   hook adds (p50)")
    try:
        for name in args.agents.split(","):
            agent = AGENTS[name]
            for kind in args.kinds.split(","):
                times: dict[str, list[float]] = {"true": [], "rootguard": []}
                for _ in range(args.rounds):
                    for hook in ("rootguard", "true"):
                        install_hook(agent, home, project, hook)
                        times[hook] += one_loop(agent, home, project, kind, args.calls)
                for hook in ("true", "rootguard"):
                    t = times[hook]
                    added = ""
                    if hook == "rootguard":
                        added = f"   {(statistics.median(t) - statistics.median(times['true'])) * 1000:+.0f} ms"
                    print(f"{name:<8} {agent.version:<9} {kind:<6} {hook:<10} {len(t):>3} "
                          f"{statistics.median(t) * 1000:>7.0f} {percentile(t, 0.95) * 1000:>7.0f}{added}", flush=True)
    finally:
        if window is not None:
            window.__exit__(None, None, None)
        subprocess.run(["rm", "-rf", str(base)], check=False)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
