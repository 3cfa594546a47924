"""Exactly one audit line per decision, through the real MCP server, under concurrent calls.

A red team's race load (10,590 calls) once found correlation ids logged twice or not at
all. The causes, each fixed and covered here: the log's ``flock`` did not keep a server's
own threads apart (a rotation closed the descriptor another thread was writing: a lost
line, or an error); an allowed call whose I/O failed wrote a second line; a call the
client cancelled while it waited for approval wrote none.
"""

from __future__ import annotations

import os
import random
import tempfile
from collections import Counter
from pathlib import Path

import anyio
import pytest

from lsp_bridge.mcp.audit import read_records
from tests.conftest import make_repo
from tests.test_attacks import serve
from tests.test_mcp_server import connect
from tests.trayproc import start_tray, stop

pytestmark = pytest.mark.timeout(300)


@pytest.fixture
def sock_dir():
    """A short private directory for the tray's socket (a unix socket path stays under ~100 bytes)."""
    with tempfile.TemporaryDirectory(prefix="rg-") as path:
        os.chmod(path, 0o700)
        yield Path(path)


async def test_every_call_of_a_concurrent_race_load_has_exactly_one_line(tmp_path, isolated_user):
    files = {f"src/f{n}.txt": f"file {n}\n" for n in range(30)}
    repo = make_repo(Path(os.path.realpath(tmp_path)) / "repo", {
        **files, ".env": "TOKEN=x\n", "vault/key.txt": "KEY\n",
        ".rootguard.toml": 'version = 2\n[[paths]]\nid = "no-env"\npath = "."\nincludes = ["**/.env"]\n'
                           'policies = { read = "deny", write = "deny" }\n'
                           '[[paths]]\nid = "vault"\npath = "vault"\npolicies = { read = "request" }\n',
    })
    rng = random.Random(7)
    returned: list[str | None] = []

    async with serve([repo], repo.parent) as client:
        async def one(n: int) -> None:
            choice = rng.random()
            name = f"src/f{n % 30}.txt"
            if choice < 0.35:
                result = await client.call_tool("read_file", {"project_id": "repo", "relative_path": name})
            elif choice < 0.5:
                result = await client.call_tool("read_file", {"project_id": "repo", "relative_path": ".env"})
            elif choice < 0.6:
                result = await client.call_tool("read_file", {"project_id": "repo", "relative_path": "vault/key.txt"})
            elif choice < 0.75:
                result = await client.call_tool("write_file", {"project_id": "repo", "relative_path": name,
                                                               "content": f"rewritten {n}\n"})
            elif choice < 0.85:  # races with the writes and the other moves: some fail in their I/O
                result = await client.call_tool("move_file", {"project_id": "repo", "source": name,
                                                              "destination": f"src/moved{n}.txt"})
            elif choice < 0.95:
                result = await client.call_tool("list_directory", {"project_id": "repo", "relative_path": "src"})
            else:
                result = await client.call_tool("delete_file", {"project_id": "repo", "relative_path": name})
            content = result.structured_content or {}
            returned.append(content.get("correlation_id") or (content.get("error") or {}).get("correlation_id"))

        async with anyio.create_task_group() as group:
            for n in range(400):
                group.start_soon(one, n)

    log = isolated_user / ".local" / "state" / "rootguard" / "audit.jsonl"
    lines = Counter(r["correlation_id"] for r in read_records(str(log), rotated=True))
    assert None not in returned and len(returned) == 400
    assert all(lines[cid] == 1 for cid in returned), {cid: lines[cid] for cid in returned if lines[cid] != 1}
    assert set(lines) == set(returned)  # and no line for a call nobody made


async def test_a_call_cancelled_while_it_waits_for_approval_has_its_line(tmp_path, isolated_user, sock_dir):
    """The tray shows the prompt and nobody answers; the client gives up and cancels the call. The
    decision is still logged, once, as ``cancelled``; nothing was read."""
    repo = make_repo(Path(os.path.realpath(tmp_path)) / "repo", {
        "vault/key.txt": "KEY\n",
        ".rootguard.toml": 'version = 2\n[[paths]]\nid = "vault"\npath = "vault"\npolicies = { read = "request" }\n',
    })
    tray = start_tray(sock_dir / "tray.sock", "--headless")
    try:
        async with connect([repo], repo.parent, tray_socket=sock_dir / "tray.sock") as client:
            with anyio.move_on_after(3):
                await client.call_tool("read_file", {"project_id": "repo", "relative_path": "vault/key.txt"})
            # A later call on the same session: the cancelled one's line was written first.
            await client.call_tool("list_projects", {})
            for _ in range(50):
                lines = [r for r in read_records(str(isolated_user / ".local/state/rootguard/audit.jsonl"))
                         if r["relative_path"] == "vault/key.txt"]
                if lines:
                    break
                await anyio.sleep(0.1)
    finally:
        stop(tray)
    assert [(r["decision"], r["code"], r["policy"]) for r in lines] == [("deny", "cancelled", "request")]
