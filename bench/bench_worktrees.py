"""Native worktree discovery vs ``git worktree list --porcelain``.

Builds a repository with 50 linked worktrees in a temporary directory, then
times ``locate()`` + ``sibling_worktrees()`` against the git subprocess on the
same repository, from the main checkout and from one linked worktree.

Run: ``.venv/bin/python bench/bench_worktrees.py``  (target: native >= 20x faster)
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from lsp_bridge.worktrees import locate, sibling_worktrees  # noqa: E402

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


def interleaved(ours, theirs, ours_n: int, theirs_n: int) -> tuple[list[float], list[float]]:
    """Seconds per call for each round, alternating the two so load hits both alike."""
    a, b = [], []
    for _ in range(ROUNDS):
        a.append(per_round(ours, ours_n))
        b.append(per_round(theirs, theirs_n))
    return a, b


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


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="rg-bench-wt-") as tmp:
        base = os.path.realpath(tmp)
        big = build(os.path.join(base, "big"), WORKTREES)
        small = build(os.path.join(base, "small"), SMALL)
        cases = (
            (f"{WORKTREES} linked: main", big, WORKTREES),
            (f"{WORKTREES} linked: wt25", os.path.join(base, "big", "wt25"), WORKTREES),
            (f"{SMALL} linked: main", small, SMALL),
        )
        rows = []
        for label, folder, expected in cases:
            assert len(native(folder)()) == expected, label
            ours, theirs = interleaved(native(folder), porcelain(folder), 200, 20)
            rows.append((label, ours, theirs))
    print(f"{'repository / folder':<20} {'locate+siblings':>20} {'git worktree list':>20} {'ratio':>8}")
    for label, ours, theirs in rows:
        ratio = statistics.median(theirs) / statistics.median(ours)
        print(f"{label:<20} {fmt(ours):>20} {fmt(theirs):>20} {ratio:>7.1f}x")
    print(f"median / best ms per call over {ROUNDS} interleaved rounds; target: ratio >= 20x")
    return 0


def fmt(samples: list[float]) -> str:
    return f"{statistics.median(samples) * 1e3:.3f} / {min(samples) * 1e3:.3f} ms"


if __name__ == "__main__":
    sys.exit(main())
