"""Does a long ``search_files`` hold the other calls? ``read_file`` latency through ``rootguard mcp``,
alone (the baseline) and while a slow search runs on the same session, in one run.

Usage: .venv/bin/python bench/bench_mcp_concurrency.py [--files 20000] [--reads 20] [--code DIR]

It builds a repository of ``--files`` small files, starts the real server over stdio
with the mcp SDK client, measures ``--reads`` sequential ``read_file`` calls alone,
then the same reads while one ``search_files`` (a text query over every file) runs.
The audit log goes to a temporary state directory, never the user's.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import anyio  # noqa: E402
from mcp import Client, StdioServerParameters  # noqa: E402

REPO = Path(__file__).resolve().parents[1]


def build(root: Path, files: int) -> None:
    for i in range(files):
        path = root / f"d{i % 50}" / f"e{i % 7}" / f"f{i}.txt"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"line {i}\n" * 40)
    (root / "small.txt").write_text("hello\n")


async def reads(client, count: int) -> list[float]:
    times = []
    for _ in range(count):
        start = time.perf_counter()
        result = await client.call_tool("read_file", {"project_id": "repo", "relative_path": "small.txt"})
        assert not result.is_error, result
        times.append(time.perf_counter() - start)
    return times


async def main_async(files: int, count: int, code: str) -> None:
    with tempfile.TemporaryDirectory() as scratch:
        base = Path(os.path.realpath(scratch))
        root = base / "repo"
        root.mkdir()
        build(root, files)
        env = {k: v for k, v in os.environ.items() if k in ("PATH", "HOME")}
        env.update(PYTHONPATH=code, XDG_STATE_HOME=str(base / "state"), XDG_CONFIG_HOME=str(base / "cfg"))
        params = StdioServerParameters(command=sys.executable, env=env, cwd=str(base),
                                       args=["-m", "lsp_bridge.cli.main", "mcp", "--no-tray", "--root", str(root)])
        async with Client(params) as client:
            await reads(client, 3)  # warm up
            alone = await reads(client, count)
            search_time = []

            async def search() -> None:
                start = time.perf_counter()
                await client.call_tool("search_files", {"project_id": "repo", "query": "no such text",
                                                        "max_results": 1})
                search_time.append(time.perf_counter() - start)

            async with anyio.create_task_group() as group:
                group.start_soon(search)
                await anyio.sleep(0.05)
                during = await reads(client, count)
        print(f"files: {files}, one search_files over them took {search_time[0]:.2f} s")
        print(f"read_file alone (baseline):       median {statistics.median(alone) * 1000:7.1f} ms, "
              f"max {max(alone) * 1000:7.1f} ms")
        print(f"read_file during the search:      median {statistics.median(during) * 1000:7.1f} ms, "
              f"max {max(during) * 1000:7.1f} ms")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--files", type=int, default=20000)
    parser.add_argument("--reads", type=int, default=20)
    parser.add_argument("--code", default=str(REPO), help="the checkout whose server runs (e.g. an export of "
                                                          "an older commit, to compare)")
    args = parser.parse_args()
    anyio.run(main_async, args.files, args.reads, args.code)


if __name__ == "__main__":
    main()
