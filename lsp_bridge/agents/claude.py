"""Claude Code's hooks: ``PreToolUse``, ``PermissionRequest`` and ``DirectoryAdded``.

Input (stdin, one JSON object): ``session_id``, ``transcript_path``, ``cwd``,
``permission_mode``, ``hook_event_name``, then per event: ``tool_name``/``tool_input``/
``tool_use_id`` (``PreToolUse``, ``PermissionRequest``, which also carries
``permission_suggestions``, where an ``addDirectories`` entry widens Claude's scope),
``directory`` (``DirectoryAdded``, after ``/add-dir``: it cannot block).
Copilot CLI's Claude-format hook files and VS Code's agents send this same shape.

Answers: deny = exit 2 and the reason on stderr, with the deny JSON on stdout;
``ask`` when a request finds no tray; a shell command rewritten with ``updatedInput``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from lsp_bridge.agents.model import (
    Access,
    Answer,
    HookInputError,
    ToolCall,
    absolute_cwd,
    accesses,
    blocked,
    generic_accesses,
    glob_base,
    object_field,
    path_values,
    require_object,
    text_field,
    under,
)
from lsp_bridge.agents.shell import confined

if TYPE_CHECKING:
    from typing import Any

NAME = "claude"
LABEL = "Claude Code"
EVENTS = ("PreToolUse", "PermissionRequest", "DirectoryAdded")
SHELL_TOOLS = ("Bash",)
HAS_ASK = True
# Built-in tools that touch no file: nothing to decide (a todo list may mention "../x").
NO_FILES = frozenset({
    "TodoWrite", "WebFetch", "WebSearch", "Task", "Agent", "ExitPlanMode", "AskUserQuestion", "KillShell",
    "KillBash", "BashOutput", "SlashCommand", "Skill", "ListMcpResourcesTool", "ReadMcpResourceTool",
})


def parse(payload: Any, env: Mapping[str, str]) -> ToolCall:
    data = require_object(payload)
    event = text_field(data, "hook_event_name")
    if event not in EVENTS:
        raise HookInputError(f"hook_event_name {event!r} is not one Root Guard answers (expected {', '.join(EVENTS)})")
    cwd = absolute_cwd(data)
    session = text_field(data, "session_id", required=False)
    if event == "DirectoryAdded":
        directory = data.get("directory", data.get("new_directory"))
        if not isinstance(directory, str) or not directory:
            raise HookInputError("`directory` is missing in the DirectoryAdded hook input")
        return ToolCall(NAME, event, session, cwd, added_dirs=(_absolute(directory, cwd),))
    tool = text_field(data, "tool_name")
    args = object_field(data, "tool_input")
    correlation = text_field(data, "tool_use_id", required=False) or None
    if event == "PermissionRequest":
        added = tuple(_absolute(d, cwd) for d in _suggested_directories(data.get("permission_suggestions")))
        return ToolCall(NAME, event, session, cwd, tool, args, added_dirs=added, correlation=correlation)
    return tool_call(NAME, event, session, cwd, tool, args, env, correlation)


def tool_call(agent: str, event: str, session: str, cwd: str, tool: str, args: Mapping[str, Any],
              env: Mapping[str, str], correlation: str | None = None) -> ToolCall:
    """A Claude-shaped tool call (also Copilot's Claude-format hooks)."""
    found: list[Access] = []
    shell = None
    if tool in ("Read", "LS"):
        found = accesses("read", path_values(args, ("file_path", "path")), cwd, env)
    elif tool == "Write":
        found = accesses("write", path_values(args, ("file_path",)), cwd, env)
    elif tool in ("Edit", "MultiEdit"):
        found = accesses(("read", "write"), path_values(args, ("file_path",)), cwd, env)
    elif tool == "NotebookEdit":
        found = accesses(("read", "write"), path_values(args, ("notebook_path", "file_path")), cwd, env)
    elif tool in ("Glob", "Grep"):
        base = path_values(args, ("path",)) or ["."]
        pattern = args.get("pattern")
        if tool == "Glob" and isinstance(pattern, str) and pattern:
            prefix = glob_base(pattern)
            base = [under(b, prefix) for b in base]
        found = accesses("read", base, cwd, env)
    elif tool in SHELL_TOOLS:
        shell = text_field(args, "command")
    elif tool not in NO_FILES:
        found = generic_accesses(tool, args, cwd, env)
    return ToolCall(agent, event, session, cwd, tool, args, tuple(found), shell, correlation=correlation)


def _suggested_directories(suggestions: Any) -> list[str]:
    if suggestions is None:
        return []
    if not isinstance(suggestions, list):
        raise HookInputError("`permission_suggestions` must be a list")
    found: list[str] = []
    for index, item in enumerate(suggestions):
        if not isinstance(item, dict) or item.get("type") != "addDirectories":
            continue
        dirs = item.get("directories")
        if not isinstance(dirs, list) or not all(isinstance(d, str) and d for d in dirs):
            raise HookInputError(f"`permission_suggestions[{index}].directories` must be a list of paths")
        found.extend(dirs)
    return found


def _absolute(path: str, cwd: str) -> str:
    if "\x00" in path:
        raise HookInputError("a directory contains a NUL byte")
    return os.path.normpath(path if os.path.isabs(path) else os.path.join(cwd, path))


# ---------------------------------------------------------------------------
# answers


def deny(call: ToolCall | None, reason: str) -> Answer:
    if call is not None and call.event == "PermissionRequest":
        body: dict[str, Any] = {"hookEventName": "PermissionRequest", "decision": {"behavior": "deny", "message": reason}}
    else:
        body = {"hookEventName": "PreToolUse", "permissionDecision": "deny", "permissionDecisionReason": reason}
    return blocked(json.dumps({"hookSpecificOutput": body}, ensure_ascii=False), reason)


def ask(call: ToolCall, reason: str) -> Answer:
    body = {"hookEventName": "PreToolUse", "permissionDecision": "ask", "permissionDecisionReason": reason}
    return Answer(0, json.dumps({"hookSpecificOutput": body}, ensure_ascii=False) + "\n")


REWRITES_SHELL = True  # updatedInput with "allow": checked against the real CLI by the end-to-end tests


def confine(call: ToolCall, roots: Sequence[str], reason: str) -> Answer:
    """Run the same Bash call under ``rootguard run`` (``updatedInput`` replaces the whole input)."""
    updated = {**call.tool_input, call.shell_key: confined(call.shell or "", roots)}
    body = {"hookEventName": "PreToolUse", "permissionDecision": "allow", "permissionDecisionReason": reason,
            "updatedInput": updated}
    return Answer(0, json.dumps({"hookSpecificOutput": body}, ensure_ascii=False) + "\n")


def notice(call: ToolCall, message: str) -> Answer:
    """An event that cannot block (``DirectoryAdded``): the warning, shown to the person."""
    return Answer(0, json.dumps({"systemMessage": message}, ensure_ascii=False) + "\n")
