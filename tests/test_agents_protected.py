"""Agents cannot rewrite their own leash: every agent's configuration, hook and instruction files are
protected targets, existing or not, decided through the real ``rootguard check`` (and ``rootguard hook``).

Also ``[agents] shell`` in the configuration: validated at file:line:column, only tightened by a project file.
"""

from __future__ import annotations

import json
import os
import shutil
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
# Files editors and agents read by themselves, in any folder: a workspace file widens the editor's roots,
# the rest configure an agent, steer its next session or run commands (pre-commit, Zed tasks).
EDITOR_AND_AGENT_FILES = [
    "team.code-workspace", "sub/app.code-workspace", ".claude/commands/review.md", ".claude/agents/reviewer.md",
    ".claude/skills/deploy/SKILL.md", ".devcontainer.json", ".cursorrules", ".windsurfrules", ".windsurf/rules/r.md",
    ".github/instructions/py.instructions.md", ".github/prompts/fix.prompt.md", ".github/agents/x.agent.md",
    ".github/chatmodes/plan.chatmode.md", ".amazonq/rules/r.md", ".kiro/steering/s.md", ".roo/rules/r.md",
    "opencode.json", "opencode.jsonc", ".opencode/agent/x.md", ".continue/config.yaml", ".aider.conf.yml",
    ".zed/settings.json", ".zed/tasks.json", ".pre-commit-config.yaml",
]
# The same kind of file at user level, when a root holds the home folder (relative to it).
USER_LEVEL_FILES = [
    ".config/Code/User/settings.json", ".config/Code/User/mcp.json", ".config/Code/User/tasks.json",
    ".config/Code/User/profiles/4f2a/settings.json", ".config/Code - Insiders/User/settings.json",
    ".config/VSCodium/User/mcp.json", ".local/share/code-server/User/settings.json",
    ".local/share/code-server/User/mcp.json", ".local/share/code-server/User/tasks.json", ".claude.json",
    ".gitconfig", ".config/git/config", ".config/git/attributes",
]
ORDINARY = [".github/workflows/ci.yml", "src/AGENTS.md.bak", "notes/claude.md", "notes/team.code-workspace.md",
            ".zed/themes/dark.json", "docs/cursorrules.txt", ".github/instructions.md"]
USER_ORDINARY = [".config/Code/User/keybindings.json", ".config/Code/User/globalStorage/state.vscdb",
                 ".local/share/code-server/logs/x.log", ".claude.json.txt", ".config/gitk", "notes.txt"]


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


@pytest.mark.parametrize("relative", EDITOR_AND_AGENT_FILES)
def test_writing_editor_and_agent_files_needs_approval_existing_or_not(project: Path, relative: str):
    target = project / relative
    code, data = check(project, "write", target)
    assert (code, data["decision"]) == (3, "request"), data
    assert "protected target" in data["reason"]
    assert check(project, "read", target)[0] == 0  # reading stays free


@pytest.mark.parametrize("relative", USER_LEVEL_FILES)
def test_writing_user_level_editor_agent_and_git_configuration_needs_approval(isolated_user: Path, relative: str):
    home = isolated_user
    code, data = check(home, "write", home / relative)
    assert (code, data["decision"]) == (3, "request"), data
    assert check(home, "read", home / relative)[0] == 0


@pytest.mark.parametrize("relative", USER_ORDINARY)
def test_other_user_level_files_stay_writable(isolated_user: Path, relative: str):
    assert check(isolated_user, "write", isolated_user / relative)[0] == 0


async def test_the_mcp_server_asks_before_writing_a_workspace_file(project: Path):
    from tests.test_attacks import serve
    from tests.test_mcp_server import code as error_code

    async with serve([project], project) as client:
        refused = await client.call_tool("write_file", {"project_id": project.name,
                                                        "relative_path": "team.code-workspace",
                                                        "content": '{"folders": [{"path": "/"}]}'})
        written = await client.call_tool("write_file", {"project_id": project.name, "relative_path": "notes.md",
                                                        "content": "x\n"})
    assert error_code(refused) == "no_approver" and not (project / "team.code-workspace").exists()
    assert error_code(written) is None and (project / "notes.md").read_text() == "x\n"


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="needs bubblewrap")
def test_rootguard_run_binds_the_existing_ones_read_only(isolated_user: Path):
    """The sandbox uses the same list: in a root holding the home folder, each existing file is bound
    read-only (the walk stops at its name, or it is one of the user-level paths)."""
    home = isolated_user
    existing = [".gitconfig", ".claude.json", ".config/Code/User/settings.json",
                ".config/Code/User/profiles/4f2a/settings.json", ".local/share/code-server/User/tasks.json",
                "proj/team.code-workspace", "proj/.zed/settings.json", "proj/.claude/commands/review.md",
                "proj/.pre-commit-config.yaml", "proj/.github/instructions/py.instructions.md"]
    for relative in existing:
        (home / relative).parent.mkdir(parents=True, exist_ok=True)
        (home / relative).write_text("original\n")
    (home / "notes.txt").write_text("original\n")
    script = "; ".join(f"echo changed >> '{home / r}' 2>/dev/null && echo 'wrote {r}'" for r in [*existing, "notes.txt"])
    done = subprocess.run([sys.executable, "-m", "lsp_bridge.cli", "run", "--root", str(home), "--", "sh", "-c", script],
                          capture_output=True, text=True, timeout=120, cwd=home,
                          env={**os.environ, "PYTHONPATH": str(REPO)})
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["wrote notes.txt"], done.stdout
    assert all((home / r).read_text() == "original\n" for r in existing)


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
        PROTECTED_CHILDREN,
        PROTECTED_NAMES,
        PROTECTED_SUFFIXES,
        ProtectedAreas,
        protected_reason,
    )
    from lsp_bridge.sandbox import profile

    assert profile.PROTECTED_NAMES is PROTECTED_NAMES
    candidates = [f"{tmp_path}/repo/{name}" for name in PROTECTED_NAMES]
    candidates += [f"{tmp_path}/repo/{parent}/{name}" for parent, names in PROTECTED_CHILDREN.items() for name in names]
    candidates += [f"{tmp_path}/repo/x{suffix}" for suffix in PROTECTED_SUFFIXES]
    assert [c for c in candidates if protected_reason(c, ProtectedAreas()) is None] == []

    def walk_stops(relative: str) -> bool:  # the walk's test, on some component of the path
        parts = relative.split("/")
        return any(part in PROTECTED_NAMES or part.endswith(PROTECTED_SUFFIXES)
                   or (i > 0 and part in PROTECTED_CHILDREN.get(parts[i - 1], ())) for i, part in enumerate(parts))

    assert [p for p in PROTECTED + INSTRUCTIONS + EDITOR_AND_AGENT_FILES if not walk_stops(p)] == []
