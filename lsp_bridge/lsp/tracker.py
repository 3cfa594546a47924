"""What one editor window exposes, change by change: the status and the warnings.

``RootTracker`` is the language server's domain state, with no LSP in it: give
it folders and configuration reloads, and it tells what changed (a
``Change``: did the union widen, how) and renders the ``rootguard/status``
payload and the widening warning text. The server only sends them.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from lsp_bridge.core.diagnostics import Diagnostic
from lsp_bridge.core.policy import Policy
from lsp_bridge.core.scope import Scope
from lsp_bridge.core.session import Session
from lsp_bridge.core.union import Union, Widening
from lsp_bridge.inventory.report import warnings_of


@dataclass(frozen=True)
class Change:
    before: Union
    after: Union
    widenings: tuple[Widening, ...]
    added_folders: tuple[str, ...] = ()

    @property
    def widened(self) -> bool:
        return bool(self.widenings)


@dataclass
class RootTracker:
    env: Mapping[str, str] = field(default_factory=lambda: os.environ)
    session_id: str = field(default_factory=lambda: uuid.uuid4().hex[:12])
    session: Session = field(init=False)
    widened: bool = False
    last_change: Change | None = None
    inventory: dict | None = None
    inventory_pending: bool = False
    mounts: dict | None = None
    mount_diagnostics: tuple[Diagnostic, ...] = ()
    _reference: Union | None = None  # the union before the first widening still in force

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
        """New workspace folders. The first set (``initial``) is the baseline: no warning."""
        before = self.union
        old_folders = set(self.session.folders)
        self.session.set_folders(folders)
        if initial:
            return Change(before, self.union, ())
        return self._record(before, tuple(f for f in folders if f not in old_folders))

    def reload(self, *, trusted: bool = True) -> Change:
        """Re-read configuration files and git metadata (worktrees may have come or gone).

        ``trusted=False``: the change was seen on disk (anyone, the agent included, may
        have made it), so a change that would loosen the policy is held and shown."""
        before = self.union
        self.session.reload_configs(trusted=trusted)
        return self._record(before, ())

    def _record(self, before: Union, added: tuple[str, ...]) -> Change:
        after = self.union
        change = Change(before, after, tuple(after.widenings_from(before)), added)
        if change.widened:
            if self._reference is None:
                self._reference = before
            self.last_change = change
            self.inventory, self.inventory_pending = None, True
        # Still widened while the union holds more than it did before the first widening.
        if self._reference is not None and after.is_subset_of(self._reference):
            self._reference, self.last_change = None, None
            self.inventory, self.inventory_pending = None, False
        self.widened = self._reference is not None
        self.mounts = None
        return change

    def inventory_span(self) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """(union before the widening, union now): what the inventory compares."""
        reference = self._reference if self._reference is not None else self.union
        return reference.paths, self.union.paths

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

    def inventory_done(self, report: dict | None) -> None:
        self.inventory, self.inventory_pending = report, False

    def set_mounts(self, reconciliation) -> None:
        self.mounts = reconciliation.to_json()
        self.mount_diagnostics = tuple(reconciliation.diagnostics)

    # -- rendering -------------------------------------------------------------

    def status(self) -> dict:
        scope = self.scope
        data: dict = {"version": 1, "session": self.session_id}
        data.update(scope.to_json())
        data["mounts"] = self.mounts
        data["widened"] = self.widened
        data["widening"] = [w.to_json() for w in self.last_change.widenings] if self.widened and self.last_change else []
        data["inventory"] = self.inventory
        data["inventory_pending"] = self.inventory_pending
        data["summary"] = self.summary()
        diags = list(self.session.diagnostics) + [d for d in self.mount_diagnostics]
        warnings = warnings_of(diags)
        if self.widened and self.last_change:
            warnings.insert(0, {"severity": "warning", "code": "union-widened", "message": self.widening_headline()})
        data["warnings"] = warnings
        return data

    def summary(self) -> str:
        count = len(self.session.folders)
        entries = len(self.scope.union.paths)
        roots = f"{count} root{'s' if count != 1 else ''}"
        if entries and entries != count:  # worktrees or configured roots: say what the union holds
            roots += f", union of {entries} entr{'ies' if entries != 1 else 'y'}"
        if not self.scope.union.paths:
            return "no root: every access is denied" if count else "no folder open"
        if not self.widened:
            return roots
        inv = self.inventory
        if not inv:
            return f"⚠ union widened ({roots}); measuring…" if self.inventory_pending else f"⚠ union widened ({roots})"
        parts = [f"+{inv['files_after'] - inv['files_before']:,} files"]
        creds = len(inv.get("credentials", []))
        if creds:
            parts.append(f"{creds} secrets file{'s' if creds != 1 else ''}")
        for repo in inv.get("git", [])[:1]:
            commits = repo.get("commits")
            parts.append(f".git ({'?' if commits is None else format(commits, ',')} commits)")
        return f"⚠ union ×{_ratio(inv.get('ratio'))}: " + ", ".join(parts)

    def widening_headline(self) -> str:
        change = self.last_change
        return "; ".join(w.describe() for w in change.widenings) if change else ""

    def warning_message(self, inventory_lines: Sequence[str] = ()) -> str:
        text = "Root Guard: the agent's file boundary widened. " + self.widening_headline()
        if inventory_lines:
            text += "\n" + "\n".join(inventory_lines)
        return text


def _ratio(value) -> str:
    if value is None:
        return "?"
    return f"{value:,.0f}" if value >= 10 else f"{value:.1f}"
