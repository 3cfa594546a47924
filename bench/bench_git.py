"""git and a typecheck-like command inside ``rootguard run`` against outside, same run (issue 32).

A repository (``--files`` tracked files over many packages, ``--commits`` commits) with a
narrow root ``packages/api`` (a Python package of ``--modules`` modules) and
``[workspace] git = "read"``. Measured in interleaved rounds, so machine load hits every
variant alike:

* ``git status --short`` from the narrow root (git walks the whole index, 0 changes);
* ``python -m compileall -q -f`` over the package (a typecheck-like, CPU- and file-bound
  command);

each outside any sandbox, inside the sandbox ``rootguard run --print`` describes (the
command's own cost: bubblewrap + the Landlock shim + COMMAND), and through the whole
``rootguard run`` (plus its own start-up: loading the configuration, building the profile);
then five runs in one shell inside and outside (the per-command cost without the fixed start-up).
Reports both figures and the ratio against outside (target: inside/outside <= 1.2x).

``--dir CHECKOUT --narrow REL`` measures an existing repository instead (nothing is written
there but the compiled files ``compileall`` writes below ``REL``).

Run: ``.venv/bin/python bench/bench_git.py [--rounds N] [--files N] [--modules N] [--dir CHECKOUT --narrow REL]``
"""

from __future__ import annotations

import argparse
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time


def timed(argv: list[str], env: dict, cwd: str) -> float:
    start = time.perf_counter()
    done = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env, cwd=cwd, timeout=600)
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"bench: {shlex.join(argv[-6:])} exited {done.returncode}: {done.stderr.decode()[-400:]}")
    return elapsed


def measure(variants: dict[str, list[str]], rounds: int, env: dict, cwd: str) -> dict[str, list[float]]:
    results: dict[str, list[float]] = {name: [] for name in variants}
    for argv in variants.values():  # warm-up: bytecode, page cache
        timed(argv, env, cwd)
    for _ in range(rounds):
        for name, argv in variants.items():
            results[name].append(timed(argv, env, cwd))
    return results


