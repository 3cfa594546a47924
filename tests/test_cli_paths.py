"""CLI paths mean one thing (issue 33, point 8): relative paths against the current directory,
missing targets said, install hints that fit the install, long inventories collapsed."""

from __future__ import annotations

import json
import os
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


@pytest.mark.slow
def test_inventory_add_root_skips_proc_sys_and_dev(tmp_path):
    small = tmp_path / "small"
    small.mkdir()
    done = rootguard("inventory", "--json", "--root", str(small), "--add", "/", timeout=300)
    assert done.returncode == 0, done.stderr
    errors = json.loads(done.stdout)["errors"]
    assert any(e.startswith("/proc: a proc pseudo file system") for e in errors)
    assert any(e.startswith("/sys: a sysfs pseudo file system") for e in errors)
