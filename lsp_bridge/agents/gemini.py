"""Gemini CLI's ``BeforeTool`` hook.

Input: ``session_id``, ``transcript_path``, ``cwd``, ``hook_event_name`` (``BeforeTool``),
``timestamp``, ``tool_name``, ``tool_input``. The path argument is named ``path``,
``file_path``, ``absolute_path`` or ``dir_path`` depending on the tool and the release: all
are read. ``read_many_files`` takes ``paths`` (and ``include``) globs; searches default to
the working directory.

Answers: ``{"decision":"deny","reason":…}`` with exit 2; a shell command rewritten through
``hookSpecificOutput.tool_input`` (merged into the call's input).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from lsp_bridge.agents import claude
from lsp_bridge.agents.model import (
    GLOB_CHARS,
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

NAME = "gemini"
LABEL = "Gemini CLI"
EVENTS = ("BeforeTool",)
SHELL_TOOLS = ("run_shell_command",)
HAS_ASK = False
REWRITES_SHELL = True  # hookSpecificOutput.tool_input: checked against the real CLI by the end-to-end tests
PATH_ARGS = ("absolute_path", "file_path", "path", "dir_path")
NO_FILES = frozenset({"web_fetch", "google_web_search", "save_memory", "write_todos", "ask_user"})


def parse(payload: Any, env: Mapping[str, str]) -> ToolCall:
    data = require_object(payload)
    event = text_field(data, "hook_event_name")
    if event not in EVENTS:
        raise HookInputError(f"hook_event_name {event!r} is not one Root Guard answers (expected BeforeTool)")
    cwd = absolute_cwd(data)
    session = text_field(data, "session_id", required=False)
    tool = text_field(data, "tool_name")
    args = object_field(data, "tool_input")
    found: list[Access] = []
    shell = None
    if tool == "read_file":
        found = accesses("read", _one_path(args, tool), cwd, env)
    elif tool == "write_file":
        found = accesses("write", _one_path(args, tool), cwd, env)
    elif tool in ("replace", "edit"):
        found = accesses(("read", "write"), _one_path(args, tool), cwd, env)
    elif tool in ("list_directory", "ls"):
        found = accesses("read", path_values(args, PATH_ARGS) or ["."], cwd, env)
    elif tool in ("glob", "grep_search", "search_file_content", "grep"):
        found = _search(tool, args, cwd, env)
    elif tool == "read_many_files":
        found = _many(args, cwd, env)
    elif tool in SHELL_TOOLS:
        shell = text_field(args, "command")
        found = accesses("read", path_values(args, ("directory", "dir_path")), cwd, env)  # where it runs
    elif tool not in NO_FILES:
        found = generic_accesses(tool, args, cwd, env)
    return ToolCall(NAME, event, session, cwd, tool, args, tuple(found), shell)


def _one_path(args: Mapping[str, Any], tool: str) -> list[str]:
    values = path_values(args, PATH_ARGS)
    if not values:
        raise HookInputError(f"{tool} names no file (none of {', '.join(PATH_ARGS)} in tool_input)")
    return values


def _search(tool: str, args: Mapping[str, Any], cwd: str, env: Mapping[str, str]) -> list[Access]:
    bases = path_values(args, PATH_ARGS) or ["."]
    pattern = args.get("pattern")
    if not isinstance(pattern, str) or not pattern:
        return accesses("read", bases, cwd, env)
    if tool == "glob" or "/" in pattern and any(c in pattern for c in GLOB_CHARS):
        # glob's pattern may climb ("../../**/.env") or name a path outright ("../../.env", "/srv/x")
        prefix = glob_base(pattern)
        bases = [under(b, prefix) for b in bases]
    return accesses("read", bases, cwd, env)


def _many(args: Mapping[str, Any], cwd: str, env: Mapping[str, str]) -> list[Access]:
    base = (path_values(args, ("dir_path", "path"), lists=False) or ["."])[0]
    patterns: list[str] = []
    for key in ("paths", "include"):
        value = args.get(key)
        if value is None:
            continue
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise HookInputError(f"read_many_files `{key}` must be a list of strings")
        patterns += [v for v in value if v]
    if not patterns:
        raise HookInputError("read_many_files names no path (tool_input.paths is empty)")
    found: list[str] = []
    for pattern in patterns:
        prefix = glob_base(pattern)
        found.append(under(base, prefix))
    return accesses("read", found, cwd, env)


def deny(call: ToolCall | None, reason: str) -> Answer:
    return blocked(json.dumps({"decision": "deny", "reason": reason}, ensure_ascii=False), reason)


def confine(call: ToolCall, roots: Sequence[str], reason: str) -> Answer:
    updated = {**call.tool_input, call.shell_key: confined(call.shell or "", roots)}
    body = {"hookSpecificOutput": {"hookEventName": "BeforeTool", "tool_input": updated}}
    return Answer(0, json.dumps(body, ensure_ascii=False) + "\n")


ask = None
notice = claude.notice
