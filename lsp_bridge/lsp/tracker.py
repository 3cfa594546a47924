"""What one editor window exposes, change by change: the status and the warnings.

``RootTracker`` is the language server's domain state, with no LSP in it: give
it folders and configuration reloads, and it tells what changed (a
``Change``: did the union widen, how) and renders the ``rootguard/status``
payload (the typed ``core.status.Status``) and the widening text: the one-line
summary and the widening lines, rendered here once and shown as they are by
the status bar, the tray and the warning message. The server only sends them.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from lsp_bridge.core import status as contract
from lsp_bridge.core.diagnostics import Diagnostic
from lsp_bridge.core.session import Session
from lsp_bridge.core.union import Union, Widening
from lsp_bridge.inventory.report import warnings_of

if TYPE_CHECKING:  # the policy is compiled on first use, after the first status
    from lsp_bridge.core.policy import Policy
    from lsp_bridge.core.scope import Scope


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
    inventory_lines: tuple[str, ...] = ()  # the inventory report's human lines
    inventory_summary: str | None = None  # its one line, e.g. "×180: +60,660 files, 3 secrets files"
    inventory_error: str | None = None
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
            self.inventory_lines, self.inventory_error = (), None
        # Still widened while the union holds more than it did before the first widening.
        if self._reference is not None and after.is_subset_of(self._reference):
            self._reference, self.last_change = None, None
            self.inventory, self.inventory_pending = None, False
            self.inventory_lines, self.inventory_error = (), None
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

    def inventory_done(self, report: dict | None, lines: Sequence[str] = (), error: str | None = None,
                       summary: str | None = None) -> None:
        """The inventory finished: its JSON report, human lines and one-line summary
        (``InventoryReport.describe`` and ``summary_line``: rendered there, once), or the error."""
        self.inventory, self.inventory_pending = report, False
        self.inventory_lines, self.inventory_error = tuple(lines), error
        self.inventory_summary = summary

    def set_mounts(self, reconciliation) -> None:
        self.mounts = reconciliation.to_json()
        self.mount_diagnostics = tuple(reconciliation.diagnostics)

    # -- rendering -------------------------------------------------------------

    def status(self, approver: contract.Approver = "none") -> contract.Status:
        """The ``rootguard/status`` payload (see ``core/status.py``)."""
        scope = self.scope
        union = scope.union.to_json()
        widened = self.widened and self.last_change is not None
        diags = list(self.session.diagnostics) + [d for d in self.mount_diagnostics]
        warnings = [contract.from_json(contract.StatusWarning, w) for w in warnings_of(diags)]
        if widened:
            warnings.insert(0, contract.StatusWarning("warning", "union-widened", self.widening_headline()))
        return contract.Status(
            version=contract.STATUS_VERSION,
            session=self.session_id,
            roots=list(scope.folders),
            union=list(scope.union.paths),
            entries=[contract.from_json(contract.UnionEntry, e) for e in union["entries"]],
            shadowed=[contract.from_json(contract.ShadowedEntry, s) for s in union["shadowed"]],
            worktrees=[contract.from_json(contract.WorktreeEntry, w.to_json()) for w in scope.worktrees],
            mounts=contract.from_json(contract.Mounts, self.mounts) if self.mounts is not None else None,
            widened=self.widened,
            widening=[contract.from_json(contract.WideningEntry, w.to_json()) for w in self.last_change.widenings]
            if widened and self.last_change
            else [],
            inventory=contract.from_json(contract.Inventory, self.inventory) if self.inventory is not None else None,
            inventory_pending=self.inventory_pending,
            summary=self.summary(),
            widening_lines=self.widening_lines(),
            warnings=warnings,
            approver=approver,
            config=self.config_paths(),
        )

    def config_paths(self) -> contract.ConfigPaths:
        try:
            user: str | None = self.user_config_path()
        except ValueError:  # an invalid ROOTGUARD_CONFIG: reported as a diagnostic
            user = None
        project: list[str] = []
        for _folder, config in self.session.configs():
            if config.project_file and config.project_file not in project:
                project.append(config.project_file)
        return contract.ConfigPaths(user, project)

    def summary(self) -> str:
        """One line for a status bar or a menu; the same text everywhere."""
        count = len(self.session.folders)
        entries = len(self.scope.union.paths)
        roots = f"{count} root{'s' if count != 1 else ''}"
        if entries and entries != count:  # worktrees or configured roots: say what the union holds
            roots += f", union of {entries} entr{'ies' if entries != 1 else 'y'}"
        if not self.scope.union.paths:
            return "no root: every access is denied" if count else "no folder open"
        if not self.widened:
            return roots
        if not (self.inventory and self.inventory_summary):
            return f"⚠ union widened ({roots}); measuring…" if self.inventory_pending else f"⚠ union widened ({roots})"
        return f"⚠ union {self.inventory_summary}"

    def widening_headline(self) -> str:
        change = self.last_change
        return "; ".join(w.describe() for w in change.widenings) if change else ""

    def widening_lines(self) -> list[str]:
        """The widening, line by line: which entry widened what, then what it hands over."""
        if not (self.widened and self.last_change):
            return []
        lines = [w.describe() for w in self.last_change.widenings]
        if self.inventory_lines:
            lines += self.inventory_lines
        elif self.inventory_error:
            lines.append(f"(inventory failed: {self.inventory_error})")
        elif self.inventory_pending:
            lines.append("Measuring what the new union hands over…")
        return lines

    def warning_message(self) -> str:
        """The ``window/showMessage`` text: the summary, then the widening lines."""
        summary = self.summary().removeprefix("⚠ ")
        return f"Root Guard: the agent's file boundary widened — {summary}\n" + "\n".join(self.widening_lines())
