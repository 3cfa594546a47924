"""The guarded file tools as plain Python: (project id, relative path) -> resolver -> policy -> safe I/O.

Every tool call goes through the same steps (seed 003, "un résolveur de chemin
fermé", one control for every tool):

1. ``FileTools.plan``: each target is resolved inside its project by the closed
   resolver (``resolver.resolve_in_projects``); the resolved targets go to the
   one policy engine as one batch (``Policy.decide_batch``, with this session's
   "allow for this session" grants), which decides every target, the rename
   ends, the span across roots and the verdict of the whole call before
   anything happens. No verdict is combined here.
2. The caller obtains an approval when the plan says ``request``
   (``lsp_bridge.approvals.service``: the tray, the MCP client, or nobody).
3. ``FileTools.conclude``: the final decision is written to the audit log, one
   line per target, then the I/O runs through ``safe_io`` (directory
   descriptors, ``O_NOFOLLOW``, temp file + rename).

No MCP import here: ``mcp_server`` is a thin front end over this module.
"""

from __future__ import annotations

import hashlib
import json
import operator
import os
import re
import stat
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from itertools import compress
from typing import Any, TypeVar, cast

from lsp_bridge.approvals.service import ALLOWING, SessionGrants
from lsp_bridge.core.globs import GlobError, GlobSet
from lsp_bridge.core.hardlinks import IndexStale, no_walk
from lsp_bridge.core.paths import canonical, is_within
from lsp_bridge.core.policy import BatchDecision, Decision, ItemDecision, Part, Policy, Target, inspect, oracle_inside
from lsp_bridge.core.resolver import (
    Resolved,
    ResolveError,
    checked_text,
    resolve,
    resolve_in_projects,
    resolve_plain,
)
from lsp_bridge.core.session import Session, open_session
from lsp_bridge.core.settings import Verdict
from lsp_bridge.mcp import safe_batch, safe_io, safe_listing
from lsp_bridge.mcp.audit import AuditLog, now_text, root_digest

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
_OPERATION = {
    "read_file": "read", "list_directory": "read", "search_files": "read", "get_file_info": "read",
    "write_file": "write", "edit_file": "write", "apply_patch": "write",
    "move_file": "rename", "delete_file": "delete",
}
_PATH_ARGS = {"project_id", "relative_path"}
ARGUMENTS = {
    "read_file": _PATH_ARGS,
    "list_directory": _PATH_ARGS,
    "get_file_info": _PATH_ARGS,
    "delete_file": _PATH_ARGS,
    "search_files": _PATH_ARGS | {"pattern", "query", "max_results", "case_sensitive"},
    "write_file": _PATH_ARGS | {"content"},
    "edit_file": _PATH_ARGS | {"edits", "dry_run"},
    "move_file": {"project_id", "source", "destination"},
    "apply_patch": {"project_id", "changes"},
}
T = TypeVar("T")
_SLUG = re.compile(r"[^A-Za-z0-9._-]+")
SKIP_DIRS = frozenset({".git"})
MAX_CHANGES = 100
QUICK_READ_BYTES = 256 * 1024  # a read_file the MCP server may serve without a worker thread (concludes_quickly)
# A list_directory the MCP server may serve without a worker thread: the directory's own st_size (ext4: 4 KiB
# blocks of ~24-byte entries; btrfs, xfs and tmpfs: bytes of names or ~20 per entry) at most this, so a few
# thousand entries at most (a listing of 1,000 is ~1 ms); a bigger one is listed in a worker.
QUICK_LIST_BYTES = 96 * 1024
QUICK_TOOLS = ("read_file", "list_directory")
_PLAIN_TOOLS = frozenset({"read_file", "get_file_info", "list_directory"})  # one read of relative_path


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
        return _OPERATION.get(self.tool, "read")

    def approval_targets(self) -> list[dict]:
        """The request-level pieces, in the tray protocol's target shape."""
        targets = []
        for access in self.accesses:
            for piece in access.pieces:
                if piece.verdict == "request":
                    root = piece.decision.root or (access.resolved.root if access.resolved else None)
                    relative = _relative_or_none(piece.path, access.resolved.root) if access.resolved else None
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


# ---------------------------------------------------------------------------


