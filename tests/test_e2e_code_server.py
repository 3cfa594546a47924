"""The real end to end: scripts/e2e_code_server.sh in code-server driven by headless Chromium.

Installs only the .vsix on the code-server side (the server starts from its bundle with the
login PATH's python3), widens through the UI (Add Folder to Workspace), asserts the warning,
the notification with "Show report" and "Acknowledge", the report, the reopened workspace,
and the acknowledgement. code-server and Chromium come from the package registries
(../shared/tools/install_code_server.sh, or the script's own installer) on first run.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
ENV = dict(os.environ)  # before conftest replaces HOME: npm and the installer need the real one

pytestmark = [
    pytest.mark.slow,  # minutes: the .vsix is built, code-server and Chromium run
    pytest.mark.timeout(1800),  # the script's own limit (1500 s) and the first install of code-server
    pytest.mark.skipif(shutil.which("npm") is None or shutil.which("node") is None,
                       reason="Node and npm are needed for code-server"),
]
SHOTS = ("migrate-config.png", "mcp-server-tools.png", "confine-mcp-server.png", "confined-mcp-server-started.png",
         "report-one-tab.png", "report-acknowledged.png")


def test_code_server_widening_through_the_ui(tmp_path):
    screenshot = tmp_path / "statusbar-warning.png"
    env = {**ENV, "DEMO": "small", "SCREENSHOT": str(screenshot), "SHOTS": str(tmp_path),
           "PYTHON": str(REPO / ".venv" / "bin" / "python")}
    done = subprocess.run(
        ["bash", str(REPO / "scripts" / "e2e_code_server.sh")],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=1500,
    )
    output = done.stdout + done.stderr
    assert done.returncode == 0, output[-6000:]
    assert "[e2e" in output and "passed" in output
    assert "Starting the server (python-on-path)" in output and "bundled/tool/launch.py lsp_bridge" in output
    assert screenshot.read_bytes().startswith(b"\x89PNG")
    # the buttons keep their promise (issue 33): each step through the UI, each with its screenshot
    for line in ("Migrate Config migrated the version 1 file", 'MCP server "Root Guard guarded files": Discovered',
                 "confined: /", 'MCP server "echo": Discovered 1 tool', '"Show report" opened one tab'):
        assert line in output, line
    for name in SHOTS:
        assert (tmp_path / name).read_bytes().startswith(b"\x89PNG"), name
