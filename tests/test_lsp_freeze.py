"""File events during a slow inventory never freeze the language server (issue 9, point 6).

The scan is slow for real: the widened repository has a long git history (built
with ``git fast-import``: thousands of commits, each changing two thousand
files), which the inventory reads with ``git log`` while it holds the cache's
lock. File events arrive during that scan; the server must keep answering.
Results of background work that a newer change superseded are dropped.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient

from tests.conftest import make_repo
from tests.test_lsp import SERVER, Session, as_data, wait_for

COMMITS = 8000  # git log needs seconds for these; the events below need milliseconds
FILES_PER_TREE = 2000


def long_history(repo: Path, commits: int = COMMITS, files: int = FILES_PER_TREE) -> None:
    """A branch whose every commit rewrites ``files`` files: slow for ``git log`` to diff."""

    def git(*args: str, data: bytes | None = None) -> str:
        return subprocess.run(["git", "-C", str(repo), *args], input=data, capture_output=True,
                              check=True, timeout=120).stdout.decode().strip()

    blobs = [git("hash-object", "-w", "--stdin", data=text) for text in (b"a\n", b"b\n")]
    trees = [git("mktree", data="".join(f"100644 blob {b}\tf{i}.txt\n" for i in range(files)).encode())
             for b in blobs]
    stream = "".join(
        f"commit refs/heads/history\ncommitter T <t@example.com> {1700000000 + n} +0000\ndata 1\nc\n"
        f"M 040000 {trees[n % 2]} bulk\n\n"
        for n in range(commits)
    )
    git("fast-import", "--quiet", data=stream.encode())


def files_in(top: Path) -> int:
    return sum(len(names) for path, dirs, names in os.walk(top) if ".git" not in Path(path).parts)


@pytest_lsp.fixture(config=ClientServerConfig(server_command=SERVER))
async def lsp(lsp_client: LanguageClient):
    yield
    await lsp_client.shutdown_session()


async def test_file_events_during_a_slow_scan_do_not_stop_other_requests(lsp, tmp_path):
    repo = make_repo(tmp_path / "mono", {"packages/app/index.ts": "x\n", "README.md": "mono\n"})
    long_history(repo)
    narrow = repo / "packages" / "app"
    client = Session(lsp)
    await client.start([str(narrow)])
    await client.next_status(0)

    mark = client.change_folders(added=[str(repo)])
    await client.next_status(mark, lambda s: s["widened"], "the widened status")

    def reading_history():
        return any("reading git history" in (getattr(r, "message", None) or "")
                   for reports in lsp.progress_reports.values() for r in reports)

    await wait_for(reading_history, what="the scan to start reading the git history")
    assert not any(s["inventory"] for s in client.statuses), "the scan ended before the test could start"

    # File events during the scan: a new file and a configuration file (which reloads the policy).
    (repo / "new.txt").write_text("new\n")
    marker = len(client.statuses)
    (repo / ".rootguard.toml").write_text("version = 2\n")
    await client.next_status(marker, what="the status after the configuration event")
    explained = as_data(await lsp.protocol.send_request_async(
        "rootguard/explain", {"path": str(repo / "README.md"), "op": "read"}))
    assert explained["decisions"][0]["decision"] == "allow"

    # Both answers came while the scan still held its lock: no inventory yet, no warning yet.
    assert not any(s["inventory"] for s in client.statuses), "the answers waited for the scan"
    assert not any(m.type == types.MessageType.Warning for m in lsp.messages)

    # And the scan finishes, with the file that appeared during it counted.
    expected = files_in(repo)
    done = await client.next_status(
        marker, lambda s: s["inventory"] and s["inventory"]["files_after"] == expected,
        "the inventory counting the new file",
    )
    assert done["inventory"]["git"][0]["commits"] >= COMMITS


def test_a_mount_reconciliation_that_finishes_after_a_newer_change_is_dropped(tmp_path):
    """Like a superseded inventory: the worker's result for an older workspace is not shown."""
    from lsp_bridge.inventory.report import mounts_report
    from lsp_bridge.lsp.server import RootGuardServer

    old, new = make_repo(tmp_path / "old"), make_repo(tmp_path / "new")
    ls = RootGuardServer()
    ls.tracker.set_folders([str(old)], initial=True)
    started_for = ls._mounts_generation
    reconciliation = mounts_report(ls.tracker.session)  # what a worker computed for the old folders
    ls.tracker.set_folders([str(new)])
    ls._mounts_generation += 1  # apply_change does this for every change
    ls._mounts_ready(reconciliation, started_for)
    assert ls.tracker.mounts is None  # dropped: the newer change's own reconciliation follows
