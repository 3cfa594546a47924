"""What the MCP benches share: the servers they start, the environment, the timing loops.

* ``rootguard_params``: ``rootguard mcp --root ROOT`` as a client starts it;
* ``floor_params``: the same Python SDK serving a ``read_file`` that does nothing (a
  2 KB text) and a ``list_directory`` that lists with no policy (``[DIR]``/``[FILE]``
  lines from ``os.scandir``, sorted): what the SDK costs per call, whatever the server does;
  on the SDK's stock stdio, or on Root Guard's event-loop stdio (``lsp_bridge.mcp.stdio``);
* ``server_env``: a bare environment whose audit log and tray socket are in a temporary
  directory (never the user's), without ``PYTHONDONTWRITEBYTECODE`` (a user's start-up
  has bytecode caches; ``compile_package`` writes ours);
* ``connect_time``, ``call_rate``, ``per_call``: spawn → first answer (and first tool call), calls per second
  over one session, CPU time per call in process;
* ``listing_fixture``, ``in_process_calls``: a directory to list and files to read, and the
  server's work on them without its transport (``bench_mcp_reference.py``, and
  ``bench_check_compare.py`` with another checkout's code).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from mcp import Client, StdioServerParameters

PACKAGE_DIR = Path(__file__).resolve().parents[1] / "lsp_bridge"

FLOOR_SERVER = """
import os, anyio, mcp_types as types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server
TAGS = {True: "[DIR] ", False: "[FILE] "}
async def tools(ctx, params):
    return types.ListToolsResult(tools=[types.Tool(name=n, input_schema={"type": "object"})
                                        for n in ("read_file", "list_directory")])
async def call(ctx, params):
    if params.name == "list_directory":
        with os.scandir((params.arguments or {})["path"]) as found:
            lines = sorted(TAGS[e.is_dir(follow_symlinks=False)] + e.name for e in found)
        return {"content": [{"type": "text", "text": "\\n".join(lines)}], "isError": False, "resultType": "complete"}
    return types.CallToolResult(content=[types.TextContent(type="text", text="x" * 2090)])
async def main():
    server = Server("floor", on_list_tools=tools, on_call_tool=call)
    async with stdio_server() as (r, w):
        await server.run(r, w, server.create_initialization_options())
anyio.run(main)
"""


def server_env(base: Path) -> dict[str, str]:
    """The measured servers' environment: state (audit log) and tray socket under ``base``."""
    env = {k: v for k, v in os.environ.items() if k in ("HOME", "PATH", "XDG_CONFIG_HOME", "XDG_RUNTIME_DIR")}
    env.update(XDG_STATE_HOME=str(base / "state"), ROOTGUARD_TRAY_SOCKET=str(base / "no-tray.sock"))
    return env


def rootguard_params(root: Path, env: dict[str, str]) -> StdioServerParameters:
    return StdioServerParameters(command=sys.executable, args=["-m", "lsp_bridge.cli", "mcp", "--root", str(root)],
                                 env=env, cwd=str(root.parent))


def floor_params(env: dict[str, str], *, event_loop_stdio: bool = False) -> StdioServerParameters:
    """The floor server on the SDK's stock ``stdio_server`` (a worker thread per line read and per
    write), or with ``event_loop_stdio`` on the one ``rootguard mcp`` uses (``lsp_bridge.mcp.stdio``)."""
    if not event_loop_stdio:
        return StdioServerParameters(command=sys.executable, args=["-c", FLOOR_SERVER], env=env)
    code = FLOOR_SERVER.replace("from mcp.server.stdio import stdio_server",
                                "from lsp_bridge.mcp.stdio import serve_stdio as stdio_server")
    env = dict(env, PYTHONPATH=os.pathsep.join(filter(None, [str(PACKAGE_DIR.parent), env.get("PYTHONPATH")])))
    return StdioServerParameters(command=sys.executable, args=["-c", code], env=env)


