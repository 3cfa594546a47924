"""``rootguard hook AGENT`` refuses what it cannot fully read: the red-team review's shapes, each through the real
entry point (a subprocess, the agent's JSON on stdin) in a monorepo whose ``.rootguard.toml`` denies ``**/.env``.

Every blocked case here was allowed (exit 0, no output) before the fix that added it.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path
from urllib.parse import quote

import pytest

from tests.conftest import make_repo
from tests.test_agents_hook import LIMIT, REPO, bwrap_works, claude, hook

pytestmark = pytest.mark.timeout(300)  # every test has a time limit (pytest-timeout)

SECRET = "sk_live_mono_77"


@pytest.fixture
def mono(tmp_path: Path) -> Path:
    """The reviewer's setup: a git repository with a secret at its root and a rule denying it, the agent in a package."""
    return make_repo(tmp_path / "mono", {
        ".env": f"KEY={SECRET}\n", "package.json": "{}\n",
        ".rootguard.toml": 'version = 2\n[[paths]]\nid = "no-env"\npath = "."\nincludes = ["**/.env"]\n'
                           'policies = { read = "deny", write = "deny" }\n',
        "packages/app/src/index.ts": "export {};\n", "packages/app/package.json": "{}\n",
    })


def app(mono: Path) -> Path:
    return mono / "packages" / "app"


def codex(cwd: Path, tool: str, tool_input: dict) -> dict:
    return {"session_id": "codex-s", "cwd": str(cwd), "hook_event_name": "PreToolUse", "model": "m", "turn_id": "t",
            "tool_name": tool, "tool_input": tool_input}


def gemini(cwd: Path, tool: str, tool_input: dict) -> dict:
    return {"session_id": "g", "cwd": str(cwd), "hook_event_name": "BeforeTool", "timestamp": "t", "tool_name": tool,
            "tool_input": tool_input}


def copilot(cwd: Path, tool: str, tool_args) -> dict:
    return {"sessionId": "c", "timestamp": 1, "cwd": str(cwd), "toolName": tool, "toolArgs": tool_args}


def assert_blocked(done: subprocess.CompletedProcess, *named: str) -> None:
    """Exit 2, a reason on stderr naming ``named``, and the agent's deny JSON on stdout."""
    err = done.stderr.decode()
    assert done.returncode == 2, (done.returncode, err, done.stdout)
    assert err.startswith("Root Guard: ") and all(n in err for n in named), err
    out = json.loads(done.stdout)
    assert "deny" in json.dumps(out)


def assert_silent(done: subprocess.CompletedProcess) -> None:
    assert (done.returncode, done.stdout, done.stderr) == (0, b"", b""), done.stderr


def nest(value, depth: int) -> dict:
    for level in range(depth):
        value = {f"k{level}": value}
    return value


# -- 1, 2: nesting and path count ----------------------------------------------------------------


def test_a_path_nested_deep_in_an_mcp_tools_arguments_is_decided_or_refused(mono: Path):
    secret = str(mono / ".env")
    assert_blocked(hook("claude", claude(app(mono), "mcp__fs__read", nest(secret, 4))), str(mono / ".env"))
    assert_blocked(hook("claude", claude(app(mono), "mcp__fs__read", nest(secret, 5))), str(mono / ".env"))
    args = json.dumps(nest(secret, 5))
    assert_blocked(hook("copilot", copilot(app(mono), "mcp_fs_read", args)), str(mono / ".env"))
    assert_blocked(hook("claude", claude(app(mono), "mcp__fs__read", nest(secret, 200))), "nested deeper than")
    assert_silent(hook("claude", claude(app(mono), "mcp__fs__read", nest("./src/index.ts", 5))))


def test_more_path_like_values_than_the_hook_decides_is_a_refusal(mono: Path):
    paths = ["./src/index.ts"] * 260 + [str(mono / ".env")]
    assert_blocked(hook("claude", claude(app(mono), "mcp__fs__read_many", {"paths": paths})), "more than 256")
    assert_silent(hook("claude", claude(app(mono), "mcp__fs__read_many", {"paths": paths[:200]})))


# -- 3, 6: Codex's shell ---------------------------------------------------------------------------


def test_a_codex_shell_call_with_both_command_and_cmd_is_refused(mono: Path):
    done = hook("codex", codex(app(mono), "exec_command", {"command": "ls", "cmd": "cat ../../.env"}))
    assert_blocked(done, "`command` and `cmd`")


PATCH = "apply_patch <<'EOF'\n*** Begin Patch\n*** Update File: package.json\n@@\n-{}\n+{\"x\": 1}\n*** End Patch\nEOF\n"


@pytest.mark.parametrize("tool_input", [
    {"command": "cd ../.. && " + PATCH},
    {"command": "cd .. && cd '..' && " + PATCH},
    {"cmd": ["bash", "-lc", "cd ../.. && " + PATCH]},
    {"cmd": PATCH, "workdir": "../.."},
])
def test_a_codex_patch_after_cd_is_read_against_that_directory(mono: Path, tool_input):
    assert_blocked(hook("codex", codex(app(mono), "exec_command", tool_input)), f"read of {mono / 'package.json'} denied")


