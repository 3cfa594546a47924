"""Starting and stopping a real tray process in tests."""

from __future__ import annotations

import os
import select
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
STARTUP_LIMIT = 30.0  # generous: a loaded CI machine starting PySide6


def tray_env(extra: dict | None = None) -> dict:
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen", PYTHONPATH=str(REPO))
    env.update(extra or {})
    return env


def start_tray(sock: Path, *args: str, env: dict | None = None) -> subprocess.Popen:
    """Start ``python -m tray --socket SOCK ARGS...`` and wait until it listens."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "tray", "--socket", str(sock), *args],
        cwd=REPO, env=tray_env(env), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )
    deadline = time.monotonic() + STARTUP_LIMIT
    seen = b""
    while b"listening on" not in seen:
        left = deadline - time.monotonic()
        ready, _, _ = select.select([proc.stderr], [], [], max(left, 0))
        chunk = os.read(proc.stderr.fileno(), 4096) if ready else b""
        if not chunk:
            proc.kill()
            raise AssertionError(f"tray did not start: {seen.decode(errors='replace')}")
        seen += chunk
    return proc


def stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)
