"""Scans kept between runs (``inventory.scan_store``): the next run lists only what changed,
and every change a person or an agent can make between runs is still seen.

Each "run" is a fresh ``InventoryCache`` (as a new ``rootguard inventory`` process or a new
editor session starts with), its answer compared with a walk that keeps nothing.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from lsp_bridge.cli.demo_repo import build_monorepo
from lsp_bridge.core import change_key
from lsp_bridge.inventory import scan_store
from lsp_bridge.inventory.scan import InventoryCache
from tests.conftest import tmp_keeps_scans

SETTLE = change_key.MARGIN_NS / 1e9 + 0.05  # past the racy window: what was written before is kept

# Nothing is kept on a file system whose timestamps another machine sets (NFS, FUSE, 9p): a
# machine whose temporary directory is one cannot show a kept scan.
KEEPS = pytest.mark.skipif(not tmp_keeps_scans(),
                           reason="the temporary directory is not on a local file system: nothing is kept there")


@pytest.fixture
def small(tmp_path):
    if not tmp_keeps_scans():
        pytest.skip("the temporary directory is not on a local file system: nothing is kept there")
    demo = build_monorepo(str(tmp_path), packages=4, files_per_package=6, narrow_files=10,
                          commits=4, worktree=False)
    time.sleep(SETTLE)
    return demo


def run(demo, *, save: bool = True, clock=time.time_ns) -> tuple[InventoryCache, object]:
    """One run: a fresh cache's report of widening the narrow package to the repository."""
    cache = InventoryCache(clock=clock)
    report = cache.report([demo.narrow], [demo.repo])
    if save:
        cache.save_scans()
    return cache, report


def fresh(demo):
    """The same report from a walk that keeps nothing and reads everything."""
    return InventoryCache(persistent=False).report([demo.narrow], [demo.repo])


def tree_dirs(top: str) -> int:
    """Directories the walk lists: every one below ``top`` but inside ``.git``."""
    count = 0
    for _path, dirs, _files in os.walk(top):
        dirs[:] = [d for d in dirs if d != ".git"]
        count += 1
    return count


def store_files() -> list[Path]:
    return sorted((Path(os.environ["XDG_CACHE_HOME"]) / "rootguard" / "scans").glob("*.json"))


def test_a_second_run_lists_no_directory_of_an_unchanged_tree(small):
    first, report = run(small)
    second, again = run(small)
    assert again == report == fresh(small)
    # Both runs measure .git alike; only the first listed the tree, every directory of it.
    assert first.dirs_scanned - second.dirs_scanned == tree_dirs(small.repo)
    assert second.dirs_kept > 0
    assert len(store_files()) == 1


def test_changes_between_runs_are_all_seen(small):
    run(small)
    deep = Path(small.repo, "packages", "ui", "src", "deep", "er")
    deep.mkdir(parents=True)
    (deep / ".env").write_text("API_TOKEN=Ab12Cd34Ef56Gh78Ij90\nDB_PASSWORD=hunter2hunter2\n")  # three levels down
    (deep / "notes.md").write_text("more\n")
    shutil.rmtree(Path(small.package("payments"), "src"))
    os.rename(small.package("cart"), os.path.join(small.repo, "moved-cart"))  # a subtree moves
    store_file = next(Path(small.store).rglob("*.js"))
    (store_file.parent / "added.js").write_text("x\n")  # deep inside the package store
    _, report = run(small)
    assert report == fresh(small)
    assert str(deep / ".env") in [c.path for c in report.credentials]


def test_a_credential_file_rewritten_to_the_same_size_is_counted_again(small):
    env = Path(small.repo, ".env")
    _, before = run(small)
    text = env.read_text()
    counted = dict((c.path, c.count) for c in before.credentials)[str(env)]
    # Same length, one credential fewer: only the file's own key can tell.
    secret = next(line for line in text.splitlines() if line.startswith("SEGMENT_WRITE_KEY="))
    env.write_text(text.replace(secret, "#" + secret[1:], 1))
    assert env.stat().st_size == len(text.encode())
    _, after = run(small)
    assert after == fresh(small)
    assert dict((c.path, c.count) for c in after.credentials).get(str(env), 0) == counted - 1


