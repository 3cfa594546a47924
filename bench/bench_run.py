"""``rootguard run`` against bare bubblewrap and against no sandbox, side by side.

Measurements in interleaved rounds so machine load hits every variant alike:

* start-up: ``rootguard run -- true`` (and with ``--root`` on the demo's narrow
  package) against ``bwrap --ro-bind / / true``;
* side by side with bare bubblewrap: ``rootguard run -- true`` and ``find`` + ``cat`` over
  every file of the repository, against ``bwrap --ro-bind / /`` running the same;
* file-heavy: ``find REPO -type f`` over the ~61,000-file demo monorepo
  (``build_large_monorepo``) outside any sandbox, inside the sandbox
  ``rootguard run --root REPO --print`` describes (the command's own cost), and
  through the whole ``rootguard run --root REPO -- find ...`` (plus start-up).

Bytecode is cached in a temporary ``PYTHONPYCACHEPREFIX`` (as an installed
package has it), warmed by one untimed run.

``--dir DIR`` measures an existing tree instead of building the demo (the
narrow root is then DIR itself; nothing is written there).

Run: ``.venv/bin/python bench/bench_run.py [--rounds N] [--dir DIR]``
Targets: start-up within 150 ms of bare bubblewrap; the file-heavy command within 1.2x.
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
import types

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from lsp_bridge.cli.demo_repo import build_large_monorepo  # noqa: E402


def timed(argv: list[str], env: dict, cwd: str) -> float:
    start = time.perf_counter()
    done = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, cwd=cwd)
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"bench: {shlex.join(argv[:6])}... exited {done.returncode}")
    return elapsed


def measure(variants: dict[str, list[str]], rounds: int, env: dict, cwd: str) -> dict[str, list[float]]:
    results: dict[str, list[float]] = {name: [] for name in variants}
    for argv in variants.values():  # warm-up: bytecode, page cache
        timed(argv, env, cwd)
    for _ in range(rounds):
        for name, argv in variants.items():
            results[name].append(timed(argv, env, cwd))
    return results


def show(title: str, results: dict[str, list[float]], baseline: str) -> None:
    print(f"\n{title}")
    base = statistics.median(results[baseline])
    for name, samples in results.items():
        median = statistics.median(samples)
        extra = "" if name == baseline else f"  {median / base:5.2f}x  {1000 * (median - base):+7.1f} ms"
        print(f"  {name:<44} median {1000 * median:8.1f} ms  min {1000 * min(samples):8.1f} ms{extra}")


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--files", type=int, default=61_000)
    parser.add_argument("--dir", help="an existing tree to walk instead of the built demo")
    args = parser.parse_args()
    if args.dir and not os.path.isdir(args.dir):
        parser.error(f"--dir {args.dir}: not a directory")
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        print("bench: bubblewrap is not installed (scripts/bootstrap.sh installs it)")
        return 1
    rootguard = [sys.executable, "-m", "lsp_bridge.cli.main"]
    with tempfile.TemporaryDirectory(prefix="rg-bench-run-") as base:
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        env["PYTHONPYCACHEPREFIX"] = os.path.join(base, "pyc")
        env["ROOTGUARD_CONFIG"] = os.path.join(base, "config.toml")
        with open(env["ROOTGUARD_CONFIG"], "w") as handle:
            handle.write("version = 2\n")
        if args.dir:
            tree = os.path.realpath(args.dir)
            demo = types.SimpleNamespace(repo=tree, narrow=tree)
            args.files = sum(len(files) for _, _, files in os.walk(tree))
            print(f"measuring {tree}: {args.files} files")
        else:
            started = time.perf_counter()
            demo = build_large_monorepo(os.path.join(base, "demo"), total_files=args.files, commits=20)
            print(f"built {args.files} files in {time.perf_counter() - started:.1f} s: {demo.repo}")

        startup = measure({
            "bwrap --ro-bind / / true": [bwrap, "--ro-bind", "/", "/", "true"],
            "rootguard run -- true": [*rootguard, "run", "--", "true"],
            "rootguard run --root <narrow package> -- true": [*rootguard, "run", "--root", demo.narrow, "--", "true"],
        }, args.rounds, env, demo.narrow)
        show("Start-up", startup, "bwrap --ro-bind / / true")

        find = ["find", demo.repo, "-type", "f"]
        printed = subprocess.run([*rootguard, "run", "--root", demo.repo, "--print", "--", *find],
                                 capture_output=True, text=True, env=env, cwd=demo.repo, check=True).stdout
        inside = shlex.split(printed.replace("\\\n", " "))
        heavy = measure({
            "find REPO -type f (no sandbox)": find,
            "find inside the sandbox (printed command line)": inside,
            "rootguard run --root REPO -- find ...": [*rootguard, "run", "--root", demo.repo, "--", *find],
        }, max(args.rounds // 2, 3), env, demo.repo)
        show(f"File-heavy: find over {args.files} files (+ the store and .git)", heavy, "find REPO -type f (no sandbox)")

        # The sandbox's cost per file, without its fixed start-up (bwrap + the Landlock shim):
        # five walks in one shell, inside and outside.
        five = f"for i in 1 2 3 4 5; do {shlex.join(find)} >/dev/null; done"
        repeated = measure({
            "5x find in one shell (no sandbox)": ["/bin/sh", "-c", five],
            "5x find in one shell (inside the sandbox)": [*inside[: len(inside) - len(find)], "/bin/sh", "-c", five],
        }, max(args.rounds // 3, 3), env, demo.repo)
        show("Per-file cost: five walks in one process tree", repeated, "5x find in one shell (no sandbox)")

        # The protections of issue 30 (user namespace without capabilities, seccomp, private IPC, Landlock
        # scoping, the environment allow-list, limits, the private home) against bare bubblewrap, side by side:
        # the same find + cat over every file, one bubblewrap each.
        cat = f"find {shlex.quote(demo.repo)} -type f -not -path '*/.git/*' -exec cat {{}} + | wc -c"
        bare = [bwrap, "--ro-bind", "/", "/", "--proc", "/proc", "--dev", "/dev", "--", "/bin/sh", "-c"]
        side = measure({
            "bare bwrap: true": [bwrap, "--ro-bind", "/", "/", "true"],
            "rootguard run --root REPO -- true": [*rootguard, "run", "--root", demo.repo, "--", "true"],
            "bare bwrap: find + cat": [*bare, cat],
            "rootguard run --root REPO -- find + cat": [*rootguard, "run", "--root", demo.repo, "--", "/bin/sh", "-c",
                                                        cat],
        }, max(args.rounds // 2, 3), env, demo.repo)
        show("Side by side with bare bubblewrap (true; find + cat over every file)", side, "bare bwrap: true")

        # What the added protections cost by themselves: the printed sandbox (with the seccomp filter read from
        # a file on fd 9, as rootguard run passes it) against the same without them (the flags before issue 30).
        from lsp_bridge.sandbox.seccomp import program

        bpf = os.path.join(base, "seccomp.bpf")
        with open(bpf, "wb") as handle:
            handle.write(program())
        printed_cat = shlex.split(subprocess.run(
            [*rootguard, "run", "--root", demo.repo, "--print", "--", "/bin/sh", "-c", cat], capture_output=True,
            text=True, env=env, cwd=demo.repo, check=True).stdout.replace("\\\n", " "))
        split = printed_cat.index("--")
        protected = [*printed_cat[:split], "--seccomp", "9", *printed_cat[split:]]
        added = {"--unshare-ipc", "--unshare-user", "--disable-userns", "--scope"}
        old_flags: list[str] = []
        skip = 0
        for arg in printed_cat:
            if skip:
                skip -= 1
            elif arg in ("--cap-drop", "--rlimit", "--size"):
                skip = 1
            elif arg not in added:
                old_flags.append(arg)
        with_fd = ["/bin/sh", "-c", 'exec "$@" 9<"$0"', bpf]
        cost = measure({
            "sandbox without the added protections: find + cat": old_flags,
            "sandbox with them (userns, no caps, seccomp, IPC, scope, limits)": [*with_fd, *protected],
            "sandbox without the added protections: true": [*old_flags[:-3], "true"],
            "sandbox with them: true": [*with_fd, *protected[:-3], "true"],
        }, max(args.rounds // 2, 3), env, demo.repo)
        show("The added protections alone (the same sandbox command line, with and without)", cost,
             "sandbox without the added protections: find + cat")

        def pair(results, name):
            return statistics.median(results[name]), min(results[name])

        s_base = pair(startup, "bwrap --ro-bind / / true")
        s_rg = pair(startup, "rootguard run -- true")
        h_base = pair(heavy, "find REPO -type f (no sandbox)")
        h_in = pair(heavy, "find inside the sandbox (printed command line)")
        h_all = pair(heavy, "rootguard run --root REPO -- find ...")
        r_base = pair(repeated, "5x find in one shell (no sandbox)")
        r_in = pair(repeated, "5x find in one shell (inside the sandbox)")
        print("\nSummary (median / best round; the machine is shared, so the best round is the unloaded figure):")
        for label, (rg, base) in (("median", (s_rg[0], s_base[0])), ("best", (s_rg[1], s_base[1]))):
            print(f"  start-up, {label}: rootguard run -- true is {1000 * (rg - base):.0f} ms above bare bubblewrap "
                  f"(target: within 150 ms) -> {'met' if rg - base <= 0.150 else 'NOT met'}")
        for label, i in (("median", 0), ("best", 1)):
            ratio = h_in[i] / h_base[i]
            print(f"  file-heavy, {label}: inside/outside {ratio:.2f}x (target 1.2x) -> "
                  f"{'met' if ratio <= 1.2 else 'NOT met'}; with rootguard run's own start-up "
                  f"{h_all[i] / h_base[i]:.2f}x")
        for what in ("true", "find + cat"):
            rg_t = statistics.median(side[f"rootguard run --root REPO -- {what}"])
            bare_t = statistics.median(side[f"bare bwrap: {what}"])
            print(f"  {what}: rootguard run {1000 * rg_t:.0f} ms, bare bubblewrap {1000 * bare_t:.0f} ms "
                  f"({rg_t / bare_t:.2f}x, {1000 * (rg_t - bare_t):+.0f} ms)")
        print(f"  per-file, median: five walks inside/outside {r_in[0] / r_base[0]:.2f}x (a single walk also pays the "
              f"sandbox's fixed start-up, {1000 * (h_in[0] - h_base[0]):.0f} ms: bubblewrap and the Landlock shim)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
