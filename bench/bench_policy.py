"""Decisions per second: the policy engine against a naive ``any(path under root)``.

Usage: .venv/bin/python bench/bench_policy.py [--seconds 1.0]

For N in (10, 1000) it builds N sibling directories, makes them the roots of
the naive check and, for the engine, both the host baseline and N ``[[paths]]``
rules (one per directory, half of them with include globs), then decides the
same list of canonical paths (inside and outside) with both. Both sides get
already-canonical paths so the comparison is the decision itself; a last row
adds the engine's own symlink resolution (``Policy.decide``), which does I/O.

Engine figures: the verdict (``decide_granted``, what listings, searches and
filters ask) and the full ``Decision`` with its rule and reason (``decide_target``),
each "cold" (a policy that keeps nothing: every path ranked afresh) and "kept" (the
policy's memo of its own answers, ``core/memo.py``, as a long-lived server has it).

``--dir DIR`` decides a real tree instead: the rules sit on DIR's first N
directories (breadth first, ``.git`` skipped) and the paths decided are 2,000 of
its files plus paths beside and outside them; nothing is written there.

Targets (issue 15): the verdict >= 1x naive at 10 rules, still flat to 10,000;
>= 100k decisions/s at 1,000 rules.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from lsp_bridge.core.policy import Policy, Target, oracle_inside  # noqa: E402
from lsp_bridge.core.scope import Scope  # noqa: E402
from lsp_bridge.core.settings import Config, PathRule  # noqa: E402
from lsp_bridge.core.union import Candidate, compute_union  # noqa: E402


def build(base: Path, n: int):
    roots = []
    for i in range(n):
        d = base / f"n{n}" / f"pkg{i:04d}" / "src"
        d.mkdir(parents=True, exist_ok=True)
        (d / "index.ts").write_text("x")
        roots.append(os.path.realpath(d.parent))
    return engine_and_paths(base, roots, n)


def from_tree(tree: str, n: int):
    """DIR's first ``n`` directories as the rules' roots, and 2,000 of its files among the paths."""
    roots: list[str] = []
    files: list[str] = []
    queue = [os.path.realpath(tree)]
    while queue and (len(roots) < n or len(files) < 2000):
        current = queue.pop(0)
        roots.append(current)
        try:
            with os.scandir(current) as entries:
                for entry in entries:
                    if entry.is_dir(follow_symlinks=False) and entry.name != ".git":
                        queue.append(entry.path)
                    elif entry.is_file(follow_symlinks=False) and len(files) < 2000:
                        files.append(entry.path)
        except OSError:
            continue
    roots = roots[1:n + 1] or roots[:1]  # the tree itself would cover every other rule
    return engine_and_paths(Path(tree), roots, n, files)


def engine_and_paths(base: Path, roots: list[str], n: int, files: list[str] = (), memo_size: int | None = None):
    rules = []
    for i, root in enumerate(roots):
        includes = ("src/**", "*.json") if i % 2 else ()
        rules.append(PathRule(id=f"r{i}", path=root, anchor=root, read="allow", write="deny", delete="deny",
                              includes=includes, excludes=(".env*",) if i % 3 == 0 else ()))
    union = compute_union(Candidate(r) for r in roots)
    scope = Scope(tuple(roots), union)
    configs = [(roots[0], Config(paths=tuple(rules)))]
    policy = Policy(scope, configs) if memo_size is None else Policy(scope, configs, memo_size=memo_size)
    rng = random.Random(n)
    paths = list(files)
    for _ in range(2000 - len(paths) // 2):
        root = rng.choice(roots)
        paths.append(rng.choice([f"{root}/src/index.ts", f"{root}/src/deep/er/file.ts", f"{root}/package.json",
                                 f"{root}/.env", f"{root}-evil/src/x.ts", f"{base}/elsewhere/{rng.random()}"]))
    return roots, policy, paths


def rate(fn, paths, seconds: float, repeats: int = 7) -> float:
    """Best-of-``repeats`` throughput in CPU time: the least disturbed run on a shared machine."""
    best = 0.0
    for _ in range(repeats):
        done = 0
        start = time.process_time()
        deadline = start + seconds / repeats
        while time.process_time() < deadline:
            for p in paths:
                fn(p)
            done += len(paths)
        best = max(best, done / (time.process_time() - start))
    return best


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=1.0)
    parser.add_argument("--rules", type=int, nargs="+", default=[10, 1000, 10000])
    parser.add_argument("--dir", help="decide this existing tree's files (rules on its directories)")
    args = parser.parse_args()
    if args.dir and not os.path.isdir(args.dir):
        parser.error(f"--dir {args.dir}: not a directory")
    print(f"{'roots/rules':>11} | {'verdict cold':>12} | {'Decision cold':>13} | {'Decision kept':>13} | "
          f"{'naive dec/s':>12} | {'cold/naive':>10} | {'kept/naive':>10} | {'decide() with I/O':>17}")
    print("-" * 120)
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(os.path.realpath(tmp))
        for n in args.rules:
            roots, policy, paths = from_tree(args.dir, n) if args.dir else build(base, n)
            if len(roots) < n:
                print(f"{n:>11} | {args.dir} has only {len(roots)} directories: measured with that many rules")
            targets = {p: Target(p) for p in paths}
            cold = Policy(policy.scope, [(roots[0], policy.rulesets()[0].config)], memo_size=0)
            for p in paths:  # a listing's verdict, a batch's and a kept answer: the same
                full = policy.decide_batch([("read", targets[p])]).results[0].verdict
                assert policy.decide_granted("read", targets[p]) == full == cold.decide_granted("read", targets[p]), p
            verdict = rate(lambda p, policy=cold, targets=targets: policy.decide_granted("read", targets[p]),
                           paths, args.seconds)
            engine = rate(lambda p, policy=cold, targets=targets: policy.decide_target("read", targets[p]),
                          paths, args.seconds)
            kept = rate(lambda p, policy=policy, targets=targets: policy.decide_target("read", targets[p]),
                        paths, args.seconds)
            naive = rate(lambda p, roots=roots: oracle_inside(p, roots), paths, args.seconds)
            with_io = rate(lambda p, policy=cold: policy.decide("read", p), paths, args.seconds)
            print(f"{n:>11} | {verdict:>12,.0f} | {engine:>13,.0f} | {kept:>13,.0f} | {naive:>12,.0f} | "
                  f"{engine / naive:>9.2f}x | {kept / naive:>9.2f}x | {with_io:>17,.0f}")
    print("\ntargets: decisions >= 1x naive at 10 rules, flat to 10,000; >= 100,000 dec/s at 1,000 rules")
    return 0


if __name__ == "__main__":
    sys.exit(main())
