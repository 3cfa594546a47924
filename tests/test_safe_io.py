"""Race-safe I/O on real files: a symlink swapped in after the decision never redirects the operation."""

from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path

import pytest

from lsp_bridge.mcp import safe_io, safe_listing
from lsp_bridge.mcp.file_tools import Caller, FileTools, ToolError
from lsp_bridge.mcp.safe_io import SafeIOError


@pytest.fixture
def area(tmp_path: Path) -> dict[str, Path]:
    root = tmp_path / "project"
    (root / "sub").mkdir(parents=True)
    (root / "sub" / "file.txt").write_text("inside\n")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "victim.txt").write_text("outside original\n")
    return {"root": Path(os.path.realpath(root)), "outside": Path(os.path.realpath(outside))}


def refused(code: str, function, *args, **kwargs) -> SafeIOError:
    with pytest.raises(SafeIOError) as caught:
        function(*args, **kwargs)
    assert caught.value.code == code, caught.value.message
    return caught.value


def swap_for_link(path: Path, target: Path) -> None:
    """Replace ``path`` (file or directory) by a symbolic link to ``target``."""
    if path.is_dir() and not path.is_symlink():
        for child in path.iterdir():
            child.unlink()
        path.rmdir()
    else:
        path.unlink()
    path.symlink_to(target)


def test_round_trip_read_write_list_info_move_delete(area):
    root = str(area["root"])
    assert safe_io.read_file(root, "sub/file.txt", limit=100, decided=(None, 1)) == b"inside\n"
    assert safe_io.write_file(root, "sub/new/deep.txt", b"hello") is True  # parents created
    assert safe_io.write_file(root, "sub/new/deep.txt", b"again") is False
    assert (area["root"] / "sub" / "new" / "deep.txt").read_bytes() == b"again"
    assert [(e.name, e.kind) for e in safe_listing.list_directory(root, "sub")] == [("file.txt", "file"), ("new", "directory")]
    assert safe_io.file_info(root, "sub/file.txt").st_size == len(b"inside\n")
    safe_io.move_file(root, "sub/new/deep.txt", root, "sub/moved.txt")
    assert (area["root"] / "sub" / "moved.txt").read_bytes() == b"again"
    assert not (area["root"] / "sub" / "new" / "deep.txt").exists()
    safe_io.delete_file(root, "sub/moved.txt")
    assert not (area["root"] / "sub" / "moved.txt").exists()


def test_write_is_atomic_and_keeps_the_mode(area):
    target = area["root"] / "sub" / "file.txt"
    target.chmod(0o640)
    safe_io.write_file(str(area["root"]), "sub/file.txt", b"replaced\n")
    assert target.read_bytes() == b"replaced\n"
    assert stat.S_IMODE(target.stat().st_mode) == 0o640
    assert sorted(p.name for p in target.parent.iterdir()) == ["file.txt"]  # no temporary file left


def test_parent_swapped_for_a_link_after_the_decision_is_not_followed(area):
    """decide -> swap -> write: the write must not land outside (CVE-2025-53109's race)."""
    root = area["root"]
    tools = FileTools([str(root)])
    plan = tools.plan("write_file", {"project_id": "project", "relative_path": "sub/file.txt", "content": "owned"},
                      Caller())
    assert plan.verdict == "allow"
    swap_for_link(root / "sub", area["outside"])  # sub -> outside, after the decision
    (area["outside"] / "file.txt").write_text("outside file\n")
    with pytest.raises(ToolError) as caught:
        tools.conclude(plan)
    assert caught.value.code == "symlink_not_permitted"
    assert (area["outside"] / "file.txt").read_text() == "outside file\n"
    assert sorted(p.name for p in area["outside"].iterdir()) == ["file.txt", "victim.txt"]


def test_write_primitive_refuses_a_swapped_parent_directly(area):
    root = str(area["root"])
    swap_for_link(area["root"] / "sub", area["outside"])
    refused("symlink_not_permitted", safe_io.write_file, root, "sub/victim.txt", b"owned")
    refused("symlink_not_permitted", safe_io.read_file, root, "sub/victim.txt", limit=100, decided=(None, 1))
    refused("symlink_not_permitted", safe_io.delete_file, root, "sub/victim.txt")
    refused("symlink_not_permitted", safe_listing.list_directory, root, "sub")
    assert (area["outside"] / "victim.txt").read_text() == "outside original\n"


