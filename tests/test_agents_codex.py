"""Codex CLI's hook input -> accesses (apply_patch headers included), verdicts -> Codex's answers.

Inputs as Codex 0.171 sends them (../shared/tools/agents-offline.md): Claude's fields plus ``turn_id`` and
``model``; ``exec_command`` arrives as ``tool_name: "Bash"`` with ``tool_input.command``; apply_patch as
``tool_name: "apply_patch"`` with the patch text in ``tool_input.command``.
"""

from __future__ import annotations

import json
import shlex
import sys

import pytest

from lsp_bridge.agents import codex
from lsp_bridge.agents.model import Access, HookInputError

pytestmark = pytest.mark.timeout(60)  # every test has a time limit (pytest-timeout)

CWD = "/srv/shop/packages/checkout"
ENV = {"HOME": "/srv/user"}


def pre_tool(tool: str, tool_input: dict) -> dict:
    return {"session_id": "0199a-codex", "transcript_path": None, "cwd": CWD, "hook_event_name": "PreToolUse",
            "model": "fake-model", "turn_id": "t1", "permission_mode": "default", "tool_name": tool,
            "tool_input": tool_input, "tool_use_id": "call_1"}


PATCHES = [
    ("*** Begin Patch\n*** Add File: hello.txt\n+hi\n*** End Patch\n", [Access("write", f"{CWD}/hello.txt")]),
    ("*** Begin Patch\n*** Update File: src/a.ts\n@@\n-a\n+b\n*** End Patch",
     [Access("read", f"{CWD}/src/a.ts"), Access("write", f"{CWD}/src/a.ts")]),
    ("*** Begin Patch\n*** Delete File: /srv/shop/.env\n*** End Patch", [Access("delete", "/srv/shop/.env")]),
    ("*** Begin Patch\n*** Update File: a.ts\n*** Move to: ../../b.ts\n@@\n-a\n+b\n*** End Patch",
     [Access("read", f"{CWD}/a.ts"), Access("write", f"{CWD}/a.ts"), Access("rename", f"{CWD}/a.ts", f"{CWD}/../../b.ts")]),
    # indented headers (a patch inside a heredoc), CRLF line ends, extra spaces, several files in one patch
    ("  *** Begin Patch\r\n    *** Add File:   ../../.env  \r\n+X=1\r\n\t*** Delete File: old.txt\r\n  *** End Patch",
     [Access("write", f"{CWD}/../../.env"), Access("delete", f"{CWD}/old.txt")]),
]


@pytest.mark.parametrize(("patch", "expected"), PATCHES)
def test_apply_patch_headers_become_accesses(patch, expected):
    call = codex.parse(pre_tool("apply_patch", {"command": patch}), ENV)
    assert list(call.accesses) == expected and not call.is_shell


def test_apply_patch_as_input_or_argv():
    patch = "*** Begin Patch\n*** Add File: x\n+1\n*** End Patch"
    assert codex.parse(pre_tool("apply_patch", {"input": patch}), ENV).accesses == (Access("write", f"{CWD}/x"),)
    argv = codex.parse(pre_tool("apply_patch", {"command": ["apply_patch", patch]}), ENV)
    assert argv.accesses == (Access("write", f"{CWD}/x"),)


@pytest.mark.parametrize("tool_input", [
    {"command": "*** Begin Patch\n*** End Patch"},  # no header: nothing it would do can be decided
    {"command": "*** Begin Patch\n*** Add File:\n*** End Patch"},
    {"command": "*** Begin Patch\n*** Move to: b\n*** End Patch"},
    {},
])
def test_an_undecidable_patch_is_refused(tool_input):
    with pytest.raises(HookInputError):
        codex.parse(pre_tool("apply_patch", tool_input), ENV)


def test_exec_command_is_a_shell_call():
    call = codex.parse(pre_tool("Bash", {"command": "cat ../../.env"}), ENV)
    assert call.is_shell and call.shell == "cat ../../.env" and call.accesses == ()
    answer = codex.confine(call, [CWD], "Root Guard: confined")
    out = json.loads(answer.stdout)["hookSpecificOutput"]
    assert answer.exit_code == 0 and out["permissionDecision"] == "allow"
    argv = shlex.split(out["updatedInput"]["command"])
    assert argv[:5] == [sys.executable, "-P", "-m", "lsp_bridge.cli", "run"]
    assert argv[-4:] == ["bash", "-c", "--", "cat ../../.env"]


def test_an_argv_command_is_rewritten_as_argv():
    call = codex.parse(pre_tool("exec_command", {"cmd": ["bash", "-lc", "ls .."], "workdir": CWD}), ENV)
    assert call.shell_key == "cmd" and call.shell == "bash -lc 'ls ..'"
    updated = json.loads(codex.confine(call, [CWD], "r").stdout)["hookSpecificOutput"]["updatedInput"]
    assert updated["workdir"] == CWD
    assert updated["cmd"][-4:] == ["--", "bash", "-lc", "ls .."] and updated["cmd"][0] == sys.executable


def test_a_patch_sent_through_the_shell_is_decided_too():
    command = "apply_patch <<'EOF'\n*** Begin Patch\n*** Add File: /srv/shop/.env\n+X\n*** End Patch\nEOF"
    call = codex.parse(pre_tool("Bash", {"command": command}), ENV)
    assert call.is_shell and call.accesses == (Access("write", "/srv/shop/.env"),)


def test_mcp_and_unknown_tools():
    assert codex.parse(pre_tool("mcp__fs__read_file", {"path": "../x"}), ENV).accesses == (Access("read", f"{CWD}/../x"),)
    assert codex.parse(pre_tool("view_image", {"path": "/tmp/i.png"}), ENV).accesses == (Access("read", "/tmp/i.png"),)
    assert codex.parse(pre_tool("update_plan", {"plan": [{"step": "x"}]}), ENV).accesses == ()


def test_deny_answer():
    call = codex.parse(pre_tool("Bash", {"command": "ls"}), ENV)
    deny = codex.deny(call, "Root Guard: no")
    assert deny.exit_code == 2 and deny.stderr.strip() == "Root Guard: no"
    assert json.loads(deny.stdout)["hookSpecificOutput"]["permissionDecision"] == "deny"
    assert codex.ask is None  # Codex has no "ask"


@pytest.mark.parametrize(("payload", "named"), [
    ({"cwd": CWD, "tool_name": "Bash", "tool_input": {"command": "ls"}}, "hook_event_name"),
    ({"hook_event_name": "PreToolUse", "tool_name": "Bash", "tool_input": {"command": "ls"}}, "cwd"),
    ({"hook_event_name": "PreToolUse", "cwd": CWD, "tool_name": "Bash", "tool_input": {"command": 5}}, "command"),
    ({"hook_event_name": "SessionStart", "cwd": CWD}, "SessionStart"),
])
def test_malformed(payload, named):
    with pytest.raises(HookInputError, match=named):
        codex.parse(payload, ENV)
