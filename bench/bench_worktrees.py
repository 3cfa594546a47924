"""Native worktree discovery vs ``git worktree list --porcelain``.

Builds a repository with 50 linked worktrees in a temporary directory, then
times ``locate()`` + ``sibling_worktrees()`` against the git subprocess on the
same repository, from the main checkout and from one linked worktree, in
interleaved rounds so machine load hits both alike. ``locate`` keeps nothing
between calls (its answer decides roots), so every call reads every file.

``--dir DIR`` measures an existing checkout instead (any folder of a repository,
main or linked; nothing is built or changed there).

Run: ``.venv/bin/python bench/bench_worktrees.py [--dir DIR]``  (target: native no slower than git)
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from lsp_bridge.core.worktrees import locate, sibling_worktrees  # noqa: E402

WORKTREES = 50
SMALL = 3  # a more typical repository, for context
ROUNDS = 7  # best-of / median over rounds of many iterations each


def git_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(
        GIT_AUTHOR_NAME="bench", GIT_AUTHOR_EMAIL="bench@example.invalid",
        GIT_COMMITTER_NAME="bench", GIT_COMMITTER_EMAIL="bench@example.invalid",
        GIT_CONFIG_NOSYSTEM="1", GIT_CONFIG_GLOBAL=os.devnull,
    )
    return env


def git(*args: str, cwd: str) -> str:
    done = subprocess.run(["git", *args], cwd=cwd, env=git_env(), check=True, capture_output=True, text=True)
    return done.stdout


def build(base: str, count: int) -> str:
    main = os.path.join(base, "main")
    os.makedirs(main)
    git("init", "-q", "-b", "main", cwd=main)
    with open(os.path.join(main, "README"), "w") as handle:
        handle.write("bench\n")
    git("add", "README", cwd=main)
    git("commit", "-q", "-m", "init", cwd=main)
    for i in range(count):
        git("worktree", "add", "-q", "-b", f"wt{i}", os.path.join(base, f"wt{i:02d}"), cwd=main)
    return main


def interleaved(runs, counts) -> list[list[float]]:
    """Seconds per call for each round, alternating the runs so load hits all alike."""
    samples: list[list[float]] = [[] for _ in runs]
    for _ in range(ROUNDS):
        for run, count, out in zip(runs, counts, samples, strict=False):
            out.append(per_round(run, count))
    return samples


def per_round(fn, iterations: int) -> float:
    start = time.perf_counter()
    for _ in range(iterations):
        fn()
    return (time.perf_counter() - start) / iterations


def native(folder: str):
    def run():
        found = locate(folder)
        return sibling_worktrees(found.location)
    return run


def porcelain(folder: str):
    env = git_env()

    def run():
        subprocess.run(
            ["git", "worktree", "list", "--porcelain"],
            cwd=folder, env=env, check=True, capture_output=True,
        )
    return run


def given(folder: str) -> tuple[tuple[str, str, int, str], ...]:
    """The one case ``--dir`` names: its sibling count and common directory, as git says."""
    listed = git("worktree", "list", "--porcelain", cwd=folder).count("worktree ")
    common = os.path.realpath(os.path.join(folder, git("rev-parse", "--git-common-dir", cwd=folder).strip()))
    label = f"{os.path.basename(folder) or folder} ({listed - 1} other)"
    return ((label[:20], folder, listed - 1, common),)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", help="an existing checkout to measure instead of the built ones")
    options = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="rg-bench-wt-") as tmp:
        if options.dir:
            if not os.path.isdir(options.dir):
                parser.error(f"--dir {options.dir}: not a directory")
            cases = given(os.path.realpath(options.dir))
        else:
            base = os.path.realpath(tmp)
            big = build(os.path.join(base, "big"), WORKTREES)
            small = build(os.path.join(base, "small"), SMALL)
            common = os.path.join(big, ".git")
            cases = (
                (f"{WORKTREES} linked: main", big, WORKTREES, common),
                (f"{WORKTREES} linked: wt25", os.path.join(base, "big", "wt25"), WORKTREES, common),
                (f"{SMALL} linked: main", small, SMALL, common),
            )
        rows = []
        for label, folder, expected, _common in cases:
            assert len(native(folder)()) == expected, label
            samples = interleaved([native(folder), porcelain(folder)], (100, 20))
            rows.append((label, *samples))
    print(f"{'repository / folder':<20} {'locate + siblings':>20} {'git worktree list':>20} {'git/ours':>9}")
    for label, ours, theirs in rows:
        ratio = statistics.median(theirs) / statistics.median(ours)
        print(f"{label:<20} {fmt(ours):>20} {fmt(theirs):>20} {ratio:>8.1f}x")
    print(f"median / best ms per call over {ROUNDS} interleaved rounds; ratios from medians; "
          "target: ratio >= 1x (never slower than asking git); every call reads every file (nothing is cached)")
    return 0


def fmt(samples: list[float]) -> str:
    return f"{statistics.median(samples) * 1e3:.3f} / {min(samples) * 1e3:.3f} ms"


if __name__ == "__main__":
    sys.exit(main())
