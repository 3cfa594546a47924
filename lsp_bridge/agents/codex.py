"""OpenAI Codex CLI's ``PreToolUse`` hook.

Input: Claude's shape plus ``turn_id`` and ``model``. Its shell tool (``exec_command``)
arrives as ``tool_name: "Bash"`` with ``tool_input.command`` (a string, or an argv list in
older releases; ``cmd`` is read too, and a call carrying both is refused); ``apply_patch`` as
``tool_name: "apply_patch"`` with the raw patch text in ``tool_input.command`` (``input`` or
``patch`` are read too). A shell command that carries a patch (``cd DIR && apply_patch <<'EOF'``)
has its headers decided in the directory Codex applies it in (``patch.shell_patch_accesses``).

Answers: Claude's deny JSON with exit 2; a shell command rewritten with ``updatedInput``
(and ``permissionDecision: "allow"``, which Codex accepts only alongside a rewrite).
"""

from __future__ import annotations

import json
import os
import shlex
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from lsp_bridge.agents import claude
from lsp_bridge.agents.model import (
    Access,
    Answer,
    HookInputError,
    ToolCall,
    UndecidableCall,
    absolute_cwd,
    blocked,
    generic_accesses,
    object_field,
    require_object,
    text_field,
)
from lsp_bridge.agents.patch import patch_accesses, shell_patch_accesses
from lsp_bridge.agents.shell import confined, confined_argv

if TYPE_CHECKING:
    from typing import Any

NAME = "codex"
LABEL = "Codex CLI"
EVENTS = ("PreToolUse",)
SHELL_TOOLS = ("Bash", "exec_command", "shell", "local_shell", "unified_exec")
PATCH_TOOLS = ("apply_patch",)
SHELL_KEYS = ("command", "cmd")
HAS_ASK = False
REWRITES_SHELL = True  # allow + updatedInput: checked against the real CLI by the end-to-end tests


def parse(payload: Any, env: Mapping[str, str]) -> ToolCall:
    data = require_object(payload)
    event = text_field(data, "hook_event_name")
    if event not in EVENTS:
        raise HookInputError(f"hook_event_name {event!r} is not one Root Guard answers (expected PreToolUse)")
    cwd = absolute_cwd(data)
    session = text_field(data, "session_id", required=False)
    tool = text_field(data, "tool_name")
    args = object_field(data, "tool_input")
    correlation = text_field(data, "tool_use_id", required=False) or None
    found: list[Access] = []
    shell = None
    key = "command"
    if tool in PATCH_TOOLS:
        found = patch_accesses(_patch_text(args), cwd, env)
        if not found:
            raise HookInputError("apply_patch names no file (no *** Add/Update/Delete File header)")
    elif tool in SHELL_TOOLS:
        keys = [k for k in SHELL_KEYS if k in args]
        if len(keys) > 1:
            raise UndecidableCall("the shell call carries both `command` and `cmd`: which one Codex runs is not "
                                  "certain, so neither runs")
        key = keys[0] if keys else "command"
        shell = _command_text(args.get(key), key)
        found = shell_patch_accesses(args[key], _workdir(args, cwd), env)
    else:
        found = generic_accesses(tool, args, cwd, env)
    return ToolCall(NAME, event, session, cwd, tool, args, tuple(found), shell, key, correlation=correlation)


def _workdir(args: Mapping[str, Any], cwd: str) -> str:
    """Where the command runs (``workdir``, read against ``cwd``): where a patch's headers are read."""
    workdir = args.get("workdir")
    if workdir is None:
        return cwd
    if not isinstance(workdir, str) or not workdir or "\x00" in workdir:
        raise HookInputError("tool_input.workdir must be a non-empty path")
    return os.path.join(cwd, workdir)


def _patch_text(args: Mapping[str, Any]) -> str:
    for key in ("command", "input", "patch"):
        value = args.get(key)
        if isinstance(value, str) and value:
            return value
        if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
            return "\n".join(value)  # ["apply_patch", "*** Begin Patch..."]
    raise HookInputError("apply_patch carries no patch text in tool_input.command")


def _command_text(value: Any, key: str) -> str:
    if isinstance(value, str) and value:
        return value
    if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
        return shlex.join(value)
    raise HookInputError(f"tool_input.{key} must be a command line or an argv list")


def deny(call: ToolCall | None, reason: str) -> Answer:
    body = {"hookEventName": "PreToolUse", "permissionDecision": "deny", "permissionDecisionReason": reason}
    return blocked(json.dumps({"hookSpecificOutput": body}, ensure_ascii=False), reason)


def confine(call: ToolCall, roots: Sequence[str], reason: str) -> Answer:
    original = call.tool_input.get(call.shell_key)
    if isinstance(original, list):
        rewritten: str | list[str] = confined_argv(original, roots)
    else:
        rewritten = confined(call.shell or "", roots)
    body = {"hookEventName": "PreToolUse", "permissionDecision": "allow", "permissionDecisionReason": reason,
            "updatedInput": {**call.tool_input, call.shell_key: rewritten}}
    return Answer(0, json.dumps({"hookSpecificOutput": body}, ensure_ascii=False) + "\n")


ask = None  # Codex has no "ask": a request without a tray is a deny that says how to approve
notice = claude.notice