def test_a_parent_linked_to_a_twin_inside_the_root_is_still_refused(area):
    """The directory is opened by its whole path and kept only where /proc names it as decided:
    a link to a look-alike directory (same names, other content) lands elsewhere and is refused."""
    root = str(area["root"])
    (area["root"] / "sub" / "inner").mkdir()
    twin = area["root"] / "twin"
    (twin / "inner").mkdir(parents=True)
    (twin / "inner" / "file.txt").write_text("the twin's\n")
    shutil.rmtree(area["root"] / "sub")
    (area["root"] / "sub").symlink_to(twin)  # a link on the way, not the last directory: open() follows it
    refused("symlink_not_permitted", safe_io.read_file, root, "sub/inner/file.txt", limit=100, decided=(None, 1))
    refused("symlink_not_permitted", safe_io.write_file, root, "sub/inner/file.txt", b"owned")
    refused("symlink_not_permitted", safe_listing.list_directory, root, "sub/inner")
    refused("symlink_not_permitted", safe_io.delete_file, root, "sub/inner/file.txt")
    assert (twin / "inner" / "file.txt").read_text() == "the twin's\n"


def test_deep_paths_and_names_like_procs_removed_mark(area):
    root = area["root"]
    deep = root / "a" / "b (deleted)" / "c"
    deep.mkdir(parents=True)
    (deep / "f.txt").write_text("deep\n")
    assert safe_io.read_file(str(root), "a/b (deleted)/c/f.txt", limit=100, decided=(None, 1)) == b"deep\n"
    (root / "a" / "x (deleted)").mkdir()
    assert safe_io.write_file(str(root), "a/x (deleted)/g.txt", b"g") is True
    assert safe_io.read_file(str(root), "a/x (deleted)/g.txt", limit=100, decided=(None, 1)) == b"g"
    (area["outside"] / "c").mkdir()
    (area["outside"] / "c" / "f.txt").write_text("outside\n")
    shutil.rmtree(root / "a" / "b (deleted)")
    (root / "a" / "b (deleted)").symlink_to(area["outside"])
    refused("symlink_not_permitted", safe_io.read_file, str(root), "a/b (deleted)/c/f.txt", limit=100, decided=(None, 1))


def test_a_directory_moved_out_after_the_decision_is_not_found(area):
    root = str(area["root"])
    os.rename(area["root"] / "sub", area["outside"] / "sub")
    refused("not_found", safe_io.read_file, root, "sub/file.txt", limit=100, decided=(None, 1))


def test_leaf_swapped_for_a_link_is_neither_followed_nor_replaced(area):
    root = str(area["root"])
    leaf = area["root"] / "sub" / "file.txt"
    swap_for_link(leaf, area["outside"] / "victim.txt")
    refused("symlink_not_permitted", safe_io.write_file, root, "sub/file.txt", b"owned")
    refused("symlink_not_permitted", safe_io.read_file, root, "sub/file.txt", limit=100, decided=(None, 1))
    refused("symlink_not_permitted", safe_io.delete_file, root, "sub/file.txt")
    assert (area["outside"] / "victim.txt").read_text() == "outside original\n"
    assert leaf.is_symlink()


def test_move_never_overwrites_and_never_moves_a_link(area):
    root = str(area["root"])
    (area["root"] / "sub" / "other.txt").write_text("other\n")
    refused("already_exists", safe_io.move_file, root, "sub/file.txt", root, "sub/other.txt")
    (area["root"] / "sub" / "link").symlink_to(area["outside"] / "victim.txt")
    refused("symlink_not_permitted", safe_io.move_file, root, "sub/link", root, "sub/moved")
    assert (area["root"] / "sub" / "other.txt").read_text() == "other\n"


