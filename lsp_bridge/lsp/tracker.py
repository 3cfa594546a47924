"""What one editor window exposes, change by change: the status and the warnings.

``RootTracker`` is the language server's domain state, with no LSP in it: give
it folders and configuration reloads, and it tells what changed (a
``Change``: did the union widen, how) and renders the ``rootguard/status``
payload and the widening warning text. The server only sends them.
"""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from lsp_bridge.core import acknowledged
from lsp_bridge.core.acknowledged import Acknowledgement
from lsp_bridge.core.diagnostics import Diagnostic
from lsp_bridge.core.paths import canonical, is_within
from lsp_bridge.core.policy import Policy
from lsp_bridge.core.scope import Scope
from lsp_bridge.core.session import Session
from lsp_bridge.core.union import Candidate, Union, Widening, compute_union
from lsp_bridge.inventory.report import quiet_mount_findings, warnings_of


@dataclass(frozen=True)
class Change:
    before: Union
    after: Union
    widenings: tuple[Widening, ...]  # new since ``before`` and not acknowledged
    added_folders: tuple[str, ...] = ()
    start: bool = False  # the window's first folders

    @property
    def widened(self) -> bool:
        return bool(self.widenings)


class MemoryStore:
    """Acknowledgements kept in memory (tests, and a server without a state directory)."""

    def __init__(self) -> None:
        self.records: dict[str, Acknowledgement] = {}

    def load(self) -> dict[str, Acknowledgement]:
        return dict(self.records)

    def acknowledge(self, folders, union, when: float) -> None:
        self.records = acknowledged.acknowledge(self.records, folders, union, when)


