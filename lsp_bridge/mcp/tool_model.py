"""The file tools' records and vocabulary: tools, argument names, error codes, limits, a call's plan.

Plain data for ``file_tools`` (deciding), ``tool_runners`` (the I/O) and ``server`` (the MCP front end).
"""

from __future__ import annotations

import hashlib
import json
import operator
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from lsp_bridge.core.paths import is_within
from lsp_bridge.core.policy import Part
from lsp_bridge.core.resolver import (
    Resolved,
)
from lsp_bridge.core.session import Session
from lsp_bridge.core.settings import Verdict

ERROR_CODES = (
    "absolute_path_denied", "path_outside_project", "unknown_project", "symlink_not_permitted",
    "approval_denied", "approval_timeout", "no_approver", "invalid_path", "special_file",
    "policy_denied", "batch_rejected", "path_changed", "invalid_arguments", "unknown_tool",
    "not_found", "already_exists", "is_a_directory", "not_a_directory", "file_too_large",
    "binary_file", "edit_not_found", "edit_ambiguous", "io_error", "audit_unavailable", "workspace_changed",
    "internal_error", "cancelled",
)
APPROVAL_CODES = {"deny": "approval_denied", "timeout": "approval_timeout", "no_approver": "no_approver"}
TOOLS = (
    "list_projects", "read_file", "list_directory", "search_files", "get_file_info",
    "write_file", "edit_file", "move_file", "delete_file", "apply_patch",
)
OPERATION = {
    "read_file": "read", "list_directory": "read", "search_files": "read", "get_file_info": "read",
    "write_file": "write", "edit_file": "write", "apply_patch": "write",
    "move_file": "rename", "delete_file": "delete",
}
PATH_ARGS = {"project_id", "relative_path"}
ARGUMENTS = {
    "read_file": PATH_ARGS,
    "list_directory": PATH_ARGS,
    "get_file_info": PATH_ARGS,
    "delete_file": PATH_ARGS,
    "search_files": PATH_ARGS | {"pattern", "query", "max_results", "case_sensitive"},
    "write_file": PATH_ARGS | {"content"},
    "edit_file": PATH_ARGS | {"edits", "dry_run"},
    "move_file": {"project_id", "source", "destination"},
    "apply_patch": {"project_id", "changes"},
}
T = TypeVar("T")
ENTRY_NAME = operator.itemgetter(0)
ENTRY_KIND = operator.itemgetter(1)
ENTRY_NLINK = operator.itemgetter(3)
_SLUG = re.compile(r"[^A-Za-z0-9._-]+")
SKIP_DIRS = frozenset({".git"})
MAX_CHANGES = 100
QUICK_READ_BYTES = 256 * 1024  # a read_file the MCP server may serve without a worker thread (concludes_quickly)
# A list_directory the MCP server may serve without a worker thread: the directory's own st_size (ext4: 4 KiB
# blocks of ~24-byte entries; btrfs, xfs and tmpfs: bytes of names or ~20 per entry) at most this, so a few
# thousand entries at most; a bigger one is listed in a worker.
QUICK_LIST_BYTES = 96 * 1024
QUICK_TOOLS = ("read_file", "list_directory")
PLAIN_TOOLS = frozenset({"read_file", "get_file_info", "list_directory"})  # one read of relative_path