class FileTools:
    """The file tools over one set of roots: one policy session, one project map."""

    def __init__(
        self,
        roots: Sequence[str],
        *,
        env: Mapping[str, str] = os.environ,
        audit: AuditLog | None = None,
        mirror: bool = False,
        limits: Limits = Limits(),
        taken_ids: dict[str, str] | None = None,
        grants: SessionGrants | None = None,
    ):
        self.roots = tuple(canonical(r) for r in roots)
        self.session: Session = open_session(list(self.roots), env)
        self.audit = audit
        self.mirror = mirror
        self.limits = limits
        # "Allow for this session" answers, (need, canonical path): the approval service's store.
        self.grants = grants if grants is not None else SessionGrants()
        self._taken = taken_ids if taken_ids is not None else {}
        self.projects = self._projects()
        self._project_roots = {p.id: p.root for p in self.projects}
        self._lock = threading.RLock()  # decisions, grants and reloads; the I/O runs outside it
        self.listings = safe_listing.KeptListings()  # names and kinds of unchanged directories (list_directory)
        self._config_mark = self._config_signature()
        self._config_checked = time.monotonic()

    # -- projects --------------------------------------------------------------

    @property
    def policy(self) -> Policy:
        """The session's engine (built when the roots were set)."""
        policy = self.session.policy
        assert policy is not None  # Session.set_folders built it
        return policy

    def _projects(self) -> list[Project]:
        return find_projects(self.session, self.roots, self._taken)

    @property
    def project_ids(self) -> list[str]:
        return [p.id for p in self.projects]

    def list_projects(self) -> dict:
        return {
            "projects": [
                {"project_id": p.id, "name": os.path.basename(p.root), "origin": p.origin} for p in self.projects
            ]
        }

    # -- step 1: plan ----------------------------------------------------------

    def plan(self, tool: str, args: Any, caller: Caller = NO_CALLER) -> Plan:
        """Resolve and decide every target of the call; nothing is read or written yet."""
        with self._lock:
            return self._plan(tool, args, caller)

    def failure(self, tool: str, args: Any, caller: Caller, exc: BaseException) -> ToolError:
        """An unexpected failure: a coded error with its audit line, never a bare traceback."""
        args = dict(args) if isinstance(args, dict) else {}
        cid = os.urandom(16).hex()
        given = args.get("relative_path", args.get("source"))
        access = Access(given, (), code="internal_error", reason=type(exc).__name__)
        plan = Plan(tool, args, caller, cid, args.get("project_id"), [access], "deny",
                    f"the call failed unexpectedly ({type(exc).__name__}); nothing more was done", "internal_error")
        try:
            return self.reject(plan, "internal_error", plan.reason)
        except ToolError as err:
            return err

    def _plan(self, tool: str, args: Any, caller: Caller) -> Plan:
        cid = os.urandom(16).hex()
        self._maybe_reload()
        args = dict(args) if isinstance(args, dict) else {}
        plain = self._plain_read(tool, args, caller, cid) if tool in _PLAIN_TOOLS else None
        return plain or self._whole_route(tool, args, caller, cid)

    def _whole_route(self, tool: str, args: dict, caller: Caller, cid: str) -> Plan:
        """Check the arguments, resolve every target, ask the engine for the batch, present the plan."""
        project_id = args.get("project_id")
        try:
            if tool not in TOOLS or tool == "list_projects":
                raise ToolError("unknown_tool", f"unknown tool {tool!r}")
            accesses = self._accesses(tool, args)
        except ToolError as err:
            access = Access(args.get("relative_path", args.get("source")), (), code=err.code, reason=err.message,
                            verdict="deny")
            return Plan(tool, args, caller, cid, project_id, [access], "deny", err.message, err.code)
        items = self._engine_items(accesses)
        for refused in accesses:
            if refused.verdict == "deny":  # a target that does not resolve is refused before the engine is asked
                return Plan(tool, args, caller, cid, project_id, accesses, "deny", refused.reason, refused.code)
        policy = self.session.policy
        if policy is None:  # pragma: no cover - open_session always builds one
            raise ToolError("invalid_arguments", "no policy for these roots")
        batch = policy.decide_batch(items, granted=self.grants)
        return self._plan_from(batch, tool, args, caller, cid, project_id, accesses)

    def _plain_read(self, tool: str, args: dict, caller: Caller, cid: str) -> Plan | None:
        """The plan of a read of one existing file (with one link) or directory, named in its resolved
        spelling with no link on the way (``resolve_plain``: one ``openat2`` proves it): the plan
        ``_whole_route`` would make, without the component-by-component resolution. None for anything
        else, which takes the whole route (``tests/test_plain_read.py`` holds the two equal)."""
        given, pid = args.get("relative_path"), args.get("project_id")
        root = self._project_roots.get(pid) if isinstance(pid, str) and len(args) == 2 else None
        policy = self.session.policy
        if root is None or not isinstance(given, str) or policy is None:
            return None
        resolved = resolve_plain(root, given)
        if resolved is None:
            return None
        result = policy.decide_batch([("read", self._target(resolved))], granted=self.grants).results[0]
        access = Access(given, ("read",), resolved=resolved, canonicalization="resolved")
        _take_decision(access, result)
        return Plan(tool, args, caller, cid, pid, [access], result.verdict, result.reason, access.code, access.rule)

    def _accesses(self, tool: str, args: dict) -> list[Access]:
        if not ARGUMENTS[tool].issuperset(args):
            unknown = sorted(set(args) - ARGUMENTS[tool])
            raise ToolError("invalid_arguments", f"unknown argument(s) for {tool}: {', '.join(map(str, unknown))}")
        pid = args.get("project_id")
        if not isinstance(pid, str):
            raise ToolError("invalid_arguments", "project_id must be a string (see list_projects)")
        if tool == "apply_patch":
            return self._patch_accesses(pid, args)
        if tool == "move_file":
            _require_str(args, "source")
            _require_str(args, "destination")
            access = self._resolve(pid, args["source"], ("rename",), for_read=False)
            access.dest_given = args["destination"]
            if access.resolved is not None:
                self._resolve_dest(pid, access)
            return [access]
        needs = _TOOL_NEEDS.get(tool, ("read",))
        listing = tool in ("list_directory", "search_files")
        if listing:
            args.setdefault("relative_path", ".")
        _require_str(args, "relative_path")
        _check_tool_args(tool, args, self.limits)
        if tool == "search_files" and ".git" in args["relative_path"].replace("%2e", ".").replace("%2E", ".").split("/"):
            raise ToolError("invalid_arguments", "search_files never searches inside .git")
        access = self._resolve(pid, args["relative_path"], needs, for_read=needs == ("read",))
        if tool == "delete_file":
            _refuse_leaf_link(access)
        return [access]

    def _patch_accesses(self, pid: str, args: dict) -> list[Access]:
        changes = args.get("changes")
        if not isinstance(changes, list) or not 1 <= len(changes) <= MAX_CHANGES:
            raise ToolError("invalid_arguments", f"changes must be a list of 1 to {MAX_CHANGES} changes")
        accesses = []
        for index, change in enumerate(changes):
            kind = _change_kind(change, index)
            if kind == "content":
                _check_size(len(change["content"].encode("utf-8", "surrogatepass")), change["relative_path"], self.limits)
            needs = {"edits": ("read", "write"), "content": ("write",), "delete": ("delete",)}[kind]
            access = self._resolve(pid, change["relative_path"], needs, for_read=False)
            if kind == "delete":
                _refuse_leaf_link(access)
            accesses.append(access)
        seen: set[str] = set()
        for access in accesses:
            if access.resolved is not None:
                if access.resolved.canonical in seen:
                    raise ToolError("invalid_arguments", f"{access.given!r} appears twice in one batch; merge its changes")
                seen.add(access.resolved.canonical)
        return accesses

    def _resolve(self, pid: str, given: Any, needs: tuple[str, ...], *, for_read: bool) -> Access:
        access = Access(given, needs)
        try:
            access.resolved = resolve_in_projects(self._project_roots, pid, given, for_read=for_read, outside=True)
        except ResolveError as err:
            access.code, access.reason, access.canonicalization = err.code, err.message, err.code
            return access
        access.canonicalization = "resolved_through_symlink" if access.resolved.traversed_symlink else "resolved"
        return access

    def _resolve_dest(self, pid: str, access: Access) -> None:
        try:
            access.dest = resolve_in_projects(self._project_roots, pid, access.dest_given, outside=True)
        except ResolveError as err:
            access.resolved = None
            access.code, access.canonicalization = err.code, f"destination: {err.code}"
            access.reason = f"destination: {err.message}"
            return
        _refuse_leaf_link(access)

    def _engine_items(self, accesses: list[Access]) -> list[tuple[Any, ...]]:
        """The engine's view of each resolved target; a failed resolution marks its access denied."""
        items: list[tuple[Any, ...]] = []
        for access in accesses:
            if access.resolved is None or (access.needs == ("rename",) and access.dest is None):
                access.verdict = "deny"
                access.code = access.code or "invalid_path"
                access.reason = access.reason or f"{access.given!r} was not resolved; nothing was done"
                continue
            try:
                target = self._target(access.resolved)
                if access.dest is not None:
                    items.append(("rename", target, self._target(access.dest)))
                else:
                    items.append((access.needs, target))
            except _Changed as changed:
                access.code, access.reason, access.verdict = "path_changed", str(changed), "deny"
        return items

    def _target(self, resolved: Resolved) -> Target:
        """The engine's view of a resolved path; links are listed only when one was met."""
        if not resolved.traversed_symlink:
            if resolved.nlink is not None:  # read by the resolver with the canonical path (one descriptor)
                return Target(resolved.canonical, inode=resolved.inode, nlink=resolved.nlink)
            inode, nlink = inspect(resolved.canonical)
            return Target(resolved.canonical, inode=inode, nlink=nlink)
        target = self.policy.resolve(resolved.lexical)
        if target.canonical != resolved.canonical:
            raise _Changed(f"{resolved.relative} changed while it was being resolved; nothing was done")
        return target

    def _plan_from(self, batch: BatchDecision, tool, args, caller, cid, project_id,
                   accesses: list[Access]) -> Plan:
        """The engine's batch decision, presented: each access gets its item's result."""
        for access, result in zip(accesses, batch.results, strict=True):
            _take_decision(access, result)
            if result.verdict == "deny":
                outside = [r for r in (access.resolved, access.dest) if r is not None and r.outside]
                if outside and access.code != "symlink_not_permitted":
                    # One engine: the policy decided the link's target; refused, it reads as before.
                    given = access.given if outside[0] is access.resolved else access.dest_given
                    access.code = access.canonicalization = "path_outside_project"
                    access.reason = (f"path {given!r} resolves outside the project root (through a symbolic link) "
                                     f"and no rule allows its target: {access.reason}")
        culprit = accesses[batch.culprit] if batch.culprit is not None else None
        code = None
        if batch.decision == "deny":
            code = "policy_denied" if batch.spans_roots or culprit is None else culprit.code
        rule = culprit.rule if culprit is not None else (accesses[0].rule if batch.decision == "allow" else None)
        return Plan(tool, args, caller, cid, project_id, accesses, batch.decision, batch.reason, code, rule)

    # -- step 3: conclude ------------------------------------------------------

    def conclude(self, plan: Plan, approval: str | None = None, approver: str | None = None) -> dict:
        """Log the final decision, then do the I/O. Raises ``ToolError`` when refused or failed.

        ``approval`` is the approver's answer for a ``request`` plan: ``allow_once``,
        ``allow_session``, ``always``, ``deny``, ``timeout`` or ``no_approver``.
        """
        with self._lock:
            if plan.verdict == "deny":
                raise self.reject(plan, plan.code or "policy_denied", plan.reason)
            if plan.verdict == "request":
                if approval not in ALLOWING:
                    code = APPROVAL_CODES.get(approval or "no_approver", "approval_denied")
                    raise self.reject(plan, code, _refusal_text(code, approver, plan.reason), approval, approver)
                self._log(plan, "allow", None, f"{approval} by {approver or 'the approver'} ({plan.reason})",
                          approval=approval, approver=approver)
            else:
                self._log(plan, "allow", None, plan.reason)
        try:
            result = _RUNNERS[plan.tool](self, plan)
        except safe_io.SafeIOError as err:  # the decision's line is written; the code says what failed
            message = err.message
            for access in plan.accesses:  # a target outside the project is named as the agent gave it
                for resolved, given in ((access.resolved, access.given), (access.dest, access.dest_given)):
                    if resolved is not None and resolved.outside:
                        message = message.replace(resolved.canonical.lstrip(os.sep), str(given))
            raise ToolError(err.code, self.shown(message), plan.correlation_id) from None
        except ToolError as err:
            err.correlation_id = plan.correlation_id
            err.message = self.shown(err.message)
            raise
        except OSError as err:  # a race the safe I/O did not name: still a coded error, under the same id
            raise ToolError("io_error", self.shown(f"{err.strerror or err}; the operation failed"),
                            plan.correlation_id) from None
        except Exception as exc:  # a bug in a runner: the decision's line stands, the agent gets a code
            raise ToolError("internal_error", f"the call failed unexpectedly ({type(exc).__name__}); "
                            "it may have done part of its work", plan.correlation_id) from None
        result["correlation_id"] = plan.correlation_id
        return result

    def reject(self, plan: Plan, code: str, reason: str, approval: str | None = None,
               approver: str | None = None) -> ToolError:
        """Log a refusal of ``plan`` and return the error to raise."""
        self._log(plan, "deny", code, reason, approval=approval, approver=approver)
        return ToolError(code, self.shown(reason), plan.correlation_id)

    def shown(self, text: str) -> str:
        """A message for the agent: paths relative to the project, never absolute host paths."""
        text = str(text)
        for _pid, root in sorted(self._project_roots.items(), key=lambda item: -len(item[1])):
            text = text.replace(root + os.sep, "").replace(root, ".")
        home = os.path.expanduser("~")
        if home and home != os.sep:
            text = text.replace(home + os.sep, "~/")
        return re.sub(r"(?<![\w.~])/(?:[^\s'\"(),;:]+/)*[^\s'\"(),;:]*", "<outside the project>", text)

    # -- audit -----------------------------------------------------------------

    def _log(self, plan: Plan, decision: str, code: str | None, reason: str, *,
             approval: str | None = None, approver: str | None = None) -> None:
        if self.audit is None:
            return
        try:
            for access in plan.accesses:
                own_code, own_reason = code, reason
                if plan.verdict == "deny":
                    if access.verdict == "deny":  # this target is why
                        own_code, own_reason = access.code or code, access.reason or reason
                    else:
                        own_code, own_reason = "batch_rejected", f"the batch was rejected: {plan.reason}"
                self.audit.record(self._record(plan, access, decision, own_code, own_reason, approval, approver))
        except OSError as err:
            raise ToolError("audit_unavailable", f"{err}; nothing was done", plan.correlation_id) from None

    def _record(self, plan, access: Access, decision, code, reason, approval, approver) -> dict:
        pid = plan.project_id if isinstance(plan.project_id, str) else None
        root = access.resolved.root if access.resolved else self._project_roots.get(pid) if pid else None
        record = {
            "time": now_text(),
            "client": plan.caller.client,
            "session_id": plan.caller.session_id,
            "protocol_version": plan.caller.protocol_version,
            "tool": plan.tool,
            "project_id": plan.project_id if isinstance(plan.project_id, str) else None,
            "root_digest": root_digest(root) if root else None,
            "relative_path": access.given if isinstance(access.given, str) else None,
            "canonicalization": access.canonicalization,
            "decision": decision,
            "reason": reason,
            "correlation_id": plan.correlation_id,
            "op": ",".join(access.needs) or None,
            "policy": access.policy,
            "rule": access.rule,
            "code": code,
        }
        if access.dest_given is not None:
            record["dest_relative_path"] = access.dest_given if isinstance(access.dest_given, str) else None
        if approval is not None:
            record["approval"] = approval
            record["approver"] = approver
        if self.mirror and root:
            record["mirror"] = self._mirror(root, access, decision)
        return record

    def _mirror(self, root: str, access: Access, decision: str) -> dict:
        """What a plain roots-union check (``any(path under root)``) would have said."""
        roots = list(self._project_roots.values())
        given = [g for g in (access.given, access.dest_given) if g is not None]
        inside = all(isinstance(g, str) and oracle_inside(os.path.normpath(os.path.join(root, g)), roots) for g in given)
        union = "allow" if inside else "deny"
        return {"roots_union": union, "agrees": union == decision}

    # -- configuration changes ---------------------------------------------------

    def plan_quick(self, tool: str, args: Any, caller: Caller = NO_CALLER,
                   then: Callable[[Plan], T] | None = None) -> Plan | T | None:
        """``plan`` when deciding the call is only lookups and a few system calls, else None.

        None while a slow step is due or under way: a configuration file changed (a reload
        parses it and rebuilds the policy), the call (or an allowed listing's I/O) needs the
        hard-link index and it is stale (a rebuild walks the deny rules' anchors), or another
        thread is deciding. The
        caller then plans in a worker thread. ``then``: called with a plan that is refused
        or ``concludes_quickly``, without letting another thread decide in between.
        """
        if not self._lock.acquire(blocking=False):  # a worker is deciding (perhaps reloading): its turn
            return None
        try:
            now = time.monotonic()
            if now - self._config_checked >= 1.0:
                if self._config_signature() != self._config_mark:
                    return None  # ``plan`` reloads it
                self._config_checked = now
            with no_walk():
                try:
                    plan = self._plan(tool, args, caller)
                    if plan.tool == "list_directory" and plan.verdict == "allow":
                        self.policy.hardlinks.devices()  # the listing asks the index: fresh, or the worker's turn
                except IndexStale:
                    return None
            if then is not None and (plan.verdict == "deny" or self.concludes_quickly(plan)):
                return then(plan)
            return plan
        finally:
            self._lock.release()

    @staticmethod
    def concludes_quickly(plan: Plan) -> bool:
        """An allowed ``read_file`` of at most ``QUICK_READ_BYTES`` bytes, or ``list_directory`` of a
        directory of at most ``QUICK_LIST_BYTES`` (its ``st_size`` as the resolver saw it)."""
        resolved = plan.accesses[0].resolved if len(plan.accesses) == 1 else None
        if plan.verdict != "allow" or resolved is None or resolved.size is None:
            return False
        if plan.tool == "read_file":
            return resolved.size <= QUICK_READ_BYTES
        return plan.tool == "list_directory" and resolved.size <= QUICK_LIST_BYTES

    def _maybe_reload(self) -> None:
        """Pick up edited configuration files (checked at most once a second)."""
        now = time.monotonic()
        if now - self._config_checked < 1.0:
            return
        self._config_checked = now
        mark = self._config_signature()
        if mark != self._config_mark:
            self._config_mark = mark
            self.session.reload_configs(trusted=False)  # a loosening change is held and shown, never silent
            for line in self.session.held():
                import logging

                logging.getLogger("rootguard.mcp").warning("%s", line)

    def _config_signature(self) -> tuple:
        marks: list[tuple[object, ...]] = []
        for path in self.session.config_files():
            try:
                info = os.stat(path)
                marks.append((path, info.st_mtime_ns, info.st_size, info.st_ino))
            except OSError:
                marks.append((path, None))
        return tuple(marks)

    # -- peeking (listing and search filter their results with the same engine) --

    def peek(self, root: str, relative: str, need: str = "read") -> tuple[str, Resolved | None]:
        """The verdict for a path found while listing: allow, request or deny."""
        try:
            resolved = resolve(root, relative.replace("%", "%25"))
            target = self._target(resolved)
        except (ResolveError, _Changed):
            return "deny", None
        return self.policy.decide_granted(need, target, self.grants), resolved


    def peek_entries(self, directory: Resolved, entries: Sequence[safe_io.Entry], need: str = "read") -> list[str]:
        """``peek`` for every entry of a listed directory, in one pass (``peek_listing`` of its columns)."""
        several = max(map(_ENTRY_NLINK, entries), default=1) > 1  # only then does an inode matter
        stats = [(e.inode, e.nlink) for e in entries] if several else None
        return self.peek_listing(directory, safe_listing.Listing(list(map(_ENTRY_NAME, entries)),
                                                            list(map(_ENTRY_KIND, entries)), stats), need)

    def peek_listing(self, directory: Resolved, listing: safe_listing.Listing, need: str = "read") -> list[str]:
        """``peek`` for every entry of a listed directory (``safe_listing.list_columns``), in one pass.

        The directory was opened at its canonical path without following a
        link, so an entry that is not a link sits at ``canonical/name``: the
        engine decides it from the directory's anchors (``Policy.decide_children``,
        one shared verdict when no child can differ) with no resolution per
        entry. Links, names the resolver would refuse, and every entry of a
        directory reached through a link take ``peek``.
        """
        names, kinds, stats = listing
        # The resolver's textual checks (characters, a leading drive or slash, ``..``) hold for
        # every ``dir/name`` when they hold for ``dir/name1/name2/...``: one check for the listing
        # below the root; a refusal there (or a listing of the root itself) checks name by name.
        joined = "/".join([directory.relative, *names])
        names_ok = bool(directory.relative) and _text_ok(_encode(joined) if "%" in joined else joined)
        every_peek = directory.traversed_symlink or not directory.exists
        if names_ok and not every_peek and "symlink" not in kinds:  # the common listing: no per-entry work here
            return cast("list[str]", self.policy.decide_children(need, directory.canonical, names, self.grants, stats))
        verdicts: list[str | None] = [None] * len(names)
        plain_at: list[int] = []
        plain: list[str] = []
        plain_stats: list[tuple[tuple[int, int] | None, int]] = []
        prefix = f"{directory.relative}/" if directory.relative else ""
        for index, (name, kind) in enumerate(zip(names, kinds, strict=True)):
            if every_peek or kind == "symlink":
                verdicts[index] = self.peek(directory.root, prefix + name, need)[0]
                continue
            if not names_ok and not _text_ok(_encode(prefix + name)):
                verdicts[index] = "deny"
                continue
            plain_at.append(index)
            plain.append(name)
            plain_stats.append(stats[index] if stats is not None else (None, 1))
        decided = self.policy.decide_children(need, directory.canonical, plain, self.grants, plain_stats)
        for index, verdict in zip(plain_at, decided, strict=True):
            verdicts[index] = verdict
        return [v or "deny" for v in verdicts]

    def listing_needs_stats(self, device: int) -> bool | frozenset[int]:
        """Which files of a listing on ``device`` need their inode and link count read.

        Only a read of a file with several hard links that shares its inode with a
        denied file is decided differently (``HardLinkIndex``): with no denied inode on
        that device (and a complete index) no file there can be one (False); with some,
        only a file whose inode number is one of theirs can be (that set: the listing
        reads those files, where directory entries carry inode numbers); an incomplete
        index needs every file's link count (True).
        """
        devices = self.policy.hardlinks.devices()
        if devices is None:
            return True
        if device not in devices:
            return False
        inodes = self.policy.hardlinks.inodes_on(device)
        return True if inodes is None else inodes


