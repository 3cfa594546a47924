"""The published editor windows as ``rootguard hook`` trusts them, through its real entry point (a subprocess,
JSON on stdin): a sessions directory that cannot be trusted blocks (never the wider project folder), and a
window's record must name its process's start time."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from lsp_bridge.agents.windows import process_start, sessions_dir
from tests.conftest import make_repo
from tests.test_agents_hook import claude, hook

pytestmark = pytest.mark.timeout(300)


@pytest.fixture
def shop(tmp_path: Path) -> Path:
    """A monorepo: the agent's package and a sibling package."""
    return make_repo(tmp_path / "shop", {"package.json": "{}\n", "packages/checkout/src/app.ts": "app\n",
                                         "packages/admin/src/admin.ts": "admin\n"})


def plant(name: str, record: dict) -> Path:
    directory = Path(sessions_dir())
    directory.mkdir(parents=True, mode=0o700, exist_ok=True)
    os.chmod(directory.parent, 0o700)
    os.chmod(directory, 0o700)
    path = directory / f"{name}.json"
    path.write_text(json.dumps({"version": 1, "session": name, "client": "test editor", "union": [],
                                "worktrees": [], "agents": [], **record}))
    os.chmod(path, 0o600)
    return path


def read_sibling(shop: Path) -> dict:
    """The agent in the checkout package reads the admin package's file; its project folder is the repository."""
    return claude(shop / "packages" / "checkout", "Read", {"file_path": str(shop / "packages/admin/src/admin.ts")})


def whole_repository(shop: Path) -> dict:
    return {"CLAUDE_PROJECT_DIR": str(shop)}


def make_untrusted(how: str) -> tuple[str, str]:
    """Spoil the sessions directory ``how``; (the directory the hook must name, the problem it must name)."""
    directory = Path(sessions_dir())
    if how == "open sessions directory":
        os.chmod(directory, 0o755)
        return str(directory), "mode 755"
    if how == "runtime directory a symlink":
        moved = directory.parent.with_name("rootguard-elsewhere")
        directory.parent.rename(moved)
        directory.parent.symlink_to(moved)
        return str(directory.parent), "symbolic link"
    if how == "runtime directory of another user":
        if os.getuid() != 0:
            pytest.skip("changing a directory's owner needs root")
        os.chown(directory.parent, 65534, 65534)  # nobody
        return str(directory.parent), "owned by uid 65534"
    raise AssertionError(how)


@pytest.mark.parametrize("how", ["open sessions directory", "runtime directory a symlink",
                                 "runtime directory of another user"])
def test_an_untrusted_sessions_directory_blocks_instead_of_the_wider_project_folder(shop: Path, how: str):
    # a live window of ours (this process, its real start time) opened on the checkout package only
    plant("window", {"pid": os.getpid(), "started": process_start(os.getpid()),
                     "folders": [str(shop / "packages" / "checkout")]})
    bound = hook("claude", read_sibling(shop), env=whole_repository(shop))
    assert bound.returncode == 2 and b"editor window" in bound.stderr, bound.stderr  # the window's union
    directory, problem = make_untrusted(how)
    done = hook("claude", read_sibling(shop), env=whole_repository(shop))
    # without the fix the hook fell back to CLAUDE_PROJECT_DIR (the whole repository) and allowed the read
    assert done.returncode == 2, (done.stdout, done.stderr)
    reason = json.loads(done.stdout)["hookSpecificOutput"]["permissionDecisionReason"] if done.stdout else ""
    shown = done.stderr.decode() + reason
    assert directory in shown and problem in shown and "cannot be trusted" in shown, shown


def test_no_sessions_directory_is_no_window_and_the_project_folder_bounds_the_agent(shop: Path):
    shutil.rmtree(Path(sessions_dir()).parent, ignore_errors=True)
    done = hook("claude", read_sibling(shop), env=whole_repository(shop))
    assert (done.returncode, done.stdout) == (0, b""), done.stderr


def test_a_window_record_without_its_start_time_is_refused(shop: Path):
    checkout = shop / "packages" / "checkout"
    sleeper = subprocess.Popen(["sleep", "300"])  # any live process of this user
    try:
        # a forged record naming the whole repository for a live pid, with no start time to check
        planted = plant("forged", {"pid": sleeper.pid, "folders": [str(shop)]})
        done = hook("claude", read_sibling(shop), env={"CLAUDE_PROJECT_DIR": str(checkout)})
        # without the fix the forged window was taken and the sibling package read allowed
        assert done.returncode == 2 and b"project folder" in done.stderr, (done.stdout, done.stderr)
        assert planted.exists()  # its process is alive: refused, not removed
    finally:
        sleeper.kill()
        sleeper.wait(30)
    done = hook("claude", read_sibling(shop), env={"CLAUDE_PROJECT_DIR": str(checkout)})
    assert done.returncode == 2
    assert not planted.exists()  # its process is gone: a stale record of ours is removed
