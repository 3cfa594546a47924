"""The widening as text: the one-line summary, the warning line, the widening lines and the full report.

Rendered once, here, from a ``RootTracker``'s state (``WideningText`` is its text half), and shown as
they are by the status bar, the tray and the warning message.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import TYPE_CHECKING

from lsp_bridge.core.paths import is_within
from lsp_bridge.core.terminal_text import one_line

if TYPE_CHECKING:
    from lsp_bridge.core.scope import Scope
    from lsp_bridge.core.session import Session
    from lsp_bridge.core.union import Shadowed, Union, Widening
    from lsp_bridge.lsp.changes import Change


class WideningText:
    """The text half of ``RootTracker``: every method reads the tracker's state, none changes it."""

    if TYPE_CHECKING:  # the tracker's state (lsp/tracker.py)
        session: Session
        widened: bool
        pending: tuple[Widening, ...]
        last_change: Change | None
        inventory: dict | None
        inventory_lines: tuple[str, ...]
        inventory_summary: str | None
        inventory_error: str | None
        inventory_pending: bool
        _reference: Union

        @property
        def scope(self) -> Scope: ...

        @property
        def union(self) -> Union: ...

        def canonical_folders(self) -> list[str]: ...

        def shadowed_folders(self) -> list[Shadowed]: ...

        def shown_widenings(self) -> list[Widening]: ...

        def acknowledged_here(self) -> bool: ...

    def summary(self) -> str:
        """One line for a status bar, a tooltip or a menu; the same text everywhere.

        The root count is the union's entries (what the agent can reach: worktrees and
        configured roots included), said with how many of them are workspace folders when
        that differs."""
        if not self.scope.union.paths:
            broken = self.config_error()
            if broken:
                return f"⚠ invalid configuration, every access is denied: {broken}"
            return "no root: every folder is invalid, every access is denied" if self.session.folders else "no folder open"
        roots = self.roots_text()
        if not self.widened:
            return roots
        if not self.pending:
            inside = self.shadowed_folders()
            names = ", ".join(f"{_name(s.path)} inside {_name(s.by)}" for s in inside)
            return f"⚠ {names} (acknowledged)"
        if not (self.inventory and self.inventory_summary):
            return f"⚠ union widened ({roots}); measuring…" if self.inventory_pending else f"⚠ union widened ({roots})"
        return f"⚠ union {self.inventory_summary}"

    def roots_text(self) -> str:
        """``2 roots``, or ``3 roots (1 folder)`` when worktrees or configuration add entries."""
        entries = len(self.scope.union.paths)
        folders = len(self.canonical_folders())
        text = f"{entries} root{'s' if entries != 1 else ''}"
        if folders != entries:
            text += f" ({folders} folder{'s' if folders != 1 else ''})"
        return text

    def config_error(self) -> str | None:
        """The first configuration error, as ``file:line:column: message``, when one is in force."""
        for d in self.session.config_diagnostics():
            if d.severity == "error":
                where = d.file or "ROOTGUARD_ROOTS"
                if d.range is not None:
                    where += f":{d.range.start_line + 1}:{d.range.start_column + 1}"
                return one_line(f"{where}: {d.message}")
        return None

    def widening_headline(self) -> str:
        return "; ".join(one_line(w.describe()) for w in self.shown_widenings())

    def _brought_by(self, entry: str) -> str | None:
        """The workspace folder that brought union entry ``entry`` (itself, or the folder a worktree copy
        remaps), or None for an entry from configuration."""
        folders = self.canonical_folders()
        if entry in folders:
            return entry
        for w in self.scope.worktrees:
            if os.path.realpath(w.path) != entry:
                continue
            for folder in folders:
                offset = os.path.relpath(folder, w.repository)
                if is_within(folder, w.repository) and offset == os.path.relpath(w.path, w.checkout):
                    return folder
        return None

    def _groups(self) -> tuple[str, list[str], list[str], list[str], list[str]]:
        """(verb, folders the person just brought, their entries, folders brought earlier and not
        acknowledged, their entries): the pending widenings attributed to what brought them."""
        change = self.last_change
        verb = change.verb if change is not None else ""
        just = set(change.added_folders) if change is not None else set()
        now_names: list[str] = []
        now_entries: list[str] = []
        earlier_names: list[str] = []
        earlier_entries: list[str] = []
        for w in self.pending:
            folder = self._brought_by(w.folder)
            fresh = (folder in just) if folder is not None else (change is not None and w in change.widenings)
            names, entries = (now_names, now_entries) if fresh else (earlier_names, earlier_entries)
            name = _name(folder or w.folder)
            entry = self.union.entry_for(w.folder) if folder is None else None
            if entry is not None and entry.origin == "git":  # [workspace] git: the setting brought it
                name = f"git access to {_name(os.path.dirname(entry.path))}"
            if folder is None or name not in names:
                if name not in names:
                    names.append(name)
            entries.append(w.folder)
        if not now_entries:  # nothing attributable to the last action: all of it is "the folders"
            return verb, earlier_names, earlier_entries, [], []
        return verb, now_names, now_entries, earlier_names, earlier_entries

    def warning_line(self, inventory: dict | None, error: str | None = None) -> str:
        """The one line of ``window/showMessage``: what the person did, what it handed over,
        and what earlier folders still hand over without an acknowledgement.

        ``Root Guard: adding shop widened the agent's boundary ×6.2: +3,509 files, 3 secrets files,
        .git (43 commits)``; after an unacknowledged widening, ``Root Guard: adding outside widened
        the agent's boundary: +1 file; not yet acknowledged: shop (+3,509 files, ...)``."""
        verb, names, entries, earlier, earlier_entries = self._groups()
        who = _and(names) or "a folder"
        if verb == "withdrawing":
            text = f"Root Guard: acknowledgement withdrawn: {who} widened the agent's boundary"
        elif verb:
            text = f"Root Guard: {verb} {who} widened the agent's boundary"
        else:
            text = f"Root Guard: {who} widened the agent's boundary"
        if error:
            return f"{text} (inventory failed: {one_line(str(error))})"
        if not (inventory and self.inventory_summary):
            return text
        report = self._report_model(inventory)
        if not earlier:
            return text + " " + self.inventory_summary  # the status bar's text: rendered once, by the inventory
        return (f"{text}: {report.part(entries)}; not yet acknowledged: {_and(earlier)} ({report.part(earlier_entries)}); "
                f"{self.inventory_summary.split(':', 1)[0]} in all")

    @staticmethod
    def _report_model(inventory: dict):
        from lsp_bridge.inventory.model import CredentialFile, GitDir, InventoryReport

        return InventoryReport(
            before=tuple(inventory["before"]), after=tuple(inventory["after"]), added_roots=tuple(inventory["added_roots"]),
            widens=inventory["widens"], files_before=inventory["files_before"], files_after=inventory["files_after"],
            credentials=tuple(CredentialFile(c["path"], c["count"]) for c in inventory["credentials"]),
            git=tuple(GitDir(g["path"], g["bytes"], g["commits"], via=tuple(g["via"])) for g in inventory["git"]),
            added_files=tuple((a["path"], a["files"]) for a in inventory.get("added_files", [])),
        )

    def widening_lines(self) -> list[str]:
        """The widening, line by line: which entry widened what, then what it hands over."""
        if not self.widened:
            return []
        lines = [w.describe() for w in self.shown_widenings()]
        if self.inventory_lines:
            lines += self.inventory_lines
        elif self.inventory_error:
            lines.append(f"(inventory failed: {one_line(str(self.inventory_error))})")
        elif self.inventory_pending:
            lines.append("Measuring what the new union hands over…")
        return lines

    def report(self) -> str:
        """The full widening report (``window/logMessage``, ``rootguard/explain``)."""
        if not self.widened:
            text = "Root Guard: the union is not wider than what you acknowledged."
            if self.acknowledged_here():
                text += ("\nAcknowledged union: " + ", ".join(one_line(p) for p in self._reference.paths)
                         + "\nWithdraw the acknowledgement (command rootguard.withdrawAcknowledgement) to be warned "
                         "about this union again.")
            return text
        lines = [self.warning_line(self.inventory) if self.pending else "Root Guard: a workspace folder is inside another."]
        lines += [f"  {one_line(w.describe())}" for w in self.shown_widenings()]
        if self._reference.paths:
            lines.append("Acknowledged union: " + ", ".join(one_line(p) for p in self._reference.paths))
        else:
            lines.append("Acknowledged union: nothing yet for these folders")
        if self.inventory:
            verb, names, entries, earlier, earlier_entries = self._groups()
            if earlier:
                report = self._report_model(self.inventory)
                lines.append(f"{(verb or 'changing').capitalize()} {_and(names)}: {report.part(entries)}")
                lines.append(f"Not yet acknowledged, from before: {_and(earlier)}: {report.part(earlier_entries)}")
            lines += self.inventory_lines
        elif self.inventory_pending:
            lines.append("(inventory in progress)")
        if self.pending:
            lines.append("Acknowledge (command rootguard.acknowledge) to accept this union for these folders.")
        elif self.acknowledged_here():
            lines.append("Acknowledged. Withdraw the acknowledgement (command rootguard.withdrawAcknowledgement) "
                         "to be warned about this union again.")
        return "\n".join(lines)


def _name(path: str) -> str:
    return one_line(os.path.basename(path.rstrip("/")) or path)


def _and(names: Sequence[str]) -> str:
    if len(names) <= 1:
        return "".join(names)
    return ", ".join(names[:-1]) + " and " + names[-1]