@dataclass
class RootTracker:
    env: Mapping[str, str] = field(default_factory=lambda: os.environ)
    session_id: str = field(default_factory=lambda: uuid.uuid4().hex[:12])
    store: Any = field(default_factory=MemoryStore)
    session: Session = field(init=False)
    widened: bool = False  # shown as widened: unacknowledged widenings, or a folder inside another
    pending: tuple[Widening, ...] = ()  # what is wider than the person acknowledged
    last_change: Change | None = None
    inventory: dict | None = None
    inventory_pending: bool = False
    inventory_lines: tuple[str, ...] = ()
    mounts: dict | None = None
    mount_diagnostics: tuple[Diagnostic, ...] = ()
    _reference: Union = field(default_factory=Union)  # what the person accepted for these folders

    def __post_init__(self) -> None:
        self.session = Session(env=self.env)
        self.session.set_folders(())

    # -- changes -------------------------------------------------------------

    @property
    def scope(self) -> Scope:
        scope = self.session.scope
        assert scope is not None  # set_folders ran in __post_init__
        return scope

    @property
    def policy(self) -> Policy:
        policy = self.session.policy
        assert policy is not None  # set_folders ran in __post_init__
        return policy

    @property
    def union(self) -> Union:
        return self.scope.union

    def set_folders(self, folders: Sequence[str], *, initial: bool = False) -> Change:
        """New workspace folders. The first set (``initial``) is compared with what was acknowledged."""
        before = Union() if initial else self.union
        old_folders = set() if initial else set(self.session.folders)
        self.session.set_folders(folders)
        if initial:
            implicit = acknowledged.implicit(self.store.load(), self.canonical_folders())
            if implicit is not None and self.union.paths:
                # A folder opened on its own is what the person chose.
                self.store.acknowledge([implicit], self.union.paths, time.time())
        added = tuple(f for f in folders if f not in old_folders)
        return self._record(before, added, start=initial)

    def reload(self, *, trusted: bool = True) -> Change:
        """Re-read configuration files and git metadata (worktrees may have come or gone).

        ``trusted=False``: the change was seen on disk (anyone, the agent included, may
        have made it), so a change that would loosen the policy is held and shown."""
        before = self.union
        self.session.reload_configs(trusted=trusted)
        return self._record(before, ())

    def acknowledge(self) -> Change:
        """The person accepts the current union for this window's folders."""
        self.store.acknowledge(self.canonical_folders(), self.union.paths, time.time())
        return self._record(self.union, ())

    def canonical_folders(self) -> list[str]:
        """The window's folders as canonical paths (those that exist)."""
        found: list[str] = []
        for folder in self.session.folders:
            try:
                path = canonical(folder)
            except (ValueError, OSError):
                continue
            if path not in found:
                found.append(path)
        return found

    def shadowed_folders(self) -> list:
        """Workspace folders inside another workspace folder: always shown as a widening."""
        folders = set(self.canonical_folders())
        return [s for s in self.union.shadowed if s.origin == "folder" and s.path in folders and s.by in folders]

    def _record(self, before: Union, added: tuple[str, ...], *, start: bool = False) -> Change:
        after = self.union
        records = self.store.load()
        folders = self.canonical_folders()
        self._reference = compute_union(
            Candidate(p) for p in acknowledged.reference(records, folders, {f: after.paths for f in folders})
        )
        inside = {s.path: s.by for s in self.shadowed_folders()}
        pending = tuple(_classified(w, inside) for w in after.widenings_from(self._reference))
        new = tuple(w for w in pending if not before.contains(w.folder))
        change = Change(before, after, new, added, start)
        if new:
            self.last_change = change
            self.inventory, self.inventory_pending = None, True
        self.pending = pending
        if not pending:
            self.last_change = None
            self.inventory, self.inventory_pending = None, False
        self.widened = bool(pending) or bool(inside)
        self.mounts = None
        return change

    def inventory_span(self) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """(what was accepted, union now): what the inventory compares.

        With nothing accepted yet (a window started with several new folders),
        the folders that another folder shadows stand for the narrow boundary.
        """
        reference = list(self._reference.paths)
        for s in self.shadowed_folders():
            if not any(is_within(s.path, r) for r in reference):
                reference.append(s.path)
        return tuple(reference), self.union.paths

    def common_dirs(self) -> list[str]:
        """Each folder's repository common dir (where ``worktrees/`` lives)."""
        from lsp_bridge.core import worktrees

        found: list[str] = []
        for folder in self.scope.folders:
            location = worktrees.locate(folder).location
            if location is not None and location.common_dir not in found:
                found.append(location.common_dir)
        return found

    def user_config_path(self) -> str:
        from lsp_bridge.core.config import user_config_path

        return user_config_path(self.env)

    def inventory_done(self, report: dict | None, lines: Sequence[str] = ()) -> None:
        self.inventory, self.inventory_pending = report, False
        self.inventory_lines = tuple(lines)

    def set_mounts(self, reconciliation) -> None:
        self.mounts = reconciliation.to_json()
        self.mount_diagnostics = quiet_mount_findings(reconciliation)

    # -- rendering -------------------------------------------------------------

    def status(self) -> dict:
        scope = self.scope
        data: dict = {"version": 1, "session": self.session_id}
        data.update(scope.to_json())
        data["mounts"] = self.mounts
        data["widened"] = self.widened
        data["acknowledged"] = not self.pending
        data["reference"] = list(self._reference.paths)
        data["widening"] = [w.to_json() for w in self.shown_widenings()]
        data["inventory"] = self.inventory
        data["inventory_pending"] = self.inventory_pending
        data["summary"] = self.summary()
        diags = list(self.session.diagnostics) + [d for d in self.mount_diagnostics]
        warnings = warnings_of(diags)
        if self.widened:
            warnings.insert(0, {"severity": "warning", "code": "union-widened", "message": self.widening_headline()})
        data["warnings"] = warnings
        return data

    def shown_widenings(self) -> list[Widening]:
        """Unacknowledged widenings, then folders shadowed by another folder (always shown)."""
        shown = list(self.pending)
        for s in self.shadowed_folders():
            if not any(w.folder == s.by for w in shown):
                shown.append(Widening(s.by, "ancestor", (s.path,)))
        return shown

    def summary(self) -> str:
        """The status bar text: the folders, and the union's entries when they differ."""
        count = len(self.session.folders)
        entries = len(self.scope.union.paths)
        roots = f"{count} root{'s' if count != 1 else ''}"
        if entries and entries != count:  # worktrees or configured roots: say what the union holds
            roots += f", union of {entries} entr{'ies' if entries != 1 else 'y'}"
        if not self.scope.union.paths:
            return "no root: every access is denied" if count else "no folder open"
        if not self.widened:
            return roots
        if not self.pending:
            inside = self.shadowed_folders()
            names = ", ".join(f"{_name(s.path)} inside {_name(s.by)}" for s in inside)
            return f"⚠ {names} (acknowledged)"
        inv = self.inventory
        if not inv:
            return f"⚠ union widened ({roots}); measuring…" if self.inventory_pending else f"⚠ union widened ({roots})"
        return "⚠ union " + _numbers(inv, git_style="({commits} commits)")

    def widening_headline(self) -> str:
        return "; ".join(w.describe() for w in self.shown_widenings())

    def warning_line(self, inventory: dict | None, error: str | None = None) -> str:
        """The one line of ``window/showMessage``: who widened, by how much, what it hands over."""
        change = self.last_change
        widenings = change.widenings if change else self.pending
        names = _and([_name(w.folder) for w in widenings]) or "a folder"
        if change is not None and change.start:
            verb = f"opening {names}"
        elif change is not None and change.added_folders:
            verb = f"adding {names}"
        else:
            verb = names
        text = f"Root Guard: {verb} widened the agent's boundary"
        if error:
            return f"{text} (inventory failed: {error})"
        if inventory:
            text += " " + _numbers(inventory, git_style="with {commits} commits", dash=True)
        return text

    def report(self) -> str:
        """The full widening report (``window/logMessage``, ``rootguard/explain``)."""
        if not self.widened:
            return "Root Guard: the union is not wider than what you acknowledged."
        lines = [self.warning_line(self.inventory) if self.pending else "Root Guard: a workspace folder is inside another."]
        lines += [f"  {w.describe()}" for w in self.shown_widenings()]
        if self._reference.paths:
            lines.append("Acknowledged union: " + ", ".join(self._reference.paths))
        else:
            lines.append("Acknowledged union: nothing yet for these folders")
        if self.inventory:
            lines += self.inventory_lines
        elif self.inventory_pending:
            lines.append("(inventory in progress)")
        if self.pending:
            lines.append("Acknowledge (command rootguard.acknowledge) to accept this union for these folders.")
        return "\n".join(lines)


