"""Native worktree discovery vs ``git worktree list --porcelain``.

Builds a repository with 50 linked worktrees in a temporary directory, then
times ``locate()`` + ``sibling_worktrees()`` against the git subprocess on the
same repository, from the main checkout and from one linked worktree, in
interleaved rounds so machine load hits all three alike:

* cold: ``clear_cache()`` before every call, so every file is read;
* warm: the worktree cache is used, each entry validated by ``lstat``
  signatures (what a language server sees on its second and later calls);
* git: ``git worktree list --porcelain``.

The worktree cache never trusts a file changed within ``RACY_WINDOW_NS``, so
the script waits that long after building before it measures.

``--dir DIR`` measures an existing checkout instead (any folder of a repository,
main or linked; nothing is built or changed there).

Run: ``.venv/bin/python bench/bench_worktrees.py [--dir DIR]``  (target: native >= 20x faster)
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

from lsp_bridge.core.worktrees import (  # noqa: E402
    RACY_WINDOW_NS,
    cache_info,
    clear_cache,
    locate,
    sibling_worktrees,
)

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


def cold(folder: str):
    warm = native(folder)

    def run():
        clear_cache()
        return warm()
    return run


def floor(common: str):
    """The bare syscalls any per-call validation makes: per worktree, the gitdir
    and .git signatures and the presence of ``locked``; no Python work besides."""
    store = os.path.join(common, "worktrees")
    admins = sorted(os.path.join(store, n) for n in os.listdir(store)) if os.path.isdir(store) else []
    triples = []
    for admin in admins:
        with open(os.path.join(admin, "gitdir")) as handle:
            triples.append((admin + "/gitdir", admin + "/locked", handle.read().strip()))

    def run():
        for gitdir, locked, dot_git in triples:
            os.lstat(gitdir)
            os.access(locked, os.F_OK, follow_symlinks=False)
            os.lstat(dot_git)
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
            time.sleep(RACY_WINDOW_NS / 1e9 + 0.2)  # let the new files settle (see the docstring)
            common = os.path.join(big, ".git")
            cases = (
                (f"{WORKTREES} linked: main", big, WORKTREES, common),
                (f"{WORKTREES} linked: wt25", os.path.join(base, "big", "wt25"), WORKTREES, common),
                (f"{SMALL} linked: main", small, SMALL, common),
            )
        rows = []
        for label, folder, expected, common_dir in cases:
            assert len(cold(folder)()) == expected == len(native(folder)()), label
            runs = [cold(folder), native(folder), porcelain(folder), floor(common_dir)]
            samples = interleaved(runs, (50, 200, 20, 200))
            clear_cache()
            native(folder)()
            before = cache_info()
            native(folder)()
            after = cache_info()
            assert after.hits - before.hits == expected and after.misses == before.misses, "warm missed"
            rows.append((label, *samples))
    print(f"{'repository / folder':<20} {'cold (no cache)':>20} {'warm (cache)':>20} "
          f"{'git worktree list':>20} {'git/cold':>9} {'git/warm':>9}")
    floors = []
    for label, ours_cold, ours_warm, theirs, bare in rows:
        git_ms = statistics.median(theirs)
        floors.append(git_ms / statistics.median(bare))
        print(f"{label:<20} {fmt(ours_cold):>20} {fmt(ours_warm):>20} {fmt(theirs):>20} "
              f"{git_ms / statistics.median(ours_cold):>8.1f}x {git_ms / statistics.median(ours_warm):>8.1f}x")
    bare = statistics.median([x for row in rows for x in row[4]])
    print(f"median / best ms per call over {ROUNDS} interleaved rounds; ratios from medians; "
          "target: ratio >= 20x")
    print("cold: clear_cache() before every call, every file read; warm: every worktree entry "
          "served from the cache after its lstat signatures were checked (asserted)")
    linked = cases[0][2] if options.dir else WORKTREES
    if linked:
        print(f"floor: the {3 * linked} bare syscalls any per-call validation of {linked} worktrees makes "
              f"(2 lstat + 1 access each, no Python work) take {bare * 1e3:.3f} ms here: "
              f"git / floor = {statistics.median(floors):.1f}x is the most any such cache can reach "
              f"on the {linked}-worktree rows")
    return 0


def fmt(samples: list[float]) -> str:
    return f"{statistics.median(samples) * 1e3:.3f} / {min(samples) * 1e3:.3f} ms"


if __name__ == "__main__":
    sys.exit(main())
