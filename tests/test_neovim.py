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


@pytest.mark.skipif(NVIM is None, reason="Neovim is not installed (scripts/bootstrap.sh --test installs Debian's neovim)")
def test_neovim_add_workspace_folder_shows_the_widening_warning(tmp_path):
    demo = build_monorepo(str(tmp_path / "demo"), packages=6, files_per_package=10, commits=3, worktree=False)
    out = tmp_path / "nvim.log"
    out.write_text("")
    env = dict(os.environ, RG_OUT=str(out), RG_NARROW=demo.narrow, RG_REPO=demo.repo, RG_PYTHON=sys.executable)
    subprocess.run(
        [NVIM, "--headless", "--clean", "-n", "-u", "NONE", "-c", f"luafile {SCRIPT}"],
        env=env, timeout=120, check=True, capture_output=True, cwd=tmp_path,
    )
    lines = out.read_text().splitlines()
    assert "INITIALIZED true" in lines
    assert any(line.startswith("STATUS widened=true") for line in lines), lines
    warning = next(line for line in lines if line.startswith("MESSAGE 2 "))  # 2 = Warning
    assert demo.repo in warning and demo.narrow in warning
    assert "(4)" in warning  # the four credentials of the repository's .env