def test_special_files_directories_and_limits(area):
    root = str(area["root"])
    os.mkfifo(area["root"] / "pipe")
    refused("special_file", safe_io.read_file, root, "pipe", limit=100, decided=(None, 1))  # O_NONBLOCK: no hang
    refused("is_a_directory", safe_io.read_file, root, "sub", limit=100, decided=(None, 1))
    refused("is_a_directory", safe_io.delete_file, root, "sub")
    refused("file_too_large", safe_io.read_file, root, "sub/file.txt", limit=3, decided=(None, 1))
    refused("not_found", safe_io.read_file, root, "sub/missing.txt", limit=100, decided=(None, 1))
    refused("invalid_path", safe_io.read_file, root, "sub/../sub/file.txt", limit=100, decided=(None, 1))
    refused("invalid_path", safe_io.read_file, root, "/etc/passwd", limit=100, decided=(None, 1))


def test_a_read_serves_only_the_file_the_decision_saw(area):
    """Another file renamed over the name, or a hard link the decision did not know of: ``path_changed``."""
    root, path = str(area["root"]), area["root"] / "sub" / "file.txt"
    info = path.stat()
    seen = ((info.st_dev, info.st_ino), 1)
    assert safe_io.read_file(root, "sub/file.txt", limit=100, decided=seen) == b"inside\n"
    (area["root"] / "sub" / "fresh").write_text("replaced\n")
    os.rename(area["root"] / "sub" / "fresh", path)
    refused("path_changed", safe_io.read_file, root, "sub/file.txt", limit=100, decided=seen)
    os.link(area["outside"] / "victim.txt", area["root"] / "sub" / "linked")
    refused("path_changed", safe_io.read_file, root, "sub/linked", limit=100, decided=(None, 1))
    linked = (area["root"] / "sub" / "linked").stat()
    assert safe_io.read_file(root, "sub/linked", limit=100,  # decided knowing its two links: served
                             decided=((linked.st_dev, linked.st_ino), 2)) == b"outside original\n"


def test_walk_does_not_enter_linked_directories(area):
    root = str(area["root"])
    (area["root"] / "sub" / "away").symlink_to(area["outside"])
    (area["root"] / ".git").mkdir()
    (area["root"] / ".git" / "HEAD").write_text("ref\n")
    found = list(safe_listing.walk_files(root, "", skip_dirs=frozenset({".git"}), limit=100))
    assert sorted(found) == ["sub/away", "sub/file.txt"]  # the link is reported, never entered
    assert list(safe_listing.walk_files(root, "", skip_dirs=frozenset({".git"}), limit=1)) == ["sub/away"]


def test_a_listing_reads_inodes_per_its_screen_and_every_one_where_entries_may_not_carry_them(area):
    """``list_columns``: a screen of inode numbers reads only the files whose directory entry
    carries one of them; on a device whose file system type is unknown (entries may carry another
    layer's or a made-up number) every file is read. Nothing is guessed where it cannot be told."""
    root, sub = str(area["root"]), area["root"] / "sub"
    os.link(sub / "file.txt", sub / "alias.txt")
    (sub / "plain.txt").write_text("x\n")
    device, inode = os.stat(sub).st_dev, os.stat(sub / "file.txt").st_ino
    assert not safe_listing.readdir_inodes_exact(os.makedev(4095, 4095))  # no such device: not trusted
    listing = safe_listing.list_columns(root, "sub", file_stats=lambda dev: frozenset({inode}))
    assert listing.names == ["alias.txt", "file.txt", "plain.txt"] and listing.kinds == ["file"] * 3
    assert listing.stats is not None
    if safe_listing.readdir_inodes_exact(device):
        assert listing.stats == [((device, inode), 2), ((device, inode), 2), (None, 1)]
    else:
        assert [s[1] for s in listing.stats] == [2, 2, 1] and listing.stats[2][0] is not None
    unrelated = safe_listing.list_columns(root, "sub", file_stats=lambda dev: frozenset({inode + 10**9}))
    if safe_listing.readdir_inodes_exact(device):
        assert unrelated.stats is None  # no denied inode met: nothing read
    everything = safe_listing.list_columns(root, "sub", file_stats=True)
    assert everything.stats is not None and all(s[0] is not None for s in everything.stats)
    assert safe_listing.list_columns(root, "sub", file_stats=False).stats is None
