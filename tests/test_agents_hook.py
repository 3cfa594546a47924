"""``rootguard hook AGENT`` through its real entry point: a subprocess, real JSON on stdin, real repositories and
configuration files, a real language server publishing its window, a real tray on a real socket.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from lsp_bridge.agents.windows import sessions_dir
from lsp_bridge.core.places import audit_path
from lsp_bridge.mcp.audit import read_records
from tests.conftest import make_repo
from tests.trayproc import start_tray, stop

pytestmark = pytest.mark.timeout(300)  # every test has a time limit (pytest-timeout)

REPO = Path(__file__).resolve().parents[1]
SECRET = "sk_live_4f9a8b7c6d5e"
LIMIT = 120


def hook(agent: str, payload, *, env: dict | None = None, raw: bytes | None = None) -> subprocess.CompletedProcess:
    data = raw if raw is not None else json.dumps(payload).encode()
    full = {**os.environ, "PYTHONPATH": str(REPO), **(env or {})}
    full.setdefault("ROOTGUARD_TRAY_SOCKET", str(Path(tempfile.gettempdir()) / "rg-no-tray-here.sock"))
    return subprocess.run([sys.executable, "-m", "lsp_bridge.cli", "hook", agent], input=data, capture_output=True,
                          timeout=LIMIT, env=full)


def claude(cwd: Path, tool: str, tool_input: dict, **extra) -> dict:
    return {"session_id": "claude-session-1", "transcript_path": "/t.jsonl", "cwd": str(cwd),
            "permission_mode": "default", "hook_event_name": "PreToolUse", "tool_name": tool, "tool_input": tool_input,
            "tool_use_id": "toolu_9", **extra}


@pytest.fixture
def shop(tmp_path: Path) -> Path:
    """A monorepo: a secret at the root, the agent's narrow package, a sibling."""
    root = make_repo(tmp_path / "shop", {
        ".env": f"STRIPE_KEY={SECRET}\n", "package.json": "{}\n",
        "packages/checkout/src/app.ts": "export const app = 1;\n", "packages/checkout/README.md": "checkout\n",
        "packages/admin/src/admin.ts": "admin\n",
    })
    return root


def deny_json(done: subprocess.CompletedProcess) -> dict:
    return json.loads(done.stdout)["hookSpecificOutput"]


def last_records(n: int = 20) -> list[dict]:
    return read_records(audit_path())[-n:]


# -- decisions -------------------------------------------------------------------


def test_the_repositorys_secret_is_denied_and_the_packages_file_passes_silently(shop: Path):
    checkout = shop / "packages" / "checkout"
    denied = hook("claude", claude(checkout, "Read", {"file_path": str(shop / ".env")}))
    assert denied.returncode == 2
    reason = denied.stderr.decode()
    assert reason.startswith("Root Guard: claude Read: read of ") and str(shop / ".env") in reason
    assert "host baseline" in reason and "rootguard check" in reason and "To get access" in reason
    assert reason.count("\n") == 1
    assert deny_json(denied) == {"hookEventName": "PreToolUse", "permissionDecision": "deny",
                                 "permissionDecisionReason": reason.strip()}
    allowed = hook("claude", claude(checkout, "Read", {"file_path": str(checkout / "src" / "app.ts")}))
    assert (allowed.returncode, allowed.stdout, allowed.stderr) == (0, b"", b"")  # never an "allow"
    relative = hook("claude", claude(checkout, "Edit", {"file_path": "../admin/src/admin.ts", "old_string": "a",
                                                        "new_string": "b"}))
    assert relative.returncode == 2 and str(shop / "packages" / "admin" / "src" / "admin.ts") in relative.stderr.decode()
    records = last_records(4)  # one line per access: the edit reads and writes
    assert [r["decision"] for r in records] == ["deny", "allow", "deny", "deny"]
    assert all(r["agent"] == "claude" and r["session_id"] == "claude-session-1" and r["client"] == "rootguard hook claude"
               for r in records)
    assert records[0]["tool"] == "Read" and records[0]["canonicalization"] == str(shop / ".env")
    assert records[2]["tool"] == "Edit" and [records[2]["op"], records[3]["op"]] == ["read", "write"]


