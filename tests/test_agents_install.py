"""``rootguard agents install`` -> ``status`` guarded -> ``uninstall`` -> the settings file byte-identical, per agent.

Through the real command (a subprocess), with real settings files holding the user's own content and
formatting, in a scratch HOME.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

pytestmark = pytest.mark.timeout(300)  # every test has a time limit (pytest-timeout)

ROOTGUARD = [sys.executable, "-m", "lsp_bridge.cli"]
REPO = Path(__file__).resolve().parents[1]

CLAUDE_SETTINGS = '{\n    "model": "opus",\n    "permissions": {"allow": ["Bash(npm test)"]},\n    "hooks": {\n' \
                  '        "PostToolUse": [{"matcher": "Write", "hooks": [{"type": "command", "command": "fmt"}]}]\n' \
                  '    }\n}'  # no final newline, four-space indent, compact inner lists
CODEX_CONFIG = ('# my Codex configuration\nmodel = "o3"   # the model I use\n\n[model_providers.fake]\n'
                'base_url = "http://127.0.0.1:9/v1"\n\n[[hooks.PreToolUse]]\n[[hooks.PreToolUse.hooks]]\n'
                'type = "command"\ncommand = "my-own-check"\n')
GEMINI_SETTINGS = '{\n\t"security": {"auth": {"selectedType": "gemini-api-key"}},\n\t"hooks": {}\n}\n'


def agents(home: Path, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, "HOME": str(home), "PYTHONPATH": str(REPO)}
    env.pop("CODEX_HOME", None)
    return subprocess.run([*ROOTGUARD, "agents", *args], capture_output=True, text=True, timeout=120, env=env,
                          cwd=cwd or home)


def status_of(home: Path, agent: str, folder: Path) -> dict:
    done = agents(home, "status", "--json", "--folder", str(folder))
    assert done.returncode in (0, 1), done.stderr
    return next(a for a in json.loads(done.stdout)["agents"] if a["agent"] == agent)


@pytest.mark.parametrize(("agent", "relative", "original", "scope"), [
    ("claude", ".claude/settings.json", CLAUDE_SETTINGS, "--user"),
    ("claude", "proj/.claude/settings.json", CLAUDE_SETTINGS, "--project"),
    ("codex", ".codex/config.toml", CODEX_CONFIG, "--user"),
    ("gemini", ".gemini/settings.json", GEMINI_SETTINGS, "--user"),
    ("gemini", ".gemini/settings.json", None, "--user"),  # no file yet: install creates it, uninstall removes it
    ("copilot", ".copilot/hooks/rootguard.json", None, "--user"),
])
def test_install_status_uninstall_is_byte_identical(tmp_path: Path, agent, relative, original, scope):
    home = tmp_path / "home"
    project = home / "proj"
    project.mkdir(parents=True)
    settings = home / relative
    if original is not None:
        settings.parent.mkdir(parents=True, exist_ok=True)
        settings.write_bytes(original.encode())
    folder_args = ["--folder", str(project)] if scope == "--project" else []

    before = status_of(home, agent, project)
    assert not before["guarded"]

    dry = agents(home, "install", agent, scope, *folder_args, "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert "lsp_bridge.cli hook " + agent in dry.stdout and "+++" in dry.stdout and "dry run" in dry.stdout
    assert (settings.read_bytes() if original is not None else None) == (original.encode() if original else None)

    done = agents(home, "install", agent, scope, *folder_args)
    assert done.returncode == 0, done.stderr
    assert settings.exists()
    written = settings.read_text()
    # the absolute interpreter, never a name looked up on PATH, never the working directory on sys.path
    assert f"{sys.executable} -P -m lsp_bridge.cli hook {agent}" in written
    if original is not None:  # everything that was there is still there, byte for byte, in order
        kept = [line for line in original.splitlines() if line.strip() not in ("}", "") and "{}" not in line]
        positions = [written.find(line) for line in kept]
        assert all(p >= 0 for p in positions) and positions == sorted(positions), (kept, written)
    if agent == "codex":
        parsed = tomllib.loads(written)
        commands = [h["command"] for g in parsed["hooks"]["PreToolUse"] for h in g["hooks"]]
        assert commands[0] == "my-own-check" and len(commands) == 2
        assert "trust" in done.stdout and "/hooks" in done.stdout  # the trust step, explained
    else:
        json.loads(written)

    again = agents(home, "install", agent, scope, *folder_args)
    assert again.returncode == 0 and "nothing to install" in again.stdout
    assert settings.read_text() == written  # idempotent

    after = status_of(home, agent, project)
    if agent == "codex":  # written, but Codex skips a hook nobody trusted: not guarded until /hooks trusts it
        assert not after["guarded"] and "trust" in after["note"]
        state = f'\n[hooks.state."{settings}:pre_tool_use:1:0"]\ntrusted_hash = "sha256:abc"\n'
        settings.write_text(written + state)
        assert status_of(home, agent, project)["guarded"]
        settings.write_text(written)
    else:
        assert after["guarded"] and after["present"], after

    removed = agents(home, "uninstall", agent, scope, *folder_args)
    assert removed.returncode == 0, removed.stderr
    if original is None:
        assert not settings.exists()
    else:
        assert settings.read_bytes() == original.encode()
    assert not status_of(home, agent, project)["guarded"]
    assert "nothing to uninstall" in agents(home, "uninstall", agent, scope, *folder_args).stdout


def test_a_file_edited_after_install_keeps_the_edits(tmp_path: Path):
    home = tmp_path / "home"
    settings = home / ".claude" / "settings.json"
    settings.parent.mkdir(parents=True)
    settings.write_text('{"model": "opus"}\n')
    assert agents(home, "install", "claude").returncode == 0
    data = json.loads(settings.read_text())
    data["theme"] = "dark"
    settings.write_text(json.dumps(data, indent=2) + "\n")
    done = agents(home, "uninstall", "claude")
    assert done.returncode == 0 and "changed since install" in done.stdout
    assert json.loads(settings.read_text()) == {"model": "opus", "theme": "dark"}


@pytest.mark.parametrize(("content", "expected"), [
    ('{"hooks": [1, 2]}', "not an object"),
    ("{not json", "not valid JSON"),
    ('{\n  // my comment\n  "a": 1\n}', "comments"),
])
def test_a_settings_file_it_cannot_edit_safely_is_left_alone(tmp_path: Path, content, expected):
    home = tmp_path / "home"
    settings = home / ".gemini" / "settings.json"
    settings.parent.mkdir(parents=True)
    settings.write_text(content)
    done = agents(home, "install", "gemini")
    assert done.returncode == 2 and expected in done.stderr, done.stderr
    assert settings.read_text() == content


def test_status_names_the_agents_present_in_the_folders(tmp_path: Path):
    home = tmp_path / "home"
    home.mkdir()
    project = tmp_path / "proj"
    (project / ".claude").mkdir(parents=True)
    (project / "GEMINI.md").write_text("be nice\n")
    done = agents(home, "status", "--json", "--folder", str(project))
    assert done.returncode == 1  # present and unguarded
    report = json.loads(done.stdout)
    present = {a["agent"]: a for a in report["agents"] if a["present"]}
    assert set(present) == {"claude", "gemini"}
    assert present["claude"]["config_dirs"] == [str(project / ".claude")]
    assert [w["code"] for w in report["warnings"]] == ["agent-unguarded", "agent-unguarded"]
    assert "rootguard agents install claude" in report["warnings"][0]["message"]
    assert agents(home, "install", "claude", "--project", "--folder", str(project)).returncode == 0
    assert agents(home, "install", "gemini").returncode == 0
    assert agents(home, "status", "--folder", str(project)).returncode == 0


def test_bad_input(tmp_path: Path):
    home = tmp_path / "home"
    home.mkdir()
    assert agents(home, "install", "cursor").returncode == 2
    done = agents(home, "install", "codex", "--project", "--folder", str(home))
    assert done.returncode == 2 and "--user" in done.stderr
    assert agents(home, "install", "claude", "--project", "--folder", "").returncode == 2


def test_the_copy_bundled_in_the_extension_writes_a_hook_that_starts(tmp_path: Path):
    """The .vsix carries lsp_bridge in bundled/libs, off the interpreter's path: the hook it writes runs the
    bundle's launcher, and that command starts from any directory and blocks a denied read."""
    bundle = tmp_path / "bundled"
    shutil.copytree(REPO / "lsp_bridge", bundle / "libs" / "lsp_bridge",
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    shutil.copytree(REPO / "vscode-extension" / "bundled" / "tool", bundle / "tool")
    home = tmp_path / "home"
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    done = subprocess.run([sys.executable, str(bundle / "tool" / "launch.py"), "lsp_bridge.cli", "agents", "install",
                           "claude"], capture_output=True, text=True, timeout=120, env={**env, "HOME": str(home)},
                          cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    command = json.loads((home / ".claude" / "settings.json").read_text())["hooks"]["PreToolUse"][0]["hooks"][0]["command"]
    assert command == f"{sys.executable} {bundle / 'tool' / 'launch.py'} lsp_bridge.cli hook claude"
    secret = tmp_path / "outside" / ".env"
    secret.parent.mkdir()
    secret.write_text("X=1\n")
    project = tmp_path / "project"
    project.mkdir()
    payload = {"session_id": "s", "cwd": str(project), "hook_event_name": "PreToolUse", "tool_name": "Read",
               "tool_input": {"file_path": str(secret)}}
    ran = subprocess.run(command, shell=True, input=json.dumps(payload), capture_output=True, text=True, timeout=120,
                         env={**env, "HOME": str(home)}, cwd=project)
    assert ran.returncode == 2 and "denied" in ran.stderr, ran.stderr
