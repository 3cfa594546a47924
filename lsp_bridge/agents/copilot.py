"""GitHub Copilot CLI's ``preToolUse`` hook (``~/.copilot/hooks/*.json``).

Native input: ``sessionId``, ``timestamp``, ``cwd``, ``toolName`` (``view``, ``create``,
``edit``, ``glob``, ``grep``, ``bash``, …), ``toolArgs`` (an object, or that object as a
JSON string: both are read). A Claude-format hook file in the same folder sends Claude's
shape (``hook_event_name``, ``tool_name``, ``tool_input``), decided as Claude's tools and
answered in Claude's words.

Answers: ``{"permissionDecision":"deny","permissionDecisionReason":…}`` with exit 2; a shell
command rewritten through ``modifiedArgs``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from lsp_bridge.agents import claude
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

NAME = "copilot"
LABEL = "Copilot CLI"
EVENT = "preToolUse"
SHELL_TOOLS = ("bash", "shell")
HAS_ASK = False
REWRITES_SHELL = True  # modifiedArgs: checked against the real CLI by the end-to-end tests
NO_FILES = frozenset({"web_fetch", "report_intent", "think", "update_todo", "task", "fetch_copilot_cli_documentation"})


def parse(payload: Any, env: Mapping[str, str]) -> ToolCall:
    data = require_object(payload)
    if "hook_event_name" in data or "tool_name" in data:  # a Claude-format hook file
        call = claude.parse(data, env)
        return ToolCall(NAME, call.event, call.session, call.cwd, call.tool, call.tool_input, call.accesses,
                        call.shell, call.shell_key, call.added_dirs, call.correlation)
    cwd = absolute_cwd(data)
    session = text_field(data, "sessionId", required=False)
    tool = text_field(data, "toolName")
    args = _tool_args(data)
    found: list[Access] = []
    shell = None
    if tool == "view":
        found = accesses("read", _one_path(args, tool), cwd, env)
    elif tool == "create":
        found = accesses("write", _one_path(args, tool), cwd, env)
    elif tool in ("edit", "str_replace", "insert"):
        found = accesses(("read", "write"), _one_path(args, tool), cwd, env)
    elif tool in ("glob", "grep", "rg"):
        bases = path_values(args, ("path",)) or ["."]
        pattern = args.get("pattern")
        if tool == "glob" and isinstance(pattern, str) and pattern:
            prefix = glob_base(pattern)
            bases = [under(b, prefix) for b in bases]
        found = accesses("read", bases, cwd, env)
    elif tool in SHELL_TOOLS:
        shell = text_field(args, "command")
    elif tool not in NO_FILES:
        found = generic_accesses(tool, args, cwd, env)
    return ToolCall(NAME, EVENT, session, cwd, tool, args, tuple(found), shell)


def _tool_args(data: Mapping[str, Any]) -> Mapping[str, Any]:
    raw = data.get("toolArgs")
    if isinstance(raw, str):
        try:
            raw = json.loads(raw) if raw.strip() else {}
        except ValueError:
            raise HookInputError("`toolArgs` is a string that is not JSON") from None
    return object_field({"toolArgs": raw}, "toolArgs")


def _one_path(args: Mapping[str, Any], tool: str) -> list[str]:
    values = path_values(args, ("path", "file_path"))
    if not values:
        raise HookInputError(f"{tool} names no file (no `path` in toolArgs)")
    return values


def _native(call: ToolCall | None) -> bool:
    return call is None or call.event == EVENT


def deny(call: ToolCall | None, reason: str) -> Answer:
    if not _native(call):
        return claude.deny(call, reason)
    return blocked(json.dumps({"permissionDecision": "deny", "permissionDecisionReason": reason}, ensure_ascii=False),
                   reason)


def confine(call: ToolCall, roots: Sequence[str], reason: str) -> Answer:
    if not _native(call):
        return claude.confine(call, roots, reason)
    updated = {**call.tool_input, call.shell_key: confined(call.shell or "", roots)}
    body = {"permissionDecision": "allow", "permissionDecisionReason": reason, "modifiedArgs": updated}
    return Answer(0, json.dumps(body, ensure_ascii=False) + "\n")


ask = None
notice = claude.notice
