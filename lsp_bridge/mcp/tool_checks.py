"""The file tools' argument checks and the small rules that turn an engine decision into an answer."""

from __future__ import annotations

import os
from typing import Any

from lsp_bridge.core.policy import Decision, ItemDecision
from lsp_bridge.core.resolver import (
    Resolved,
    ResolveError,
    checked_text,
)
from lsp_bridge.mcp.tool_model import Access, Limits, ToolError, relative_or_none

TOOL_NEEDS = {"edit_file": ("read", "write"), "write_file": ("write",), "delete_file": ("delete",)}


def require_str(args: dict, name: str) -> None:
    if not isinstance(args.get(name), str):
        raise ToolError("invalid_arguments", f"{name} must be a string")


def check_size(data_len: int, shown: Any, limits: Limits) -> None:
    if data_len > limits.write_bytes:
        raise ToolError("file_too_large", f"{shown!r}: {data_len} bytes is more than the write limit of "
                                          f"{limits.write_bytes} bytes; nothing was written")


def check_tool_args(tool: str, args: dict, limits: Limits) -> None:
    if tool == "write_file":
        require_str(args, "content")
        check_size(len(args["content"].encode("utf-8", "surrogatepass")), args.get("relative_path"), limits)
    elif tool == "edit_file":
        check_edits(args.get("edits"), "edits")
        if not isinstance(args.get("dry_run", False), bool):
            raise ToolError("invalid_arguments", "dry_run must be true or false")
    elif tool == "search_files":
        for name in ("pattern", "query"):
            if args.get(name) is not None and not isinstance(args[name], str):
                raise ToolError("invalid_arguments", f"{name} must be a string")
        most = args.get("max_results", limits.search_results)
        if not isinstance(most, int) or isinstance(most, bool) or not 1 <= most <= limits.search_results_max:
            raise ToolError("invalid_arguments", f"max_results must be an integer from 1 to {limits.search_results_max}")
        if not isinstance(args.get("case_sensitive", False), bool):
            raise ToolError("invalid_arguments", "case_sensitive must be true or false")


def check_edits(edits: Any, where: str) -> None:
    if not isinstance(edits, list) or not edits:
        raise ToolError("invalid_arguments", f"{where} must be a non-empty list of {{old_text, new_text}}")
    for index, edit in enumerate(edits):
        if (
            not isinstance(edit, dict)
            or not isinstance(edit.get("old_text"), str)
            or not edit["old_text"]
            or not isinstance(edit.get("new_text"), str)
            or set(edit) - {"old_text", "new_text"}
        ):
            raise ToolError("invalid_arguments", f"{where}[{index}] needs a non-empty old_text and a new_text (strings)")


def change_kind(change: Any, index: int) -> str:
    where = f"changes[{index}]"
    if not isinstance(change, dict) or not isinstance(change.get("relative_path"), str):
        raise ToolError("invalid_arguments", f"{where} needs a relative_path (string)")
    kinds = [k for k in ("edits", "content", "delete") if k in change]
    if len(kinds) != 1 or set(change) - {"relative_path", "edits", "content", "delete"}:
        raise ToolError("invalid_arguments", f"{where} needs exactly one of edits, content or delete")
    kind = kinds[0]
    if kind == "edits":
        check_edits(change["edits"], f"{where}.edits")
    elif kind == "content" and not isinstance(change["content"], str):
        raise ToolError("invalid_arguments", f"{where}.content must be a string")
    elif kind == "delete" and change["delete"] is not True:
        raise ToolError("invalid_arguments", f"{where}.delete must be true")
    return kind


def refuse_leaf_link(access: Access) -> None:
    """Moving or deleting acts on a name: a link there is refused rather than guessed at."""
    for resolved, given in ((access.resolved, access.given), (access.dest, access.dest_given)):
        if resolved is not None and resolved.relative and os.path.islink(resolved.lexical):
            access.resolved = None
            access.code = access.canonicalization = "symlink_not_permitted"
            access.reason = (f"{given!r} is a symbolic link; "
                             "move_file, delete_file and apply_patch deletions act on regular files only")
            return


def take_decision(access: Access, result: ItemDecision) -> None:
    """An access takes its batch item's decision: the parts, the verdicts, the rule, the reason."""
    access.pieces = result.parts
    access.policy, access.verdict = result.decision.decision, result.verdict
    access.rule, access.reason = result.decision.rule, result.reason
    if result.verdict == "deny":
        access.code = deny_code(result.decision, access)


def deny_code(decision: Decision, access: Access) -> str:
    through_link = access.resolved is not None and access.resolved.traversed_symlink
    if through_link and ("symbolic link" in decision.reason or "follow_symlinks" in decision.reason):
        return "symlink_not_permitted"
    return "policy_denied"


def refusal_text(code: str, approver: str | None, reason: str) -> str:
    if code == "no_approver":
        return (f"approval required but no approver is available (no Root Guard tray is running and the "
                f"MCP client cannot ask): denied. Policy: {reason}")
    if code == "approval_timeout":
        return f"approval required but nobody answered in time ({approver or 'approver'}): denied once. Policy: {reason}"
    return f"denied by {approver or 'the approver'}. Policy: {reason}"


def io(resolved: Resolved) -> tuple[str, str]:
    """(base, canonical path below it) for safe_io: the project root, or ``/`` for a target a
    symbolic link leads to outside the project (only reached when the policy allowed it)."""
    if resolved.outside:
        return os.sep, resolved.canonical.lstrip(os.sep)
    return resolved.root, canonical_rel(resolved)


def decided(resolved: Resolved) -> tuple[tuple[int, int] | None, int]:
    """The identity of the file the engine decided on (``safe_io.require_decided``): ``FileTools`` leaves
    on every decided ``Resolved`` the (st_dev, st_ino) and link count its ``Target`` carried."""
    return resolved.inode, resolved.nlink or 1


def refuse_outside(resolved: Resolved, tool: str) -> None:
    if resolved.outside:
        raise ToolError("path_outside_project", f"{tool} does not follow a symbolic link out of the project "
                                                f"({resolved.relative})")


def canonical_rel(resolved: Resolved) -> str:
    """The canonical path below the root: what safe_io walks."""
    return relative_or_none(resolved.canonical, resolved.root) or ""


def text_ok(relative: str) -> bool:
    try:
        checked_text(relative)
    except ResolveError:
        return False
    return True


def encode(relative: str) -> str:
    """A path as the resolver expects it back (``%`` escaped)."""
    return relative.replace("%", "%25")
