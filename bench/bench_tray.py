"""Tray broker round trip: 20 clients x 50 requests, answered automatically.

    .venv/bin/python bench/bench_tray.py [--clients 20] [--requests 50] [--rounds 3]

Starts a real tray (``python -m tray --headless --auto-answer allow_once``) on a
private socket and drives it with the client library (``tray/client.py``). The
baseline is a bare asyncio unix-socket server speaking the same frames with no
broker logic, measured with the same clients in the same run: the cost of the
socket and JSON alone. ``--dir DIR`` makes the roots and the requested files
DIR and its real files (the frames then carry real path lengths; nothing is
read or written there). Target: tray p50 <= 5 ms. Also checks that every request
got exactly one decision, its own, and that none was lost.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import select
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from lsp_bridge.approvals import protocol  # noqa: E402
from lsp_bridge.approvals.client import Target, TrayClient  # noqa: E402
from lsp_bridge.core.settings import DEFAULT_APPROVAL_TIMEOUT  # noqa: E402

TARGET_P50_MS = 5.0


# ---------------------------------------------------------------------------
# Baseline server: frames in, frames out, nothing else


async def baseline_server(path: str) -> None:
    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while line := await reader.readline():
            frame = json.loads(line)
            if frame["type"] == "hello":
                reply = protocol.welcome(os.getpid(), DEFAULT_APPROVAL_TIMEOUT)
            elif frame["type"] == "request":
                reply = protocol.decision(frame["id"], "allow_once", "baseline")
            else:
                continue
            writer.write(protocol.encode(reply))
            await writer.drain()

    server = await asyncio.start_unix_server(serve, path, limit=protocol.MAX_FRAME)
    print("listening on", path, file=sys.stderr, flush=True)
    async with server:
        await server.serve_forever()


# ---------------------------------------------------------------------------
# Load


TREE: tuple[str, list[str]] | None = None  # --dir: the root and its files' relative paths


async def one_client(n: int, sock: str, requests: int) -> tuple[list[float], list[tuple[str, str, str]], int]:
    root = TREE[0] if TREE else f"/bench/{n}"
    client = TrayClient(f"bench-{n}", "bench", [root], socket=sock, reconnect=False)
    if not await client.start():
        raise SystemExit(f"client {n} could not connect to {sock}")
    await client.publish_status({"roots": [root], "union": [root], "widened": False})
    times, answers = [], []
    for i in range(requests):
        rid = f"c{n}-r{i}"
        rel = TREE[1][(n * requests + i) % len(TREE[1])] if TREE else f"file-{i}.txt"
        target = Target(os.path.join(root, rel), rel, root, "write")
        start = time.perf_counter()
        decision = await client.request_access("write_file", "write", [target], rule="bench", reason="bench",
                                               timeout=30, request_id=rid)
        times.append(time.perf_counter() - start)
        answers.append((rid, decision.id, decision.answer))
    await asyncio.sleep(0.05)  # let any duplicate decision arrive before counting strays
    strays = client.stray_decisions
    await client.close()
    return times, answers, strays


async def load(sock: str, clients: int, requests: int) -> dict:
    results = await asyncio.gather(*(one_client(n, sock, requests) for n in range(clients)))
    times = [t for r in results for t in r[0]]
    answers = [a for r in results for a in r[1]]
    ids = [a[0] for a in answers]
    return {
        "times": times,
        "total": len(answers),
        "allowed": sum(1 for _, got, answer in answers if answer == "allow_once"),
        "mismatched": sum(1 for rid, got, _ in answers if rid != got),
        "duplicates": len(ids) - len(set(ids)),
        "strays": sum(r[2] for r in results),
    }


def start(argv: list[str], env: dict) -> subprocess.Popen:
    proc = subprocess.Popen(argv, cwd=REPO, env=env, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL)
    seen, deadline = b"", time.monotonic() + 60
    while b"listening on" not in seen:
        ready, _, _ = select.select([proc.stderr], [], [], max(deadline - time.monotonic(), 0))
        chunk = os.read(proc.stderr.fileno(), 4096) if ready else b""
        if not chunk:
            proc.kill()
            raise SystemExit(f"server did not start: {seen.decode(errors='replace')}")
        seen += chunk
    return proc


def serve(argv: list[str]) -> subprocess.Popen:
    return start(argv, dict(os.environ, QT_QPA_PLATFORM="offscreen", PYTHONPATH=str(REPO)))


def merge(runs: list[dict]) -> dict:
    merged = {"times": []}
    for r in runs:
        merged["times"] += r["times"]
        for key in ("total", "allowed", "mismatched", "duplicates", "strays"):
            merged[key] = merged.get(key, 0) + r[key]
    return merged


def ms(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=20)
    parser.add_argument("--requests", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--dir", help="name this tree's root and files in the requests")
    parser.add_argument("--baseline-server", metavar="PATH", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.dir:
        global TREE
        if not os.path.isdir(args.dir):
            parser.error(f"--dir {args.dir}: not a directory")
        root = os.path.realpath(args.dir)
        rels = [os.path.relpath(os.path.join(d, f), root) for d, _, names in os.walk(root) for f in names]
        if not rels:
            parser.error(f"--dir {args.dir}: no files")
        TREE = (root, rels)
    if args.baseline_server:
        asyncio.run(baseline_server(args.baseline_server))
        return 0

    workdir = tempfile.mkdtemp(prefix="rg-bench-")
    tray_sock, base_sock = os.path.join(workdir, "tray.sock"), os.path.join(workdir, "base.sock")
    servers = {
        "baseline (bare asyncio socket)": ([sys.executable, __file__, "--baseline-server", base_sock], base_sock),
        "tray broker (auto-answer)": (
            [sys.executable, "-m", "tray", "--headless", "--auto-answer", "allow_once", "--socket", tray_sock], tray_sock),
    }
    procs = [serve(argv) for argv, _ in servers.values()]
    ok, p50 = True, None
    try:
        for clients, requests in ((args.clients, args.requests), (1, 200)):
            # Rounds alternate between the two servers so a change of machine load hits both alike.
            runs: dict[str, list[dict]] = {name: [] for name in servers}
            for _ in range(args.rounds):
                for name, (_, sock) in servers.items():
                    runs[name].append(asyncio.run(load(sock, clients, requests)))
            print(f"\n{clients} client(s) x {requests} requests, {args.rounds} alternating rounds: "
                  f"{clients * requests * args.rounds} round trips per server")
            print(f"{'':34} {'p50 ms':>8} {'p99 ms':>8} {'max ms':>8} {'mean ms':>8}  answered  lost  wrong-id  extra")
            for name in servers:
                r = merge(runs[name])
                ok &= report(name, r, clients * requests * args.rounds)
                if name.startswith("tray") and clients == args.clients:
                    p50 = ms(r["times"], 0.5)
    finally:
        for proc in procs:
            proc.terminate()
            proc.wait(10)
        shutil.rmtree(workdir, ignore_errors=True)
    print(f"\ntarget: tray p50 <= {TARGET_P50_MS} ms at {args.clients} clients -> "
          f"{'met' if p50 <= TARGET_P50_MS else 'MISSED'} ({p50:.2f} ms)")
    print("every request answered exactly once with its own id" if ok else "LOST, MISMATCHED OR DUPLICATED DECISIONS")
    return 0 if ok and p50 <= TARGET_P50_MS else 1


def report(name: str, r: dict, expected: int) -> bool:
    t = r["times"]
    lost = expected - r["allowed"]
    extra = r["strays"] + r["duplicates"]
    print(f"{name:34} {ms(t, .5):8.2f} {ms(t, .99):8.2f} {max(t) * 1000:8.2f} {statistics.mean(t) * 1000:8.2f}"
          f"  {r['total']:8}  {lost:4}  {r['mismatched']:8}  {extra:5}")
    return lost == 0 and r["mismatched"] == 0 and extra == 0


if __name__ == "__main__":
    sys.exit(main())
