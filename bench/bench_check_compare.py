"""The MCP server's in-process work, this checkout against another one, in alternating processes.

    python bench/bench_check_compare.py OTHER_CHECKOUT [--rounds 8] [--entries 1000] [--seconds 0.7]

``OTHER_CHECKOUT`` is another tree of this repository (``git worktree add ../old REV``);
its code runs on this environment's interpreter and packages. Each round starts one
process per checkout, in alternating order, and each process measures, in a warm loop,
the CPU time per call (the best of seven slices, ``mcp_bench.per_call``) of what
``bench_mcp_reference.py`` measures in process (``mcp_bench.in_process_calls``, on
``mcp_bench.listing_fixture``):

* ``open().read()`` of a 32 KB file (the baseline of issue 15's target);
* the ``read_file`` policy check (``FileTools.plan``: resolver, engine, plan);
* the whole ``read_file`` (check, audit line, read);
* ``list_directory`` of ``--entries`` files (plan, listing, decisions, audit line).

Printed: each checkout's medians, and the median over rounds of the per-round ratio
(this checkout ÷ the other) of each figure. On a machine whose speed drifts, this is
how to see what a change did: both sides of a ratio ran within a second of each other.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]

MEASURE = r'''
import os, sys, tempfile
from pathlib import Path
sys.path[:0] = [sys.argv[1], sys.argv[2]]  # the measured checkout's lsp_bridge first, then this one's bench helpers
from mcp_bench import in_process_calls, listing_fixture, per_call

with tempfile.TemporaryDirectory() as tmp:
    base = Path(os.path.realpath(tmp))
    os.environ.update(XDG_CONFIG_HOME=str(base / "config"), XDG_STATE_HOME=str(base / "state"),
                      XDG_CACHE_HOME=str(base / "cache"))
    root, listed, _ = listing_fixture(base, int(sys.argv[3]))
    calls = in_process_calls(root, listed, base / "audit.jsonl", big=root / "big.txt")
    seconds = float(sys.argv[4])
    print(*(per_call(calls[name], [None], seconds) for name in ("read", "check", "whole", "listing")))
'''

LABELS = ("open().read() 32 KB", "read_file check", "whole read_file", "list_directory")


def run(checkout: Path, entries: int, seconds: float) -> list[float]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    out = subprocess.run([sys.executable, "-c", MEASURE, str(checkout), str(HERE / "bench"), str(entries), str(seconds)],
                         env=env, cwd="/", capture_output=True, text=True, check=True).stdout
    return [float(v) for v in out.split()]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("other", help="another checkout of this repository (git worktree add ../old REV)")
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--entries", type=int, default=1000, help="files in the listed directory")
    parser.add_argument("--seconds", type=float, default=0.7, help="CPU time spent on each figure per process")
    args = parser.parse_args()
    other = Path(args.other).resolve()
    if not (other / "lsp_bridge" / "mcp" / "file_tools.py").is_file():
        print(f"bench_check_compare.py: {other} is not a checkout of this repository "
              "(no lsp_bridge/mcp/file_tools.py)", file=sys.stderr)
        return 2
    ours: list[list[float]] = []
    theirs: list[list[float]] = []
    for round_ in range(args.rounds):
        pair = [(ours, HERE), (theirs, other)]
        for figures, checkout in pair if round_ % 2 == 0 else reversed(pair):
            figures.append(run(checkout, args.entries, args.seconds))
    print(f"this checkout {HERE} against {other}; {args.rounds} alternating rounds; {os.cpu_count()} CPUs")
    print(f"{'µs per call (median of rounds)':<30} | {'this':>9} | {'other':>9} | {'this ÷ other':>12}")
    print("-" * 70)
    for index, label in enumerate(LABELS):
        mine = statistics.median(r[index] for r in ours)
        them = statistics.median(r[index] for r in theirs)
        ratio = statistics.median(a[index] / b[index] for a, b in zip(ours, theirs, strict=True))
        print(f"{label:<30} | {mine:>9.1f} | {them:>9.1f} | {ratio:>11.2f}x")
    check_over_read = [r[1] / r[0] for r in ours]
    print(f"\nthis checkout's check ÷ its own read, median of rounds: {statistics.median(check_over_read):.2f}x "
          f"(issue 15 target: <= 1x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
