"""A session's scope: the host baseline built from folders, config and worktrees.

The baseline is the union of, in order:

* the editor's workspace folders — or ``workspace.roots`` when configured
  (a user or environment setting replaces the folders; a project file can only
  narrow them: its entries outside the folders are dropped with a diagnostic);
* for each of those inside a git repository, the same folder in every sibling
  checkout (the main checkout and the linked worktrees) when
  ``worktrees = "include"`` or ``"request"``. The folder's offset is remapped
  (``packages/checkout`` in one checkout maps to ``packages/checkout`` in the
  others), so a narrow root stays narrow in every worktree;
* version 1 only: the OS temporary directory unless ``allow_temp_directory =
  false``, and ``/`` when ``allow_any_path = true`` — when the user file (or the
  environment) holds the version 1 meanings. A version 1 *project* file cannot
  widen the boundary: those areas only become reachable with approval
  (``Scope.approval_only``), as a project ``allow`` beyond the baseline would.

Nothing here reads the process's current directory.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from lsp_bridge.core import git_access
from lsp_bridge.core import worktrees as wt
from lsp_bridge.core.diagnostics import Diagnostic
from lsp_bridge.core.paths import canonical, read_regular, relative_to
from lsp_bridge.core.settings import Config, PathRule
from lsp_bridge.core.union import Candidate, Union, compute_union

if TYPE_CHECKING:
    from typing import Any


@dataclass(frozen=True)
class WorktreeRoot:
    """A sibling checkout of a folder's repository, and how it participates."""

    path: str  # the folder remapped into this checkout (or its top level)
    checkout: str  # the sibling checkout's top level
    repository: str  # the folder's own checkout top level
    mode: str  # include | request | ignore
    locked: bool = False
    prunable: bool = False

    def to_json(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "checkout": self.checkout,
            "repository": self.repository,
            "mode": self.mode,
            "locked": self.locked,
            "prunable": self.prunable,
        }


@dataclass(frozen=True)
class Scope:
    folders: tuple[str, ...]  # canonical editor folders that exist, in order
    union: Union  # the host baseline
    worktrees: tuple[WorktreeRoot, ...] = ()
    # (checkout top level, sibling checkout top level, mode) for remapping relative rules
    remaps: tuple[tuple[str, str, str], ...] = ()
    diagnostics: tuple[Diagnostic, ...] = field(default=())
    # Areas a version 1 *project* file would have allowed ([safety]): approval only.
    approval_only: Union = field(default_factory=Union)
    # Git admin directories of the folders' repositories (protected targets).
    admin_dirs: tuple[str, ...] = ()
    # [workspace] git: the roots' checkouts with their git directories and the mode, and the built-in
    # rules that decide the git directories granted (core/git_access.py).
    git: tuple[git_access.GitGrant, ...] = ()
    git_rules: tuple[PathRule, ...] = ()

    @property
    def first_root(self) -> str | None:
        return self.folders[0] if self.folders else None

    def request_checkouts(self) -> tuple[str, ...]:
        return tuple(sorted({w.checkout for w in self.worktrees if w.mode == "request"}))

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"roots": list(self.folders)}
        data.update(self.union.to_json())
        data["worktrees"] = [w.to_json() for w in self.worktrees]
        return data


Locator = Callable[[str], "wt.Discovery"]


def build_scope(folders: Sequence[str], config: Config, *, locate: Locator | None = None) -> Scope:
    """Compute the baseline for ``folders`` (absolute paths) under ``config``."""
    locate = locate or wt.locate
    diagnostics: list[Diagnostic] = []
    folder_union = compute_union(Candidate(f, "folder", "workspace folder") for f in folders)
    valid_folders = tuple(_canonical_folders(folders))

    base = _base_candidates(folders, folder_union, config, diagnostics)
    remaps: list[tuple[str, str, str]] = []
    worktree_roots: list[WorktreeRoot] = []
    extra: list[Candidate] = []
    seen_checkouts: set[str] = set()
    admin_dirs: list[str] = []
    locations: list[wt.GitLocation] = []
    for cand in list(base):
        if not (os.path.isabs(cand.path) and os.path.isdir(cand.path)):
            continue  # rejected by compute_union below, with a diagnostic
        location = _safe_locate(locate, cand.path, diagnostics)
        pointed = _gitdir_pointer(cand.path)  # protected even when not followed (no back-link)
        if pointed and pointed not in admin_dirs:
            admin_dirs.append(pointed)
        if location is None:
            continue
        locations.append(location)
        for admin in (location.git_dir, location.common_dir, *(w.admin_dir for w in location.worktrees)):
            admin = os.path.realpath(admin) if admin else admin
            if admin and admin not in admin_dirs:
                admin_dirs.append(admin)
        if location.toplevel is None:
            continue
        toplevel = location.toplevel
        offset = relative_to(canonical(cand.path), toplevel)
        usable = set(wt.sibling_worktrees(location))
        for sibling in wt.sibling_checkouts(location):
            if toplevel + "\0" + sibling.path not in seen_checkouts:
                seen_checkouts.add(toplevel + "\0" + sibling.path)
                remaps.append((toplevel, sibling.path, config.worktrees))
            target = os.path.join(sibling.path, offset) if offset else sibling.path
            root = WorktreeRoot(target, sibling.path, toplevel, config.worktrees, sibling.locked, sibling.prunable)
            worktree_roots.append(root)
            if config.worktrees == "ignore" or sibling.path not in usable or not os.path.isdir(target):
                continue
            what = "main checkout" if sibling.is_main else "linked worktree"
            why = f"{what} of the repository of {toplevel}"
            why = f"included {why}" if config.worktrees == "include" else f"{why} (approval required)"
            extra.append(Candidate(target, "worktree", why))

    union = compute_union([*base, *extra])
    granted = git_access.grants(config.git, locations)
    if config.git != "none":  # the git directories a root does not already contain join the union (and are counted)
        wanted = [c for c in git_access.candidates(granted, config.user_file) if not union.contains(c.path)]
        union = compute_union([*base, *extra, *wanted]) if wanted else union
    diagnostics.extend(d for d in union.diagnostics if d not in diagnostics)
    approval_only = compute_union(_v1_widening(config, diagnostics) if config.safety_source == "project" else [])
    return Scope(valid_folders, union, tuple(worktree_roots), tuple(remaps), tuple(diagnostics), approval_only,
                 tuple(admin_dirs), granted, git_access.rules(granted, config.user_file))


