"""``list_directory`` keeps a directory's names and kinds while its change key holds (issue 15).

The kept listing (``safe_listing.KeptListings``) stands for ``getdents``, the sort and a
type per entry when one ``fstat`` of the opened directory gives the key it was kept
with (``core.change_key``). These tests try to make it show a directory as it was:
entries created, removed, swapped for links, a directory's mtime set back, the
directory itself replaced, a hard link made to a denied file from elsewhere, and
changes racing the listings. Each listing must be what a fresh one says.
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest

from lsp_bridge.core import change_key, hardlinks
from lsp_bridge.mcp import safe_listing
from lsp_bridge.mcp.file_tools import FileTools
from tests.conftest import make_repo, tmp_keeps_scans
from tests.test_attacks import serve
from tests.test_mcp_server import text

pytestmark = pytest.mark.skipif(not tmp_keeps_scans(), reason="the temporary directory's file system keeps no change keys")

SETTLE = change_key.MARGIN_NS / 1e9 + 0.05  # past the racy window: a listing made now is kept
RULES = """version = 2
[[paths]]
id = "dotenv"
path = "."
includes = ["**/.env"]
policies = { read = "deny", write = "deny" }
"""


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    base = Path(os.path.realpath(tmp_path))
    made = make_repo(base / "repo", {
        ".rootguard.toml": RULES,
        ".env": "KEY=1\n",
        "src/a.ts": "a\n",
        "src/b.ts": "b\n",
        "src/lib/c.ts": "c\n",
    })
    (base / "outside.txt").write_text("outside\n")
    time.sleep(SETTLE)
    return made


def listing(tools: FileTools, relative: str = "src") -> dict:
    result = tools.conclude(tools.plan("list_directory", {"project_id": "repo", "relative_path": relative}))
    return {key: result[key] for key in ("directories", "files", "links", "other", "hidden", "needs_approval")}


def fresh(repo: Path, relative: str = "src") -> dict:
    """The same listing from a server that never listed anything."""
    return listing(FileTools([str(repo)], env=dict(os.environ)), relative)


def kept(tools: FileTools, directory: Path) -> bool:
    return tools.listings.get(os.stat(directory, follow_symlinks=False)) is not None


def test_a_settled_directory_is_kept_and_one_changed_just_now_is_listed_again(repo):
    """"Just now" is the listings' clock set to the instant of the change (the directory's change
    time), not a race with the real clock: a listing made a moment later is the same case."""
    tools = FileTools([str(repo)], env=dict(os.environ))
    first = listing(tools)
    assert first == {"directories": ["lib"], "files": ["a.ts", "b.ts"], "links": [], "other": [], "hidden": 0,
                     "needs_approval": []}
    assert kept(tools, repo / "src")  # the next listing is one fstat
    assert listing(tools) == first
    (repo / "src" / "new.ts").write_text("n\n")
    tools.listings.clock = lambda: os.stat(repo / "src").st_ctime_ns  # listed in the tick it changed
    assert listing(tools)["files"] == ["a.ts", "b.ts", "new.ts"]
    assert not kept(tools, repo / "src")  # changed within the racy window: never kept
    tools.listings.clock = lambda: os.stat(repo / "src").st_ctime_ns + change_key.MARGIN_NS + 1
    assert listing(tools)["files"] == ["a.ts", "b.ts", "new.ts"]
    assert kept(tools, repo / "src")  # past the window: kept


def test_every_change_of_entries_shows_at_the_next_listing(repo):
    """Created (denied, a link, a FIFO), removed, swapped for a link out of the root, renamed:
    each listing after a change equals a fresh server's."""
    tools = FileTools([str(repo)], env=dict(os.environ))
    src = repo / "src"
    changes = [
        lambda: (src / ".env").write_text("SECRET=1\n"),  # denied: counted, never named
        lambda: (src / "b.ts").unlink(),
        lambda: (os.symlink(repo.parent / "outside.txt", src / "tmp-link"), os.replace(src / "tmp-link", src / "a.ts")),
        lambda: os.symlink("lib/c.ts", src / "inner"),
        lambda: os.rename(src / "lib", src / "lib2"),  # the link above now dangles
        lambda: os.mkfifo(src / "pipe"),
    ]
    for change in changes:
        listing(tools)
        time.sleep(SETTLE)
        listing(tools)
        assert kept(tools, src)
        change()
        assert listing(tools) == fresh(repo)
    assert listing(tools) == {"directories": ["lib2"], "files": [], "links": ["inner"], "other": ["pipe"],
                              "hidden": 2, "needs_approval": []}  # .env, and a.ts now a link out of the root


