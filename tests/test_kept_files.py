"""Root Guard's own kept files: a FIFO or junk in their place costs speed, never an answer or a hang.

The cache directory (kept scans, git history answers, detect-secrets patterns)
and the state directory (acknowledgements, the tray's history) are protected targets, but a
process running as the user can still put anything there. Each test runs the real command
(or the reading code in a real process) with a timeout: a blocking ``open`` of a FIFO would
hang it for good.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from lsp_bridge.inventory import scan_store
from tests.conftest import make_repo

REPO = Path(__file__).resolve().parents[1]
CACHE_FILES = ("git-history.json", "detect-secrets-patterns.json")
CONFIG = 'version = 2\n[[paths]]\nid = "env"\npath = "/"\npolicies = { read = "deny" }\nincludes = ["**/.env"]\n'


def _fifo(path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    os.mkfifo(path)


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "lsp_bridge.cli", *args], capture_output=True, text=True,
                          timeout=60, env={**os.environ, "PYTHONPATH": str(REPO)})


def test_fifos_for_every_kept_file_hang_neither_check_nor_inventory(tmp_path: Path, isolated_user: Path):
    config = isolated_user / ".config" / "rootguard" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text(CONFIG)
    repo = make_repo(tmp_path / "shop", {"packages/a/src/x.ts": "export {};\n", "packages/a/package.json": "{}\n"})
    (repo / ".env").write_text("API_TOKEN=Ab12Cd34Ef56Gh78Ij90\n")
    narrow = repo / "packages" / "a"
    cache = isolated_user / ".cache" / "rootguard"
    for name in CACHE_FILES:
        _fifo(cache / name)
    for top in (repo, narrow):
        _fifo(Path(scan_store.store_file(str(top)) or ""))

    checked = _run("check", "--json", "--root", str(repo), "--op", "read", str(repo / ".env"))
    assert checked.returncode == 1, checked.stderr
    assert json.loads(checked.stdout)["rule"] == "env"  # the glob still decides

    inventoried = _run("inventory", "--root", str(narrow), "--add", str(repo))
    assert inventoried.returncode == 0, inventoried.stderr
    assert "shop/.env" in inventoried.stdout and "credential" in inventoried.stdout
    again = _run("inventory", "--root", str(narrow), "--add", str(repo))  # what it kept reads back the same
    assert again.returncode == 0 and again.stdout == inventoried.stdout


def test_fifos_in_the_state_directory_hang_neither_the_acknowledgements_nor_the_tray_history(tmp_path: Path):
    acknowledgements, history = tmp_path / "acknowledged.json", tmp_path / "tray-history.jsonl"
    _fifo(acknowledgements)
    _fifo(history)
    script = (
        "import sys\n"
        "from lsp_bridge.lsp.acknowledgements import AcknowledgementStore\n"
        "store = AcknowledgementStore(sys.argv[1])\n"
        "print(store.load(), store.error)\n"
        "from tray.queue import ApprovalQueue\n"
        "from tray.history import History\n"
        "queue = ApprovalQueue()\n"
        "History(sys.argv[2]).load_into(queue)\n"
        "print(len(queue.recent), len(queue.missed))\n"
    )
    done = subprocess.run([sys.executable, "-c", script, str(acknowledgements), str(history)], capture_output=True,
                          text=True, timeout=60, env={**os.environ, "PYTHONPATH": str(REPO)})
    assert done.returncode == 0, done.stderr
    first, second = done.stdout.splitlines()
    assert first == f"{{}} {acknowledgements}: cannot read: not a readable regular file"
    assert second == "0 0"
    assert "cannot read the tray history" in done.stderr


async def test_a_fifo_as_the_audit_log_refuses_calls_and_never_holds_the_server(tmp_path: Path, isolated_user: Path):
    """The log must be written before anything is done: with a FIFO in its place every call is
    refused (``audit_unavailable``) at once, and the server keeps answering."""
    import anyio

    from tests.test_mcp_server import code, connect

    repo = make_repo(tmp_path / "pkg", {"src/a.ts": "export {};\n"})
    _fifo(isolated_user / ".local" / "state" / "rootguard" / "audit.jsonl")
    with anyio.fail_after(60):
        async with connect([repo], tmp_path) as client:
            for _ in range(2):
                result = await client.call_tool("read_file", {"project_id": "pkg", "relative_path": "src/a.ts"})
                assert code(result) == "audit_unavailable", result
                assert "not a regular file" in result.content[0].text


def test_rootguard_audit_refuses_a_fifo_as_the_log(tmp_path: Path, isolated_user: Path):
    log = isolated_user / ".local" / "state" / "rootguard" / "audit.jsonl"
    _fifo(log)
    for args in ([], ["--file", str(log)], ["--all"]):
        done = _run("audit", *args)
        assert done.returncode == 2, done
        assert done.stderr == f"rootguard audit: {log} is not a regular file (a FIFO, a socket or a device), " \
                              "not a decision log\n"


def test_a_fifo_as_the_tray_history_never_holds_the_tray(tmp_path: Path):
    """The tray appends a line per decision: with a FIFO in the file's place it warns and goes on."""
    history = tmp_path / "tray-history.jsonl"
    _fifo(history)
    script = (
        "import sys\n"
        "from tray.history import History\n"
        "h = History(sys.argv[1])\n"
        "print(h.append_raw({'kind': 'dismissed', 'when': 1.0, 'paths': []}), h.lines)\n"
    )
    done = subprocess.run([sys.executable, "-c", script, str(history)], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PYTHONPATH": str(REPO)})
    assert done.returncode == 0, done.stderr
    assert done.stdout == "False 0\n"
    assert "cannot write the tray history: not a regular file" in done.stderr


def test_a_fifo_as_the_user_file_refuses_an_always_grant_and_keeps_it(tmp_path: Path):
    """'Always allow' reads the user file to append its rule: a FIFO there is an error, never a wait."""
    user_file = tmp_path / "config.toml"
    _fifo(user_file)
    script = (
        "import sys\n"
        "from lsp_bridge.core.grants import GrantError, write_always_rule\n"
        "try:\n"
        "    write_always_rule(sys.argv[1], {'path': '/x', 'policies': {'read': 'allow'}})\n"
        "except GrantError as err:\n"
        "    print(err)\n"
    )
    done = subprocess.run([sys.executable, "-c", script, str(user_file)], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PYTHONPATH": str(REPO), "ROOTGUARD_CONFIG": str(user_file)})
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"{user_file}: cannot read the user configuration (not a readable regular file")
    assert user_file.is_fifo()
