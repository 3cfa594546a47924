"""Inventory speed and memory on the seed's ~61,000-file monorepo, beside find + du.

    python bench/bench_inventory.py [--dir DIR] [--files 61000] [--commits 300] [--repeat 5]

Builds the monorepo under DIR (or reuses the one already there), then prints in
one run:
  * a cold inventory of the repository root (fresh cache, imports warm) beside
    ``find ROOT -type f | wc -l`` plus ``du -sb ROOT/.git`` (target <= 1.3x),
    with the git history part (commit count, deleted files) shown apart;
  * the re-inventory after touching one file (file_changed + report; target <= 50 ms);
  * the peak RSS of a fresh process that imports the inventory and runs it
    (target <= 80 MB), beside one that only imports it.
Timings are the best of --repeat runs, with the median in brackets.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

from lsp_bridge import inventory as inventory_module  # noqa: E402
from lsp_bridge.demo_repo import REPO_NAME, build_large_monorepo  # noqa: E402
from lsp_bridge.inventory import InventoryCache  # noqa: E402
from lsp_bridge.secrets_scan import _detectors  # noqa: E402

MARKER = ".bench-built"


def ensure_repo(directory: str, files: int, commits: int) -> tuple[str, str]:
    """(repository root, narrow package): built once, reused when the marker matches."""
    repo = os.path.join(directory, REPO_NAME)
    marker = os.path.join(directory, MARKER)
    wanted = f"{files} {commits}\n"
    if os.path.exists(marker) and open(marker).read() == wanted:
        print(f"reusing {repo}")
    else:
        if os.path.exists(repo):
            sys.exit(f"{repo} exists but was not built by this bench for {wanted.strip()}: "
                     "choose another --dir")
        os.makedirs(directory, exist_ok=True)
        started = time.perf_counter()
        build_large_monorepo(directory, total_files=files, commits=commits)
        with open(marker, "w") as handle:
            handle.write(wanted)
        print(f"built {repo} in {time.perf_counter() - started:.1f} s")
    return repo, os.path.join(repo, "packages", "checkout")


def timed(function, repeat: int) -> tuple[float, float, object]:
    """(best, median, last result) of ``repeat`` calls, in seconds."""
    times, result = [], None
    for _ in range(repeat):
        started = time.perf_counter()
        result = function()
        times.append(time.perf_counter() - started)
    return min(times), statistics.median(times), result


def baseline(repo: str) -> str:
    command = f"find '{repo}' -type f | wc -l; du -sb '{repo}/.git'"
    return subprocess.run(["sh", "-c", command], capture_output=True, text=True,
                          check=True).stdout


def git_history(repo: str) -> None:
    common = os.path.join(repo, ".git")
    inventory_module._commit_count(common)
    inventory_module._deleted_sensitive(common)


def peak_rss(repo: str, narrow: str, run: bool) -> float:
    """Peak RSS in MB of a fresh interpreter that imports (and maybe runs) the inventory.

    Linux's ru_maxrss survives fork+exec (a child reports its parent's peak when
    that was higher), so the child reads its own high-water mark, VmHWM, where it can.
    """
    body = (
        "import resource, sys\n"
        "from lsp_bridge.inventory import inventory\n"
        "from lsp_bridge.secrets_scan import _detectors\n"
        + (f"r = inventory([{narrow!r}], [{repo!r}])\n" if run else "_detectors()\n")
        + "try:\n"
        "    hwm = [l for l in open('/proc/self/status') if l.startswith('VmHWM:')]\n"
        "    print(int(hwm[0].split()[1]) / 1024)\n"
        "except (OSError, IndexError):\n"
        "    kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss\n"
        "    print(kb / 1024 if sys.platform != 'darwin' else kb / 1048576)\n"
    )
    out = subprocess.run([sys.executable, "-c", body], capture_output=True, text=True,
                         check=True, cwd=os.path.dirname(HERE))
    return float(out.stdout.strip())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", default=os.path.join(tempfile.gettempdir(), "rootguard-bench"))
    parser.add_argument("--files", type=int, default=61_000)
    parser.add_argument("--commits", type=int, default=300)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    repo, narrow = ensure_repo(os.path.realpath(args.dir), args.files, args.commits)
    _detectors()  # import detect-secrets once, outside the timings

    base_best, base_median, out = timed(lambda: baseline(repo), args.repeat)
    found, git_bytes = out.split()[0], out.split()[1]

    def cold():
        cache = InventoryCache()
        return cache, cache.report([narrow], [repo])

    cold_best, cold_median, (cache, report) = timed(cold, args.repeat)
    hist_best, hist_median, _ = timed(lambda: git_history(repo), args.repeat)
    walk_best, walk_median = cold_best - hist_best, cold_median - hist_median

    touched = os.path.join(repo, "packages", "ui", "src", "m000", "f00.ts")
    scanned = cache.dirs_scanned

    def touch_one():
        os.utime(touched)
        cache.file_changed(touched)
        return cache.report([narrow], [repo])

    touch_best, touch_median, again = timed(touch_one, args.repeat)
    listed = (cache.dirs_scanned - scanned) / args.repeat
    assert again.files_after == report.files_after

    secret = os.path.join(repo, ".env.local")

    def add_and_remove_secret():
        with open(secret, "w") as handle:
            handle.write("API_TOKEN=Ab12Cd34Ef56Gh78\n")
        cache.file_changed(secret)
        seen = cache.report([narrow], [repo])
        os.remove(secret)
        cache.file_changed(secret)
        return seen

    secret_best, secret_median, seen = timed(add_and_remove_secret, args.repeat)
    assert os.path.join(repo, ".env.local") in [c.path for c in seen.credentials]

    rss_import = peak_rss(repo, narrow, run=False)
    rss_run = peak_rss(repo, narrow, run=True)

    ms = lambda s: f"{s * 1000:8.1f} ms"  # noqa: E731
    print(f"\nrepository {repo}: {report.files_after:,} files counted "
          f"(find -type f: {int(found):,} incl. .git and store), .git {int(git_bytes):,} B, "
          f"{report.git[0].commits} commits; {report.summary_line()}")
    print(f"{'measure':44} {'best':>11} {'median':>11}   baseline / target")
    print(f"{'find -type f | wc -l; du -sb .git':44} {ms(base_best)} {ms(base_median)}")
    print(f"{'inventory cold: walk + stores + .git size':44} {ms(walk_best)} {ms(walk_median)}"
          f"   x{walk_best / base_best:.2f} of find+du (target <= 1.3)")
    print(f"{'inventory cold: git history (rev-list, log)':44} {ms(hist_best)} {ms(hist_median)}"
          "   (no baseline: find/du do not read history)")
    print(f"{'inventory cold: total report()':44} {ms(cold_best)} {ms(cold_median)}"
          f"   x{cold_best / base_best:.2f} of find+du")
    print(f"{'re-inventory after touching one file':44} {ms(touch_best)} {ms(touch_median)}"
          f"   target <= 50 ms ({listed:.0f} directory listed per update)")
    print(f"{'create .env.local at the root, report, delete':44} {ms(secret_best)} "
          f"{ms(secret_median)}   target <= 50 ms (two updates, one report)")
    print(f"{'peak RSS, import + detectors loaded':44} {rss_import:8.1f} MB")
    print(f"{'peak RSS, import + inventory of the root':44} {rss_run:8.1f} MB"
          "   target <= 80 MB")


if __name__ == "__main__":
    main()
