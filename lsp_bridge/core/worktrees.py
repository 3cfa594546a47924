"""Git worktree discovery by reading ``.git``: never runs git on the hot path.

``locate(folder)`` walks up from an absolute folder to the first ``.git``
(directory or file), follows it, and lists every checkout of that repository:
the main worktree and all linked worktrees (``<common>/worktrees/*``). It only
reads small files and stats directories, so it is cheap enough to run on every
workspace change; it never runs git. ``sibling_worktrees`` gives the checkouts
a scope builder may add as roots.

Choices (the contract):

* Inputs must be absolute; a relative folder raises ``ValueError`` (the process
  cwd is never used). The walk goes up to the file-system root. Neither the
  environment (``GIT_DIR``, ``GIT_CEILING_DIRECTORIES``...) nor git's
  configuration files outside the repository are consulted.
* The result is a ``Discovery`` whose ``status`` is one of:
  ``found`` (``location`` set), ``none`` (no repository above the folder),
  ``refused`` (a ``.git`` was found but is not trusted: an error diagnostic
  says why, nothing is widened, the walk does not continue upward), or
  ``undecided`` (unreadable files or an unknown layout: nothing is added, as
  for ``none``; git is never asked to decide instead).
* A ``.git`` *file* is followed only when the target points back at it: a linked
  worktree's admin dir must hold a ``gitdir`` file naming this ``.git`` file
  (absolute, or relative to the admin dir as git >= 2.48 writes it), and must
  sit at ``<common>/worktrees/<name>``; a full repository (submodule,
  ``--separate-git-dir``) must name this directory in ``core.worktree``. One
  exception widens nothing: a repository *inside* the ``.git`` file's own
  directory (the bare hub ``gitdir: ./.bare``). Everything else is refused:
  targets that are ``/`` or ``$HOME``, missing, not a plausible git admin dir
  (``HEAD`` plus ``objects/`` and ``refs/``, or ``commondir``), garbage or
  binary content, a ``.git`` that is a symbolic link or a special file. A
  ``--separate-git-dir`` checkout elsewhere, which has no back-link, is refused.
* Submodules: ``<super>/.git/modules/<name>`` is a repository of its own (own
  ``objects/``); a folder inside the submodule checkout reports
  ``kind="submodule"`` with that module dir as common dir. Submodules are never
  listed as worktrees of the superproject.
* Linked worktrees are listed only when their ``.git`` file points back at
  their admin dir (``core/worktree_list.py``). ``sibling_worktrees`` never
  returns missing or prunable entries: their directory is gone.
* A checkout that is ``/`` or ``$HOME`` itself is still reported (it is the
  truth about the repository) with a warning diagnostic, because using it as a
  root widens to the whole disk or home. ``sibling_worktrees`` leaves such a
  checkout out: it is never added implicitly.
* Degraded results (from git, seed 002) are narrower, never wider: only the
  folder's own toplevel, no main worktree besides it, no linked worktrees.
* Nothing is cached: every call reads the files again, because the answer
  decides which checkouts may become roots.

Where the pieces live: this module follows ``.git`` from a folder and judges
what it finds; ``core/git_admin.py`` reads git's small files and ``[core]``
settings; ``core/worktree_list.py`` lists ``<common>/worktrees``.

For a scope builder (``scope.py`` does this): ``d = locate(folder)``;
``d.toplevel`` is the folder's checkout (``None`` without one);
``sibling_worktrees(d.location)`` the extra roots; ``sibling_checkouts`` the
same entries with their locked / prunable / missing flags; ``d.diagnostics``
what to show.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Literal

from lsp_bridge.core.diagnostics import Diagnostic
from lsp_bridge.core.git_admin import (
    SEPS,
    BadFile,
    Stop,
    admin_kind,
    child,
    core_settings,
    gitfile_target,
    is_module_dir,
    read_small,
    refuse,
    resolve,
    same,
    single_line,
    undecided,
    why,
)
from lsp_bridge.core.paths import canonical, fold, is_within
from lsp_bridge.core.worktree_list import LinkedWorktree, linked_worktrees

__all__ = ["Discovery", "GitLocation", "Kind", "LinkedWorktree", "Status", "locate", "sibling_checkouts", "sibling_worktrees"]

Status = Literal["found", "none", "refused", "undecided"]
Kind = Literal["main", "linked", "submodule", "bare"]


@dataclass(frozen=True)
class GitLocation:
    """The repository a folder belongs to and every checkout of it."""

    folder: str  # the canonical folder asked about
    toplevel: str | None  # checkout containing folder (None for a bare hub / bare repo)
    git_dir: str  # this checkout's admin dir (.git dir, or <common>/worktrees/<name>)
    common_dir: str  # shared repository dir
    kind: Kind
    main_worktree: str | None  # top level of the main checkout (None for bare or unknown)
    worktrees: tuple[LinkedWorktree, ...]  # ALL linked worktrees, the folder's own included
    degraded: str | None = None  # why the result is degraded (None when native decided)
    diagnostics: tuple[Diagnostic, ...] = ()


@dataclass(frozen=True)
class Discovery:
    """What ``locate`` found for one folder; ``diagnostics`` holds every note."""

    folder: str
    status: Status
    location: GitLocation | None = None
    diagnostics: tuple[Diagnostic, ...] = ()

    @property
    def undecided(self) -> bool:
        return self.status == "undecided"

    @property
    def degraded(self) -> bool:
        return self.location is not None and self.location.degraded is not None

    @property
    def toplevel(self) -> str | None:
        return self.location.toplevel if self.location else None


# --- discovery ----------------------------------------------------------------


def _home() -> str | None:
    """The canonical ``$HOME`` (read and resolved at each call)."""
    return _real_home(os.environ.get("HOME") or os.path.expanduser("~"))


def _real_home(home: str) -> str | None:
    return os.path.realpath(home) if os.path.isabs(home) else None


def _too_wide(path: str, home: str | None) -> str | None:
    """Why using ``path`` as a root would hand over everything, if it would."""
    # A normalised path ends with a separator only when it is a root: the
    # cheap test first, as this runs for every checkout on every call.
    if path.endswith(SEPS) and path == os.path.dirname(path):
        return "the file-system root"
    if home is not None and same(path, home):
        return "the home directory"
    return None


def _ancestors(start: str) -> Iterator[str]:
    current = start
    while True:
        yield current
        parent = os.path.dirname(current)
        if parent == current:
            return
        current = parent


def locate(folder: str) -> Discovery:
    """Find the repository containing ``folder`` by reading files only.

    ``folder`` must be absolute (``ValueError`` otherwise). Never raises for
    hostile repository content: untrusted ``.git`` pointers give ``refused``.
    """
    start = canonical(folder)
    home = _home()
    notes: list[Diagnostic] = []
    if not os.path.isdir(start):
        note = Diagnostic("warning", "git.not-a-directory", f"{start} is not a directory", start)
        return Discovery(start, "none", None, (note,))
    try:
        location = _discover(start, home, notes)
    except Stop as stop:
        return Discovery(start, stop.status, None, (*notes, stop.diagnostic))
    if location is None:
        return Discovery(start, "none", None, tuple(notes))
    _note_wide_checkouts(location, home, notes)
    location = _with_diagnostics(location, tuple(notes))
    return Discovery(start, "found", location, location.diagnostics)


def _with_diagnostics(location: GitLocation, notes: tuple[Diagnostic, ...]) -> GitLocation:
    """``replace(location, diagnostics=notes)`` without its per-call field introspection."""
    loc = location
    return GitLocation(
        loc.folder, loc.toplevel, loc.git_dir, loc.common_dir, loc.kind,
        loc.main_worktree, loc.worktrees, loc.degraded, notes,
    )


def _discover(start: str, home: str | None, notes: list[Diagnostic]) -> GitLocation | None:
    for directory in _ancestors(start):
        entry = child(directory, ".git")
        try:
            info = os.lstat(entry)
        except (FileNotFoundError, NotADirectoryError):
            if os.path.isfile(child(directory, "HEAD")) and admin_kind(directory):
                return _from_admin_folder(start, directory, notes)
            continue
        except OSError as err:
            raise undecided("git.unreadable", f"cannot inspect {entry}: {why(err)}", entry) from None
        if stat.S_ISDIR(info.st_mode):
            return _from_git_directory(start, directory, entry, notes)
        if stat.S_ISREG(info.st_mode):
            return _from_gitfile(start, directory, entry, home, notes)
        if stat.S_ISLNK(info.st_mode):
            raise refuse("git.gitfile-symlink", f"{entry} is a symbolic link; not followed", entry)
        raise refuse("git.gitfile-invalid", f"{entry} is neither a file nor a directory", entry)
    return None


def _from_admin_folder(start: str, git_dir: str, notes: list[Diagnostic]) -> GitLocation:
    """The folder is (inside) a git dir itself: a bare repository such as ``repo.git``."""
    if admin_kind(git_dir) == "repository" and core_settings(git_dir)[0]:
        return _location(start, None, git_dir, git_dir, "bare", None, notes)
    raise undecided(
        "git.unknown-layout",
        f"{start} lies inside the administrative directory {git_dir}",
        git_dir,
    )


def _from_git_directory(start: str, top: str, entry: str, notes: list[Diagnostic]) -> GitLocation:
    if admin_kind(entry) != "repository":
        raise undecided("git.unknown-layout", f"{entry} is not a recognisable git directory", entry)
    bare, worktree = core_settings(entry)
    if bare or (worktree is not None and not same(resolve(entry, worktree), top)):
        message = f"{entry} sets core.bare or a core.worktree other than {top}"
        raise undecided("git.unknown-layout", message, entry)
    return _location(start, top, entry, entry, "main", top, notes)


def _from_gitfile(
    start: str, top: str, entry: str, home: str | None, notes: list[Diagnostic]
) -> GitLocation:
    try:
        target = gitfile_target(entry)
    except BadFile as err:
        raise refuse("git.gitfile-invalid", f"{entry} {err}", entry) from None
    except OSError as err:
        raise undecided("git.unreadable", f"cannot read {entry}: {why(err)}", entry) from None
    admin = resolve(top, target)
    wide = _too_wide(admin, home)
    if wide:
        raise refuse("git.gitdir-implausible", f"{entry} points at {wide}; not followed", entry)
    try:
        info = os.stat(admin)
    except (FileNotFoundError, NotADirectoryError):
        # The target is not echoed: it names nothing on disk and may be any text.
        raise refuse("git.gitdir-missing", f"{entry} points at a directory that does not exist", entry) from None
    except OSError as err:
        raise undecided("git.unreadable", f"cannot inspect {admin}: {why(err)}", entry) from None
    kind = admin_kind(admin) if stat.S_ISDIR(info.st_mode) else None
    if kind is None:
        raise refuse("git.gitdir-implausible", f"{entry} points at {admin}, which is not a git directory", entry)
    if kind == "linked":
        return _from_linked(start, top, entry, admin, home, notes)
    return _from_repository_pointer(start, top, entry, admin, notes)


def _from_linked(
    start: str, top: str, entry: str, admin: str, home: str | None, notes: list[Diagnostic]
) -> GitLocation:
    back_file = child(admin, "gitdir")
    try:
        back = resolve(admin, single_line(read_small(back_file)))
    except (FileNotFoundError, NotADirectoryError, BadFile):
        back = None
    except OSError as err:
        raise undecided("git.unreadable", f"cannot read {back_file}: {why(err)}", back_file) from None
    if back is None or not same(back, entry):
        message = f"{admin} does not point back at {entry} (moved? try 'git worktree repair'); not followed"
        raise refuse("git.no-backlink", message, entry)
    common = _common_dir(admin, home)
    main = _main_worktree(common, notes)
    return _location(start, top, admin, common, "linked", main, notes)


def _common_dir(admin: str, home: str | None) -> str:
    path = child(admin, "commondir")
    try:
        common = resolve(admin, single_line(read_small(path)))
    except (OSError, BadFile) as err:
        raise undecided("git.unreadable", f"cannot read {path}: {why(err)}", path) from None
    if _too_wide(common, home):
        raise refuse("git.gitdir-implausible", f"{path} names {common}; not followed", path)
    expected = os.path.join(common, "worktrees", os.path.basename(admin))
    if not same(expected, admin) or admin_kind(common) != "repository":
        message = f"{admin} is not <common>/worktrees/<name> of a repository"
        raise undecided("git.unknown-layout", message, path)
    return common


def _from_repository_pointer(
    start: str, top: str, entry: str, repo: str, notes: list[Diagnostic]
) -> GitLocation:
    bare, worktree = core_settings(repo)
    if worktree is not None:
        if not same(resolve(repo, worktree), top):
            message = f"core.worktree of {repo} does not point back at {top}; not followed"
            raise refuse("git.no-backlink", message, entry)
        if bare:
            raise undecided("git.unknown-layout", f"{repo} sets both core.bare and core.worktree", entry)
        kind: Kind = "submodule" if is_module_dir(repo) else "main"
        return _location(start, top, repo, repo, kind, top, notes)
    if same(repo, top) or not is_within(fold(repo), fold(top)):
        message = f"{entry} points at {repo}, which does not point back (no core.worktree); not followed"
        raise refuse("git.no-backlink", message, entry)
    if bare:  # the bare hub: <hub>/.git says "gitdir: ./.bare"
        return _location(start, None, repo, repo, "bare", None, notes)
    return _location(start, top, repo, repo, "main", top, notes)


def _main_worktree(common: str, notes: list[Diagnostic]) -> str | None:
    """The main checkout of a repository reached from a linked worktree."""
    bare, worktree = core_settings(common)
    if bare:
        return None
    if worktree is not None:
        main = resolve(common, worktree)
        if not _points_back(os.path.join(main, ".git"), common):
            notes.append(Diagnostic(
                "warning", "git.no-backlink",
                f"core.worktree of {common} names {main}, which does not point back; left out",
                common,
            ))
            return None
    elif os.path.basename(common) == ".git":
        main = os.path.dirname(common)
    else:
        notes.append(Diagnostic(
            "information", "git.main-unknown",
            f"the main checkout of {common} cannot be determined; left out", common,
        ))
        return None
    if not os.path.isdir(main):
        notes.append(Diagnostic(
            "information", "git.main-unknown", f"the main checkout {main} is missing; left out", common,
        ))
        return None
    return main


def _points_back(dot_git: str, git_dir: str) -> bool:
    """Whether ``dot_git`` is ``git_dir`` itself or a gitfile naming it."""
    try:
        info = os.lstat(dot_git)
        if stat.S_ISDIR(info.st_mode):
            return same(dot_git, git_dir)
        return same(resolve(os.path.dirname(dot_git), gitfile_target(dot_git)), git_dir)
    except (OSError, BadFile):
        return False


def _location(
    start: str,
    top: str | None,
    git_dir: str,
    common: str,
    kind: Kind,
    main: str | None,
    notes: list[Diagnostic],
) -> GitLocation:
    worktrees = linked_worktrees(common, notes)
    return GitLocation(start, top, git_dir, common, kind, main, worktrees)


def _note_wide_checkouts(location: GitLocation, home: str | None, notes: list[Diagnostic]) -> None:
    named: list[tuple[str | LinkedWorktree, str | None]] = [
        ("toplevel", location.toplevel), ("main worktree", location.main_worktree)]
    named += [(w, w.path) for w in location.worktrees]  # labelled only when wide
    seen: set[str] = set()
    for label, path in named:
        wide = _too_wide(path, home) if path else None
        if wide and path is not None and path not in seen:
            seen.add(path)
            if isinstance(label, LinkedWorktree):
                label = f"worktree {label.name!r}"
            notes.append(Diagnostic(
                "warning", "git.wide-checkout",
                f"repository {label} is {wide} ({path}); using it as a root widens to all of it",
                location.common_dir,
            ))


# --- siblings ------------------------------------------------------------------


def sibling_checkouts(location: GitLocation) -> tuple[LinkedWorktree, ...]:
    """Every checkout of the repository except ``location.toplevel``, with flags.

    The main checkout comes first (``is_main=True``, ``admin_dir`` = common dir).
    A degraded location has none.
    """
    if location.degraded is not None:
        return ()
    own = fold(location.toplevel) if location.toplevel else None
    entries: list[LinkedWorktree] = []
    main = location.main_worktree
    if main is not None and fold(main) != own:
        entries.append(LinkedWorktree(main, location.common_dir, "", is_main=True))
    entries += [w for w in location.worktrees if fold(w.path) != own]
    return tuple(entries)


def sibling_worktrees(location: GitLocation) -> list[str]:
    """Canonical paths of the sibling checkouts a scope may add as roots.

    Leaves out missing and prunable worktrees (their directory is gone) and any
    checkout that is ``/`` or ``$HOME`` (never added implicitly).
    """
    home = _home()
    return [
        w.path
        for w in sibling_checkouts(location)
        if not (w.missing or w.prunable) and _too_wide(w.path, home) is None
    ]
