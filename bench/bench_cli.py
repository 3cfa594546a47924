"""Whole-process ``rootguard`` commands beside their baselines, on any directory.

    python bench/bench_cli.py --dir DIR [--add SUBDIR] [--rounds 15]
    python bench/bench_cli.py --build 6000 --dir DIR   # build a make_shop-style monorepo there first

What the user waits for is a whole process, so each command is timed as one
(spawn to exit), alternating with its baseline round after round so a busy
machine slows both alike; the figure is the median of the per-round ratios:

* ``rootguard inventory --root DIR/SUBDIR --add DIR`` beside
  ``find DIR -type f | wc -l; du -sb DIR/.git`` over the same tree
  (targets: <= 2.5x at 60k files, <= 4x at 6k);
* ``rootguard roots DIR`` and ``rootguard check --root DIR --op read DIR/x`` beside
  a bare ``python -c pass`` (target: <= 2.5x, independent of the tree's size); ``roots``
  also with stderr a terminal (a pty), as a person runs it.

In process (imports warm, nothing cached between rounds), the same three beside
the same baselines are printed too: the inventory report beside find+du (also
with the git history kept between runs, as the language server finds it), the
``roots`` report beside ``git worktree list --porcelain`` (the one git command that
answers part of it), the ``check`` decision beside ``os.path.realpath`` of the path.
``SUBDIR`` defaults to the first directory found under ``DIR/packages`` (a
make_shop-style tree), else the first subdirectory.

As a user's installed package runs: the command is the ``rootguard`` console
script next to this Python (``python -m lsp_bridge.cli`` when there is none), the
package is byte-compiled first (``compileall``) and the measured processes run
without ``PYTHONDONTWRITEBYTECODE``, so they load ``.pyc`` files instead of
compiling the sources on every start. The caches that persist between runs (the
detect-secrets patterns, the git history keyed by every ref) live in a temporary
cache directory filled by one untimed run first (as on any machine after the
first run); ``--cold-cache`` empties it before every inventory round instead.
"""

from __future__ import annotations

import argparse
import compileall
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def timed(command: list[str] | str, env: dict, *, shell: bool = False, ok: tuple[int, ...] = (0,),
          stderr: int = subprocess.PIPE) -> float:
    started = time.perf_counter()
    done = subprocess.run(command, env=env, shell=shell, stdout=subprocess.DEVNULL, stderr=stderr)
    elapsed = time.perf_counter() - started
    if done.returncode not in ok:
        sys.exit(f"{command} exited {done.returncode}: {done.stderr.decode(errors='replace').strip()}")
    return elapsed


def paired(ours, baseline, rounds: int) -> tuple[float, float, float]:
    """(median ours, median baseline, median of per-round ratios), alternating each round."""
    mine, base, ratios = [], [], []
    ours(), baseline()  # warm the page cache and the interpreter's files
    for _ in range(rounds):
        b = baseline()
        o = ours()
        mine.append(o)
        base.append(b)
        ratios.append(o / b)
    return statistics.median(mine), statistics.median(base), statistics.median(ratios)


def pick_narrow(directory: Path) -> Path:
    packages = directory / "packages"
    for parent in (packages, directory):
        if parent.is_dir():
            subdirs = sorted(p for p in parent.iterdir() if p.is_dir() and not p.name.startswith("."))
            if subdirs:
                return subdirs[0]
    return directory