def test_a_file_read_again_under_a_kept_directory_is_kept_with_its_new_key(small):
    env = Path(small.repo, ".env")
    run(small)
    os.utime(env)  # the file changes, its directory does not
    time.sleep(SETTLE)
    second, _ = run(small)
    assert second.dirs_kept > 0
    root = json.loads(store_files()[0].read_text())["records"][""]
    info = env.stat()
    kept = next(c for c in root[7] if c[0] == ".env")
    assert kept[2:] == [info.st_mtime_ns, info.st_size, info.st_ctime_ns, info.st_ino]


def test_a_directory_changed_just_before_its_listing_is_not_kept(small):
    Path(small.repo, "just-now").write_text("x\n")  # the root changes within the racy window:
    run(small, clock=lambda: os.stat(small.repo).st_ctime_ns)  # the walk reads it in the tick it changed
    records = json.loads(store_files()[0].read_text())["records"]
    assert "" not in records  # a change in the same clock tick would not change its key: listed again
    assert "packages" in records
    _, report = run(small)
    assert report == fresh(small)


@pytest.mark.parametrize("damage", [
    "not json at all {",
    "[" * 100_000 + "]" * 100_000,  # nested past the JSON parser's depth
    b"\xff\xfe not UTF-8",
    json.dumps({"format": 1, "top": "/", "records": {}, "counts": {}}),
    json.dumps(["a", "list"]),
])
def test_a_damaged_or_foreign_store_is_no_store(small, damage):
    run(small)
    path = store_files()[0]
    path.write_bytes(damage) if isinstance(damage, bytes) else path.write_text(damage)
    second, report = run(small)
    assert report == fresh(small)
    assert second.dirs_kept == 0
    assert json.loads(store_files()[0].read_text())["top"] == small.repo  # written again, whole


@pytest.mark.parametrize("field,value", [
    (5, ["..", "packages"]),  # subdirectories that climb out
    (5, ["a/../../etc"]),
    (4, -3),  # a negative count
    (4, "12"),
    (7, [["../../.env", 3, 1, 1, 1, 1]]),  # a credential file outside the directory
    (8, [["ci.yml", [["aws", "role", "x"]], "yes", 1, 2, 3, 4]]),
    (7, 0),  # no list where the credential files go
    (8, ""),
    (5, ["ok", ""]),
    (5, ["a\x00b"]),
])
def test_a_record_that_is_not_what_the_scanner_writes_is_listed_afresh(small, field, value):
    run(small)
    path = store_files()[0]
    data = json.loads(path.read_text())
    for record in data["records"].values():
        record[field] = value
    path.write_text(json.dumps(data))
    second, report = run(small, save=False)
    assert report == fresh(small)
    assert second.dirs_kept == len(data["counts"])  # only the package stores' counts, records of their own


def test_a_package_store_record_missing_its_root_is_counted_afresh(small):
    run(small)
    path = store_files()[0]
    data = json.loads(path.read_text())
    assert data["counts"], "the demo has a pnpm store"
    for count in data["counts"].values():
        count[0] = 1
        count[1] = [key for key in count[1] if key[0]]  # every directory but the store's own
    path.write_text(json.dumps(data))
    _, report = run(small, save=False)
    assert report == fresh(small)


