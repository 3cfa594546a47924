"""What one editor window exposes, change by change: the status and the warnings.

``RootTracker`` is the language server's domain state, with no LSP in it: give
it folders and configuration reloads, and it tells what changed (a
``Change``: did the union widen, how) and renders the ``rootguard/status``
payload (the typed ``core.status.Status``) and the widening text: the one-line
summary and the widening lines, rendered here once and shown as they are by
the status bar, the tray and the warning message (``widening_text``). The server only sends them.
"""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from lsp_bridge.core import acknowledged
from lsp_bridge.core import status as contract
from lsp_bridge.core.acknowledged import Acknowledgement
from lsp_bridge.core.diagnostics import Diagnostic
from lsp_bridge.core.paths import canonical, is_within
from lsp_bridge.core.session import Session
from lsp_bridge.core.union import Candidate, Union, Widening, compute_union
from lsp_bridge.inventory.report import quiet_mount_findings, warnings_of
from lsp_bridge.lsp.changes import Change
from lsp_bridge.lsp.widening_text import WideningText

if TYPE_CHECKING:  # the policy is compiled on first use, after the first status
    from lsp_bridge.core.policy import Policy
    from lsp_bridge.core.scope import Scope


class MemoryStore:
    """Acknowledgements kept in memory (tests, and a server without a state directory)."""

    def __init__(self) -> None:
        self.records: dict[str, Acknowledgement] = {}
        self.windows: list[tuple[str, ...]] = []

    def load(self) -> dict[str, Acknowledgement]:
        return dict(self.records)

    def acknowledge(self, folders, union, when: float) -> None:
        self.records = acknowledged.acknowledge(self.records, folders, union, when)

    def withdraw(self, folders, when: float) -> None:
        self.records = acknowledged.withdraw(self.records, folders, when)

    def seen(self) -> list[tuple[str, ...]]:
        return list(self.windows)

    def remember(self, folders) -> None:
        self.windows = acknowledged.remember(self.windows, folders)


