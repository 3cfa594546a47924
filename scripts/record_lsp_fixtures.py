"""Record the VS Code extension's test fixtures from a real language server run.

    .venv/bin/python scripts/record_lsp_fixtures.py [--check]

Builds the demo monorepo (``shop`` with ``packages/checkout`` and a linked
worktree) in a temporary directory, starts the real server
(``python -m lsp_bridge``) over stdio, and records what it sends: the status of
the narrow window (with mounts), the widened status before and after the
inventory, the status of a window without folders, and ``rootguard/explain``
and ``rootguard/inventory`` answers. Temporary paths become ``/Users/dev/src``
and the session id ``s-1``, so the fixtures name no path of the machine that
recorded them. They land in ``vscode-extension/test/fixtures/`` and are
validated against ``docs/rootguard-lsp.schema.json`` by ``tests/test_status_contract.py``.
``--check`` records afresh and fails when the committed fixtures differ in shape
(keys and types; values such as counts and sizes may vary).
"""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import tempfile
import threading

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
OUT = os.path.join(ROOT, "vscode-extension", "test", "fixtures")
PLACEHOLDER = "/Users/dev/src"
sys.path.insert(0, ROOT)

GIT_ENV = {
    "GIT_AUTHOR_NAME": "Root Guard", "GIT_AUTHOR_EMAIL": "fixtures@rootguard.invalid",
    "GIT_COMMITTER_NAME": "Root Guard", "GIT_COMMITTER_EMAIL": "fixtures@rootguard.invalid",
    "GIT_CONFIG_NOSYSTEM": "1",
}


class Rpc:
    """A minimal LSP client over the server's stdio."""

    def __init__(self, env: dict[str, str]):
        self.proc = subprocess.Popen([sys.executable, "-m", "lsp_bridge"], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env)
        self.inbox: queue.Queue = queue.Queue()
        self.next_id = 0
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        out = self.proc.stdout
        while True:
            length = None
            while (line := out.readline()) not in (b"\r\n", b""):
                name, _, value = line.decode().partition(":")
                if name.lower() == "content-length":
                    length = int(value)
            if length is None:
                return
            self.inbox.put(json.loads(out.read(length)))

    def send(self, method: str, params=None, request: bool = False):
        message = {"jsonrpc": "2.0", "method": method, "params": params}
        if request:
            self.next_id += 1
            message["id"] = self.next_id
        body = json.dumps(message).encode()
        self.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.proc.stdin.flush()
        return message.get("id")

    def wait(self, predicate, timeout: float = 120.0) -> dict:
        while True:
            message = self.inbox.get(timeout=timeout)
            if predicate(message):
                return message

    def request(self, method: str, params) -> object:
        rid = self.send(method, params, request=True)
        return self.wait(lambda m: m.get("id") == rid)["result"]

    def status(self, predicate=lambda s: True) -> dict:
        return self.wait(lambda m: m.get("method") == "rootguard/status" and predicate(m["params"]))["params"]

    def close(self) -> None:
        try:
            self.request("shutdown", None)
            self.send("exit")
            self.proc.wait(10)
        except Exception:
            self.proc.kill()


def start(env, folders: list[str]) -> Rpc:
    rpc = Rpc(env)
    rid = rpc.send("initialize", {
        "processId": os.getpid(),
        "capabilities": {"workspace": {"workspaceFolders": True}, "window": {"showMessage": {}}},
        "workspaceFolders": [{"uri": "file://" + f, "name": os.path.basename(f)} for f in folders],
    }, request=True)
    rpc.wait(lambda m: m.get("id") == rid)
    rpc.send("initialized", {})
    return rpc


def record() -> dict[str, object]:
    from lsp_bridge.cli.demo_repo import build_monorepo

    with tempfile.TemporaryDirectory(prefix="rg-fixtures-") as tmp:
        tmp = os.path.realpath(tmp)
        home = os.path.join(tmp, "home")
        os.makedirs(home)
        env = {k: v for k, v in os.environ.items() if not k.startswith(("ROOTGUARD_", "XDG_"))}
        env.update(GIT_ENV, HOME=home, GIT_CONFIG_GLOBAL=os.path.join(home, ".gitconfig"))
        with open(env["GIT_CONFIG_GLOBAL"], "w") as handle:
            handle.write("[init]\n\tdefaultBranch = main\n[commit]\n\tgpgsign = false\n")
        saved = dict(os.environ)
        os.environ.update(env)
        try:
            demo = build_monorepo(os.path.join(tmp, "src"), packages=6, files_per_package=20, commits=4)
        finally:
            os.environ.clear()
            os.environ.update(saved)
        recorded: dict[str, object] = {}
        rpc = start(env, [demo.narrow])
        recorded["status-narrow"] = rpc.status(lambda s: s["mounts"] is not None)
        rpc.send("workspace/didChangeWorkspaceFolders",
                 {"event": {"added": [{"uri": "file://" + demo.repo, "name": "shop"}], "removed": []}})
        recorded["status-widened-pending"] = rpc.status(lambda s: s["widened"])
        recorded["status-widened"] = rpc.status(lambda s: s["inventory"] is not None and s["mounts"] is not None)
        recorded["explain"] = rpc.request("rootguard/explain", {"path": os.path.join(demo.repo, ".env")})
        recorded["inventory"] = rpc.request("rootguard/inventory", {})
        rpc.close()
        rpc = start(env, [])
        recorded["status-no-folder"] = rpc.status()
        rpc.close()
        text = json.dumps(recorded)
        text = text.replace(os.path.join(tmp, "src"), PLACEHOLDER).replace(home, "/Users/dev")
        data = json.loads(text)
        for name, value in data.items():
            if name.startswith("status"):
                value["session"] = "s-1"
        return data


def shape(value):
    if isinstance(value, dict):
        return {k: shape(v) for k, v in value.items()}
    if isinstance(value, list):
        return [shape(value[0])] if value else []
    return type(value).__name__


def main() -> int:
    data = record()
    if "--check" in sys.argv:
        stale = []
        for name, value in data.items():
            with open(os.path.join(OUT, f"{name}.json"), encoding="utf-8") as handle:
                if shape(json.load(handle)) != shape(value):
                    stale.append(name)
        if stale:
            print("fixtures differ in shape from a fresh recording: " + ", ".join(stale), file=sys.stderr)
            return 1
        print("fixtures match a fresh recording")
        return 0
    os.makedirs(OUT, exist_ok=True)
    for name, value in data.items():
        with open(os.path.join(OUT, f"{name}.json"), "w", encoding="utf-8") as handle:
            json.dump(value, handle, indent=2, ensure_ascii=False)
            handle.write("\n")
        print(f"wrote vscode-extension/test/fixtures/{name}.json")
    return 0


if __name__ == "__main__":
    sys.exit(main())
