"""A hostile repository inspected on the host (``rootguard inventory``, the language server's scan):
Root Guard's own git commands never run what the repository's configuration names."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.conftest import git, make_repo

REPO = Path(__file__).resolve().parents[1]


def partial_clone(path: Path, marker: Path) -> Path:
    """A repository whose pack holds its commits but not their trees, set up as a partial clone
    whose promisor remote is reached through ``core.sshCommand``: git reading the deleted files
    fetches the missing trees, and so runs the repository's command (it writes ``marker``)."""
    repo = make_repo(path, {"README.md": "hello\n", ".env": "TOKEN=s3cr3t\n"})
    git(repo, "rm", "-q", ".env")
    git(repo, "commit", "-q", "-m", "drop the secret")
    commits = git(repo, "rev-list", "--all")
    subprocess.run(["git", "pack-objects", "-q", ".git/objects/pack/commits"], input=commits, text=True,
                   cwd=repo, check=True, capture_output=True, timeout=60)
    objects = repo / ".git" / "objects"
    for loose in objects.glob("[0-9a-f][0-9a-f]"):
        for item in loose.iterdir():
            item.unlink()
        loose.rmdir()
    for pack in (objects / "pack").glob("pack-*"):
        pack.unlink()
    for key, value in (("core.repositoryformatversion", "1"), ("extensions.partialClone", "origin"),
                       ("remote.origin.promisor", "true"), ("remote.origin.url", "ssh://attacker.invalid/x"),
                       ("core.sshCommand", f'sh -c "echo ran > {marker}; exit 1" --')):
        git(repo, "config", key, value)
    return repo


def test_a_partial_clone_does_not_run_its_fetch_command_when_its_history_is_read(tmp_path):
    marker = tmp_path / "ran"
    repo = partial_clone(tmp_path / "hostile", marker)
    # Unprotected: git listing the deleted files fetches the missing trees through the repository's command.
    subprocess.run(["git", f"--git-dir={repo / '.git'}", "-c", "core.fsmonitor=false", "log", "--all",
                    "--name-only", "--diff-filter=D", "-z"], capture_output=True, timeout=60, check=False)
    assert marker.read_text() == "ran\n"
    marker.unlink()
    (tmp_path / "base").mkdir()
    done = subprocess.run([sys.executable, "-m", "lsp_bridge.cli", "inventory", "--root", str(tmp_path / "base"),
                           "--add", str(repo)], capture_output=True, text=True, timeout=120, cwd=tmp_path,
                          env=dict(os.environ, PYTHONPATH=str(REPO)))
    assert done.returncode == 0, done.stderr
    assert not marker.exists()
    assert "hostile/.git" in done.stdout and "unknown number of commits" in done.stdout  # not read, and said so