@dataclass
class RootTracker(WideningText):
    env: Mapping[str, str] = field(default_factory=lambda: os.environ)
    session_id: str = field(default_factory=lambda: uuid.uuid4().hex[:12])
    store: Any = field(default_factory=MemoryStore)
    session: Session = field(init=False)
    widened: bool = False  # shown as widened: unacknowledged widenings, or a folder inside another
    pending: tuple[Widening, ...] = ()  # what is wider than the person acknowledged
    last_change: Change | None = None
    inventory: dict | None = None
    inventory_lines: tuple[str, ...] = ()  # the inventory report's human lines
    inventory_summary: str | None = None  # its one line, e.g. "×180: +60,660 files, 3 secrets files"
    inventory_error: str | None = None
    inventory_pending: bool = False
    mounts: dict | None = None
    mount_diagnostics: tuple[Diagnostic, ...] = ()
    withdrawable: bool = False  # an acknowledgement of this window's folders can be withdrawn
    _reference: Union = field(default_factory=Union)  # what the person accepted for these folders
    _agents: tuple[tuple[str, ...], list] | None = None  # (folders, agent states) last read

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
        added = tuple(f for f in self.session.folders if f not in old_folders)  # both canonical
        verb = "adding" if added else ""
        if initial:
            verb, added = self._start_verb()
        return self._record(before, added, start=initial, verb=verb)

    def _start_verb(self) -> tuple[str, tuple[str, ...]]:
        """What the person did to get a window that starts with these folders, and which folders they brought.

        A window whose folder set was warned about before is *reopened*; one where some folders have
        a record and others none had those others *added* (VS Code reloads into an untitled workspace
        after Add Folder: the server starts afresh with both folders); anything else is *opened*."""
        folders = self.canonical_folders()
        records = self.store.load()
        if acknowledged.window_key(folders) in self.store.seen():
            return "reopening", tuple(folders)
        new = tuple(f for f in folders if f not in records)
        if new and len(new) < len(folders):
            return "adding", new
        return "opening", tuple(folders)

    def reload(self, *, trusted: bool = True) -> Change:
        """Re-read configuration files and git metadata (worktrees may have come or gone).

        ``trusted=False``: the change was seen on disk (anyone, the agent included, may
        have made it), so a change that would loosen the policy is held and shown."""
        before = self.union
        self.session.reload_configs(trusted=trusted)
        self.forget_agents()  # an agent's settings may have changed with the files watched
        return self._record(before, ())

    def acknowledge(self) -> Change:
        """The person accepts the current union for this window's folders."""
        self.store.acknowledge(self.canonical_folders(), self.union.paths, time.time())
        return self._record(self.union, ())

    def withdraw(self) -> Change:
        """The person takes the acknowledgement back: each folder's record returns to the union it
        replaced, and the window is measured (and warned about) as before the acknowledgement."""
        self.store.withdraw(self.canonical_folders(), time.time())
        return self._record(Union(), tuple(self.canonical_folders()), verb="withdrawing")

    def remember_window(self) -> None:
        """This window's folder set was warned about: starting it again is *reopening* it."""
        self.store.remember(self.canonical_folders())

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

    def _record(self, before: Union, added: tuple[str, ...], *, start: bool = False, verb: str = "") -> Change:
        after = self.union
        records = self.store.load()
        folders = self.canonical_folders()
        self._reference = compute_union(
            Candidate(p) for p in acknowledged.reference(records, folders, {f: after.paths for f in folders})
        )
        inside = {s.path: s.by for s in self.shadowed_folders()}
        pending = tuple(_classified(w, inside) for w in after.widenings_from(self._reference))
        new = tuple(w for w in pending if not before.contains(w.folder))
        change = Change(before, after, new, added, start, verb)
        if new:
            self.last_change = change
            self.inventory, self.inventory_pending = None, True
            self.inventory_lines, self.inventory_error, self.inventory_summary = (), None, None
        self.pending = pending
        # A window of several folders with a record: what "Withdraw acknowledgement" undoes. (A folder
        # opened alone accepts its own union implicitly: there is nothing to withdraw.)
        self.withdrawable = len(folders) > 1 and any(f in records for f in folders)
        if not pending:
            self.last_change = None
            self.inventory, self.inventory_pending = None, False
            self.inventory_lines, self.inventory_error, self.inventory_summary = (), None, None
        self.widened = bool(pending) or bool(inside)
        self.mounts = None
        return change

    def inventory_span(self) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """(what was accepted, union now): what the inventory compares.

        With nothing accepted yet (a window started with several new folders), the
        folders that another folder shadows stand for the narrow boundary, each with
        the union it has on its own (its worktrees included): the same reference a
        live *Add Folder* compares with, so both count the same files and packages.
        """
        reference = list(self._reference.paths)
        for s in self.shadowed_folders():
            if not any(is_within(s.path, r) for r in reference):
                reference += [p for p in self._own_union(s.path) if p not in reference]
        return tuple(reference), self.union.paths

    def acknowledged_roots(self) -> tuple[str, ...]:
        """The narrow union: what the person acknowledged (the union itself when nothing is pending).
        Suggestions (narrow mounts, docker arguments) are made for this, never for a widened union."""
        return self.inventory_span()[0] if self.pending else self.union.paths

    def _own_union(self, folder: str) -> tuple[str, ...]:
        """The union ``folder`` has when opened alone (what a one-folder window accepts implicitly)."""
        alone = Session(env=self.env)
        alone.set_folders([folder])
        own = alone.scope.union.paths if alone.scope is not None else ()
        return own or (folder,)

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

    def inventory_done(self, report: dict | None, error: str | None = None, summary: str | None = None) -> None:
        """The inventory finished: its JSON report and one-line summary (``summary_line``:
        rendered there, once), or the error. Its human lines follow (``inventory_described``)."""
        self.inventory, self.inventory_pending = report, False
        self.inventory_lines, self.inventory_error = (), error
        self.inventory_summary = summary

    def inventory_described(self, lines: Sequence[str]) -> None:
        """The finished inventory's human lines (``InventoryReport.describe``), which the
        server renders after the warning has gone out (the log and the report need them)."""
        self.inventory_lines = tuple(lines)

    def set_mounts(self, reconciliation) -> None:
        self.mounts = reconciliation.to_json()
        self.mount_diagnostics = quiet_mount_findings(reconciliation)

    # -- rendering -------------------------------------------------------------

    def status(self, approver: contract.Approver = "none", watch_limit: str | None = None) -> contract.Status:
        """The ``rootguard/status`` payload (see ``core/status.py``)."""
        scope = self.scope
        union = scope.union.to_json()
        diags = list(self.session.diagnostics) + [d for d in self.mount_diagnostics]
        warnings = [contract.from_json(contract.StatusWarning, w) for w in warnings_of(diags)]
        if self.widened:
            warnings.insert(0, contract.StatusWarning("warning", "union-widened", self.widening_headline()))
        agents = self.agents()
        warnings += [contract.StatusWarning("warning", "agent-unguarded", a.warning) for a in agents if a.warning]
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
            acknowledged=not self.pending,
            withdrawable=self.withdrawable,
            reference=list(self._reference.paths),
            widening=[contract.from_json(contract.WideningEntry, w.to_json()) for w in self.shown_widenings()],
            inventory=contract.from_json(contract.Inventory, self.inventory) if self.inventory is not None else None,
            inventory_pending=self.inventory_pending,
            summary=self.summary(),
            widening_lines=self.widening_lines(),
            warning_line=self.warning_line(self.inventory, self.inventory_error) if self.pending else "",
            warnings=warnings,
            approver=approver,
            config=self.config_paths(),
            watch_limit=watch_limit,
            agents=[contract.from_json(contract.AgentEntry, a.to_json()) for a in agents if a.present],
        )

    def agents(self) -> list:
        """The agents present for the window's folders and whether each is guarded (read again when
        the folders change or the configuration is reloaded: ``forget_agents``)."""
        folders = tuple(self.canonical_folders())
        if self._agents is None or self._agents[0] != folders:
            from lsp_bridge.agents.presence import agent_states

            try:
                self._agents = (folders, agent_states(folders, self.env))
            except (OSError, ValueError):
                self._agents = (folders, [])
        return self._agents[1]

    def forget_agents(self) -> None:
        self._agents = None

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

    def shown_widenings(self) -> list[Widening]:
        """Unacknowledged widenings, then folders shadowed by another folder (always shown)."""
        shown = list(self.pending)
        for s in self.shadowed_folders():
            if not any(w.folder == s.by for w in shown):
                shown.append(Widening(s.by, "ancestor", (s.path,)))
        return shown

    def acknowledged_here(self) -> bool:
        """True when this window has an acknowledgement to withdraw (set by every change)."""
        return self.withdrawable


def _classified(widening: Widening, inside: Mapping[str, str]) -> Widening:
    """A new entry that swallows workspace folders is an ancestor widening, acknowledged or not."""
    swallowed = tuple(p for p, by in inside.items() if by == widening.folder and p not in widening.contains)
    if not swallowed:
        return widening
    return replace(widening, kind="ancestor", contains=widening.contains + swallowed)