class _Changed(Exception):
    """A path resolved differently the second time: fail closed."""


# ---------------------------------------------------------------------------
# Argument checks


_TOOL_NEEDS = {"edit_file": ("read", "write"), "write_file": ("write",), "delete_file": ("delete",)}


def _require_str(args: dict, name: str) -> None:
    if not isinstance(args.get(name), str):
        raise ToolError("invalid_arguments", f"{name} must be a string")


def _check_size(data_len: int, shown: Any, limits: Limits) -> None:
    if data_len > limits.write_bytes:
        raise ToolError("file_too_large", f"{shown!r}: {data_len} bytes is more than the write limit of "
                                          f"{limits.write_bytes} bytes; nothing was written")


def _check_tool_args(tool: str, args: dict, limits: Limits) -> None:
    if tool == "write_file":
        _require_str(args, "content")
        _check_size(len(args["content"].encode("utf-8", "surrogatepass")), args.get("relative_path"), limits)
    elif tool == "edit_file":
        _check_edits(args.get("edits"), "edits")
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


def _check_edits(edits: Any, where: str) -> None:
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


def _change_kind(change: Any, index: int) -> str:
    where = f"changes[{index}]"
    if not isinstance(change, dict) or not isinstance(change.get("relative_path"), str):
        raise ToolError("invalid_arguments", f"{where} needs a relative_path (string)")
    kinds = [k for k in ("edits", "content", "delete") if k in change]
    if len(kinds) != 1 or set(change) - {"relative_path", "edits", "content", "delete"}:
        raise ToolError("invalid_arguments", f"{where} needs exactly one of edits, content or delete")
    kind = kinds[0]
    if kind == "edits":
        _check_edits(change["edits"], f"{where}.edits")
    elif kind == "content" and not isinstance(change["content"], str):
        raise ToolError("invalid_arguments", f"{where}.content must be a string")
    elif kind == "delete" and change["delete"] is not True:
        raise ToolError("invalid_arguments", f"{where}.delete must be true")
    return kind


