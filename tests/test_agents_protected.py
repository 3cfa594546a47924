"""Agents cannot rewrite their own leash: every agent's configuration, hook and instruction files are
protected targets, existing or not, decided through the real ``rootguard check`` (and ``rootguard hook``).

Also ``[agents] shell`` in the configuration: validated at file:line:column, only tightened by a project file.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from lsp_bridge.core.config import ConfigKeeper, diagnostics_for_text, load_config
from tests.conftest import make_repo

pytestmark = pytest.mark.timeout(300)  # every test has a time limit (pytest-timeout)

REPO = Path(__file__).resolve().parents[1]

PROTECTED = [
    ".claude", ".claude/settings.json", ".claude/settings.local.json", ".claude/hooks/guard.sh",
    ".mcp.json", "sub/.mcp.json", ".codex/config.toml", ".codex", ".gemini/settings.json", ".copilot/hooks/x.json",
    ".cursor/mcp.json", ".github/hooks/rootguard.json", ".github/hooks", ".vscode/mcp.json", ".vscode/settings.json",
]
INSTRUCTIONS = ["AGENTS.md", "CLAUDE.md", "CLAUDE.local.md", "GEMINI.md", "docs/AGENTS.md",
                ".github/copilot-instructions.md"]
ORDINARY = [".claude/commands/review.md", ".github/workflows/ci.yml", "src/AGENTS.md.bak", "notes/claude.md"]


def check(root: Path, op: str, path: Path, env: dict | None = None) -> tuple[int, dict]:
    done = subprocess.run([sys.executable, "-m", "lsp_bridge.cli", "check", "--json", "--root", str(root), "--op", op,
                           str(path)], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(REPO), **(env or {})})
    assert done.returncode in (0, 1, 3), done.stderr
    return done.returncode, json.loads(done.stdout)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = make_repo(tmp_path / "proj", {"README.md": "x\n", ".claude/settings.json": "{}\n", "AGENTS.md": "be nice\n",
                                         ".codex/config.toml": "", ".github/hooks/rootguard.json": "{}\n"})
    return root


@pytest.mark.parametrize("relative", PROTECTED + INSTRUCTIONS)
def test_writing_an_agents_own_files_needs_approval_existing_or_not(project: Path, relative: str):
    target = project / relative
    code, data = check(project, "write", target)
    assert (code, data["decision"]) == (3, "request"), data
    assert code == check(project, "delete", target)[0] == 3
    assert check(project, "read", target)[0] == 0  # reading stays free


@pytest.mark.parametrize("relative", ORDINARY)
def test_ordinary_files_next_to_them_stay_writable(project: Path, relative: str):
    assert check(project, "write", project / relative)[0] == 0


def test_renaming_the_claude_directory_away_needs_approval(project: Path):
    done = subprocess.run([sys.executable, "-m", "lsp_bridge.cli", "check", "--json", "--root", str(project), "--op",
                           "rename", str(project / ".claude"), str(project / "old-claude")], capture_output=True,
                          text=True, timeout=120, env={**os.environ, "PYTHONPATH": str(REPO)})
    assert done.returncode == 3, done.stdout


def test_the_user_level_homes_and_the_runtime_directory(tmp_path: Path, isolated_user: Path):
    home = isolated_user
    for relative in (".claude/settings.json", ".claude/projects/x.jsonl", ".codex/config.toml", ".gemini/settings.json",
                     ".copilot/hooks/rootguard.json"):
        assert check(home, "write", home / relative)[0] == 3, relative
    assert check(home, "write", home / "notes.txt")[0] == 0
    codex_home = tmp_path / "elsewhere-codex"
    codex_home.mkdir()
    assert check(codex_home, "write", codex_home / "config.toml", {"CODEX_HOME": str(codex_home)})[0] == 3
    runtime = Path(os.environ["XDG_RUNTIME_DIR"])
    assert check(runtime, "write", runtime / "rootguard" / "sessions" / "forged.json")[0] == 3
    assert check(runtime, "write", runtime / "other.txt")[0] == 0


def test_the_hook_asks_before_an_agent_edits_its_settings(project: Path):
    """Through ``rootguard hook``: Claude's Write on its own settings is a request; with no tray, Claude's ``ask``."""
    payload = {"session_id": "s", "cwd": str(project), "hook_event_name": "PreToolUse", "tool_name": "Write",
               "tool_input": {"file_path": str(project / ".claude" / "settings.json"), "content": "{}"}}
    done = subprocess.run([sys.executable, "-m", "lsp_bridge.cli", "hook", "claude"], input=json.dumps(payload),
                          capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(REPO), "ROOTGUARD_TRAY_SOCKET": str(project / "no.sock")})
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)["hookSpecificOutput"]
    assert out["permissionDecision"] == "ask" and ".claude/settings.json" in out["permissionDecisionReason"]


# -- [agents] shell ---------------------------------------------------------------


def test_agents_shell_is_validated_at_file_line_column():
    found = [d.format() for d in diagnostics_for_text('version = 2\n[agents]\nshell = "sometimes"\n', "/p/.rootguard.toml",
                                                      "project", "/p") if d.severity == "error"]
    assert found == ["/p/.rootguard.toml:3:9: error: `agents.shell` must be one of confine, deny, allow, not "
                     "'sometimes' [bad-value]"]
    found = [d.format() for d in diagnostics_for_text("version = 2\n[agents]\nshel = 'deny'\n", "/p/.rootguard.toml",
                                                      "project", "/p") if d.severity == "error"]
    assert found == ["/p/.rootguard.toml:3:1: error: unknown key `agents.shel` (expected one of: shell) [unknown-key]"]


def test_a_project_file_may_only_tighten_the_shell(tmp_path: Path, isolated_user: Path):
    user = isolated_user / ".config" / "rootguard" / "config.toml"
    user.parent.mkdir(parents=True)
    root = make_repo(tmp_path / "repo")
    assert load_config(str(root)).config.agent_shell == "confine"
    (root / ".rootguard.toml").write_text('version = 2\n[agents]\nshell = "allow"\n')
    assert load_config(str(root)).config.agent_shell == "confine"  # a cloned repository cannot turn it off
    user.write_text('version = 2\n[agents]\nshell = "allow"\n')
    assert load_config(str(root)).config.agent_shell == "allow"  # the person can
    (root / ".rootguard.toml").write_text('version = 2\n[agents]\nshell = "deny"\n')
    assert load_config(str(root)).config.agent_shell == "deny"


def test_loosening_the_shell_in_a_running_session_is_held(tmp_path: Path, isolated_user: Path, monkeypatch):
    """A user file the agent could have written (inside a root, as when the root holds the home folder):
    a looser shell is held. One outside every root only the person could have written: it applies."""
    repo = make_repo(tmp_path / "repo")
    user = repo / "home" / ".config" / "rootguard" / "config.toml"
    user.parent.mkdir(parents=True)
    user.write_text('version = 2\n[agents]\nshell = "deny"\n')
    monkeypatch.setenv("ROOTGUARD_CONFIG", str(user))
    keeper = ConfigKeeper(str(repo))
    user.write_text('version = 2\n[agents]\nshell = "allow"\n')
    keeper.reload(trusted=False)
    assert keeper.current.agent_shell == "deny" and keeper.held is not None
    assert any("agents.shell" in reason for reason in keeper.held.reasons)
    outside = isolated_user / ".config" / "rootguard" / "config.toml"
    outside.parent.mkdir(parents=True)
    outside.write_text('version = 2\n[agents]\nshell = "deny"\n')
    monkeypatch.setenv("ROOTGUARD_CONFIG", str(outside))
    keeper = ConfigKeeper(str(repo))
    outside.write_text('version = 2\n[agents]\nshell = "allow"\n')
    keeper.reload(trusted=False)
    assert keeper.current.agent_shell == "allow" and keeper.held is None


def test_the_sandbox_walk_stops_at_every_protected_name_the_engine_knows(tmp_path):
    """``rootguard run``'s walk looks for protected targets by name (core/protected.py's lists, not a
    copy): every name it stops at is one the engine protects, and the agents' files are among them."""
    from lsp_bridge.core.protected import (
        PROTECTED_GITHUB,
        PROTECTED_NAMES,
        PROTECTED_VSCODE,
        ProtectedAreas,
        protected_reason,
    )
    from lsp_bridge.sandbox import profile

    assert profile.PROTECTED_NAMES is PROTECTED_NAMES
    candidates = [f"{tmp_path}/repo/{name}" for name in PROTECTED_NAMES]
    candidates += [f"{tmp_path}/repo/.vscode/{name}" for name in PROTECTED_VSCODE]
    candidates += [f"{tmp_path}/repo/.github/{name}" for name in PROTECTED_GITHUB]
    assert [c for c in candidates if protected_reason(c, ProtectedAreas()) is None] == []
    named = {p.split("/")[0] for p in PROTECTED + INSTRUCTIONS if not p.startswith((".vscode", ".github", "sub", "docs"))}
    assert named <= PROTECTED_NAMES
