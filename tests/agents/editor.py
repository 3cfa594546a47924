"""An editor window for the agents' hooks: a real language server (``python -m lsp_bridge``) opened on
folders over stdio, which publishes its window in the runtime directory (``lsp_bridge.agents.windows``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from lsp_bridge.agents.windows import sessions_dir

REPO = Path(__file__).resolve().parents[2]


class EditorWindow:
    """``with EditorWindow([folder]) as window:`` — the window is published once the block starts."""

    def __init__(self, folders: list[Path], client: str = "agents e2e editor", timeout: float = 60):
        self.folders = folders
        self.client = client
        self.timeout = timeout
        self.proc: subprocess.Popen | None = None
        self.record: dict = {}

    def __enter__(self) -> EditorWindow:
        self.proc = subprocess.Popen([sys.executable, "-m", "lsp_bridge"], stdin=subprocess.PIPE,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                     env={**os.environ, "PYTHONPATH": str(REPO)})
        self._send({"id": 1, "method": "initialize", "params": {
            "processId": os.getpid(), "rootUri": None, "capabilities": {}, "clientInfo": {"name": self.client},
            "workspaceFolders": [{"uri": f.as_uri(), "name": f.name} for f in self.folders]}})
        self._send({"method": "initialized", "params": {}})
        self.record = self._published()
        return self

    def __exit__(self, *exc: object) -> None:
        assert self.proc is not None
        try:
            self._send({"id": 2, "method": "shutdown"})
            self._send({"method": "exit"})
            self.proc.wait(20)
        except (OSError, subprocess.TimeoutExpired):
            self.proc.kill()
            self.proc.wait(10)

    @property
    def session(self) -> str:
        return str(self.record["session"])

    def _send(self, message: dict) -> None:
        assert self.proc is not None and self.proc.stdin is not None
        body = json.dumps({"jsonrpc": "2.0", **message}).encode()
        self.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.proc.stdin.flush()

    def _published(self) -> dict:
        assert self.proc is not None
        deadline = time.monotonic() + self.timeout
        directory = Path(sessions_dir())
        while time.monotonic() < deadline:
            for path in directory.glob("*.json") if directory.is_dir() else ():
                try:
                    record = json.loads(path.read_text())
                except (OSError, ValueError):
                    continue
                if record.get("pid") == self.proc.pid:
                    return dict(record)
            if self.proc.poll() is not None:
                break
            time.sleep(0.1)
        self.proc.kill()
        raise AssertionError(f"the language server on {self.folders} did not publish its window")