def _refuse_leaf_link(access: Access) -> None:
    """Moving or deleting acts on a name: a link there is refused rather than guessed at."""
    for resolved, given in ((access.resolved, access.given), (access.dest, access.dest_given)):
        if resolved is not None and resolved.relative and os.path.islink(resolved.lexical):
            access.resolved = None
            access.code = access.canonicalization = "symlink_not_permitted"
            access.reason = (f"{given!r} is a symbolic link; "
                             "move_file, delete_file and apply_patch deletions act on regular files only")
            return


def _take_decision(access: Access, result: ItemDecision) -> None:
    """An access takes its batch item's decision: the parts, the verdicts, the rule, the reason."""
    access.pieces = result.parts
    access.policy, access.verdict = result.decision.decision, result.verdict
    access.rule, access.reason = result.decision.rule, result.reason
    if result.verdict == "deny":
        access.code = _deny_code(result.decision, access)


def _deny_code(decision: Decision, access: Access) -> str:
    through_link = access.resolved is not None and access.resolved.traversed_symlink
    if through_link and ("symbolic link" in decision.reason or "follow_symlinks" in decision.reason):
        return "symlink_not_permitted"
    return "policy_denied"


def _refusal_text(code: str, approver: str | None, reason: str) -> str:
    if code == "no_approver":
        return (f"approval required but no approver is available (no Root Guard tray is running and the "
                f"MCP client cannot ask): denied. Policy: {reason}")
    if code == "approval_timeout":
        return f"approval required but nobody answered in time ({approver or 'approver'}): denied once. Policy: {reason}"
    return f"denied by {approver or 'the approver'}. Policy: {reason}"