def compile_package() -> None:
    """Bytecode caches for Root Guard's modules (pip compiled the SDK's), as an installed package has."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(PACKAGE_DIR)], check=True, env=env,
                   stdout=subprocess.DEVNULL)


async def connect_time(params: StdioServerParameters, first_call: tuple[str, dict]) -> tuple[float, float]:
    """Seconds from spawning the server to its first answer (``tools/list``), and to the answer of
    ``first_call`` (a tool and its arguments) asked right after it."""
    started = time.perf_counter()
    async with Client(params) as client:
        await client.list_tools()
        connected = time.perf_counter() - started
        name, arguments = first_call
        result = await client.call_tool(name, arguments)
        if result.is_error:
            raise SystemExit(f"{name} failed: {result.content[0].text}")
        return connected, time.perf_counter() - started


async def call_rate(client: Client, sequence: list[tuple[str, dict]], calls: int, offset: int = 0,
                    before: Callable[[], object] | None = None) -> float:
    """Calls per second of ``calls`` calls cycling through ``sequence`` (an error ends the bench);
    ``before``, when given, runs before each call, inside the timing."""
    start = time.perf_counter()
    for i in range(calls):
        if before is not None:
            before()
        name, arguments = sequence[(offset + i) % len(sequence)]
        result = await client.call_tool(name, arguments)
        if result.is_error:
            raise SystemExit(f"{name} failed: {result.content[0].text}")
    return calls / (time.perf_counter() - start)


def per_call(fn, items: list, seconds: float, slices: int = 7) -> float:
    """CPU microseconds per call, best slice: the least disturbed run on a shared machine."""
    best = float("inf")
    for _ in range(slices):
        done, start = 0, time.process_time()
        while time.process_time() - start < seconds / slices:
            for item in items:
                fn(item)
            done += len(items)
        best = min(best, (time.process_time() - start) / done * 1e6)
    return best


def listing_fixture(base: Path, entries: int) -> tuple[Path, str, list[str]]:
    """(root, listed directory relative to it, ~2 KB files to read) built under ``base``."""
    root = base / "repo"
    listed = root / "big"
    listed.mkdir(parents=True)
    for i in range(entries):
        (listed / f"file{i:04d}.ts").write_text(f"// file {i}\n" + "export const value = 'x';\n" * 80)
    (root / ".env").write_text("KEY=placeholder\n")
    return Path(os.path.realpath(root)), "big", [f"big/file{i:04d}.ts" for i in range(min(entries, 200))]


def in_process_calls(root: Path, listed: str, audit: Path, *, big: Path | None = None
                     ) -> dict[str, Callable[[object], None]]:
    """The MCP server's work without its transport, each call as ``per_call`` takes it.

    ``listing``: ``list_directory`` of ``listed`` (plan, listing, decisions, audit line), the
    directory unchanged since the last call (its names and kinds kept: ``safe_listing.KeptListings``);
    ``listing_changed``: the same with the directory's times touched first, so it is read again
    (a directory changed between two listings; the touch, one ``utime``, is counted). With
    ``big`` (a text file of ``root``, written here with ~32 KB): ``read`` (``open().read()``, the
    baseline), ``check`` (``read_file``'s plan: resolver and engine) and ``whole`` (the check, the
    audit line and the read). ``lsp_bridge`` comes from ``sys.path`` as it is: another checkout's
    code is measured when that checkout comes first there.
    """
    from lsp_bridge.mcp.audit import AuditLog
    from lsp_bridge.mcp.file_tools import Caller, FileTools

    tools = FileTools([str(root)], audit=AuditLog(str(audit)))
    caller = Caller("bench", "bench", "n/a")
    project = tools.project_ids[0]
    list_args = {"project_id": project, "relative_path": listed}
    calls: dict[str, Callable[[object], None]] = {
        "listing": lambda _: tools.conclude(tools.plan("list_directory", list_args, caller)),
        "listing_changed": lambda _: (os.utime(root / listed),
                                      tools.conclude(tools.plan("list_directory", list_args, caller))),
    }
    if big is not None:
        big.write_text("export const value = 'x';\n" * 1300)
        read_args = {"project_id": project, "relative_path": big.relative_to(root).as_posix()}
        plan = tools.plan("read_file", read_args, caller)
        assert plan.verdict == "allow", plan.reason

        def read(_: object) -> None:
            with open(big, encoding="utf-8") as handle:
                handle.read()

        calls.update(
            read=read,
            check=lambda _: tools.plan("read_file", read_args, caller),
            whole=lambda _: tools.conclude(tools.plan("read_file", read_args, caller)),
        )
    return calls