USER_CONFIG = """\
version = 2  # a user file as docs/configuration.md shows one: secrets held back, the store read-only
[[paths]]
id = "no-env"
path = "/"
policies = { read = "deny" }
includes = ["**/.env", "**/.env.*"]
[[paths]]
id = "keys"
path = "/"
policies = { read = "request" }
includes = ["**/*.pem", "**/id_rsa*"]
"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", required=True, help="any directory (a repository for the .git figure)")
    parser.add_argument("--add", help="the narrow folder inside DIR (default: the first package)")
    parser.add_argument("--build", type=int, metavar="FILES", help="first build a monorepo of FILES files in DIR")
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--cold-cache", action="store_true",
                        help="empty the cache directory before every inventory round (a first run each time)")
    args = parser.parse_args()
    directory = Path(os.path.realpath(args.dir))
    if args.build:
        from lsp_bridge.cli.demo_repo import REPO_NAME, build_large_monorepo

        build_large_monorepo(str(directory), total_files=args.build, commits=100)
        directory = directory / REPO_NAME
    if not directory.is_dir():
        sys.exit(f"{directory} is not a directory")
    narrow = Path(os.path.realpath(args.add)) if args.add else pick_narrow(directory)
    files = sum(len(f) for _, _, f in os.walk(directory))
    git = directory / ".git"

    cache = tempfile.mkdtemp(prefix="rg-bench-cache-")
    env = {k: v for k, v in os.environ.items()
           if k not in ("ROOTGUARD_CONFIG", "ROOTGUARD_ROOTS", "PYTHONDONTWRITEBYTECODE")}
    env.update(XDG_CACHE_HOME=cache, XDG_CONFIG_HOME=os.path.join(cache, "config"))  # no user file
    compileall.compile_dir(str(ROOT / "lsp_bridge"), quiet=1)  # an installed package has its .pyc files
    script = Path(sys.executable).with_name("rootguard")
    rootguard = [str(script)] if script.is_file() else [sys.executable, "-m", "lsp_bridge.cli"]
    find_du = f"find {_q(directory)} -type f | wc -l; du -sb {_q(git)} 2>/dev/null || true"
    inventory = [*rootguard, "inventory", "--root", str(narrow), "--add", str(directory)]
    timed(inventory, env)  # fills the persistent caches

    def run_inventory() -> float:
        if args.cold_cache:
            shutil.rmtree(cache, ignore_errors=True)
        return timed(inventory, env)

    print(f"{directory}: {files:,} files; narrow folder {narrow}; {os.cpu_count()} CPUs; "
          f"medians of {args.rounds} alternating rounds; command {' '.join(rootguard)}; "
          f"{'cold' if args.cold_cache else 'warm'} persistent cache\n")
    print(f"{'whole process':<46} | {'ours s':>8} | {'baseline s':>10} | {'ratio':>7} | target")
    print("-" * 96)
    o, b, r = paired(run_inventory, lambda: timed(find_du, env, shell=True), args.rounds)
    target = "<= 2.5x (60k files), <= 4x (6k)"
    print(f"{'rootguard inventory  vs  find|wc -l; du -sb':<46} | {o:>8.3f} | {b:>10.3f} | {r:>6.2f}x | {target}")
    bare = [sys.executable, "-c", "pass"]
    for label, command in (
        ("rootguard roots DIR  vs  python -c pass", [*rootguard, "roots", str(directory)]),
        ("rootguard check  vs  python -c pass",
         [*rootguard, "check", "--root", str(directory), "--op", "read", str(directory / "README.md")]),
    ):
        o, b, r = paired(lambda command=command: timed(command, env, ok=(0, 1, 3)), lambda: timed(bare, env), args.rounds)
        print(f"{label:<46} | {o:>8.3f} | {b:>10.3f} | {r:>6.2f}x | <= 2.5x")
    # As most users run it: a user configuration file (reading TOML imports the standard tomllib).
    configured = dict(env, XDG_CONFIG_HOME=os.path.join(cache, "configured"))
    os.makedirs(os.path.join(configured["XDG_CONFIG_HOME"], "rootguard"), exist_ok=True)
    Path(configured["XDG_CONFIG_HOME"], "rootguard", "config.toml").write_text(USER_CONFIG)
    checked = [*rootguard, "check", "--root", str(directory), "--op", "read", str(directory / "README.md")]
    o, b, r = paired(lambda: timed(checked, configured, ok=(0, 1, 3)), lambda: timed(bare, configured), args.rounds)
    print(f"{'rootguard check, a user configuration file':<46} | {o:>8.3f} | {b:>10.3f} | {r:>6.2f}x | (<= 2.5x)")
    # At a terminal (stderr a pty), as a person runs it: the progress spinner is armed.
    import pty

    leader, follower = pty.openpty()
    try:
        roots_tty = [*rootguard, "roots", str(directory)]
        o, b, r = paired(lambda: timed(roots_tty, env, stderr=follower),
                         lambda: timed(bare, env, stderr=follower), args.rounds)
    finally:
        os.close(follower)
        os.close(leader)
    print(f"{'rootguard roots DIR, stderr a terminal':<46} | {o:>8.3f} | {b:>10.3f} | {r:>6.2f}x | <= 2.5x")

    # In process: the same work with the imports (and the detect-secrets patterns) loaded.
    os.environ["XDG_CACHE_HOME"] = cache
    os.environ["XDG_CONFIG_HOME"] = os.path.join(cache, "config")
    from lsp_bridge.core.session import open_session
    from lsp_bridge.inventory.report import roots_report
    from lsp_bridge.inventory.scan import InventoryCache, warm_up

    warm_up()

    def in_process(work) -> float:
        started = time.perf_counter()
        work()
        return time.perf_counter() - started

    def report() -> None:
        InventoryCache(persistent=False).report((str(narrow),), (str(directory),))

    def report_kept() -> None:
        InventoryCache().report((str(narrow),), (str(directory),))

    def roots() -> None:
        roots_report(open_session([str(directory)]))

    def check() -> None:
        open_session([str(directory)]).policy.decide("read", str(directory / "README.md"))

    readme = str(directory / "README.md")
    worktree_list = ["git", "-C", str(directory), "worktree", "list", "--porcelain"]
    print(f"\n{'in process (imports warm, nothing cached)':<46} | {'ours s':>8} | {'baseline s':>10} | {'ratio':>7} | target")
    print("-" * 96)
    for label, work, baseline, target in (
        ("inventory report  vs  find|wc -l; du -sb", report, lambda: timed(find_du, env, shell=True), "<= 1.3x"),
        ("  same, git history kept between runs", report_kept, lambda: timed(find_du, env, shell=True), "<= 1.3x"),
        ("roots report  vs  git worktree list", roots, lambda: timed(worktree_list, env, ok=(0, 128)), "-"),
        ("check decision  vs  os.path.realpath(PATH)", check, lambda: in_process(lambda: os.path.realpath(readme)), "-"),
    ):
        o, b, r = paired(lambda work=work: in_process(work), baseline, args.rounds)
        print(f"{label:<46} | {o:>8.4f} | {b:>10.4f} | {r:>6.2f}x | {target}")
    shutil.rmtree(cache, ignore_errors=True)
    return 0


def _q(path: Path) -> str:
    import shlex

    return shlex.quote(str(path))


if __name__ == "__main__":
    sys.exit(main())
