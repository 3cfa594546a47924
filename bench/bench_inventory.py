"""Inventory speed and memory on the seed's ~61,000-file monorepo, beside find + du.

    python bench/bench_inventory.py [--dir DIR] [--files 61000] [--commits 300] [--repeat 11]

Builds the monorepo under DIR (or reuses the one already there), then prints in
one run:
  * a cold inventory of the repository root (fresh cache, imports warm) beside
    ``find ROOT -type f | wc -l`` plus ``du -sb ROOT/.git`` (target <= 1.3x), the same
    with the git history kept between runs (every ref unchanged), and the whole
    ``rootguard inventory`` process beside the same baseline (<= 2.5x at 60k files),
    with the scans it keeps between runs (``inventory/scan_store.py``) and without
    (a first run). The bench keeps its caches in a temporary directory of its own.
    The git history (commit count, deleted files) is read by git processes
    running while the tree is walked; it is also timed alone, as is the walk;
  * the re-inventory after touching one file (file_changed + report; target <= 50 ms);
  * the cold-start costs in a fresh process: importing the module, and
    ``warm_up()`` (the detect-secrets imports a first report would otherwise pay);
  * the peak RSS of a fresh process that imports the inventory and runs it
    (target <= 80 MB), beside one that only imports it.
The cold inventory and the baseline run alternately, round after round, so a
busy machine slows both alike. Timings: best of --repeat runs, then the median;
"paired" is the median of the per-round ratios.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

from lsp_bridge.cli.demo_repo import REPO_NAME, build_large_monorepo  # noqa: E402
from lsp_bridge.inventory import scan as inventory_module  # noqa: E402
from lsp_bridge.inventory.scan import InventoryCache, warm_up  # noqa: E402

MARKER = ".bench-built"


def ensure_repo(directory: str, files: int, commits: int) -> tuple[str, str]:
    """(repository root, narrow folder) for any ``--dir``.

    A directory this bench built (its marker matches) is reused; an empty or
    missing one is built; any other existing tree is measured as it is: its
    ``shop`` repository when it holds one, else the directory itself, with the
    narrow folder ``packages/checkout`` when there is one, else its first
    package or subdirectory.
    """
    repo = os.path.join(directory, REPO_NAME)
    marker = os.path.join(directory, MARKER)
    wanted = f"{files} {commits}\n"
    if os.path.exists(marker) and Path(marker).read_text() == wanted:
        print(f"reusing {repo}")
    elif os.path.isdir(directory) and os.listdir(directory):
        repo = repo if os.path.isdir(repo) else directory
        print(f"measuring the existing tree {repo}")
        return repo, narrow_folder(repo)
    else:
        os.makedirs(directory, exist_ok=True)
        started = time.perf_counter()
        build_large_monorepo(directory, total_files=files, commits=commits)
        with open(marker, "w") as handle:
            handle.write(wanted)
        print(f"built {repo} in {time.perf_counter() - started:.1f} s")
    return repo, os.path.join(repo, "packages", "checkout")


def narrow_folder(repo: str) -> str:
    """``packages/checkout``, else the first package, else the first subdirectory, else the tree."""
    if os.path.isdir(os.path.join(repo, "packages", "checkout")):
        return os.path.join(repo, "packages", "checkout")
    for parent in (os.path.join(repo, "packages"), repo):
        if os.path.isdir(parent):
            subdirs = sorted(e.path for e in os.scandir(parent)
                             if e.is_dir(follow_symlinks=False) and not e.name.startswith("."))
            if subdirs:
                return subdirs[0]
    return repo


def timed(function, repeat: int) -> tuple[float, float, object]:
    """(best, median, last result) of ``repeat`` calls, in seconds."""
    times, result = [], None
    for _ in range(repeat):
        started = time.perf_counter()
        result = function()
        times.append(time.perf_counter() - started)
    return min(times), statistics.median(times), result


def alternate(ours, theirs, repeat: int) -> tuple[list[float], list[float], object]:
    """Times of ``ours`` and ``theirs`` run in turns (who goes first alternates too)."""
    times: dict = {ours: [], theirs: []}
    result = None
    for round_ in range(repeat):
        for function in (ours, theirs) if round_ % 2 == 0 else (theirs, ours):
            started = time.perf_counter()
            value = function()
            times[function].append(time.perf_counter() - started)
            if function is ours:
                result = value
    return times[ours], times[theirs], result


def baseline(repo: str) -> str:
    command = f"find '{repo}' -type f | wc -l; du -sb '{repo}/.git'"
    return subprocess.run(["sh", "-c", command], capture_output=True, text=True,
                          check=True).stdout


def whole_process(repo: str, narrow: str) -> None:
    """``rootguard inventory --root NARROW --add REPO`` as a user runs it (console script, .pyc files)."""
    script = Path(sys.executable).with_name("rootguard")
    command = [str(script)] if script.is_file() else [sys.executable, "-m", "lsp_bridge.cli"]
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    subprocess.run([*command, "inventory", "--root", narrow, "--add", repo], env=env, check=True,
                   stdout=subprocess.DEVNULL, cwd=os.path.dirname(HERE))


def git_history(repo: str) -> None:
    common = os.path.join(repo, ".git")
    inventory_module._History(common, ()).result()


def walk_only(repo: str) -> None:
    InventoryCache(persistent=False)._ensure(repo, None)


def fresh_process_ms(statement: str, repeat: int = 3) -> float:
    """Best time, in ms, of ``statement`` run in a fresh interpreter (timed inside it).

    Byte code is cached in a scratch directory (one untimed run first), as it
    would be for an installed package, even where the environment turns caching off.
    """
    body = ("import time\nstarted = time.perf_counter()\n" + statement
            + "\nprint((time.perf_counter() - started) * 1000)\n")
    with tempfile.TemporaryDirectory() as cache:
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        env["PYTHONPYCACHEPREFIX"] = cache
        runs = [float(subprocess.run([sys.executable, "-c", body], capture_output=True,
                                     text=True, check=True, env=env,
                                     cwd=os.path.dirname(HERE)).stdout)
                for _ in range(repeat + 1)]
    return min(runs[1:])


def peak_rss(repo: str, narrow: str, run: bool) -> float:
    """Peak RSS in MB of a fresh interpreter that imports (and maybe runs) the inventory.

    Linux's ru_maxrss survives fork+exec (a child reports its parent's peak when
    that was higher), so the child reads its own high-water mark, VmHWM, where it can.
    """
    body = (
        "import resource, sys\n"
        "from lsp_bridge.inventory.scan import inventory, warm_up\n"
        + (f"r = inventory([{narrow!r}], [{repo!r}])\n" if run else "warm_up()\n")
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
    parser.add_argument("--repeat", type=int, default=11)
    args = parser.parse_args()
    # The bench's own cache directory (the history answers, the kept scans), never the user's.
    os.environ["XDG_CACHE_HOME"] = tempfile.mkdtemp(prefix="rg-bench-cache-")
    repo, narrow = ensure_repo(os.path.realpath(args.dir), args.files, args.commits)
    import compileall

    compileall.compile_dir(os.path.join(os.path.dirname(HERE), "lsp_bridge"), quiet=1)  # .pyc, as installed
    warm_up()  # import detect-secrets once, outside the timings
    load_before = os.getloadavg()[0]

    def cold():
        cache = InventoryCache(persistent=False)  # the git history read afresh each round
        return cache, cache.report([narrow], [repo])

    def kept():  # the history kept between runs (every ref unchanged since the first round)
        return InventoryCache().report([narrow], [repo])

    cold_times, base_times, (cache, report) = alternate(cold, lambda: baseline(repo),
                                                         args.repeat)
    kept()  # fills the store
    kept_times, kept_base, _ = alternate(kept, lambda: baseline(repo), args.repeat)
    kept_paired = statistics.median(o / b for o, b in zip(kept_times, kept_base, strict=False))
    whole_times, whole_base, _ = alternate(lambda: whole_process(repo, narrow), lambda: baseline(repo),
                                           args.repeat)
    whole_paired = statistics.median(o / b for o, b in zip(whole_times, whole_base, strict=False))
    scans = os.path.join(os.environ["XDG_CACHE_HOME"], "rootguard", "scans")

    def whole_process_first() -> None:  # as before any run: no scans kept (the history still is)
        shutil.rmtree(scans, ignore_errors=True)
        whole_process(repo, narrow)

    first_times, first_base, _ = alternate(whole_process_first, lambda: baseline(repo), args.repeat)
    first_paired = statistics.median(o / b for o, b in zip(first_times, first_base, strict=False))
    found, git_bytes = baseline(repo).split()[:2]
    paired = statistics.median(o / b for o, b in zip(cold_times, base_times, strict=False))
    hist_best, hist_median, _ = timed(lambda: git_history(repo), args.repeat)
    walk_best, walk_median, _ = timed(lambda: walk_only(repo), args.repeat)

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

    import_ms = fresh_process_ms("import lsp_bridge.inventory.scan")
    warm_ms = fresh_process_ms("import lsp_bridge.inventory.scan as m\nstarted = time.perf_counter()\n"
                               "m.warm_up()")
    rss_import = peak_rss(repo, narrow, run=False)
    rss_run = peak_rss(repo, narrow, run=True)

    ms = lambda s: f"{s * 1000:8.1f} ms"  # noqa: E731
    base_best, base_median = min(base_times), statistics.median(base_times)
    cold_best, cold_median = min(cold_times), statistics.median(cold_times)
    print(f"\nrepository {repo}: {report.files_after:,} files counted "
          f"(find -type f: {int(found):,} incl. .git and store), .git {int(git_bytes):,} B, "
          f"{report.git[0].commits} commits; {report.summary_line()}")
    print(f"{args.repeat} rounds; load average {load_before:.2f} before, "
          f"{os.getloadavg()[0]:.2f} after ({os.cpu_count()} CPUs)")
    print(f"{'measure':46} {'best':>11} {'median':>11}   baseline / target")
    print(f"{'find -type f | wc -l; du -sb .git':46} {ms(base_best)} {ms(base_median)}"
          "   the baseline")
    print(f"{'inventory cold: total report()':46} {ms(cold_best)} {ms(cold_median)}"
          f"   x{cold_best / base_best:.2f} best, x{cold_median / base_median:.2f} median, "
          f"x{paired:.2f} paired of find+du (target <= 1.3)")
    print(f"{'inventory, git history kept between runs':46} {ms(min(kept_times))} "
          f"{ms(statistics.median(kept_times))}   x{kept_paired:.2f} paired of find+du (target <= 1.3)")
    print(f"{'whole process: rootguard inventory':46} {ms(min(whole_times))} "
          f"{ms(statistics.median(whole_times))}   x{whole_paired:.2f} paired of find+du "
          "(target <= 2.5 at 60k files, <= 4 at 6k)")
    print(f"{'  same, no scans kept (a first run)':46} {ms(min(first_times))} "
          f"{ms(statistics.median(first_times))}   x{first_paired:.2f} paired of find+du")
    print(f"{'  the walk alone (tree, stores, credentials)':46} {ms(walk_best)} {ms(walk_median)}"
          f"   x{walk_best / base_best:.2f} of find+du")
    print(f"{'  git history alone (rev-list, log; parallel)':46} {ms(hist_best)} "
          f"{ms(hist_median)}   runs in git processes while the tree is walked")
    print(f"{'re-inventory after touching one file':46} {ms(touch_best)} {ms(touch_median)}"
          f"   target <= 50 ms ({listed:.0f} directory listed per update)")
    print(f"{'create .env.local at the root, report, delete':46} {ms(secret_best)} "
          f"{ms(secret_median)}   target <= 50 ms (two updates, one report)")
    print(f"{'fresh process: import lsp_bridge.inventory.scan':46} {import_ms:8.1f} ms")
    print(f"{'fresh process: warm_up() after the import':46} {warm_ms:8.1f} ms"
          "   paid by the first report unless warm_up() ran first")
    print(f"{'peak RSS, import + warm_up()':46} {rss_import:8.1f} MB")
    print(f"{'peak RSS, import + inventory of the root':46} {rss_run:8.1f} MB"
          "   target <= 80 MB")


if __name__ == "__main__":
    main()