@pytest.mark.parametrize(("agent", "payload", "deny_shape"), [
    ("codex", lambda c, s: {"session_id": "x", "cwd": str(c), "hook_event_name": "PreToolUse", "model": "m",
                            "turn_id": "t", "tool_name": "apply_patch",
                            "tool_input": {"command": f"*** Begin Patch\n*** Add File: {s}/leak.txt\n+x\n*** End Patch"}},
     lambda out: out["hookSpecificOutput"]["permissionDecision"] == "deny"),
    ("gemini", lambda c, s: {"session_id": "x", "cwd": str(c), "hook_event_name": "BeforeTool", "timestamp": "t",
                             "tool_name": "write_file", "tool_input": {"file_path": "../../leak.txt", "content": "x"}},
     lambda out: out["decision"] == "deny" and "leak.txt" in out["reason"]),
    ("copilot", lambda c, s: {"sessionId": "x", "timestamp": 1, "cwd": str(c), "toolName": "create",
                              "toolArgs": {"path": f"{s}/leak.txt", "file_text": "x"}},
     lambda out: out["permissionDecision"] == "deny"),
])
def test_a_write_outside_the_union_is_blocked_in_each_agents_words(shop: Path, agent, payload, deny_shape):
    done = hook(agent, payload(shop / "packages" / "checkout", shop))
    assert done.returncode == 2 and b"leak.txt" in done.stderr
    assert deny_shape(json.loads(done.stdout))
    assert not (shop / "leak.txt").exists()


def test_a_rule_inside_the_package_is_named_in_the_reason(shop: Path):
    checkout = shop / "packages" / "checkout"
    (checkout / ".env.local").write_text("X=1\n")
    (shop / ".rootguard.toml").write_text('version = 2\n[[paths]]\nid = "no-env"\npath = "."\nincludes = ["**/.env*"]\n'
                                          'policies = { read = "deny", write = "deny" }\n')
    done = hook("claude", claude(checkout, "Read", {"file_path": str(checkout / ".env.local")}))
    assert done.returncode == 2 and "rule no-env" in done.stderr.decode()


# -- shell tools ------------------------------------------------------------------


def bwrap_works() -> bool:
    if shutil.which("bwrap") is None:
        return False
    done = subprocess.run(["bwrap", "--ro-bind", "/", "/", "true"], capture_output=True, timeout=30)
    return done.returncode == 0


@pytest.mark.skipif(not bwrap_works(), reason="bubblewrap is not usable here")
def test_the_shell_runs_the_same_command_confined_and_the_secret_stays_out(shop: Path):
    checkout = shop / "packages" / "checkout"
    done = hook("claude", claude(checkout, "Bash", {"command": "cat ../../.env; cat README.md", "description": "d"}))
    assert done.returncode == 0 and not done.stderr, done.stderr
    out = deny_json(done)
    assert out["permissionDecision"] == "allow" and out["updatedInput"]["description"] == "d"
    command = out["updatedInput"]["command"]
    assert shlex.split(command)[:6] == [sys.executable, "-P", "-m", "lsp_bridge.cli", "run", "--root"]
    ran = subprocess.run(["bash", "-c", command], cwd=checkout, capture_output=True, text=True, timeout=LIMIT,
                         env={**os.environ, "PYTHONPATH": str(REPO)})
    assert "checkout" in ran.stdout  # the command ran, confined
    assert SECRET not in ran.stdout + ran.stderr
    assert last_records(1)[0]["code"] == "shell-confined"


def test_shell_deny_and_no_bubblewrap_are_blocked_saying_why(shop: Path, isolated_user: Path, tmp_path: Path):
    checkout = shop / "packages" / "checkout"
    empty = tmp_path / "empty-path"
    empty.mkdir()
    done = hook("copilot", {"sessionId": "c", "timestamp": 1, "cwd": str(checkout), "toolName": "bash",
                            "toolArgs": {"command": "ls"}}, env={"PATH": str(empty)})
    assert done.returncode == 2 and b"bubblewrap" in done.stderr
    user = isolated_user / ".config" / "rootguard" / "config.toml"
    user.parent.mkdir(parents=True)
    user.write_text('version = 2\n[agents]\nshell = "deny"\n')
    done = hook("gemini", {"session_id": "g", "cwd": str(checkout), "hook_event_name": "BeforeTool", "timestamp": "t",
                           "tool_name": "run_shell_command", "tool_input": {"command": "ls"}})
    assert done.returncode == 2 and b'shell = \\"deny\\"' in done.stdout and json.loads(done.stdout)["decision"] == "deny"
    user.write_text('version = 2\n[agents]\nshell = "allow"\n')
    done = hook("gemini", {"session_id": "g", "cwd": str(checkout), "hook_event_name": "BeforeTool", "timestamp": "t",
                           "tool_name": "run_shell_command", "tool_input": {"command": "ls"}})
    assert (done.returncode, done.stdout) == (0, b"")
    assert last_records(1)[0]["code"] == "shell-unconfined"