@KEEPS
def test_the_cache_keeps_a_bounded_number_of_roots(tmp_path, monkeypatch):
    monkeypatch.setattr(scan_store, "KEPT_ROOTS", 2)
    for name in ("a", "b", "c"):
        top = tmp_path / name
        (top / "sub").mkdir(parents=True)
        (top / "sub" / "file.txt").write_text("x\n")
    time.sleep(SETTLE)
    written = time.time_ns() - 100 * 10**9
    for index, name in enumerate(("a", "b", "c")):
        cache = InventoryCache()
        cache.report([], [str(tmp_path / name)])
        cache.save_scans()
        for path in store_files():  # "least recently written" set by the test, not by a 10 ms sleep
            if json.loads(path.read_text())["top"] == str(tmp_path / name):
                os.utime(path, ns=(written + index * 10**9, written + index * 10**9))
    kept = [json.loads(p.read_text())["top"] for p in store_files()]
    assert sorted(kept) == [str(tmp_path / "b"), str(tmp_path / "c")]


def test_the_command_line_sees_a_credential_created_deep_after_a_kept_run(small):
    command = [sys.executable, "-m", "lsp_bridge.cli", "inventory", "--root", small.narrow, "--add", small.repo]
    first = subprocess.run(command, capture_output=True, text=True, timeout=60)
    assert first.returncode == 0, first.stderr
    second = subprocess.run(command, capture_output=True, text=True, timeout=60)
    assert second.stdout == first.stdout
    deep = Path(small.repo, "packages", "ui", "a", "b")
    deep.mkdir(parents=True)
    (deep / ".env").write_text("API_TOKEN=Ab12Cd34Ef56Gh78Ij90\n")
    third = subprocess.run(command, capture_output=True, text=True, timeout=60)
    assert "packages/ui/a/b/.env" in third.stdout
    assert third.stdout != first.stdout


@pytest.mark.parametrize("names,plain", [
    ([], True),
    (["src", "a b", ".env", "..hidden", "ünï"], True),
    (["src", ""], False),
    (["."], False),
    (["src", ".."], False),
    (["a/b"], False),
    (["a\x00b"], False),
    (["src", 3], False),
    ("src", False),
    (None, False),
])
def test_plain_names(names, plain):
    assert scan_store.plain_names(names) is plain


@KEEPS
def test_a_key_is_kept_only_once_the_racy_window_has_passed(tmp_path):
    info = os.lstat(tmp_path)
    changed = info.st_ctime_ns
    assert change_key.stable_key(info, changed) is None  # read in the tick it changed
    assert change_key.stable_key(info, changed + change_key.MARGIN_NS // 2) is None
    kept = change_key.stable_key(info, changed + change_key.COARSE_MARGIN_NS + 1)
    assert kept == (info.st_dev, info.st_ino, info.st_mtime_ns, changed)
    (tmp_path / "new").write_text("x\n")  # an entry added: the directory's key changes
    assert change_key.key_of(str(tmp_path), time.time_ns() + change_key.COARSE_MARGIN_NS + 1) != kept


@KEEPS
def test_names_that_are_not_utf8_are_kept_and_read_back(tmp_path):
    top = tmp_path / "top"
    odd = os.fsdecode(b"bad\xff\xfename")  # bytes no encoding gives: lone surrogates in Python
    (top / odd / "deeper").mkdir(parents=True)
    (top / odd / "deeper" / ".env").write_text("API_TOKEN=Ab12Cd34Ef56Gh78Ij90\n")
    (top / "sub").mkdir()
    time.sleep(SETTLE)
    first = InventoryCache()
    report = first.report([str(top / "sub")], [str(top)])
    first.save_scans()
    second = InventoryCache()
    assert second.report([str(top / "sub")], [str(top)]) == report
    assert second.dirs_kept == tree_dirs(str(top))
    assert str(top / odd / "deeper" / ".env") in [c.path for c in report.credentials]


def test_a_cache_text_utf8_cannot_hold_is_not_written_and_leaves_no_temporary(tmp_path):
    from lsp_bridge.core.atomic import write_cache

    target = tmp_path / "cache" / "kept.json"
    assert write_cache(str(target), '{"ok": 1}') is True
    assert write_cache(str(target), '{"name": "' + os.fsdecode(b"\xff") + '"}') is False
    assert target.read_text() == '{"ok": 1}'  # the file kept before is still there, whole
    assert [p.name for p in target.parent.iterdir()] == ["kept.json"]
