"""The linked worktrees of a repository, read from ``<common>/worktrees/<name>`` (never by running git).

An entry is listed only when the checkout's ``.git`` file points back at its admin directory;
mismatched entries are left out with a diagnostic. ``locked`` carries the reason text. An entry
whose ``.git`` file is gone is ``missing``; it is also ``prunable`` unless locked (git's meaning).
Every file is read on every call: the listing decides which checkouts may become roots.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from typing import TYPE_CHECKING

from lsp_bridge.core.diagnostics import Diagnostic
from lsp_bridge.core.git_admin import (
    SEP,
    BadFile,
    child,
    gitfile_line,
    read_small,
    resolve,
    same,
    single_line,
    why,
)

if TYPE_CHECKING:
    from lsp_bridge.core.diagnostics import Severity

_PRUNE_MISSING = "gitdir file points to non-existent location"


@dataclass(frozen=True)
class LinkedWorktree:
    """A linked worktree (in ``sibling_checkouts`` also the main checkout)."""

    path: str  # canonical worktree top-level directory
    admin_dir: str  # <common>/worktrees/<name> (the common dir for the main checkout)
    name: str  # "" for the main checkout
    locked: bool = False
    lock_reason: str | None = None
    prunable: bool = False  # git would prune it (missing and not locked)
    prune_reason: str | None = None
    missing: bool = False  # its .git file is gone, locked or not
    is_main: bool = False  # the main checkout (only in sibling_checkouts)


def linked_worktrees(common: str, notes: list[Diagnostic]) -> tuple[LinkedWorktree, ...]:
    """Every usable entry of ``<common>/worktrees``, sorted by name; what was left out goes to ``notes``."""
    listed = _worktree_names(child(common, "worktrees"), notes)
    if listed is None:
        return ()
    root, names = listed
    parents: dict[str, str] = {}  # for this call only: worktrees usually share a parent directory
    found: list[LinkedWorktree] = []
    for name in names:
        worktree = _worktree_entry(root + SEP + name, name, parents, notes)
        if worktree is not None:
            found.append(worktree)
    return tuple(found)


def _worktree_names(root: str, notes: list[Diagnostic]) -> tuple[str, tuple[str, ...]] | None:
    """``(root, sorted admin dir names)`` of ``<common>/worktrees``; ``None`` without one."""
    try:
        if os.path.islink(root):
            root = os.path.realpath(root)
        with os.scandir(root) as entries:
            return root, tuple(sorted(e.name for e in entries if e.is_dir(follow_symlinks=False)))
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as err:
        notes.append(Diagnostic("warning", "git.unreadable", f"cannot list {root}: {why(err)}", root))
        return None


def _worktree_entry(admin: str, name: str, parents: dict[str, str], notes: list[Diagnostic]) -> LinkedWorktree | None:
    """One ``<common>/worktrees/<name>`` entry read from its files, or ``None`` (with a note) when unusable."""
    pointer_file = admin + SEP + "gitdir"
    try:
        pointer = single_line(read_small(pointer_file))
    except (OSError, BadFile) as err:
        notes.append(_skipped(name, f"cannot use {pointer_file} ({why(err)})", pointer_file, "information"))
        return None
    raw = pointer if os.path.isabs(pointer) else os.path.join(admin, pointer)
    if not raw.endswith(SEP + ".git"):
        notes.append(_skipped(name, f"{pointer_file} does not name a .git file", pointer_file))
        return None
    path = _worktree_path(raw[:-5] or SEP, parents)  # "/.git" names the root
    locked, reason = _lock_state(admin)
    dot_git = path + SEP + ".git"
    try:
        target = gitfile_line(read_small(dot_git))
    except (FileNotFoundError, NotADirectoryError):
        prune_reason = None if locked else _PRUNE_MISSING
        return LinkedWorktree(path, admin, name, locked, reason, not locked, prune_reason, True)
    except (OSError, BadFile) as err:
        notes.append(_skipped(name, f"{dot_git} {why(err)}", dot_git, code="git.worktree-mismatch"))
        return None
    if not _names_admin(path, target, admin):
        notes.append(_skipped(name, f"{dot_git} does not point back at {admin}", dot_git, code="git.worktree-mismatch"))
        return None
    return LinkedWorktree(path, admin, name, locked, reason)


def _skipped(name: str, reason: str, file: str, severity: Severity = "warning", code: str = "git.worktree-skipped") -> Diagnostic:
    return Diagnostic(severity, code, f"worktree {name!r}: {reason}; left out", file)


def _worktree_path(raw: str, parents: dict[str, str]) -> str:
    """``realpath(raw)``, resolving each parent directory once per listing.

    The worktree directory's own entry then only needs an ``lstat`` to see whether it is a symbolic link.
    """
    parent, _, leaf = raw.rpartition(SEP)
    if leaf in ("", ".", ".."):
        return os.path.realpath(raw)
    parent = parent or SEP
    real_parent = parents.get(parent)
    if real_parent is None:
        real_parent = parents[parent] = os.path.realpath(parent)
    candidate = real_parent + SEP + leaf if real_parent != SEP else SEP + leaf
    try:
        if stat.S_ISLNK(os.lstat(candidate).st_mode):
            return os.path.realpath(candidate)
    except OSError:
        pass
    return candidate


def _names_admin(path: str, target: str, admin: str) -> bool:
    """Whether the ``.git`` file of ``path`` names ``admin``.

    The text alone decides for ``admin`` itself, or a relative path whose only
    ``..`` steps come first: they climb the canonical ``path``, which has no
    symbolic link to step back through. Anything else is resolved (``realpath``).
    """
    if target == admin:
        return True
    if not os.path.isabs(target) and _climbs_first(target):
        if os.path.normpath(os.path.join(path, target)) == admin:
            return True
    return same(resolve(path, target), admin)


def _climbs_first(relative: str) -> bool:
    parts = [p for p in relative.split(SEP) if p not in ("", ".")]
    downward = [i for i, p in enumerate(parts) if p != ".."]
    return not downward or all(p != ".." for p in parts[downward[0] :])


def _lock_state(admin: str) -> tuple[bool, str | None]:
    """``(locked, reason)``; an unreadable lock file still locks."""
    try:
        data = read_small(admin + SEP + "locked")
    except (FileNotFoundError, NotADirectoryError):
        return False, None
    except (OSError, BadFile):
        return True, None
    return True, data.decode("utf-8", errors="replace").strip() or None
