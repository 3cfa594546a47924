"""Does a long ``search_files`` hold the other calls? ``read_file`` latency through ``rootguard mcp``,
alone (the baseline) and while a slow search runs on the same session, in one run.

Usage: .venv/bin/python bench/bench_mcp_concurrency.py [--files 20000] [--reads 20] [--code DIR] [--dir DIR]

It builds a repository of ``--files`` small files, starts the real server over stdio
with the mcp SDK client, measures ``--reads`` sequential ``read_file`` calls alone,
then the same reads while one ``search_files`` (a text query over every file) runs.
``--dir DIR`` serves an existing tree instead (nothing is written there): the
reads are of its first small file the server lets an agent read, the search
covers the whole tree. The audit log goes to a temporary state directory, never
the user's.
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


async def readable(client, root: Path, project: str) -> str:
    """The first file of at most 8 KB under ``root`` that the server lets an agent read."""
    tried = 0
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for name in sorted(files):
            path = Path(folder) / name
            if name.startswith(".") or not path.is_file() or path.stat().st_size > 8192:
                continue
            rel = str(path.relative_to(root))
            result = await client.call_tool("read_file", {"project_id": project, "relative_path": rel})
            if not result.is_error:
                return rel
            tried += 1
            if tried > 50:
                break
    sys.exit(f"{root}: no small file the server lets an agent read")


async def reads(client, count: int, project: str = "repo", rel: str = "small.txt") -> list[float]:
    times = []
    for _ in range(count):
        start = time.perf_counter()
        result = await client.call_tool("read_file", {"project_id": project, "relative_path": rel})
        assert not result.is_error, result
        times.append(time.perf_counter() - start)
    return times


async def main_async(files: int, count: int, code: str, tree: str | None) -> None:
    with tempfile.TemporaryDirectory() as scratch:
        base = Path(os.path.realpath(scratch))
        if tree:
            root = Path(os.path.realpath(tree))
            files = sum(len(names) for _, _, names in os.walk(root))
        else:
            root = base / "repo"
            root.mkdir()
            build(root, files)
        env = {k: v for k, v in os.environ.items() if k in ("PATH", "HOME")}
        env.update(PYTHONPATH=code, XDG_STATE_HOME=str(base / "state"), XDG_CONFIG_HOME=str(base / "cfg"))
        params = StdioServerParameters(command=sys.executable, env=env, cwd=str(base),
                                       args=["-m", "lsp_bridge.cli.main", "mcp", "--no-tray", "--root", str(root)])
        async with Client(params) as client:
            projects = await client.call_tool("list_projects", {})
            project = projects.structured_content["projects"][0]["project_id"] if tree else "repo"
            rel = await readable(client, root, project) if tree else "small.txt"
            await reads(client, 3, project, rel)  # warm up
            alone = await reads(client, count, project, rel)
            search_time = []

            async def search() -> None:
                start = time.perf_counter()
                await client.call_tool("search_files", {"project_id": project, "query": "no such text",
                                                        "max_results": 1})
                search_time.append(time.perf_counter() - start)

            async with anyio.create_task_group() as group:
                group.start_soon(search)
                await anyio.sleep(0.05)
                during = await reads(client, count, project, rel)
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
    parser.add_argument("--dir", help="an existing tree to serve instead of the built one")
    args = parser.parse_args()
    if args.dir and not os.path.isdir(args.dir):
        parser.error(f"--dir {args.dir}: not a directory")
    anyio.run(main_async, args.files, args.reads, args.code, args.dir)


if __name__ == "__main__":
    main()
