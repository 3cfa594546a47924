"""A real third-party client: headless Neovim drives the server and sees the warning."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from lsp_bridge.cli.demo_repo import build_monorepo

NVIM = shutil.which("nvim")
SCRIPT = Path(__file__).parent / "nvim" / "widening.lua"
pytestmark = pytest.mark.timeout(300)  # a demo repository and a headless Neovim (120 s at most)


def run_neovim(tmp_path: Path, demo, *, start_both: bool, choices: str = "", wait_for: str = "") -> list[str]:
    out = tmp_path / f"nvim-{int(start_both)}.log"
    out.write_text("")
    env = dict(
        os.environ, RG_OUT=str(out), RG_NARROW=demo.narrow, RG_REPO=demo.repo, RG_PYTHON=sys.executable,
        RG_START_BOTH="1" if start_both else "0", RG_CHOICES=choices,
    )
    if wait_for:
        env["RG_WAIT_FOR"] = wait_for
    subprocess.run(
        [NVIM, "--headless", "--clean", "-n", "-u", "NONE", "-c", f"luafile {SCRIPT}"],
        env=env, timeout=120, check=True, capture_output=True, cwd=tmp_path,
    )
    return out.read_text().splitlines()


def visible_warning(lines: list[str]) -> str:
    """The first line Neovim put on screen for the warning."""
    return next(line[len("VISIBLE "):] for line in lines if line.startswith("VISIBLE ") and "Root Guard" in line)


@pytest.mark.skipif(NVIM is None, reason="Neovim is not installed (scripts/bootstrap.sh --test installs Debian's neovim)")
def test_neovim_add_workspace_folder_shows_the_widening_warning(tmp_path):
    demo = build_monorepo(str(tmp_path / "demo"), packages=6, files_per_package=10, commits=3, worktree=False)
    lines = run_neovim(tmp_path, demo, start_both=False)
    assert "INITIALIZED true" in lines
    assert any(line.startswith("STATUS widened=true") for line in lines), lines
    line = visible_warning(lines)
    assert line.startswith("Root Guard: adding shop widened the agent's boundary ×"), line
    assert "secrets file" in line and ".git (3 commits)" in line
    # Neovim 0.7 supports window/showMessageRequest: the actions are offered under the line.
    assert "VISIBLE 1. Show report" in lines and "VISIBLE 2. Acknowledge" in lines
    shown = [x for x in lines if x.startswith("VISIBLE ")]
    assert shown.index("VISIBLE " + line) < shown.index("VISIBLE 1. Show report")


@pytest.mark.skipif(NVIM is None, reason="Neovim is not installed (scripts/bootstrap.sh --test installs Debian's neovim)")
def test_neovim_started_with_both_folders_is_warned_too(tmp_path):
    demo = build_monorepo(str(tmp_path / "demo"), packages=6, files_per_package=10, commits=3, worktree=False)
    line = visible_warning(run_neovim(tmp_path, demo, start_both=True))
    assert line.startswith("Root Guard: opening shop widened the agent's boundary ×"), line


@pytest.mark.skipif(NVIM is None, reason="Neovim is not installed (scripts/bootstrap.sh --test installs Debian's neovim)")
def test_neovim_show_report_puts_the_whole_report_on_screen_with_acknowledge(tmp_path):
    """Neovim 0.7 has no window/showDocument: the report comes whole, as one request whose
    actions are Acknowledge and Close (not one line of a message, the rest scrolled away)."""
    demo = build_monorepo(str(tmp_path / "demo"), packages=6, files_per_package=10, commits=3, worktree=False)
    lines = run_neovim(tmp_path, demo, start_both=False, choices="1,1", wait_for="acknowledged=true")
    shown = [x[len("VISIBLE "):] for x in lines if x.startswith("VISIBLE ")]
    report_at = shown.index("Acknowledged union: " + demo.narrow)
    assert any(line.startswith("The union widens with") for line in shown[report_at:])
    assert "1. Acknowledge" in shown[report_at:] and "2. Close" in shown[report_at:]
    after = lines[len(lines) - lines[::-1].index("CHOICES shown"):]  # after the report's Acknowledge
    assert any(line.startswith("STATUS ") and line.endswith("acknowledged=true") for line in after), lines[-10:]