# -- fail closed -------------------------------------------------------------------


@pytest.mark.parametrize(("agent", "raw", "named"), [
    ("claude", b"", b"no hook input"),
    ("claude", b'{"session_id": "s", "cwd": "/tm', b"not JSON"),
    ("codex", b'{"hook_event_name": "PreToolUse", "tool_name": "Bash", "tool_input": {"command": "ls"}}', b"`cwd`"),
    ("gemini", b"\xff\xfe", b"UTF-8"),
    ("cursor", b"{}", b"unknown agent 'cursor'"),
    ("copilot", b"[1, 2]", b"JSON object"),
])
def test_broken_input_is_blocked_naming_the_problem(agent, raw, named):
    done = hook(agent, None, raw=raw)
    assert done.returncode == 2 and named in done.stderr, done.stderr
    assert done.stderr.startswith(b"Root Guard: ")


def test_a_hook_that_cannot_finish_in_time_blocks_the_call(shop: Path):
    """The agent's stdin never ends (or anything else stalls): the hook's own deadline answers first."""
    env = {**os.environ, "PYTHONPATH": str(REPO), "ROOTGUARD_HOOK_DEADLINE": "2"}
    proc = subprocess.Popen([sys.executable, "-m", "lsp_bridge.cli", "hook", "gemini"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    try:
        assert proc.stdin is not None
        proc.stdin.write(b'{"session_id": "g", "cwd": ')
        proc.stdin.flush()
        started = time.monotonic()
        proc.wait(LIMIT)  # stdin stays open: the hook never sees the end of its input
        out, err = proc.stdout.read(), proc.stderr.read()
    finally:
        proc.kill()
        proc.wait(10)
    assert proc.returncode == 2 and b"no decision within 2 s" in err
    assert json.loads(out)["decision"] == "deny"
    assert time.monotonic() - started < LIMIT


def test_an_invalid_configuration_blocks_naming_file_line_column(shop: Path, isolated_user: Path):
    user = isolated_user / ".config" / "rootguard" / "config.toml"
    user.parent.mkdir(parents=True)
    user.write_text("version = 2\n[[paths]]\nid = 'x'\npath = 3\n")
    checkout = shop / "packages" / "checkout"
    done = hook("claude", claude(checkout, "Read", {"file_path": str(checkout / "README.md")}))
    assert done.returncode == 2 and f"{user}:4:8".encode() in done.stderr, done.stderr
    unreadable = hook("claude", claude(checkout, "Read", {"file_path": "README.md"}),
                      env={"ROOTGUARD_CONFIG": str(isolated_user / "missing.toml")})
    assert unreadable.returncode == 2 and b"missing.toml" in unreadable.stderr


def test_an_agents_unreadable_settings_block_and_its_extra_directories_are_roots(shop: Path, isolated_user: Path):
    checkout = shop / "packages" / "checkout"
    settings = isolated_user / ".claude" / "settings.json"
    settings.parent.mkdir(parents=True)
    settings.write_text("{broken")
    done = hook("claude", claude(checkout, "Read", {"file_path": str(checkout / "README.md")}))
    assert done.returncode == 2 and str(settings).encode() in done.stderr
    settings.write_text(json.dumps({"permissions": {"additionalDirectories": [str(shop / "packages" / "admin")]}}))
    admin_file = shop / "packages" / "admin" / "src" / "admin.ts"
    for _ in range(2):
        done = hook("claude", claude(checkout, "Read", {"file_path": str(admin_file)}))
        assert (done.returncode, done.stdout) == (0, b""), done.stderr
    widened = [r for r in last_records(10) if r.get("code") == "agent-widened"]
    assert len(widened) == 1  # warned once per agent session, with the inventory's line
    assert "widened the agent's boundary" in widened[0]["reason"] and widened[0]["added"] == [str(admin_file.parents[1])]
    assert hook("claude", claude(checkout, "Read", {"file_path": str(shop / ".env")})).returncode == 2


# -- the editor window ----------------------------------------------------------------


class Server:
    """A real language server (``python -m lsp_bridge``) opened on folders, over raw stdio."""

    def __init__(self, folders: list[Path]):
        self.proc = subprocess.Popen([sys.executable, "-m", "lsp_bridge"], stdin=subprocess.PIPE,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                     env={**os.environ, "PYTHONPATH": str(REPO)})
        self.send({"id": 1, "method": "initialize", "params": {
            "processId": os.getpid(), "rootUri": None, "capabilities": {}, "clientInfo": {"name": "test editor"},
            "workspaceFolders": [{"uri": f.as_uri(), "name": f.name} for f in folders]}})
        self.send({"method": "initialized", "params": {}})

    def send(self, message: dict) -> None:
        body = json.dumps({"jsonrpc": "2.0", **message}).encode()
        assert self.proc.stdin is not None
        self.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.proc.stdin.flush()

    def published(self, timeout: float = 60) -> Path:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            found = [p for p in Path(sessions_dir()).glob("*.json")] if Path(sessions_dir()).is_dir() else []
            mine = [p for p in found if json.loads(p.read_text()).get("pid") == self.proc.pid]
            if mine:
                return mine[0]
            time.sleep(0.1)
        raise AssertionError("the language server did not publish its window")

    def close(self) -> None:
        try:
            self.send({"id": 2, "method": "shutdown"})
            self.send({"method": "exit"})
            self.proc.wait(20)
        except (OSError, subprocess.TimeoutExpired):
            self.proc.kill()
            self.proc.wait(10)


def test_the_hook_is_bound_to_the_editor_window_containing_its_cwd(shop: Path):
    checkout = shop / "packages" / "checkout"
    admin = shop / "packages" / "admin"
    server = Server([checkout, admin])
    try:
        record_file = server.published()
        record = json.loads(record_file.read_text())
        assert record["folders"] == [str(checkout), str(admin)] and record["client"] == "test editor"
        assert oct(record_file.stat().st_mode & 0o777) == "0o600"
        # the window's union holds the sibling package: the agent in checkout may read it
        done = hook("claude", claude(checkout / "src", "Read", {"file_path": str(admin / "src" / "admin.ts")}))
        assert (done.returncode, done.stdout) == (0, b""), done.stderr
        denied = hook("claude", claude(checkout / "src", "Read", {"file_path": str(shop / ".env")}))
        assert denied.returncode == 2 and f"session {record['session']}".encode() in denied.stderr
        assert last_records(1)[0]["window"] == record["session"]
        # an agent outside every window: its own project folder (the sibling is outside it)
        outside = hook("claude", claude(shop / "packages", "Read", {"file_path": str(admin / "src" / "admin.ts")}),
                       env={"CLAUDE_PROJECT_DIR": str(checkout)})
        assert outside.returncode == 2 and b"project folder" in outside.stderr
    finally:
        server.close()
    assert not record_file.exists()  # removed when the session ends


def test_a_planted_or_stale_window_record_widens_nothing(shop: Path):
    checkout = shop / "packages" / "checkout"
    directory = Path(sessions_dir())
    directory.mkdir(parents=True, mode=0o700, exist_ok=True)
    os.chmod(directory.parent, 0o700)
    record = {"version": 1, "session": "forged", "pid": os.getpid(), "started": None, "client": "x",
              "folders": ["/"], "union": ["/"], "worktrees": [], "agents": []}
    planted = directory / "forged.json"
    planted.write_text(json.dumps(record))
    os.chmod(planted, 0o644)  # readable by others: not a file our language server writes
    read_env = hook("claude", claude(checkout, "Read", {"file_path": str(shop / ".env")}))
    assert read_env.returncode == 2
    os.chmod(planted, 0o600)
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait(30)
    planted.write_text(json.dumps({**record, "pid": dead.pid}))  # a process that is gone
    os.chmod(planted, 0o600)
    assert hook("claude", claude(checkout, "Read", {"file_path": str(shop / ".env")})).returncode == 2
    assert not planted.exists()  # a stale record of ours is cleaned up
    planted.write_text(json.dumps({**record, "started": 1.0}))  # a live pid, but not the process that wrote it
    os.chmod(planted, 0o600)
    assert hook("claude", claude(checkout, "Read", {"file_path": str(shop / ".env")})).returncode == 2


# -- request-level accesses: the tray ----------------------------------------------------


@pytest.fixture
def sock_dir():
    path = tempfile.mkdtemp(prefix="rg-")
    os.chmod(path, 0o700)
    yield Path(path)
    shutil.rmtree(path, ignore_errors=True)


def request_project(shop: Path) -> Path:
    (shop / ".rootguard.toml").write_text('version = 2\n[[paths]]\nid = "ask-docs"\npath = "packages/checkout/docs"\n'
                                          'policies = { read = "request", write = "deny" }\n')
    docs = shop / "packages" / "checkout" / "docs"
    docs.mkdir()
    (docs / "plan.md").write_text("the plan\n")
    return docs / "plan.md"


@pytest.mark.parametrize("answer", ["allow_once", "deny"])
def test_a_request_is_answered_by_a_real_tray(shop: Path, sock_dir: Path, answer: str):
    target = request_project(shop)
    sock = sock_dir / "t.sock"
    tray = start_tray(sock, "--headless", "--auto-answer", answer)
    try:
        done = hook("codex", {"session_id": "codex-s", "cwd": str(target.parents[1]), "hook_event_name": "PreToolUse",
                              "tool_name": "mcp__fs__read_file", "tool_input": {"path": str(target)}},
                    env={"ROOTGUARD_TRAY_SOCKET": str(sock)})
    finally:
        stop(tray)
    record = last_records(1)[0]
    assert record["agent"] == "codex" and record["approval"] == answer and record["approver"] == "the Root Guard tray"
    if answer == "allow_once":
        assert (done.returncode, done.stdout, done.stderr) == (0, b"", b"")
    else:
        assert done.returncode == 2 and b"Not approved: deny" in done.stderr


def test_without_a_tray_claude_asks_and_the_others_say_how_to_approve(shop: Path):
    target = request_project(shop)
    cwd = target.parents[1]
    asked = hook("claude", claude(cwd, "Read", {"file_path": str(target)}))
    assert asked.returncode == 0 and deny_json(asked)["permissionDecision"] == "ask"
    assert "needs approval (rule ask-docs" in deny_json(asked)["permissionDecisionReason"]
    denied = hook("gemini", {"session_id": "g", "cwd": str(cwd), "hook_event_name": "BeforeTool", "timestamp": "t",
                             "tool_name": "read_file", "tool_input": {"absolute_path": str(target)}})
    assert denied.returncode == 2 and b"rootguard tray" in denied.stderr


# -- widening from the agent's side -------------------------------------------------------


def test_directory_added_warns_with_the_inventory(shop: Path):
    checkout = shop / "packages" / "checkout"
    done = hook("claude", {"session_id": "s", "transcript_path": "/t", "cwd": str(checkout),
                           "hook_event_name": "DirectoryAdded", "directory": str(shop), "source": "slash_command"})
    assert done.returncode == 0, done.stderr
    message = json.loads(done.stdout)["systemMessage"]
    assert "Claude Code adding shop widened the agent's boundary" in message and "secrets file" in message
    assert last_records(1)[0]["code"] == "agent-widened"


@pytest.mark.parametrize("answer", [None, "deny", "allow_once"])
def test_a_permission_request_adding_the_repository_is_denied_unless_approved_in_the_tray(shop: Path, sock_dir: Path,
                                                                                         answer):
    checkout = shop / "packages" / "checkout"
    payload = claude(checkout, "Read", {"file_path": str(shop / ".env")}, hook_event_name="PermissionRequest",
                     permission_suggestions=[{"type": "addDirectories", "directories": [str(shop)],
                                              "destination": "session"}])
    sock = sock_dir / "t.sock"
    tray = start_tray(sock, "--headless", "--auto-answer", answer) if answer else None
    try:
        done = hook("claude", payload, env={"ROOTGUARD_TRAY_SOCKET": str(sock)})
    finally:
        if tray is not None:
            stop(tray)
    if answer == "allow_once":
        assert (done.returncode, done.stdout) == (0, b"")
        return
    assert done.returncode == 2
    out = deny_json(done)
    assert out["hookEventName"] == "PermissionRequest" and out["decision"]["behavior"] == "deny"
    assert "widened the agent's boundary" in out["decision"]["message"]
    assert last_records(1)[0]["code"] == "agent-widened"