@pytest.mark.parametrize("command", [
    "echo hi; " + PATCH,
    "cd $HOME && " + PATCH,
    "cd ../.. || " + PATCH,
    PATCH + "cat ../../.env\n",
    "cat patch.txt | apply_patch\n*** Update File: package.json\n",
])
def test_a_codex_patch_in_a_shape_the_hook_cannot_read_is_refused(mono: Path, command: str):
    assert_blocked(hook("codex", codex(app(mono), "exec_command", {"cmd": command})), "apply_patch")


# -- 4, 5: glob patterns -----------------------------------------------------------------------


@pytest.mark.parametrize(("agent", "payload"), [
    ("gemini", lambda m: gemini(app(m), "glob", {"pattern": "../../.env"})),
    ("gemini", lambda m: gemini(app(m), "glob", {"pattern": str(m / ".env")})),
])
def test_a_literal_glob_pattern_is_decided_as_the_path_it_names(mono: Path, agent, payload):
    assert_blocked(hook(agent, payload(mono)), str(mono / ".env"))


@pytest.mark.parametrize(("agent", "payload"), [
    ("claude", lambda m: claude(app(m), "Glob", {"pattern": "*/../../../.env"})),
    ("claude", lambda m: claude(app(m), "Glob", {"pattern": "{.,../..}/.env"})),
    ("claude", lambda m: claude(app(m), "Glob", {"pattern": "{/etc,.}/passwd"})),
    ("gemini", lambda m: gemini(app(m), "glob", {"pattern": "{../..,.}/.env"})),
    ("gemini", lambda m: gemini(app(m), "read_many_files", {"paths": ["src/*/../../../../.env"]})),
    ("copilot", lambda m: copilot(app(m), "glob", {"pattern": "**/../../../.env"})),
    ("claude", lambda m: claude(app(m), "mcp__fs__search", {"path": "./*/../../../.env"})),
])
def test_a_glob_that_climbs_after_a_wildcard_or_in_braces_is_refused(mono: Path, agent, payload):
    assert_blocked(hook(agent, payload(mono)), "glob pattern")


def test_ordinary_globs_still_pass(mono: Path):
    assert_silent(hook("claude", claude(app(mono), "Glob", {"pattern": "src/**/*.{ts,tsx}"})))
    assert_silent(hook("gemini", gemini(app(mono), "glob", {"pattern": "src/index.ts"})))


# -- 7, 8, 10: unknown tools' arguments ----------------------------------------------------------


@pytest.mark.parametrize("tool_input", [
    {"uri": "file:///X/.env"},
    {"uri": "FILE://localhost/X/%2Eenv"},
    {"filepath": "packages/../../../.env"},
    {"targetFolder": "src/../../../.env"},
    {"items": [{"resourceUri": "file:///X/.env"}]},
])
def test_file_uris_and_path_named_arguments_are_paths(mono: Path, tool_input):
    text = json.dumps(tool_input).replace("/X/", quote(str(mono)) + "/")
    done = hook("claude", claude(app(mono), "mcp__fs__read", json.loads(text)))
    assert_blocked(done, str(mono))


def test_a_file_uri_naming_another_host_is_refused(mono: Path):
    assert_blocked(hook("claude", claude(app(mono), "mcp__fs__read", {"uri": "file://fileserver/share/.env"})),
                   "fileserver")


def test_a_nul_in_an_unknown_tools_path_is_refused(mono: Path):
    done = hook("codex", codex(app(mono), "mcp__fs__read_file", {"path": str(mono / ".env") + "\x00.txt"}))
    assert_blocked(done, "NUL")


def test_an_unknown_move_tool_is_decided_as_a_rename(mono: Path):
    (mono / "packages" / "app" / "src" / "old.ts").write_text("x\n")
    done = hook("claude", claude(app(mono), "mcp__fs__move_file", {"source": str(mono / ".env"),
                                                                     "destination": "src/env.txt"}))
    assert_blocked(done, "rename")
    assert_silent(hook("claude", claude(app(mono), "mcp__fs__rename", {"source": "src/old.ts",
                                                                         "destination": "src/new.ts"})))


# -- 9: the shell rewrite runs exactly the text asked for ------------------------------------------


@pytest.mark.skipif(not bwrap_works(), reason="bubblewrap is not usable here")
@pytest.mark.parametrize("command", ["-n; echo ran; cat ../../.env", "echo ran; cat ../../.env"])
def test_a_command_starting_with_a_dash_runs_as_the_text_asked_for_and_confined(mono: Path, command: str):
    done = hook("claude", claude(app(mono), "Bash", {"command": command}))
    assert done.returncode == 0 and not done.stderr, done.stderr
    rewritten = json.loads(done.stdout)["hookSpecificOutput"]["updatedInput"]["command"]
    assert shlex.split(rewritten)[-1] == command
    ran = subprocess.run(["bash", "-c", rewritten], cwd=app(mono), capture_output=True, text=True, timeout=LIMIT,
                         env={**os.environ, "PYTHONPATH": str(REPO)})
    assert "ran" in ran.stdout.splitlines(), (ran.stdout, ran.stderr)
    assert SECRET not in ran.stdout + ran.stderr
    assert "invalid option" not in ran.stderr
    assert sys.executable in rewritten