def _relative_or_none(path: str, root: str) -> str | None:
    if path == root:
        return ""
    return path[len(root) + 1:] if is_within(path, root) else None


def _io(resolved: Resolved) -> tuple[str, str]:
    """(base, canonical path below it) for safe_io: the project root, or ``/`` for a target a
    symbolic link leads to outside the project (only reached when the policy allowed it)."""
    if resolved.outside:
        return os.sep, resolved.canonical.lstrip(os.sep)
    return resolved.root, _canonical_rel(resolved)


def _refuse_outside(resolved: Resolved, tool: str) -> None:
    if resolved.outside:
        raise ToolError("path_outside_project", f"{tool} does not follow a symbolic link out of the project "
                                                f"({resolved.relative})")


def _canonical_rel(resolved: Resolved) -> str:
    """The canonical path below the root: what safe_io walks."""
    return _relative_or_none(resolved.canonical, resolved.root) or ""


def _text_ok(relative: str) -> bool:
    try:
        checked_text(relative)
    except ResolveError:
        return False
    return True


def _encode(relative: str) -> str:
    """A path as the resolver expects it back (``%`` escaped)."""
    return relative.replace("%", "%25")


# ---------------------------------------------------------------------------
# The tools' I/O (only reached after an allow)


def _text_of(data: bytes) -> str | None:
    if b"\x00" in data[:8192]:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _resolved(resolved: Resolved | None) -> Resolved:
    """A decided access's resolved path: only resolved targets reach the I/O."""
    assert resolved is not None  # an unresolved target is denied before any run_* call
    return resolved


