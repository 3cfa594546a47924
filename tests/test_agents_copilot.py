"""Copilot CLI's preToolUse input -> accesses, verdicts -> Copilot's answers (pure, table-tested).

Native input as Copilot CLI 1.0 sends it (../shared/tools/agents-offline.md): ``sessionId``, ``timestamp``,
``cwd``, ``toolName``, ``toolArgs`` (``path``, ``command``, ``file_text``); a Claude-format hook file in the
same folder sends Claude's shape, answered in Claude's words.
"""

from __future__ import annotations

import json
import shlex

import pytest

from lsp_bridge.agents import copilot
from lsp_bridge.agents.model import Access, HookInputError

pytestmark = pytest.mark.timeout(60)  # every test has a time limit (pytest-timeout)

CWD = "/srv/shop/packages/checkout"
ENV = {"HOME": "/srv/user"}


def native(tool: str, args, **extra) -> dict:
    return {"sessionId": "c-1", "timestamp": 1764500000000, "cwd": CWD, "toolName": tool, "toolArgs": args, **extra}


CASES = [
    ("view", {"path": "/srv/shop/.env"}, [Access("read", "/srv/shop/.env")]),
    ("view", {"path": "src"}, [Access("read", f"{CWD}/src")]),
    ("create", {"path": "../../x.txt", "file_text": "x"}, [Access("write", f"{CWD}/../../x.txt")]),
    ("edit", {"path": f"{CWD}/a.ts", "old_str": "a", "new_str": "b"},
     [Access("read", f"{CWD}/a.ts"), Access("write", f"{CWD}/a.ts")]),
    ("glob", {"pattern": "../../**/.env"}, [Access("read", f"{CWD}/../..")]),
    ("grep", {"pattern": "KEY", "path": "/srv/shop"}, [Access("read", "/srv/shop")]),
    ("grep", {"pattern": "KEY"}, [Access("read", CWD)]),
    ("github-mcp-server-get_file_contents", {"owner": "o", "repo": "r", "path": "README.md"},
     [Access("read", f"{CWD}/README.md")]),  # an unknown tool: decided on its path-like arguments
    ("report_intent", {"intent": "reading ../x"}, []),
]


@pytest.mark.parametrize(("tool", "args", "expected"), CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_tools_become_accesses(tool, args, expected):
    call = copilot.parse(native(tool, args), ENV)
    assert list(call.accesses) == expected and call.session == "c-1" and call.event == "preToolUse"


def test_tool_args_as_a_json_string():
    call = copilot.parse(native("view", json.dumps({"path": "/srv/shop/.env"})), ENV)
    assert call.accesses == (Access("read", "/srv/shop/.env"),)
    with pytest.raises(HookInputError, match="toolArgs"):
        copilot.parse(native("view", "{not json"), ENV)


def test_bash_is_rewritten_through_modified_args():
    call = copilot.parse(native("bash", {"command": "cat ../../.env", "description": "d"}), ENV)
    assert call.is_shell
    body = json.loads(copilot.confine(call, [CWD], "Root Guard: confined").stdout)
    assert body["permissionDecision"] == "allow" and body["modifiedArgs"]["description"] == "d"
    assert shlex.split(body["modifiedArgs"]["command"])[-4:] == ["bash", "-c", "--", "cat ../../.env"]


def test_deny_answer():
    call = copilot.parse(native("view", {"path": "/x"}), ENV)
    deny = copilot.deny(call, "Root Guard: no")
    assert deny.exit_code == 2 and deny.stderr == "Root Guard: no\n"
    assert json.loads(deny.stdout) == {"permissionDecision": "deny", "permissionDecisionReason": "Root Guard: no"}


def test_a_claude_format_hook_file_is_answered_in_claudes_words():
    payload = {"session_id": "s", "cwd": CWD, "hook_event_name": "PreToolUse", "tool_name": "Read",
               "tool_input": {"file_path": "/srv/shop/.env"}}
    call = copilot.parse(payload, ENV)
    assert call.agent == "copilot" and call.accesses == (Access("read", "/srv/shop/.env"),)
    assert json.loads(copilot.deny(call, "no").stdout)["hookSpecificOutput"]["permissionDecision"] == "deny"


@pytest.mark.parametrize(("payload", "named"), [
    ({"sessionId": "c", "toolName": "view", "toolArgs": {"path": "/x"}}, "cwd"),
    ({"sessionId": "c", "cwd": CWD, "toolArgs": {"path": "/x"}}, "toolName"),
    ({"sessionId": "c", "cwd": CWD, "toolName": "view", "toolArgs": {}}, "names no file"),
    ({"sessionId": "c", "cwd": CWD, "toolName": "view", "toolArgs": [1]}, "toolArgs"),
])
def test_malformed(payload, named):
    with pytest.raises(HookInputError, match=named):
        copilot.parse(payload, ENV)
