"""Shared fixtures: every test runs with its own user config dir and git identity."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

GIT_ENV = {
    "GIT_AUTHOR_NAME": "Root Guard Tests",
    "GIT_AUTHOR_EMAIL": "tests@rootguard.invalid",
    "GIT_COMMITTER_NAME": "Root Guard Tests",
    "GIT_COMMITTER_EMAIL": "tests@rootguard.invalid",
    "GIT_CONFIG_NOSYSTEM": "1",
}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """A test that runs a Qt event loop gets its time limit from a thread (pytest-timeout's "thread"
    method: every thread's stack, then the run ends): the default "signal" method's SIGALRM handler
    is Python code, which never runs while Qt's C++ loop waits (``qtbot.wait``)."""
    for item in items:
        if {"qtbot", "qapp"} & set(getattr(item, "fixturenames", ())):
            closest = item.get_closest_marker("timeout")
            seconds = (closest.kwargs.get("timeout") or (closest.args[0] if closest.args else None)) if closest else None
            item.add_marker(pytest.mark.timeout(seconds, method="thread"), append=False)


@pytest.fixture(autouse=True)
def isolated_user(tmp_path_factory, monkeypatch):
    """No test reads or writes the real user's configuration or state."""
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    monkeypatch.setenv("XDG_STATE_HOME", str(home / ".local" / "state"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(home / ".cache"))
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(home / "run"))
    (home / "run").mkdir(mode=0o700)
    monkeypatch.delenv("ROOTGUARD_CONFIG", raising=False)
    monkeypatch.delenv("ROOTGUARD_ROOTS", raising=False)
    for key, value in GIT_ENV.items():
        monkeypatch.setenv(key, value)
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(home / ".gitconfig"))
    (home / ".gitconfig").write_text("[init]\n\tdefaultBranch = main\n[commit]\n\tgpgsign = false\n")
    return home


def git(cwd: Path | str, *args: str) -> str:
    result = subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True, timeout=120)
    return result.stdout


def make_repo(path: Path, files: dict[str, str] | None = None) -> Path:
    """A git repository at ``path`` with ``files`` committed."""
    path.mkdir(parents=True, exist_ok=True)
    git(path, "init", "-q")
    for name, text in (files or {"README.md": "hello\n"}).items():
        target = path / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
    git(path, "add", "-A")
    git(path, "commit", "-q", "-m", "initial")
    return path


def tmp_keeps_scans() -> bool:
    """Whether the temporary directory is on a file system whose timestamps this machine sets:
    only there are scans and ref keys kept between runs (``inventory/scan_store.py``)."""
    import tempfile

    from lsp_bridge.core.change_key import LOCAL_TYPES
    from lsp_bridge.core.filesystems import filesystem_type

    return filesystem_type(os.stat(tempfile.gettempdir()).st_dev) in LOCAL_TYPES