def _read_text(tools: FileTools, resolved: Resolved) -> str:
    data = safe_io.read_file(*_io(resolved), limit=tools.limits.read_bytes)
    text = _text_of(data)
    if text is None:
        raise ToolError("binary_file", f"{resolved.relative} is a binary file; it cannot be edited as text")
    return text


def run_read_file(tools: FileTools, plan: Plan) -> dict:
    resolved = _resolved(plan.accesses[0].resolved)
    data = safe_io.read_file(*_io(resolved), limit=tools.limits.read_bytes)
    text = _text_of(data)
    return {"project_id": plan.project_id, "relative_path": resolved.relative, "size": len(data),
            "binary": text is None, "text": text}


_ENTRY_NAME = operator.itemgetter(0)
_ENTRY_KIND = operator.itemgetter(1)
_ENTRY_NLINK = operator.itemgetter(3)
LISTING_KINDS = (("directory", "directories"), ("file", "files"), ("symlink", "links"), ("other", "other"))


def run_list_directory(tools: FileTools, plan: Plan) -> dict:
    """The entries the policy shows, by kind, in name order; denied ones only counted (``hidden``).

    ``directories``, ``files``, ``links``, ``other``: names; ``needs_approval``: the names
    among them whose read needs an approval. A name's own path is the listing's
    ``relative_path``, ``/`` and the name (a ``%`` in it written ``%25``).
    """
    resolved = _resolved(plan.accesses[0].resolved)
    _refuse_outside(resolved, "list_directory")
    listing = safe_listing.list_columns(*_io(resolved), file_stats=tools.listing_needs_stats, kept=tools.listings)
    verdicts = tools.peek_listing(resolved, listing)
    names, kinds = listing.names, listing.kinds
    most = tools.limits.list_entries
    hidden, truncated = 0, False
    asks: list[str] = []
    if len(names) > most or "deny" in verdicts or "request" in verdicts:
        shown_names: list[str] = []
        shown_kinds: list[str] = []
        for name, kind, verdict in zip(names, kinds, verdicts, strict=True):
            if verdict == "deny":
                hidden += 1
                continue
            if len(shown_names) >= most:
                truncated = True
                break
            shown_names.append(name)
            shown_kinds.append(kind)
            if verdict == "request":
                asks.append(name)
        names, kinds = shown_names, shown_kinds
    result: dict[str, Any] = {"project_id": plan.project_id, "relative_path": resolved.relative}
    for kind, key in LISTING_KINDS:
        count = kinds.count(kind)
        result[key] = ([] if not count else names if count == len(names)
                       else list(compress(names, map(kind.__eq__, kinds))))
    result.update(needs_approval=asks, hidden=hidden, truncated=truncated)
    return result