def test_setting_the_directorys_mtime_back_does_not_hide_a_new_entry(repo):
    """An agent that restores the directory's times after creating a file: the change time
    (which no program can set back) still differs."""
    tools = FileTools([str(repo)], env=dict(os.environ))
    src = repo / "src"
    listing(tools)
    assert kept(tools, src)
    before = os.stat(src)
    (src / ".env").write_text("SECRET=1\n")
    (src / "z.ts").write_text("z\n")
    os.utime(src, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert os.stat(src).st_mtime_ns == before.st_mtime_ns
    now = listing(tools)
    assert now["files"] == ["a.ts", "b.ts", "z.ts"] and now["hidden"] == 1


def test_a_directory_replaced_at_the_same_path_is_listed_as_the_new_one(repo):
    tools = FileTools([str(repo)], env=dict(os.environ))
    listing(tools)
    assert kept(tools, repo / "src")
    os.rename(repo / "src", repo / "old-src")
    (repo / "src").mkdir()
    (repo / "src" / "only.ts").write_text("x\n")
    (repo / "src" / ".env").write_text("K=1\n")
    assert listing(tools) == {"directories": [], "files": ["only.ts"], "links": [], "other": [], "hidden": 1,
                              "needs_approval": []}


def test_a_denied_file_made_a_hard_link_of_a_kept_entry_is_judged_by_the_index_not_the_kept_listing(
        repo, monkeypatch):
    """``.env`` replaced by a second name of ``src/a.ts``: ``src``'s key is unchanged (its
    entries are), yet ``a.ts`` now shares its inode with a denied file. The hard-link index
    decides it, as in a listing nothing was kept for: with the index rebuilt at each use
    (its ``TTL``, 30 s, is a documented limit of its own), ``a.ts`` is hidden at once."""
    monkeypatch.setattr(hardlinks, "TTL", 0.0)
    tools = FileTools([str(repo)], env=dict(os.environ))
    listing(tools)
    assert kept(tools, repo / "src")
    os.link(repo / "src" / "a.ts", repo / "env-tmp")
    os.replace(repo / "env-tmp", repo / ".env")
    assert kept(tools, repo / "src")  # the directory's entries did not change
    assert listing(tools)["files"] == ["b.ts"] and listing(tools)["hidden"] == 1
    assert listing(tools) == fresh(repo)


def test_listings_racing_changes_never_show_an_entry_the_directory_never_had(repo):
    """A writer creates and removes names as fast as it can while listings run: every listing
    is some state the directory went through (no name ever created is missing after the
    writer stops, and the last listing is a fresh one's)."""
    tools = FileTools([str(repo)], env=dict(os.environ))
    src = repo / "src"
    listing(tools)
    stop = threading.Event()
    made: set[str] = set()

    def writer() -> None:
        index = 0
        while not stop.is_set():
            name = f"w{index % 7}.ts"
            path = src / name
            if path.exists():
                path.unlink()
            else:
                path.write_text("w\n")
                made.add(name)
            index += 1

    thread = threading.Thread(target=writer)
    thread.start()
    try:
        for _ in range(200):
            seen = listing(tools)
            assert set(seen["files"]) <= {"a.ts", "b.ts"} | made | {f"w{i}.ts" for i in range(7)}
            assert seen["hidden"] == 0 and seen["directories"] == ["lib"]
    finally:
        stop.set()
        thread.join(30)
    assert not thread.is_alive()
    assert listing(tools) == fresh(repo)
    time.sleep(SETTLE)
    assert listing(tools) == fresh(repo) and listing(tools) == fresh(repo)


def test_a_bounded_number_of_directories_is_kept_and_callers_get_their_own_lists(repo, tmp_path):
    kept_listings = safe_listing.KeptListings(most=2)
    directories = []
    for index in range(3):
        directory = tmp_path / f"d{index}"
        directory.mkdir()
        (directory / "f").write_text("f\n")
        directories.append(directory)
    time.sleep(SETTLE)
    for directory in directories:
        safe_listing.list_columns(str(directory), "", file_stats=False, kept=kept_listings)
    assert [kept_listings.get(os.stat(d)) is not None for d in directories] == [False, True, True]
    again = safe_listing.list_columns(str(directories[2]), "", file_stats=False, kept=kept_listings)
    assert (again.names, again.kinds) == (["f"], ["file"])
    again.names.append("changed by a caller")  # the caller's own list: what is kept is not changed
    assert kept_listings.get(os.stat(directories[2])).names == ["f"]


def test_kept_listings_hold_a_bounded_number_of_names(tmp_path):
    """90 names in all: a listing of more than 22 is never kept; older ones make room."""
    kept_listings = safe_listing.KeptListings(most=64, entries=90)
    sizes = {"big": 26, "d0": 20, "d1": 20, "d2": 20, "d3": 20, "d4": 20}
    for name, count in sizes.items():
        (tmp_path / name).mkdir()
        for index in range(count):
            (tmp_path / name / f"f{index}").write_text("")
    time.sleep(SETTLE)
    for name in sizes:
        safe_listing.list_columns(str(tmp_path / name), "", file_stats=False, kept=kept_listings)
    assert [kept_listings.get(os.stat(tmp_path / name)) is not None for name in sizes] == [
        False, False, True, True, True, True]  # d0 made room for d4: at most 90 names


async def test_through_the_mcp_server_a_kept_listing_follows_every_change(repo):
    """The real server over stdio: a settled listing, then a denied file, a link out of the
    root and the directory's mtime set back: the next listing's text and counts show them."""
    src = repo / "src"
    async with serve([repo], repo.parent) as client:
        async def list_src():
            return await client.call_tool("list_directory", {"project_id": "repo", "relative_path": "src"})

        first = await list_src()
        assert text(first) == "[DIR] lib\n[FILE] a.ts\n[FILE] b.ts"
        await list_src()
        before = os.stat(src)
        (src / ".env").write_text("SECRET=1\n")
        os.symlink(repo.parent / "outside.txt", src / "out")  # out of the root: hidden
        os.symlink("lib/c.ts", src / "in")
        os.utime(src, ns=(before.st_atime_ns, before.st_mtime_ns))
        after = await list_src()
        assert text(after) == "[DIR] lib\n[FILE] a.ts\n[FILE] b.ts\n[LINK] in\n(2 entries hidden by policy)"
        assert after.structured_content["hidden"] == 2 and after.structured_content["counts"]["links"] == 1
