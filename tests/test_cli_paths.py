"""CLI paths mean one thing (issue 33, point 8): relative paths against the current directory,
missing targets said, install hints that fit the install, long inventories collapsed."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from lsp_bridge.cli.install_hint import install_command, install_kind
from lsp_bridge.inventory.model import GitDir, InventoryReport
from tests.conftest import make_repo

REPO = Path(__file__).resolve().parent.parent


def rootguard(*args: str, cwd: Path | str = REPO, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "lsp_bridge.cli", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=timeout, env={**os.environ, "PYTHONPATH": str(REPO)})


def test_check_reads_a_relative_path_against_the_current_directory(tmp_path):
    repo = make_repo(tmp_path / "mono", {"packages/api/index.js": "x\n", ".env": "TOKEN=1\n"})
    done = rootguard("check", "--json", "--root", "packages/api", "--op", "read", ".env", cwd=repo)
    data = json.loads(done.stdout)
    assert data["path"] == str(repo / ".env")  # not packages/api/.env
    assert done.returncode == 1 and data["decision"] == "deny" and data["exists"] is True
    inside = rootguard("check", "--root", "packages/api", "--op", "read", "packages/api/index.js", cwd=repo)
    assert inside.returncode == 0 and str(repo / "packages/api/index.js") in inside.stdout
    usage = " ".join(rootguard("check", "--help").stdout.split())
    assert "PATH the path accessed (relative: from the current directory)" in usage  # the help says what it does


def test_check_decides_a_target_that_does_not_exist_and_says_so(tmp_path):
    repo = make_repo(tmp_path / "r")
    done = rootguard("check", "--root", ".", "--op", "write", "new/file.txt", cwd=repo)
    assert done.returncode == 0, done.stderr
    assert f"note:   {repo / 'new/file.txt'} does not exist" in done.stdout
    as_json = json.loads(rootguard("check", "--json", "--root", ".", "--op", "read", "nope", cwd=repo).stdout)
    assert as_json["exists"] is False and as_json["decision"] == "allow"


def test_install_hints_fit_each_install_kind(tmp_path):
    source = tmp_path / "checkout" / "lsp_bridge"
    source.mkdir(parents=True)
    (source.parent / "pyproject.toml").write_text("[project]\nname = 'rootguard'\n")
    assert install_kind(str(source)) == "source"
    assert install_command("mcp", str(source)) == f"pip install '.[mcp]' in the Root Guard source folder ({source.parent})"
    bundle = tmp_path / "ext" / "bundled" / "libs" / "lsp_bridge"
    bundle.mkdir(parents=True)
    assert install_kind(str(bundle)) == "vsix"
    assert "Start Tray" in install_command("tray", str(bundle))
    for hint in (install_command(e, str(p)) for e in ("tray", "mcp") for p in (source, bundle)):
        assert "rootguard[" not in hint  # never a name on a public index the project does not own


def test_config_migrate_check_exit_codes_are_those_the_docs_give(tmp_path):
    v1 = tmp_path / "v1.toml"
    v1.write_text("[safety]\nfollow_symlinks = true\n")
    v2 = tmp_path / "v2.toml"
    v2.write_text("version = 2\n")
    bad = tmp_path / "bad.toml"
    bad.write_text("version = [\n")
    codes = [rootguard("config", "migrate", "--check", str(f)).returncode for f in (v2, v1, bad)]
    assert codes == [0, 1, 2]
    for doc in ("docs/cli.md", "docs/configuration.md"):
        text = (REPO / doc).read_text()
        assert "0 when" in text or "0 written" in text
    assert "`--check` exits 0 when the file is current,\n1 when it needs migrating, 2 when" in (
        REPO / "docs/configuration.md").read_text()


def test_a_long_inventory_collapses_its_git_lines():
    gits = tuple(GitDir(f"/r/p{i}/.git", 1_000_000, 10, (), (f"/r/p{i}",)) for i in range(300))
    report = InventoryReport(("/r/a",), ("/r",), ("/r",), True, 1, 2, git=gits)
    lines = report.describe()
    assert sum(1 for line in lines if line.startswith("Git history")) == 8
    assert any(line.startswith("292 other git histories: 292.0 MB, 2,920 commits in all") for line in lines)
    assert len(lines) < 20


def test_inventory_never_walks_pseudo_file_systems(tmp_path):
    from lsp_bridge.core.filesystems import pseudo_mounts

    mounts = pseudo_mounts()
    if "/proc" not in mounts:
        pytest.skip("no /proc mounted here")
    from lsp_bridge.inventory.scan import InventoryCache

    cache = InventoryCache(persistent=False)
    cache._pseudo = {**mounts, str(tmp_path / "fake-proc"): "proc"}  # a stand-in mount point inside a small root
    (tmp_path / "fake-proc" / "1").mkdir(parents=True)
    (tmp_path / "fake-proc" / "1" / "status").write_text("x\n")
    (tmp_path / "real.txt").write_text("x\n")
    report = cache.report([], [str(tmp_path)])
    assert report.files_after == 1
    assert any("fake-proc: a proc pseudo file system, not walked" in e for e in report.errors)


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("unshare"), reason="mounts a proc in a private mount namespace (root)")
def test_inventory_skips_a_proc_mounted_inside_the_added_folder(tmp_path):
    """What ``inventory --add /`` meets, without walking the whole disk: a real proc mounted inside the
    added folder (in a private mount namespace) is named as not walked, and the rest is counted."""
    small, wide = tmp_path / "small", tmp_path / "wide"
    small.mkdir()
    (wide / "proc").mkdir(parents=True)
    (wide / "notes.txt").write_text("x\n")
    script = (f"mount -t proc proc {wide / 'proc'} && exec {sys.executable} -m lsp_bridge.cli inventory --json "
              f"--root {small} --add {wide}")
    done = subprocess.run(["unshare", "--mount", "--propagation", "private", "--pid", "--fork", "sh", "-c", script],
                          capture_output=True, text=True, timeout=120, env={**os.environ, "PYTHONPATH": str(REPO)})
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["files_after"] == 1
    assert any(e.startswith(f"{wide / 'proc'}: a proc pseudo file system") for e in report["errors"])

def test_json_output_stays_valid_with_a_name_that_is_not_utf8(tmp_path):
    """A file name's bytes need not be UTF-8: ``--json`` writes its lone surrogates as JSON escapes,
    so the output is valid UTF-8 JSON that reads back to the same name."""
    small, wide = tmp_path / "small", tmp_path / "wide"
    small.mkdir()
    wide.mkdir()
    with open(os.path.join(os.fsencode(wide), b"token\xff.env"), "w") as handle:
        handle.write("AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY1\n")
    done = subprocess.run([sys.executable, "-m", "lsp_bridge.cli", "inventory", "--json", "--root", str(small),
                           "--add", str(wide)], capture_output=True, timeout=60, env={**os.environ, "PYTHONPATH": str(REPO)})
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout.decode("utf-8"))  # strict UTF-8: no raw 0xff byte
    assert report["files_after"] == 1