def run_search_files(tools: FileTools, plan: Plan) -> dict:
    resolved = _resolved(plan.accesses[0].resolved)
    args = plan.args
    pattern = args.get("pattern") or "*"
    query = args.get("query") or None
    fold = not args.get("case_sensitive", False)
    most = args.get("max_results", tools.limits.search_results)
    _refuse_outside(resolved, "search_files")
    start = _canonical_rel(resolved)
    if ".git" in start.split("/") or ".git" in resolved.relative.split("/"):
        raise ToolError("invalid_arguments", "search_files never searches inside .git")
    try:
        matcher = GlobSet([pattern.lower() if fold else pattern])
    except GlobError as err:
        raise ToolError("invalid_arguments", f"pattern {pattern!r} is not a valid glob: {err}") from None
    if not stat.S_ISDIR(safe_io.file_info(resolved.root, start).st_mode):
        raise ToolError("not_a_directory", f"{resolved.relative} is not a directory; search_files searches below one")
    found: list[dict] = []
    counts = {"needs_approval": 0, "binary_skipped": 0}  # nothing counted about names it may not show
    truncated = False
    scanned = 0
    for path in safe_listing.walk_files(resolved.root, start, skip_dirs=SKIP_DIRS, limit=tools.limits.search_files):
        scanned += 1
        below = path[len(start) + 1:] if start else path
        if not matcher.matches(below.lower() if fold else below):
            continue
        verdict, target = tools.peek(resolved.root, path)
        if verdict == "deny":
            continue
        if verdict == "request":
            counts["needs_approval"] += 1
            if query is None:
                found.append({"relative_path": _encode(path), "needs_approval": True})
        elif query is None:
            found.append({"relative_path": _encode(path)})
        else:
            found.extend(_grep(tools, _resolved(target), path, query, fold, most - len(found), counts))
        if len(found) >= most:
            truncated = True
            found = found[:most]
            break
    else:
        truncated = scanned >= tools.limits.search_files
    return {"project_id": plan.project_id, "relative_path": resolved.relative, "pattern": pattern,
            "matches": found, "truncated": truncated, **counts}


def _grep(tools: FileTools, target: Resolved, shown: str, query: str, fold: bool, room: int, counts: dict) -> list[dict]:
    try:
        data = safe_io.read_file(*_io(target), limit=tools.limits.read_bytes)
    except safe_io.SafeIOError:
        return []
    text = _text_of(data)
    if text is None:
        counts["binary_skipped"] += 1
        return []
    needle = query.lower() if fold else query
    hits = []
    for number, line in enumerate(text.splitlines(), 1):
        if needle in (line.lower() if fold else line):
            hits.append({"relative_path": _encode(shown), "line": number, "text": line[:240]})
            if len(hits) >= room:
                break
    return hits