def _name(path: str) -> str:
    return os.path.basename(path.rstrip("/")) or path


def _and(names: Sequence[str]) -> str:
    if len(names) <= 1:
        return "".join(names)
    return ", ".join(names[:-1]) + " and " + names[-1]


def _classified(widening: Widening, inside: Mapping[str, str]) -> Widening:
    """A new entry that swallows workspace folders is an ancestor widening, acknowledged or not."""
    swallowed = tuple(p for p, by in inside.items() if by == widening.folder and p not in widening.contains)
    if not swallowed:
        return widening
    return replace(widening, kind="ancestor", contains=widening.contains + swallowed)


def _numbers(inv: dict, *, git_style: str, dash: bool = False) -> str:
    """``×6.2 — +3,509 files, 3 secrets files, .git with 43 commits`` from an inventory's JSON."""
    before, after = inv.get("files_before") or 0, inv.get("files_after") or 0
    parts = [f"+{after - before:,} files"]
    creds = len(inv.get("credentials", []))
    if creds:
        parts.append(f"{creds} secrets file{'s' if creds != 1 else ''}")
    for repo in inv.get("git", [])[:1]:
        commits = "?" if repo.get("commits") is None else f"{repo['commits']:,}"
        parts.append(".git " + git_style.format(commits=commits))
    ratio = f"×{_ratio(inv.get('ratio'))}" if before else ""
    joiner = " — " if dash else ": "
    return (ratio + joiner if ratio else ("— " if dash else "")) + ", ".join(parts)


def _ratio(value) -> str:
    if value is None:
        return "?"
    return f"{value:,.0f}" if value >= 10 else f"{value:.1f}"
