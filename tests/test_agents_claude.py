"""Claude Code's hook input -> accesses, and verdicts -> Claude's answers (pure, table-tested).

Inputs are shaped as Claude Code 2.1 sends them (../shared/tools/agents-offline.md): ``session_id``,
``transcript_path``, ``cwd``, ``permission_mode``, ``hook_event_name``, ``tool_name``, ``tool_input``,
``tool_use_id``; file paths absolute.
"""

from __future__ import annotations

import json
import shlex
import sys

import pytest

from lsp_bridge.agents import claude
from lsp_bridge.agents.model import Access, HookInputError

pytestmark = pytest.mark.timeout(60)  # every test has a time limit (pytest-timeout)

CWD = "/srv/shop/packages/checkout"
ENV = {"HOME": "/srv/user", "CLAUDE_PROJECT_DIR": CWD}


def pre_tool(tool: str, tool_input: dict, **extra) -> dict:
    return {"session_id": "9f1c2d3e-aaaa-bbbb", "transcript_path": "/srv/user/.claude/projects/x.jsonl", "cwd": CWD,
            "permission_mode": "default", "hook_event_name": "PreToolUse", "tool_name": tool,
            "tool_input": tool_input, "tool_use_id": "toolu_01", **extra}


CASES = [
    ("Read", {"file_path": "/srv/shop/.env"}, [Access("read", "/srv/shop/.env")]),
    ("Read", {"file_path": f"{CWD}/src/a.ts", "offset": 1, "limit": 20}, [Access("read", f"{CWD}/src/a.ts")]),
    ("Read", {"file_path": "../../.env"}, [Access("read", f"{CWD}/../../.env")]),  # relative: from cwd, kept lexical
    ("Write", {"file_path": "/tmp/out.txt", "content": "x"}, [Access("write", "/tmp/out.txt")]),
    ("Edit", {"file_path": f"{CWD}/a.ts", "old_string": "a", "new_string": "b"},
     [Access("read", f"{CWD}/a.ts"), Access("write", f"{CWD}/a.ts")]),
    ("MultiEdit", {"file_path": f"{CWD}/a.ts", "edits": [{"old_string": "a", "new_string": "b"}]},
     [Access("read", f"{CWD}/a.ts"), Access("write", f"{CWD}/a.ts")]),
    ("NotebookEdit", {"notebook_path": f"{CWD}/n.ipynb", "new_source": "x"},
     [Access("read", f"{CWD}/n.ipynb"), Access("write", f"{CWD}/n.ipynb")]),
    ("Glob", {"pattern": "**/*.ts"}, [Access("read", CWD)]),
    ("Glob", {"pattern": "../../**/.env"}, [Access("read", f"{CWD}/../..")]),
    ("Glob", {"pattern": "/etc/**/*.conf"}, [Access("read", "/etc")]),
    ("Glob", {"pattern": "*.ts", "path": "/srv/shop/libs"}, [Access("read", "/srv/shop/libs")]),
    ("Grep", {"pattern": "API_KEY", "path": "/srv/shop", "glob": "*.env"}, [Access("read", "/srv/shop")]),
    ("Grep", {"pattern": "TODO"}, [Access("read", CWD)]),
    ("LS", {"path": "/srv/shop"}, [Access("read", "/srv/shop")]),
    ("Read", {"file_path": "~/.ssh/id_rsa"}, [Access("read", "/srv/user/.ssh/id_rsa"), Access("read", f"{CWD}/~/.ssh/id_rsa")]),
    ("mcp__files__read_file", {"path": "/srv/shop/.env"}, [Access("read", "/srv/shop/.env")]),
    ("mcp__files__write_file", {"path": "notes.md", "content": "x"}, [Access("write", f"{CWD}/notes.md")]),
    ("mcp__files__delete_file", {"target": "/srv/shop/x"}, [Access("delete", "/srv/shop/x")]),
    ("mcp__db__query", {"sql": "select 1"}, []),  # no path-like argument: nothing to decide
    ("mcp__x__search", {"filters": {"where": ["../../secrets"]}}, [Access("read", f"{CWD}/../../secrets")]),
    ("TodoWrite", {"todos": [{"content": "read ../../.env", "status": "pending"}]}, []),  # touches no file
    ("WebFetch", {"url": "https://example.com", "prompt": "x"}, []),
    ("SomeNewTool", {"file": "/etc/passwd"}, [Access("read", "/etc/passwd")]),
]