def build(base: str, files: int, modules: int, commits: int, env: dict) -> tuple[str, str]:
    repo = os.path.join(base, "shop")
    api = os.path.join(repo, "packages", "api")
    packages = max(files // 500, 1)
    for p in range(packages):
        folder = os.path.join(repo, "packages", f"pkg{p:03d}", "src")
        os.makedirs(folder)
        for f in range(files // packages):
            with open(os.path.join(folder, f"m{f:04d}.ts"), "w") as handle:
                handle.write(f"export const v{f} = {p};\n")
    os.makedirs(os.path.join(api, "api"))
    for m in range(modules):
        with open(os.path.join(api, "api", f"mod{m:04d}.py"), "w") as handle:
            handle.write("".join(f"def f{i}(x: int) -> int:\n    return x * {i} + {m}\n\n" for i in range(40)))
    with open(os.path.join(api, "api", "__init__.py"), "w") as handle:
        handle.write("")

    def git(*args: str) -> None:
        subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True, timeout=600)

    git("init", "-q")
    git("add", "-A")
    git("commit", "-q", "-m", "initial")
    for c in range(commits - 1):
        with open(os.path.join(repo, "packages", "pkg000", "src", "m0000.ts"), "a") as handle:
            handle.write(f"// {c}\n")
        git("commit", "-q", "-am", f"change {c}")
    return repo, api


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--files", type=int, default=20_000)
    parser.add_argument("--modules", type=int, default=300)
    parser.add_argument("--commits", type=int, default=20)
    parser.add_argument("--dir", help="an existing checkout to measure instead of the built one")
    parser.add_argument("--narrow", default="packages/api", help="the narrow root, relative to --dir")
    args = parser.parse_args()
    if args.dir and not os.path.isdir(os.path.join(args.dir, args.narrow)):
        parser.error(f"--dir {args.dir} --narrow {args.narrow}: not a directory")
    if shutil.which("bwrap") is None:
        print("bench: bubblewrap is not installed (scripts/bootstrap.sh installs it)")
        return 1
    rootguard = [sys.executable, "-m", "lsp_bridge.cli.main"]
    with tempfile.TemporaryDirectory(prefix="rg-bench-git-") as base:
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE", "GIT_DIR", "GIT_WORK_TREE")}
        env.update(GIT_AUTHOR_NAME="bench", GIT_AUTHOR_EMAIL="bench@invalid", GIT_COMMITTER_NAME="bench",
                   GIT_COMMITTER_EMAIL="bench@invalid", GIT_CONFIG_NOSYSTEM="1")
        env["ROOTGUARD_CONFIG"] = os.path.join(base, "config.toml")
        with open(env["ROOTGUARD_CONFIG"], "w") as handle:
            handle.write('version = 2\n[workspace]\ngit = "read"\n')
        started = time.perf_counter()
        if args.dir:
            repo = os.path.realpath(args.dir)
            api = os.path.join(repo, args.narrow)
            print(f"measuring {repo}; narrow root: {args.narrow}; git = \"read\"")
        else:
            repo, api = build(base, args.files, args.modules, args.commits, env)
            print(f"built {args.files} tracked files, {args.modules} modules, {args.commits} commits "
                  f"in {time.perf_counter() - started:.1f} s; narrow root: packages/api; git = \"read\"")
        python = shutil.which("python3", path="/usr/bin:/bin")  # a system Python: visible inside the sandbox
        if python is None:
            print("bench: no /usr/bin/python3 for the typecheck-like command")
            return 1
        commands = {
            "git status": ["git", "status", "--short"],
            "compileall": [python, "-m", "compileall", "-q", "-f", "api" if not args.dir else "."],
        }
        summary = []
        for label, command in commands.items():
            printed = subprocess.run([*rootguard, "run", "--root", api, "--print", "--", *command], capture_output=True,
                                     text=True, env=env, cwd=api, check=True, timeout=120).stdout
            inside = shlex.split(printed.replace("\\\n", " "))
            results = measure({
                "outside": command,
                "inside (printed command line)": inside,
                "rootguard run": [*rootguard, "run", "--root", api, "--", *command],
            }, args.rounds, env, api)
            base_median = statistics.median(results["outside"])
            print(f"\n{label}: {shlex.join(command)}")
            for name, samples in results.items():
                median = statistics.median(samples)
                print(f"  {name:<32} median {1000 * median:8.1f} ms  min {1000 * min(samples):8.1f} ms"
                      f"  {median / base_median:5.2f}x")
            # The command's own cost inside, without the sandbox's fixed start-up (bwrap, the Landlock
            # shim; for git the private index, made once per sandbox): five runs in one shell.
            five = f"for i in 1 2 3 4 5; do {shlex.join(command)} >/dev/null; done"
            shell = ["/bin/sh", "-c", five]
            repeated = measure({"5x outside": shell, "5x inside": [*inside[: len(inside) - len(command)], *shell]},
                               max(args.rounds // 2, 3), env, api)
            for name, samples in repeated.items():
                print(f"  {name:<32} median {1000 * statistics.median(samples):8.1f} ms  min {1000 * min(samples):8.1f} ms")
            ratio = statistics.median(results["inside (printed command line)"]) / base_median
            whole = statistics.median(results["rootguard run"]) / base_median
            per = statistics.median(repeated["5x inside"]) / statistics.median(repeated["5x outside"])
            summary.append(f"  {label}: inside/outside {ratio:.2f}x (target 1.2x) -> {'met' if ratio <= 1.2 else 'NOT met'};"
                           f" five in one sandbox {per:.2f}x; with rootguard run's own start-up {whole:.2f}x")
        print("\nSummary (medians):")
        print("\n".join(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
