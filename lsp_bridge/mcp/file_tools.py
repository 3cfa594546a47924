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

The pieces: ``tool_model`` (records), ``tool_session`` (projects, targets, audit, peeking),
``tool_checks`` (arguments), ``tool_runners`` (the I/O). No MCP import here: ``mcp_server`` is a thin front end over this module.
"""
from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import Any

from lsp_bridge.approvals.service import ALLOWING
from lsp_bridge.core.hardlinks import IndexStale, no_walk
from lsp_bridge.core.policy import BatchDecision
from lsp_bridge.core.resolver import (
    ResolveError,
    resolve_in_projects,
    resolve_plain,
)
from lsp_bridge.mcp import safe_io
from lsp_bridge.mcp.tool_checks import (
    TOOL_NEEDS,
    change_kind,
    check_size,
    check_tool_args,
    refusal_text,
    refuse_leaf_link,
    require_str,
    take_decision,
)
from lsp_bridge.mcp.tool_model import (
    APPROVAL_CODES,
    ARGUMENTS,
    MAX_CHANGES,
    NO_CALLER,
    PLAIN_TOOLS,
    QUICK_LIST_BYTES,
    QUICK_READ_BYTES,
    QUICK_TOOLS,
    TOOLS,
    Access,
    Caller,
    Limits,
    PathChanged,
    Plan,
    T,
    ToolError,
    assign_project_ids,
)
from lsp_bridge.mcp.tool_runners import RUNNERS, apply_edits, run_list_directory
from lsp_bridge.mcp.tool_session import ToolSession

__all__ = [  # the records and runners live in tool_model / tool_runners; callers may import them from here
    "QUICK_TOOLS", "Caller", "FileTools", "Limits", "PathChanged", "Plan", "ToolError", "apply_edits",
    "assign_project_ids", "run_list_directory",
]



class FileTools(ToolSession):
    """Plan a call (resolve, decide), conclude it (log, run), and pick up configuration changes."""

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
        plain = self._plain_read(tool, args, caller, cid) if tool in PLAIN_TOOLS else None
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
        target, resolved = self._decided(resolved)
        result = policy.decide_batch([("read", target)], granted=self.grants).results[0]
        access = Access(given, ("read",), resolved=resolved, canonicalization="resolved")
        take_decision(access, result)
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
            require_str(args, "source")
            require_str(args, "destination")
            access = self._resolve(pid, args["source"], ("rename",), for_read=False)
            access.dest_given = args["destination"]
            if access.resolved is not None:
                self._resolve_dest(pid, access)
            return [access]
        needs = TOOL_NEEDS.get(tool, ("read",))
        listing = tool in ("list_directory", "search_files")
        if listing:
            args.setdefault("relative_path", ".")
        require_str(args, "relative_path")
        check_tool_args(tool, args, self.limits)
        if tool == "search_files" and ".git" in args["relative_path"].replace("%2e", ".").replace("%2E", ".").split("/"):
            raise ToolError("invalid_arguments", "search_files never searches inside .git")
        access = self._resolve(pid, args["relative_path"], needs, for_read=needs == ("read",))
        if tool == "delete_file":
            refuse_leaf_link(access)
        return [access]

    def _patch_accesses(self, pid: str, args: dict) -> list[Access]:
        changes = args.get("changes")
        if not isinstance(changes, list) or not 1 <= len(changes) <= MAX_CHANGES:
            raise ToolError("invalid_arguments", f"changes must be a list of 1 to {MAX_CHANGES} changes")
        accesses = []
        for index, change in enumerate(changes):
            kind = change_kind(change, index)
            if kind == "content":
                check_size(len(change["content"].encode("utf-8", "surrogatepass")), change["relative_path"], self.limits)
            needs = {"edits": ("read", "write"), "content": ("write",), "delete": ("delete",)}[kind]
            access = self._resolve(pid, change["relative_path"], needs, for_read=False)
            if kind == "delete":
                refuse_leaf_link(access)
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
        refuse_leaf_link(access)

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
                target, access.resolved = self._decided(access.resolved)
                if access.dest is not None:
                    dest, access.dest = self._decided(access.dest)
                    items.append(("rename", target, dest))
                else:
                    items.append((access.needs, target))
            except PathChanged as changed:
                access.code, access.reason, access.verdict = "path_changed", str(changed), "deny"
        return items

    def _plan_from(self, batch: BatchDecision, tool, args, caller, cid, project_id,
                   accesses: list[Access]) -> Plan:
        """The engine's batch decision, presented: each access gets its item's result."""
        for access, result in zip(accesses, batch.results, strict=True):
            take_decision(access, result)
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
                    raise self.reject(plan, code, refusal_text(code, approver, plan.reason), approval, approver)
                self._log(plan, "allow", None, f"{approval} by {approver or 'the approver'} ({plan.reason})",
                          approval=approval, approver=approver)
            else:
                self._log(plan, "allow", None, plan.reason)
        try:
            result = RUNNERS[plan.tool](self, plan)
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
