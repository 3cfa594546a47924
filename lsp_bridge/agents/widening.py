"""Widenings from the agent's side: never silent.

An agent widens its own scope with extra directories in its settings (Claude
``additionalDirectories``, Codex ``writable_roots``, Gemini ``includeDirectories``), with
Claude's ``/add-dir`` (the ``DirectoryAdded`` hook) or a permission request carrying
``addDirectories``. Each gets the same one-line warning and inventory as a folder added
in the editor (``lsp_bridge.inventory``): what the union before and after holds, the
credentials, the ``.git`` history, the sibling packages. The warning goes to the tray as
a status (which notifies), to the audit log, and for ``DirectoryAdded`` to the person in
the agent. An extra directory from the settings is warned about once per agent session.
"""

from __future__ import annotations

import hashlib
import os
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from lsp_bridge.agents.model import ToolCall

if TYPE_CHECKING:
    from lsp_bridge.agents.boundary import Boundary

LABELS = {"claude": "Claude Code", "codex": "Codex", "gemini": "Gemini CLI", "copilot": "Copilot CLI"}
MEASURE_SECONDS = 10.0  # an inventory that takes longer is reported without its numbers
WARNED_DIR = "agent-widenings"


@dataclass(frozen=True)
class Widening:
    added: tuple[str, ...]  # the directories, absolute
    widens: bool
    line: str  # one line, read whole in any client
    lines: tuple[str, ...]  # the report, line by line
    inventory: dict | None = None

    def status(self, call: ToolCall, boundary: Boundary) -> dict:
        """A ``rootguard/status``-shaped payload the tray shows (and notifies about)."""
        union = list(boundary.session.scope.union.paths) if boundary.session.scope else []
        return {
            "version": 1, "session": f"{call.agent}:{call.session[:32]}", "roots": list(boundary.roots),
            "union": union + [a for a in self.added if a not in union], "entries": [], "shadowed": [],
            "worktrees": [], "mounts": None, "widened": self.widens, "acknowledged": not self.widens,
            "reference": union, "widening": [], "inventory": self.inventory, "inventory_pending": False,
            "summary": self.line.removeprefix("Root Guard: "), "widening_lines": list(self.lines),
            "warning_line": self.line, "approver": "tray", "config": {"user": boundary.user_file, "project": []},
            "warnings": [{"severity": "warning", "code": "agent-widened", "message": self.line}],
        }


def measure(call: ToolCall, boundary: Boundary, added: Sequence[str], *, verb: str = "adding",
            budget: float = MEASURE_SECONDS) -> Widening:
    """What adding ``added`` to the boundary hands over (the inventory, within ``budget`` seconds)."""
    from lsp_bridge.agents.boundary import open_checked
    from lsp_bridge.core.paths import is_within

    before = tuple(boundary.session.scope.union.paths) if boundary.session.scope else ()
    existing = [a for a in added if os.path.isdir(a)]
    outside = [a for a in existing if not any(is_within(os.path.realpath(a), b) for b in before)]
    who = LABELS.get(call.agent, call.agent)
    names = ", ".join(os.path.basename(a.rstrip("/")) or a for a in added) or "a directory"
    if not outside:
        line = f"Root Guard: {who} {verb} {names}: already inside the boundary, nothing widens"
        return Widening(tuple(added), False, line, (line,))
    after_session = open_checked([*boundary.roots, *outside], boundary.session.env)
    after = tuple(after_session.scope.union.paths) if after_session.scope else ()
    report = _inventory(before, after, budget)
    head = f"Root Guard: {who} {verb} {names} widened the agent's boundary"
    if report is None:
        lines = [f"{head} (measuring took longer than {budget:g} s)"] + [f"+ {p}" for p in outside]
        return Widening(tuple(added), True, lines[0], tuple(lines))
    line = f"{head} {report.summary_line()}" if report.widens else head
    return Widening(tuple(added), True, line, (line, *report.describe()), report.to_json())


def _inventory(before: tuple[str, ...], after: tuple[str, ...], budget: float):
    """The inventory report, or None when it takes longer than ``budget`` (it goes on, unread)."""
    from lsp_bridge.inventory.scan import inventory

    result: list = []

    def run() -> None:
        try:
            result.append(inventory(before, after))
        except Exception as err:  # noqa: BLE001 - the warning goes out without numbers
            result.append(err)

    worker = threading.Thread(target=run, name="rootguard-hook-inventory", daemon=True)
    worker.start()
    worker.join(budget)
    if not result or isinstance(result[0], Exception):
        return None
    return result[0]


def first_time(call: ToolCall, directories: Sequence[str]) -> bool:
    """True the first time this agent session is seen with these extra directories (then marked)."""
    from lsp_bridge.agents.windows import sessions_dir
    from lsp_bridge.approvals.runtime import ensure_private_dir

    key = hashlib.sha256("\0".join([call.agent, call.session, *sorted(directories)]).encode(
        "utf-8", "surrogateescape")).hexdigest()[:32]
    folder = os.path.join(os.path.dirname(sessions_dir()), WARNED_DIR)
    marker = os.path.join(folder, key)
    try:
        ensure_private_dir(os.path.dirname(folder))
        ensure_private_dir(folder)
        fd = os.open(marker, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    except FileExistsError:
        return False
    except OSError:
        return True  # cannot mark: warn every time rather than never
    os.close(fd)
    return True
