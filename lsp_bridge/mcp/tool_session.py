"""The file tools' session: one policy session over a set of roots, its projects, the engine's view of a
resolved target, what the agent is shown, the audit lines of a call, and the verdicts of listed entries.

``FileTools`` (``file_tools``) builds on it: planning a call, concluding it, picking up configuration changes.
"""

from __future__ import annotations

import os
import re
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import cast

from lsp_bridge.approvals.service import SessionGrants
from lsp_bridge.core.paths import canonical
from lsp_bridge.core.policy import Policy, Target, inspect, oracle_inside
from lsp_bridge.core.resolver import (
    Resolved,
    ResolveError,
    resolve,
)
from lsp_bridge.core.session import Session, open_session
from lsp_bridge.mcp import safe_io, safe_listing
from lsp_bridge.mcp.audit import AuditLog, now_text, root_digest
from lsp_bridge.mcp.tool_checks import encode, text_ok
from lsp_bridge.mcp.tool_model import (
    ENTRY_KIND,
    ENTRY_NAME,
    ENTRY_NLINK,
    Access,
    Limits,
    PathChanged,
    Plan,
    Project,
    ToolError,
    find_projects,
)

# A host path in a message: ``/`` and a name, not after a word, ``.``, ``~`` or a drive letter's
# ``C:`` (``C:/x`` is the agent's own spelling, not a path of this machine), to the next space,
# quote, bracket or separator. A lone ``/`` (``use '/'``) is no path.
_ABSOLUTE = re.compile(r"(?<![\w.~])(?<!\b[A-Za-z]:)/[^\s'\"(),;:/][^\s'\"(),;:]*")


class ToolSession:
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

    def _target(self, resolved: Resolved) -> Target:
        """The engine's view of a resolved path; links are listed only when one was met."""
        if not resolved.traversed_symlink:
            if resolved.nlink is not None:  # read by the resolver with the canonical path (one descriptor)
                return Target(resolved.canonical, inode=resolved.inode, nlink=resolved.nlink)
            inode, nlink = inspect(resolved.canonical)
            return Target(resolved.canonical, inode=inode, nlink=nlink)
        try:
            target = self.policy.resolve(resolved.lexical)
        except OSError:  # a link on the way removed or replaced while it was read
            raise PathChanged(f"{resolved.relative} changed while it was being resolved; nothing was done") from None
        if target.canonical != resolved.canonical:
            raise PathChanged(f"{resolved.relative} changed while it was being resolved; nothing was done")
        return target

    def _decided(self, resolved: Resolved) -> tuple[Target, Resolved]:
        """The engine's view of ``resolved``, and ``resolved`` carrying the file identity of that view:
        the (st_dev, st_ino) and link count the decision is made on, which the I/O must find again
        (``tool_checks.decided``, ``safe_io.require_decided``)."""
        target = self._target(resolved)
        if (resolved.inode, resolved.nlink) != (target.inode, target.nlink):
            resolved = replace(resolved, inode=target.inode, nlink=target.nlink)
        return target, resolved

    def shown(self, text: str) -> str:
        """A message for the agent: paths relative to the project, never absolute host paths."""
        text = str(text)
        for _pid, root in sorted(self._project_roots.items(), key=lambda item: -len(item[1])):
            text = text.replace(root + os.sep, "").replace(root, ".")
        home = os.path.expanduser("~")
        if home and home != os.sep:
            text = text.replace(home + os.sep, "~/")
        return _ABSOLUTE.sub("<outside the project>", text)

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
            target, resolved = self._decided(resolve(root, relative.replace("%", "%25")))
        except (ResolveError, PathChanged):
            return "deny", None
        return self.policy.decide_granted(need, target, self.grants), resolved


    def peek_entries(self, directory: Resolved, entries: Sequence[safe_io.Entry], need: str = "read") -> list[str]:
        """``peek`` for every entry of a listed directory, in one pass (``peek_listing`` of its columns)."""
        several = max(map(ENTRY_NLINK, entries), default=1) > 1  # only then does an inode matter
        stats = [(e.inode, e.nlink) for e in entries] if several else None
        return self.peek_listing(directory, safe_listing.Listing(list(map(ENTRY_NAME, entries)),
                                                            list(map(ENTRY_KIND, entries)), stats), need)

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
        names_ok = bool(directory.relative) and text_ok(encode(joined) if "%" in joined else joined)
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
            if not names_ok and not text_ok(encode(prefix + name)):
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
