"""The tray install that Start Tray runs, from the .vsix alone (issue 33, point 3).

The same steps as the button (``vscode-extension/bundled/tool/install_tray.py``, run by the
system ``python3`` in a temporary directory, away from this source folder): a private
environment with PySide6-Essentials from PyPI and the Root Guard wheel the .vsix carries;
then the tray starts offscreen and its socket appears. The wheel without its extras says
how to install them for a wheel (never ``rootguard[...]``), and its autostart entry has an
icon, or is refused without PySide6.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
EXTENSION = REPO / "vscode-extension"
SYSTEM_PYTHON = shutil.which("python3", path="/usr/local/bin:/usr/bin:/bin")

pytestmark = [
    pytest.mark.slow,
    pytest.mark.timeout(1800),  # the module's bundle (node, up to 900 s) counts in its first test
    pytest.mark.skipif(shutil.which("node") is None, reason="Node builds the .vsix bundle"),
]


@pytest.fixture(scope="module")
def bundle():
    """bundled/ as `npm run package` builds it (the wheel, pip's wheel, the MCP SDK)."""
    done = subprocess.run(["node", "scripts/bundle-python.mjs"], cwd=EXTENSION, capture_output=True, text=True, timeout=900,
                          env={**os.environ, "ROOTGUARD_BUNDLE_PYTHON": str(REPO / ".venv" / "bin" / "python")})
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return EXTENSION / "bundled"


def clean_env(tmp_path: Path) -> dict[str, str]:
    """A desktop user's environment: no PYTHONPATH, no virtualenv, this repository nowhere."""
    keep = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV", "ROOTGUARD"))}
    return {**keep, "PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": str(tmp_path / "home"),
            "XDG_CONFIG_HOME": str(tmp_path / "home" / ".config"), "XDG_RUNTIME_DIR": str(tmp_path / "run"),
            "QT_QPA_PLATFORM": "offscreen"}


@pytest.mark.skipif(SYSTEM_PYTHON is None, reason="no system python3")
def test_the_start_tray_install_works_from_the_vsix_alone_and_the_tray_starts(bundle, tmp_path):
    env = clean_env(tmp_path)
    (tmp_path / "run").mkdir(mode=0o700)
    target = tmp_path / "storage" / "tray-env"
    done = subprocess.run([SYSTEM_PYTHON, str(bundle / "tool" / "install_tray.py"), str(target)], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert f"tray command: {target}/bin/rootguard tray" in done.stdout
    where = subprocess.run([str(target / "bin" / "python"), "-c", "import lsp_bridge, PySide6; print(lsp_bridge.__file__)"],
                           cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60)
    assert where.stdout.startswith(str(target)) and str(REPO) not in where.stdout  # the wheel, not this checkout

    socket = tmp_path / "run" / "tray.sock"
    tray = subprocess.Popen([str(target / "bin" / "rootguard"), "tray", "--socket", str(socket)], cwd=tmp_path, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.monotonic() + 60
        while not socket.exists() and tray.poll() is None and time.monotonic() < deadline:
            time.sleep(0.1)
        assert socket.exists(), tray.stdout.read() if tray.poll() is not None else "no socket within 60 s"
    finally:
        tray.terminate()
        tray.wait(timeout=30)

    autostart = subprocess.run([str(target / "bin" / "rootguard"), "tray", "--install-autostart"], cwd=tmp_path, env=env,
                               capture_output=True, text=True, timeout=60)
    assert autostart.returncode == 0, autostart.stderr
    entry = (tmp_path / "home" / ".config" / "autostart" / "rootguard-tray.desktop").read_text()
    icon = next(line.split("=", 1)[1] for line in entry.splitlines() if line.startswith("Icon="))
    assert Path(icon).is_file() and icon.startswith(str(target))


@pytest.mark.skipif(SYSTEM_PYTHON is None, reason="no system python3")
def test_a_wheel_without_extras_says_how_to_install_them_and_refuses_autostart(bundle, tmp_path):
    env = clean_env(tmp_path)
    venv = tmp_path / "plain"
    subprocess.run([SYSTEM_PYTHON, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    pip = next((bundle / "tool").glob("pip-*.whl"))
    wheel = next((bundle / "wheels").glob("rootguard-*.whl"))
    for argv in ([str(venv / "bin" / "python"), f"{pip}/pip", "install", "-q", str(pip)],
                 [str(venv / "bin" / "python"), "-m", "pip", "install", "-q", str(wheel)]):
        done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=900)
        assert done.returncode == 0, done.stderr[-3000:]
    rootguard = str(venv / "bin" / "rootguard")
    probe = subprocess.run([rootguard, "probe", "--", "true"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60)
    assert probe.returncode == 2
    assert "internal error" not in probe.stderr and "probe needs the 'mcp' extra" in probe.stderr, probe.stderr
    assert f"{venv}/bin/python -m pip install 'mcp" in probe.stderr and "rootguard[" not in probe.stderr
    autostart = subprocess.run([rootguard, "tray", "--install-autostart"], cwd=tmp_path, env=env, capture_output=True,
                               text=True, timeout=60)
    assert autostart.returncode == 2 and "nothing written" in autostart.stderr and "PySide6-Essentials" in autostart.stderr
    assert not (tmp_path / "home" / ".config" / "autostart").exists()


@pytest.mark.skipif(SYSTEM_PYTHON is None, reason="no system python3")
def test_the_bundled_mcp_server_starts_with_the_system_python_and_lists_its_tools(bundle, tmp_path):
    """What the extension's MCP server definition runs when no `rootguard` is installed: the
    bundle's launcher with the system python3 (no mcp package of its own). The probe (this
    checkout's MCP client) lists the tools and tries every path-taking one."""
    launcher = str(bundle / "tool" / "launch.py")
    env = clean_env(tmp_path)
    can = subprocess.run([SYSTEM_PYTHON, launcher, "--can-serve-mcp"], cwd=tmp_path, env=env, capture_output=True,
                         text=True, timeout=60)
    assert can.returncode == 0 and can.stdout.strip() == "ok", can.stdout + can.stderr
    done = subprocess.run([str(REPO / ".venv" / "bin" / "python"), "-m", "lsp_bridge.cli", "probe", "--json", "--",
                           SYSTEM_PYTHON, launcher, "lsp_bridge.cli", "mcp", "--root", "{root}"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=600)
    report = json.loads(done.stdout)
    assert {"read_file", "list_directory", "write_file"} <= {t["name"] for t in report["tools"]}
    assert report["ok"] is True and done.returncode == 0