class ToolError(Exception):
    """A refused or failed call: a ``code`` from ``ERROR_CODES`` and a message naming the path."""

    def __init__(self, code: str, message: str, correlation_id: str | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.correlation_id = correlation_id

    def to_json(self) -> dict:
        return {"code": self.code, "message": self.message, "correlation_id": self.correlation_id}


@dataclass(frozen=True)
class Caller:
    """Who calls, for the audit log."""

    client: str = "unknown"
    session_id: str = ""
    protocol_version: str = ""


NO_CALLER = Caller()  # a call made in process, by no MCP client


@dataclass(frozen=True)
class Limits:
    read_bytes: int = 1024 * 1024
    list_entries: int = 2000
    search_results: int = 50
    search_results_max: int = 500
    search_files: int = 20000
    write_bytes: int = 16 * 1024 * 1024  # largest file write_file, edit_file and apply_patch write


@dataclass(frozen=True)
class Project:
    id: str
    root: str  # canonical
    origin: str  # root | worktree | git (a granted git directory: [workspace] git)


@dataclass
class Access:
    """One target of a call: what was given, how it resolved, how it was decided."""

    given: Any
    needs: tuple[str, ...]
    dest_given: Any = None
    resolved: Resolved | None = None
    dest: Resolved | None = None
    pieces: tuple[Part, ...] = ()  # the engine's decision per need (and rename end)
    verdict: str | None = None  # allow | request | deny (after session grants); None: not decided
    policy: str | None = None  # the engine's verdict before session grants
    rule: str | None = None
    reason: str = ""
    code: str | None = None
    canonicalization: str = "not_resolved"


@dataclass
class Plan:
    """A decided call, waiting for an approval (``request``) or for ``conclude``."""

    tool: str
    args: dict
    caller: Caller
    correlation_id: str
    project_id: Any
    accesses: list[Access]
    verdict: Verdict
    reason: str
    code: str | None = None
    rule: str | None = None

    @property
    def operation(self) -> str:
        return OPERATION.get(self.tool, "read")

    def approval_targets(self) -> list[dict]:
        """The request-level pieces, in the tray protocol's target shape."""
        targets = []
        for access in self.accesses:
            for piece in access.pieces:
                if piece.verdict == "request":
                    root = piece.decision.root or (access.resolved.root if access.resolved else None)
                    relative = relative_or_none(piece.path, access.resolved.root) if access.resolved else None
                    targets.append({"path": piece.path, "relative": relative, "root": root, "need": piece.need})
        return targets

    def fingerprint(self) -> str:
        """Binds an approval to this exact call and these exact targets."""
        pieces = sorted((p.need, p.path, p.decision.decision) for a in self.accesses for p in a.pieces)
        text = json.dumps([self.tool, self.args, pieces], sort_keys=True, default=str)
        return hashlib.sha256(text.encode()).hexdigest()

    def describe(self) -> str:
        """One line for a prompt: who wants what, where, and why it needs approval."""
        targets = ", ".join(f"{t['need']} {t['relative'] or t['path']}" for t in self.approval_targets())
        rule = f" (rule {self.rule})" if self.rule else ""
        return f"{self.tool} in project {self.project_id}: {targets}{rule}. {self.reason}"


def assign_project_ids(roots: Sequence[str], taken: dict[str, str]) -> dict[str, str]:
    """Stable ids: the folder name, then ``name-2``... An id once bound to a root is never reused.

    ``taken`` (id -> root) is updated in place and must outlive root changes, so an
    old project id can never silently point at another folder.
    """
    ids: dict[str, str] = {}
    for root in roots:
        known = next((i for i, r in taken.items() if r == root), None)
        if known is not None:
            ids[known] = root
            continue
        base = _SLUG.sub("-", os.path.basename(root.rstrip(os.sep))).strip("-.") or "project"
        candidate, n = base, 2
        while candidate in taken:
            candidate, n = f"{base}-{n}", n + 1
        taken[candidate] = root
        ids[candidate] = root
    return ids


def find_projects(session: Session, roots: Sequence[str], taken: dict[str, str]) -> list[Project]:
    """The projects of a session: its canonical ``roots``, then the linked worktrees inside the
    union that are not roots (ids from ``assign_project_ids``, which updates ``taken``)."""
    worktrees = []
    scope = session.scope
    for wt in scope.worktrees if scope else ():
        path = os.path.realpath(wt.path)
        if wt.mode != "ignore" and os.path.isdir(path) and scope is not None and scope.union.contains(path) \
                and path not in roots:
            worktrees.append(path)
    # [workspace] git = "read" | "write": the git directory a root does not contain is a project of its own.
    gits = [e.path for e in scope.union.entries if e.origin == "git" and e.path not in roots] if scope else []
    ids = assign_project_ids([*roots, *dict.fromkeys(worktrees), *gits], taken)
    return [Project(i, r, "root" if r in roots else "git" if r in gits else "worktree") for i, r in ids.items()]


class PathChanged(Exception):
    """A path resolved differently the second time: fail closed."""


def relative_or_none(path: str, root: str) -> str | None:
    if path == root:
        return ""
    return path[len(root) + 1:] if is_within(path, root) else None