def run_get_file_info(tools: FileTools, plan: Plan) -> dict:
    resolved = _resolved(plan.accesses[0].resolved)
    info = safe_io.file_info(*_io(resolved))
    kind = ("directory" if stat.S_ISDIR(info.st_mode) else "file" if stat.S_ISREG(info.st_mode)
            else "symlink" if stat.S_ISLNK(info.st_mode) else "other")
    modified = datetime.fromtimestamp(info.st_mtime, UTC).isoformat(timespec="seconds").replace("+00:00", "Z")
    return {"project_id": plan.project_id, "relative_path": resolved.relative, "type": kind, "size": info.st_size,
            "modified": modified, "permissions": oct(stat.S_IMODE(info.st_mode)),
            "through_symlink": resolved.traversed_symlink, "canonical_relative_path": _encode(_canonical_rel(resolved))}


def run_write_file(tools: FileTools, plan: Plan) -> dict:
    resolved = _resolved(plan.accesses[0].resolved)
    data = plan.args["content"].encode("utf-8")
    created = safe_io.write_file(*_io(resolved), data)
    return {"project_id": plan.project_id, "relative_path": resolved.relative, "created": created, "size": len(data)}


def apply_edits(text: str, edits: list[dict], shown: str) -> str:
    """Exact-match replacements, in order; each ``old_text`` must occur exactly once."""
    for index, edit in enumerate(edits):
        count = text.count(edit["old_text"])
        if count == 0:
            raise ToolError("edit_not_found", f"{shown}: edit {index + 1}: old_text was not found; nothing was changed")
        if count > 1:
            raise ToolError("edit_ambiguous", f"{shown}: edit {index + 1}: old_text occurs {count} times; "
                                              "include more surrounding text; nothing was changed")
        text = text.replace(edit["old_text"], edit["new_text"], 1)
    return text


def unified_diff(before: str, after: str, shown: str) -> str:
    import difflib  # only edits show a diff: not on every server's start

    return "".join(difflib.unified_diff(before.splitlines(True), after.splitlines(True), f"a/{shown}", f"b/{shown}"))


def run_edit_file(tools: FileTools, plan: Plan) -> dict:
    resolved = _resolved(plan.accesses[0].resolved)
    before = _read_text(tools, resolved)
    after = apply_edits(before, plan.args["edits"], resolved.relative)
    _check_size(len(after.encode("utf-8")), resolved.relative, tools.limits)
    dry_run = plan.args.get("dry_run", False)
    if not dry_run:
        safe_io.write_file(*_io(resolved), after.encode("utf-8"))
    return {"project_id": plan.project_id, "relative_path": resolved.relative, "edits": len(plan.args["edits"]),
            "dry_run": dry_run, "diff": unified_diff(before, after, resolved.relative)}


def run_move_file(tools: FileTools, plan: Plan) -> dict:
    access = plan.accesses[0]
    src, dst = _resolved(access.resolved), _resolved(access.dest)
    safe_io.move_file(*_io(src), *_io(dst))
    return {"project_id": plan.project_id, "source": src.relative, "destination": dst.relative}


def run_delete_file(tools: FileTools, plan: Plan) -> dict:
    resolved = _resolved(plan.accesses[0].resolved)
    safe_io.delete_file(*_io(resolved))
    return {"project_id": plan.project_id, "relative_path": resolved.relative, "deleted": True}


def run_apply_patch(tools: FileTools, plan: Plan) -> dict:
    """Every change is prepared (read, matched) before the first write; then applied in order."""
    prepared = []
    for change, access in zip(plan.args["changes"], plan.accesses, strict=False):
        resolved = _resolved(access.resolved)
        try:
            prepared.append(_prepare_change(tools, change, resolved))
        except safe_io.SafeIOError as err:
            raise ToolError(err.code, f"{resolved.relative}: {err.message}; nothing was changed") from None
    done: list[dict] = []
    with safe_batch.Batch() as batch:
        try:
            for resolved, action, data, diff in prepared:  # every file staged before the first rename
                if action == "deleted":
                    batch.stage_delete(*_io(resolved))
                else:
                    created = batch.stage_write(*_io(resolved), data)
                    action = "created" if created and action == "written" else action
                item = {"relative_path": resolved.relative, "action": action}
                if diff is not None:
                    item["diff"] = diff
                done.append(item)
            batch.commit()
        except safe_io.SafeIOError as err:
            raise ToolError(err.code, f"{err.message}; nothing was changed") from None
    return {"project_id": plan.project_id, "changes": done}


def _prepare_change(tools: FileTools, change: dict, resolved: Resolved):
    if "delete" in change:
        info = safe_io.file_info(*_io(resolved))
        if not stat.S_ISREG(info.st_mode):
            raise ToolError("not_found", f"{resolved.relative} is not a regular file; nothing was changed")
        return resolved, "deleted", None, None
    if "content" in change:
        return resolved, "written", change["content"].encode("utf-8"), None
    before = _read_text(tools, resolved)
    after = apply_edits(before, change["edits"], resolved.relative)
    _check_size(len(after.encode("utf-8")), resolved.relative, tools.limits)
    return resolved, "edited", after.encode("utf-8"), unified_diff(before, after, resolved.relative)


_RUNNERS = {
    "read_file": run_read_file,
    "list_directory": run_list_directory,
    "search_files": run_search_files,
    "get_file_info": run_get_file_info,
    "write_file": run_write_file,
    "edit_file": run_edit_file,
    "move_file": run_move_file,
    "delete_file": run_delete_file,
    "apply_patch": run_apply_patch,
}
