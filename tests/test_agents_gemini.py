"""Gemini CLI's BeforeTool input -> accesses, verdicts -> Gemini's answers (pure, table-tested).

Inputs as Gemini CLI 0.61 sends them (../shared/tools/agents-offline.md): ``session_id``, ``transcript_path``,
``cwd``, ``hook_event_name`` (``BeforeTool``), ``timestamp``, ``tool_name``, ``tool_input``; the path argument
is ``path``, ``file_path``, ``absolute_path`` or ``dir_path`` depending on the tool and the release.
"""

from __future__ import annotations

import json
import shlex

import pytest

from lsp_bridge.agents import gemini
from lsp_bridge.agents.model import Access, HookInputError

pytestmark = pytest.mark.timeout(60)  # every test has a time limit (pytest-timeout)

CWD = "/srv/shop/packages/checkout"
ENV = {"HOME": "/srv/user"}


def before_tool(tool: str, tool_input: dict) -> dict:
    return {"session_id": "g-1", "transcript_path": "/srv/user/.gemini/tmp/x.json", "cwd": CWD,
            "hook_event_name": "BeforeTool", "timestamp": "2026-11-30T10:00:00.000Z", "tool_name": tool,
            "tool_input": tool_input}


CASES = [
    ("read_file", {"absolute_path": "/srv/shop/.env"}, [Access("read", "/srv/shop/.env")]),
    ("read_file", {"file_path": "src/a.ts"}, [Access("read", f"{CWD}/src/a.ts")]),
    ("read_file", {"path": "/srv/shop/libs/x.ts"}, [Access("read", "/srv/shop/libs/x.ts")]),
    ("write_file", {"file_path": "../../leak.txt", "content": "x"}, [Access("write", f"{CWD}/../../leak.txt")]),
    ("replace", {"file_path": f"{CWD}/a.ts", "old_string": "a", "new_string": "b"},
     [Access("read", f"{CWD}/a.ts"), Access("write", f"{CWD}/a.ts")]),
    ("list_directory", {"path": "/srv/shop"}, [Access("read", "/srv/shop")]),
    ("list_directory", {"dir_path": ".."}, [Access("read", f"{CWD}/..")]),
    ("glob", {"pattern": "**/*.ts"}, [Access("read", CWD)]),
    ("glob", {"pattern": "../../**/.env", "dir_path": CWD}, [Access("read", f"{CWD}/../..")]),
    ("grep_search", {"pattern": "KEY", "dir_path": "/srv/shop"}, [Access("read", "/srv/shop")]),
    ("search_file_content", {"pattern": "KEY", "path": "/srv/shop", "include": "*.env"}, [Access("read", "/srv/shop")]),
    ("search_file_content", {"pattern": "KEY"}, [Access("read", CWD)]),
    ("read_many_files", {"paths": ["src/**/*.ts", "../../.env"]},
     [Access("read", f"{CWD}/src"), Access("read", f"{CWD}/../../.env")]),
    ("read_many_files", {"paths": ["*.md"], "include": ["/etc/*.conf"]}, [Access("read", CWD), Access("read", "/etc")]),
    ("mcp__fs__read", {"path": "/srv/shop/.env"}, [Access("read", "/srv/shop/.env")]),
    ("web_fetch", {"prompt": "see ../x"}, []),
]


@pytest.mark.parametrize(("tool", "tool_input", "expected"), CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_tools_become_accesses(tool, tool_input, expected):
    call = gemini.parse(before_tool(tool, tool_input), ENV)
    assert list(call.accesses) == expected and call.session == "g-1" and call.agent == "gemini"


def test_run_shell_command_is_rewritten_through_tool_input():
    call = gemini.parse(before_tool("run_shell_command", {"command": "cat ../../.env", "description": "x",
                                                         "directory": "sub"}), ENV)
    assert call.is_shell and call.accesses == (Access("read", f"{CWD}/sub"),)  # where it runs is decided
    answer = gemini.confine(call, [CWD], "Root Guard: confined")
    body = json.loads(answer.stdout)
    assert answer.exit_code == 0 and set(body) == {"hookSpecificOutput"}
    assert body["hookSpecificOutput"]["hookEventName"] == "BeforeTool"
    updated = body["hookSpecificOutput"]["tool_input"]
    assert updated["description"] == "x" and updated["directory"] == "sub"
    assert shlex.split(updated["command"])[-4:] == ["bash", "-c", "--", "cat ../../.env"]


def test_deny_answer():
    call = gemini.parse(before_tool("read_file", {"absolute_path": "/x"}), ENV)
    deny = gemini.deny(call, "Root Guard: no")
    assert deny.exit_code == 2 and deny.stderr == "Root Guard: no\n"
    assert json.loads(deny.stdout) == {"decision": "deny", "reason": "Root Guard: no"}


@pytest.mark.parametrize(("payload", "named"), [
    ({"cwd": CWD, "tool_name": "read_file", "tool_input": {}}, "hook_event_name"),
    ({"hook_event_name": "BeforeTool", "cwd": CWD, "tool_name": "read_file", "tool_input": {}}, "names no file"),
    ({"hook_event_name": "BeforeTool", "cwd": CWD, "tool_name": "read_many_files", "tool_input": {"paths": []}}, "paths"),
    ({"hook_event_name": "BeforeTool", "cwd": CWD, "tool_name": "read_many_files", "tool_input": {"paths": "x"}}, "paths"),
    ({"hook_event_name": "AfterTool", "cwd": CWD, "tool_name": "x"}, "AfterTool"),
])
def test_malformed(payload, named):
    with pytest.raises(HookInputError, match=named):
        gemini.parse(payload, ENV)