def _canonical_folders(folders: Sequence[str]) -> Iterator[str]:
    for folder in folders:
        try:
            path = canonical(folder)
        except (ValueError, OSError):
            continue
        if os.path.isdir(path):
            yield path


def _v1_widening(config: Config, diagnostics: list[Diagnostic]) -> list[Candidate]:
    """What version 1 ``[safety]`` meanings add to the baseline: ``/`` or the temp dir."""
    if config.version != 1:
        return []
    if config.allow_any_path:
        message = (
            "version 1 allow_any_path = true in the project file: a project file cannot widen the "
            "boundary, so every path outside it needs approval"
            if config.safety_source == "project"
            else "version 1 allow_any_path = true: every path on this machine is allowed"
        )
        diagnostics.append(Diagnostic("warning", "any-path", message, config.project_file
                                      if config.safety_source == "project" else config.user_file))
        return [Candidate(os.sep, "any-path", "version 1 [safety] allow_any_path = true")]
    if config.allow_temp_directory:
        import tempfile

        return [Candidate(tempfile.gettempdir(), "temp", "version 1 allows the OS temporary directory")]
    return []


def _base_candidates(
    folders: Sequence[str], folder_union: Union, config: Config, diagnostics: list[Diagnostic]
) -> list[Candidate]:
    cands: list[Candidate]
    if config.roots is None:
        cands = [Candidate(f, "folder", "workspace folder") for f in folders]
    elif config.roots_source == "project":
        cands = []
        for root in config.roots:
            if folder_union.contains(root):
                cands.append(Candidate(root, "config", f"workspace.roots in {config.project_file}"))
            else:
                diagnostics.append(
                    Diagnostic(
                        "warning",
                        "project-root-outside-folders",
                        f"workspace.roots entry {root} is outside the editor's folders; a project file "
                        "can narrow the boundary, not widen it, so it is ignored",
                        config.project_file,
                    )
                )
    else:
        origin = "environment" if config.roots_source == "environment" else "config"
        where = "ROOTGUARD_ROOTS" if origin == "environment" else f"workspace.roots in {config.user_file}"
        cands = []
        for root in config.roots:
            if config.version == 1 and not config.allow_external_roots and not folder_union.contains(root):
                diagnostics.append(Diagnostic(
                    "warning", "external-root-v1",
                    f"{where} names {root}, outside the editor's folders; version 1 needs "
                    "[safety] allow_external_roots = true for that, so it is ignored",
                    config.user_file if origin == "config" else None,
                ))
                continue
            cands.append(Candidate(root, origin, where))
    if config.safety_source != "project":
        cands += _v1_widening(config, diagnostics)
    return cands


def _gitdir_pointer(folder: str) -> str | None:
    """Where a ``.git`` file in ``folder`` points (canonical), to protect it; never a root."""
    data = read_regular(os.path.join(folder, ".git"), 4096)  # a FIFO named .git is not waited on
    if not data:
        return None
    first = data.decode("utf-8", errors="replace").splitlines()[0]
    if not first.startswith("gitdir:"):
        return None
    target = first[len("gitdir:"):].strip()
    if not target or "\x00" in target:
        return None
    return os.path.realpath(os.path.join(folder, target))


def _safe_locate(locate: Locator, path: str, diagnostics: list[Diagnostic]) -> wt.GitLocation | None:
    """The folder's repository, read natively; undecided or refused adds nothing."""
    try:
        discovery = locate(canonical(path))
    except (OSError, ValueError) as err:
        diagnostics.append(Diagnostic("warning", "git-discovery", f"cannot read git metadata for {path}: {err}"))
        return None
    diagnostics.extend(d for d in discovery.diagnostics if d not in diagnostics)
    return discovery.location
