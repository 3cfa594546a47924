"""The ``rootguard`` command line: the JSON contracts of PRODUCT.md and exit codes."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.conftest import git, make_repo


def rootguard(*args, check=True):
    result = subprocess.run([sys.executable, "-m", "lsp_bridge.cli.main", *args], capture_output=True, text=True, timeout=120)
    if check:
        assert result.returncode == 0, result.stderr
    return result


@pytest.fixture
def repo(tmp_path):
    root = make_repo(tmp_path / "shop", {"packages/checkout/package.json": "{}\n", "packages/ui/package.json": "{}\n"})
    (root / ".env").write_text("DATABASE_URL=postgres://app:hunter2@db.internal/app\n")
    git(root, "worktree", "add", "-q", str(tmp_path / "shop-hotfix"), "-b", "hotfix")
    return root


def test_roots_json_reports_union_shadowed_and_worktrees(repo, tmp_path):
    data = json.loads(rootguard("roots", "--json", str(repo / "packages/checkout"), str(repo)).stdout)
    assert set(data) >= {"union", "shadowed", "worktrees", "mounts", "warnings"}
    assert str(repo) in data["union"]
    assert {"path": str(repo / "packages/checkout"), "by": str(repo)}.items() <= data["shadowed"][0].items()
    assert data["worktrees"][0]["mode"] == "include"
    assert str(tmp_path / "shop-hotfix") in data["union"]


def test_roots_human_output_names_the_shadowed_entry(repo):
    out = rootguard("roots", str(repo / "packages/checkout"), str(repo)).stdout
    assert "Shadowed" in out and str(repo / "packages/checkout") in out


@pytest.mark.parametrize("op, expected", [("read", "allow"), ("write", "allow"), ("delete", "allow")])
def test_check_json_inside(repo, op, expected):
    data = json.loads(rootguard("check", "--json", "--root", str(repo), "--op", op, str(repo / ".env")).stdout)
    assert data == {**data, "decision": expected, "path": str(repo / ".env"), "rule": None}
    assert data["reason"]


def test_check_json_outside_is_denied_with_canonical_path(repo, tmp_path):
    link = repo / "escape"
    link.symlink_to(tmp_path)
    data = json.loads(rootguard("check", "--json", "--root", str(repo), "--op", "read", str(link)).stdout)
    assert data["decision"] == "deny" and data["path"] == str(tmp_path)


def test_check_rename_takes_two_paths(repo):
    data = json.loads(
        rootguard("check", "--json", "--root", str(repo), "--op", "rename", str(repo / ".env"), str(repo / "x")).stdout
    )
    assert data["decision"] == "allow" and data["dest"]["path"] == str(repo / "x")


@pytest.mark.parametrize(
    "args",
    [
        ["check", "--json", "--op", "read", "/x"],  # no --root: never the current directory
        ["check", "--json", "--root", "/definitely/not/here", "--op", "read", "/x"],
        ["check", "--json", "--root", "/", "--op", "rename", "/x"],
        ["roots", "--json", "/definitely/not/here"],
        ["inventory", "--json", "--root", "/"],
        ["check", "--json", "--root", "", "--op", "read", "/x"],  # empty: not the current directory
        ["roots", "--json", ""],
    ],
)
def test_bad_input_exits_2_with_one_line(args):
    result = rootguard(*args, check=False)
    assert result.returncode == 2
    assert len(result.stderr.strip().splitlines()) == 1


def test_inventory_json_contract(repo):
    data = json.loads(rootguard("inventory", "--json", "--root", str(repo / "packages/checkout"), "--add", str(repo)).stdout)
    assert data["widens"] is True
    assert data["files_after"] > data["files_before"]
    assert {"path": str(repo / ".env"), "count": 1} in data["credentials"]
    assert "hunter2" not in json.dumps(data)
    assert data["git"][0]["commits"] == 1


def test_mounts_json_and_docker(repo):
    data = json.loads(rootguard("mounts", "--json", str(repo / "packages/checkout")).stdout)
    assert "suggested" in data and "roots_without_mount" in data
    docker = rootguard("mounts", "--docker", str(repo / "packages/checkout")).stdout
    assert docker.startswith("-v ") and "/workspace" in docker


def test_config_migrate_check_exit_codes(tmp_path):
    v1 = tmp_path / "v1.toml"
    v1.write_text("[safety]\nallow_any_path = false\n")
    v2 = tmp_path / "v2.toml"
    v2.write_text("version = 2\n")
    bad = tmp_path / "bad.toml"
    bad.write_text("version = [\n")
    assert rootguard("config", "migrate", "--check", str(v2), check=False).returncode == 0
    assert rootguard("config", "migrate", "--check", str(v1), check=False).returncode == 2
    assert rootguard("config", "migrate", "--check", str(bad), check=False).returncode == 1


def test_demo_runs_and_prints_the_widening_report():
    out = rootguard("demo").stdout
    assert "widens the union" in out and ".env (4)" in out