@pytest.mark.parametrize(("tool", "tool_input", "expected"), CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_tools_become_accesses(tool, tool_input, expected):
    call = claude.parse(pre_tool(tool, tool_input), ENV)
    assert list(call.accesses) == expected
    assert call.agent == "claude" and call.session == "9f1c2d3e-aaaa-bbbb" and call.tool == tool
    assert call.correlation == "toolu_01" and not call.is_shell


def test_bash_is_a_shell_call_rewritten_with_updated_input():
    call = claude.parse(pre_tool("Bash", {"command": "cat ../../.env", "description": "read it", "timeout": 5000}), ENV)
    assert call.is_shell and call.shell == "cat ../../.env" and call.accesses == ()
    answer = claude.confine(call, [CWD, "/srv/extra"], "Root Guard: runs confined")
    out = json.loads(answer.stdout)["hookSpecificOutput"]
    assert answer.exit_code == 0 and not answer.stderr
    assert out["hookEventName"] == "PreToolUse" and out["permissionDecision"] == "allow"
    updated = out["updatedInput"]
    assert updated["description"] == "read it" and updated["timeout"] == 5000  # the whole input, the rest unchanged
    argv = shlex.split(updated["command"])
    assert argv[:4] == [sys.executable, "-P", "-m", "lsp_bridge.cli"]
    assert argv[4:] == ["run", "--root", CWD, "--root", "/srv/extra", "--", "bash", "-c", "--", "cat ../../.env"]


def test_a_command_that_looks_confined_is_wrapped_again():
    sneaky = f"{sys.executable} -P -m lsp_bridge.cli run --root / -- bash -c 'cat /etc/shadow'"
    call = claude.parse(pre_tool("Bash", {"command": sneaky}), ENV)
    argv = shlex.split(json.loads(claude.confine(call, [CWD], "r").stdout)["hookSpecificOutput"]["updatedInput"]["command"])
    assert argv[5:8] == ["--root", CWD, "--"] and argv[-1] == sneaky


def test_answers():
    call = claude.parse(pre_tool("Read", {"file_path": "/srv/shop/.env"}), ENV)
    deny = claude.deny(call, "Root Guard: no")
    assert deny.exit_code == 2 and deny.stderr == "Root Guard: no\n"
    assert json.loads(deny.stdout) == {"hookSpecificOutput": {
        "hookEventName": "PreToolUse", "permissionDecision": "deny", "permissionDecisionReason": "Root Guard: no"}}
    ask = claude.ask(call, "Root Guard: approve?")
    assert ask.exit_code == 0 and not ask.stderr
    assert json.loads(ask.stdout)["hookSpecificOutput"]["permissionDecision"] == "ask"
    multi = claude.deny(call, "line one\nline two\x1b[31m")
    assert multi.stderr.count("\n") == 1 and "\x1b" not in multi.stderr  # one line, control characters escaped


def test_permission_request_with_add_directories_is_a_widening():
    payload = pre_tool("Read", {"file_path": "/srv/shop/.env"}, hook_event_name="PermissionRequest",
                       permission_suggestions=[{"type": "addRules", "rules": [{"toolName": "Read"}], "behavior": "allow",
                                                "destination": "session"},
                                               {"type": "addDirectories", "directories": ["/srv/shop"],
                                                "destination": "session"}])
    call = claude.parse(payload, ENV)
    assert call.event == "PermissionRequest" and call.added_dirs == ("/srv/shop",)
    deny = claude.deny(call, "Root Guard: no")
    assert deny.exit_code == 2
    assert json.loads(deny.stdout) == {"hookSpecificOutput": {
        "hookEventName": "PermissionRequest", "decision": {"behavior": "deny", "message": "Root Guard: no"}}}
    plain = claude.parse(pre_tool("Bash", {"command": "ls"}, hook_event_name="PermissionRequest"), ENV)
    assert plain.added_dirs == ()


def test_directory_added_cannot_block_and_gets_a_notice():
    payload = {"session_id": "s", "transcript_path": "/t", "cwd": CWD, "hook_event_name": "DirectoryAdded",
               "directory": "/srv/shop", "source": "slash_command"}
    call = claude.parse(payload, ENV)
    assert call.added_dirs == ("/srv/shop",) and call.accesses == ()
    notice = claude.notice(call, "Root Guard: widened")
    assert notice.exit_code == 0 and json.loads(notice.stdout) == {"systemMessage": "Root Guard: widened"}


BROKEN = [
    ([], "must be a JSON object"),
    ({"cwd": CWD, "tool_name": "Read", "tool_input": {}}, "hook_event_name"),
    ({"hook_event_name": "PreToolUse", "tool_name": "Read", "tool_input": {}}, "`cwd` is missing"),
    ({"hook_event_name": "PreToolUse", "cwd": "relative/dir", "tool_name": "Read"}, "absolute"),
    ({"hook_event_name": "PreToolUse", "cwd": CWD, "tool_input": {}}, "tool_name"),
    ({"hook_event_name": "PreToolUse", "cwd": CWD, "tool_name": "Read", "tool_input": "x"}, "tool_input"),
    ({"hook_event_name": "PreToolUse", "cwd": CWD, "tool_name": "Read", "tool_input": {"file_path": 3}}, "file_path"),
    ({"hook_event_name": "PreToolUse", "cwd": CWD, "tool_name": "Bash", "tool_input": {}}, "command"),
    ({"hook_event_name": "PostToolUse", "cwd": CWD, "tool_name": "Read", "tool_input": {}}, "PostToolUse"),
    ({"hook_event_name": "DirectoryAdded", "cwd": CWD}, "directory"),
    ({"hook_event_name": "PermissionRequest", "cwd": CWD, "tool_name": "Read",
      "permission_suggestions": [{"type": "addDirectories", "directories": "/x"}]}, "directories"),
]


@pytest.mark.parametrize(("payload", "named"), BROKEN)
def test_malformed_input_is_refused_naming_the_field(payload, named):
    with pytest.raises(HookInputError, match=named.replace("`", ".")):
        claude.parse(payload, ENV)
