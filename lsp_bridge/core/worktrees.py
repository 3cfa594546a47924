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
  their admin dir; mismatched entries are skipped with a warning. ``locked``
  carries the reason text. An entry whose ``.git`` file is gone is ``missing``;
  it is also ``prunable`` unless locked (git's meaning). ``sibling_worktrees``
  never returns missing or prunable entries: their directory is gone.
* A checkout that is ``/`` or ``$HOME`` itself is still reported (it is the
  truth about the repository) with a warning diagnostic, because using it as a
  root widens to the whole disk or home. ``sibling_worktrees`` leaves such a
  checkout out: it is never added implicitly.
* Degraded results (from git, seed 002) are narrower, never wider: only the
  folder's own toplevel, no main worktree besides it, no linked worktrees.
* Results are cached per file, per worktree entry and per listing, and reused
  only while an ``lstat`` of every file they came from gives the same
  signature (inode, size, mtime, ctime...); files changed in the last
  ``RACY_WINDOW_NS`` are always read again. Every rule above holds for a cached
  answer exactly as for a fresh one ("the cache" below says why).
  ``clear_cache()`` forgets everything; ``cache_info()`` counts hits.

For a scope builder (``scope.py`` does this): ``d = locate(folder)``;
``d.toplevel`` is the folder's checkout (``None`` without one);
``sibling_worktrees(d.location)`` the extra roots; ``sibling_checkouts`` the
same entries with their locked / prunable / missing flags; ``d.diagnostics``
what to show.
"""

from __future__ import annotations

import errno
import os
import stat
import time
from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Literal, NamedTuple

from lsp_bridge.core.diagnostics import Diagnostic
from lsp_bridge.core.paths import canonical, fold, is_within

if TYPE_CHECKING:
    from lsp_bridge.core.diagnostics import Severity

Status = Literal["found", "none", "refused", "undecided"]
Kind = Literal["main", "linked", "submodule", "bare"]

_MAX_SMALL_FILE = 4096  # .git files, gitdir, commondir, HEAD, locked
_MAX_CONFIG_FILE = 1 << 20
_OPEN_FLAGS = (
    os.O_RDONLY
    | getattr(os, "O_NOFOLLOW", 0)
    | getattr(os, "O_NONBLOCK", 0)  # a FIFO named .git must not block us
    | getattr(os, "O_CLOEXEC", 0)
    | getattr(os, "O_BINARY", 0)
)
_SEP = os.sep
_SEPS = (os.sep, os.altsep) if os.altsep else os.sep
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


class _Stop(Exception):
    """Discovery ends with ``status`` (refused or undecided) and a diagnostic."""

    def __init__(self, status: Status, diagnostic: Diagnostic):
        super().__init__(diagnostic.message)
        self.status = status
        self.diagnostic = diagnostic


class _BadFile(Exception):
    """Not a small regular text file."""


def _refuse(code: str, message: str, file: str) -> _Stop:
    return _Stop("refused", Diagnostic("error", code, message, file))


def _undecided(code: str, message: str, file: str) -> _Stop:
    return _Stop("undecided", Diagnostic("warning", code, message, file))


# --- the cache ---------------------------------------------------------------
#
# Listing 50 linked worktrees means reading ~100 small files. A module-level
# cache keeps each result with the signatures (inode, device, mode, size, mtime
# and ctime) of exactly the files and directories it was computed from, and
# reuses it only when a fresh ``lstat`` of each gives the same signature. Any
# write changes ctime, even an in-place rewrite of the same size; a replacement
# changes the inode. What stands for what:
#
# * a small repository file (``.git`` file, ``HEAD``, ``config``, ``commondir``,
#   ``gitdir``): its own signature stands for its bytes (``_read_small``);
# * a linked worktree entry: the signatures of ``<admin>/gitdir`` and of
#   ``<path>/.git`` (the back-link); ``<admin>/locked`` is checked for presence
#   on every call, and its signature when present (the reason text);
# * a worktree path: its parent is resolved again (``realpath``) on every call,
#   once per distinct parent, and the parent directory's signature stands for
#   the worktree's own entry (turning it into a symbolic link or moving it
#   changes the parent's mtime). A path whose last component is a link, or a
#   back-link that needs ``realpath`` to match, is not cached;
# * ``<common>/worktrees``: its signature stands for the list of admin dirs.
#
# File-system timestamps are coarse: two writes within one clock tick can
# leave the same mtime and ctime. As with git's "racily clean" index entries,
# a signature is trusted only when its mtime and ctime were already older than
# ``RACY_WINDOW_NS`` when the file was read; files changed more recently are
# read again on every call. Signatures are taken before reading (``fstat`` of
# the open file), so a change during the read cannot hide behind them. Errors,
# refusals and skipped entries are never cached.
#
# Limits: signatures show what the local kernel reports. On network file
# systems attribute caching can delay a change; writes through a shared memory
# mapping update the timestamps only on the first write after writeback; on
# Windows ``st_ctime`` is the creation time, so only mtime guards in-place
# writes there. ``clear_cache()`` forgets everything: the language server calls
# it on file events. Entries are immutable and replaced whole, so concurrent
# calls are safe.

Signature = tuple[int, ...]
_UNKNOWN: Signature = (-1,)  # never equal to a real signature, never settled

RACY_WINDOW_NS = 2_000_000_000
"""Signatures newer than this (at the time of reading) are not trusted from the cache."""

_MAX_ENTRIES = 4096  # per kind of entry; beyond it the kind is emptied and refilled
_MAX_CACHED_FILE = 16384  # bytes; larger files (a huge config) are read every time


class _Entry(NamedTuple):
    """A cached worktree entry and the signatures it was computed from."""

    gitdir: Signature  # of gitdir_file
    lock: Signature | None  # of lock_file; None when absent
    parent: str  # the worktree's parent directory as gitdir names it
    real_parent: str
    parent_signature: Signature | None  # None when the parent does not exist
    dot_git: Signature | None  # of dot_git_file; None when missing
    worktree: LinkedWorktree
    gitdir_file: str  # <admin>/gitdir
    lock_file: str  # <admin>/locked
    dot_git_file: str  # <path>/.git


class CacheInfo(NamedTuple):
    hits: int  # worktree entries served from the cache since the last clear
    misses: int  # worktree entries read from their files
    entries: int  # worktree entries held


_entries: dict[str, _Entry] = {}
_files: dict[str, tuple[Signature, bytes]] = {}  # small repository files read by path
_listings: dict[str, tuple[Signature, tuple[str, ...]]] = {}
_counts = [0, 0]


def clear_cache() -> None:
    """Forget every cached worktree entry and listing; the next calls read all files."""
    _entries.clear()
    _files.clear()
    _listings.clear()
    _counts[:] = [0, 0]


def cache_info() -> CacheInfo:
    return CacheInfo(_counts[0], _counts[1], len(_entries))


def _signature(info: os.stat_result) -> Signature:
    return (info.st_ino, info.st_dev, info.st_mode, info.st_size, info.st_mtime_ns, info.st_ctime_ns)


def _settled(signature: Signature | None, since: int) -> bool:
    """Whether a signature taken after ``since`` can be trusted to change on the next write."""
    if signature is None:
        return True
    if signature is _UNKNOWN:
        return False
    return max(signature[4], signature[5]) < since - RACY_WINDOW_NS


def _presence(path: str) -> Signature | None:
    """``lstat`` signature of ``path``, ``None`` when it does not exist."""
    try:
        return _signature(os.lstat(path))
    except (FileNotFoundError, NotADirectoryError):
        return None


if os.access in os.supports_follow_symlinks:
    def _lexists(path: str) -> bool:
        return os.access(path, os.F_OK, follow_symlinks=False)  # no stat_result to build
else:  # pragma: no cover - Windows
    _lexists = os.path.lexists


def _still_valid(entry: _Entry, parents: _Parents) -> bool:
    """Whether every file ``entry`` was computed from still has its signature."""
    try:
        if _signature(os.lstat(entry.gitdir_file)) != entry.gitdir:
            return False
        if entry.lock is None:
            if _lexists(entry.lock_file):
                return False
        elif _presence(entry.lock_file) != entry.lock:
            return False
        real_parent, parent_signature, _ = parents.resolve(entry.parent)
        if real_parent != entry.real_parent or parent_signature != entry.parent_signature:
            return False
        return _presence(entry.dot_git_file) == entry.dot_git
    except OSError:
        return False


class _Parents:
    """Worktree parent directories, each resolved once per ``locate`` call."""

    def __init__(self) -> None:
        self._seen: dict[str, tuple[str, Signature | None, bool]] = {}

    def resolve(self, parent: str) -> tuple[str, Signature | None, bool]:
        """``(realpath, signature or None when absent, whether the signature is settled)``."""
        seen = self._seen.get(parent)
        if seen is None:
            since = time.time_ns()
            real = os.path.realpath(parent)
            try:
                signature = _presence(real)
            except OSError:
                signature = _UNKNOWN
            seen = self._seen[parent] = (real, signature, _settled(signature, since))
        return seen


# --- small file reading -----------------------------------------------------


def _read_small(path: str, limit: int = _MAX_SMALL_FILE) -> bytes:
    """A small file's bytes, never following a final symbolic link.

    Raises ``FileNotFoundError``/``NotADirectoryError`` when absent, ``_BadFile``
    when it is a link or too large, ``OSError`` otherwise (a directory fails
    with ``EISDIR``; a FIFO, opened non-blocking, reads empty). Served from the
    file cache when an ``lstat`` gives the signature the bytes were read under.
    """
    cached = _files.get(path)
    if cached is not None:
        try:
            if _signature(os.lstat(path)) == cached[0]:
                return cached[1]
        except OSError:
            pass  # the read below reports it
    since = time.time_ns()
    data, signature = _read_signed(path, limit)
    if len(data) <= _MAX_CACHED_FILE and stat.S_ISREG(signature[2]) and _settled(signature, since):
        if len(_files) >= _MAX_ENTRIES:
            _files.clear()
        _files[path] = (signature, data)
    else:
        _files.pop(path, None)
    return data


def _read_signed(path: str, limit: int = _MAX_SMALL_FILE) -> tuple[bytes, Signature]:
    """``path``'s bytes and the signature of the very file read, taken before reading."""
    try:
        fd = os.open(path, _OPEN_FLAGS)
    except OSError as err:
        if err.errno in (errno.ELOOP, errno.EMLINK):
            raise _BadFile("is a symbolic link") from None
        raise
    try:
        info = os.fstat(fd)
        want = min(info.st_size, limit) + 1  # no 1 MiB buffer for a 90-byte config
        data = os.read(fd, want)
        if len(data) == want and want <= limit:  # it grew since fstat
            data += os.read(fd, limit + 1 - want)
    finally:
        os.close(fd)
    if len(data) > limit:
        raise _BadFile("is too large")
    return data, _signature(info)


def _text(data: bytes) -> str:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise _BadFile("is not UTF-8 text") from None
    if "\x00" in text:
        raise _BadFile("contains NUL bytes")
    return text


def _single_line(data: bytes) -> str:
    """The one line of a path file (git strips trailing CR/LF)."""
    line = _text(data).rstrip("\r\n")
    if not line or "\n" in line or "\r" in line:
        raise _BadFile("is not a single non-empty line")
    return line


def _gitfile_target(path: str) -> str:
    """The path named by a ``gitdir: <path>`` file (raw, maybe relative)."""
    return _gitfile_line(_read_small(path))


def _gitfile_line(data: bytes) -> str:
    line = _single_line(data)
    if not line.startswith("gitdir: ") or not line[8:].strip():
        raise _BadFile("is not a 'gitdir: <path>' file")
    return line[8:]


def _resolve(base: str, value: str) -> str:
    """``value`` (absolute, or relative to ``base``) with symbolic links resolved."""
    return os.path.realpath(os.path.join(base, value))


def _same(a: str, b: str) -> bool:
    return a == b or fold(a) == fold(b)


def _child(directory: str, name: str) -> str:
    """``os.path.join(directory, name)`` for a plain ``name``, without its overhead."""
    return directory + name if directory.endswith(_SEPS) else directory + _SEP + name


# --- what a git admin directory looks like ----------------------------------


def _valid_head(git_dir: str) -> bool:
    try:
        head = _text(_read_small(_child(git_dir, "HEAD"))).strip()
    except (OSError, _BadFile):
        return False
    if head.startswith("ref: refs/"):
        return True
    return len(head) in (40, 64) and all(c in "0123456789abcdef" for c in head)


def _admin_kind(git_dir: str) -> Literal["linked", "repository"] | None:
    """``linked`` for a worktree admin dir, ``repository`` for a full git dir."""
    if not _valid_head(git_dir):
        return None
    if os.path.isfile(_child(git_dir, "commondir")):
        return "linked"
    objects, refs = _child(git_dir, "objects"), _child(git_dir, "refs")
    if os.path.isdir(objects) and os.path.isdir(refs):
        return "repository"
    return None


def _config_value(raw: str) -> str:
    """A git config value: quotes removed, escapes applied, comment dropped."""
    out, quoted, i = [], False, 0
    while i < len(raw):
        c = raw[i]
        if c == "\\" and i + 1 < len(raw):
            out.append({"n": "\n", "t": "\t", "b": "\b"}.get(raw[i + 1], raw[i + 1]))
            i += 2
            continue
        if c == '"':
            quoted = not quoted
        elif c in "#;" and not quoted:
            break
        else:
            out.append(c)
        i += 1
    return "".join(out).strip()


def _core_entries(text: str) -> tuple[tuple[str, str | None], ...]:
    """``[core]`` keys of a config text, remembered for the last few small texts."""
    return _core_entries_small(text) if len(text) <= _MAX_CACHED_FILE else _parse_core(text)


def _parse_core(text: str) -> tuple[tuple[str, str | None], ...]:
    """``[core]`` keys (lower-cased) of a git config text; ``None`` = bare key."""
    found: dict[str, str | None] = {}
    in_core = False
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("["):
            header, _, line = line.partition("]")
            in_core = header[1:].strip().lower() == "core"
            line = line.strip()
        if not in_core or not line or line[0] in "#;":
            continue
        key, eq, value = line.partition("=")
        found[key.strip().lower()] = _config_value(value) if eq else None
    return tuple(found.items())  # immutable: the result is shared through the cache


_core_entries_small = lru_cache(maxsize=32)(_parse_core)


def _as_bool(value: str | None, file: str) -> bool:
    if value is None:
        return True
    lowered = value.lower()
    if lowered in ("true", "yes", "on", "1"):
        return True
    if lowered in ("false", "no", "off", "0", ""):
        return False
    raise _undecided("git.unknown-layout", f"core.bare in {file} is not a boolean", file)


def _core_settings(git_dir: str) -> tuple[bool, str | None]:
    """``(core.bare, core.worktree)`` from ``config`` then ``config.worktree``."""
    entries: dict[str, str | None] = {}
    for name in ("config", "config.worktree"):
        path = _child(git_dir, name)
        try:
            entries.update(_core_entries(_text(_read_small(path, _MAX_CONFIG_FILE))))
        except (FileNotFoundError, NotADirectoryError):
            continue
        except (OSError, _BadFile) as err:
            raise _undecided("git.unreadable", f"cannot read {path}: {_why(err)}", path) from None
    bare = _as_bool(entries["bare"], git_dir) if "bare" in entries else False
    worktree = entries.get("worktree") or None
    return bare, worktree


def _why(err: BaseException) -> str:
    if isinstance(err, OSError):
        return err.strerror or type(err).__name__
    return str(err)


def _is_module_dir(repo: str) -> bool:
    """Whether ``repo`` lies under ``<git dir>/modules/`` (a submodule's repository)."""
    current = repo
    while True:
        parent = os.path.dirname(current)
        if parent == current:
            return False
        if os.path.basename(current) == "modules" and _admin_kind(parent) == "repository":
            return True
        current = parent


# --- discovery ----------------------------------------------------------------


def _home() -> str | None:
    """The canonical ``$HOME`` (read at each call; resolved once per value)."""
    return _real_home(os.environ.get("HOME") or os.path.expanduser("~"))


@lru_cache(maxsize=8)
def _real_home(home: str) -> str | None:
    return os.path.realpath(home) if os.path.isabs(home) else None


def _too_wide(path: str, home: str | None) -> str | None:
    """Why using ``path`` as a root would hand over everything, if it would."""
    # A normalised path ends with a separator only when it is a root: the
    # cheap test first, as this runs for every checkout on every call.
    if path.endswith(_SEPS) and path == os.path.dirname(path):
        return "the file-system root"
    if home is not None and _same(path, home):
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
    except _Stop as stop:
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
        entry = _child(directory, ".git")
        try:
            info = os.lstat(entry)
        except (FileNotFoundError, NotADirectoryError):
            if os.path.isfile(_child(directory, "HEAD")) and _admin_kind(directory):
                return _from_admin_folder(start, directory, notes)
            continue
        except OSError as err:
            raise _undecided("git.unreadable", f"cannot inspect {entry}: {_why(err)}", entry) from None
        if stat.S_ISDIR(info.st_mode):
            return _from_git_directory(start, directory, entry, notes)
        if stat.S_ISREG(info.st_mode):
            return _from_gitfile(start, directory, entry, home, notes)
        if stat.S_ISLNK(info.st_mode):
            raise _refuse("git.gitfile-symlink", f"{entry} is a symbolic link; not followed", entry)
        raise _refuse("git.gitfile-invalid", f"{entry} is neither a file nor a directory", entry)
    return None


def _from_admin_folder(start: str, git_dir: str, notes: list[Diagnostic]) -> GitLocation:
    """The folder is (inside) a git dir itself: a bare repository such as ``repo.git``."""
    if _admin_kind(git_dir) == "repository" and _core_settings(git_dir)[0]:
        return _location(start, None, git_dir, git_dir, "bare", None, notes)
    raise _undecided(
        "git.unknown-layout",
        f"{start} lies inside the administrative directory {git_dir}",
        git_dir,
    )


def _from_git_directory(start: str, top: str, entry: str, notes: list[Diagnostic]) -> GitLocation:
    if _admin_kind(entry) != "repository":
        raise _undecided("git.unknown-layout", f"{entry} is not a recognisable git directory", entry)
    bare, worktree = _core_settings(entry)
    if bare or (worktree is not None and not _same(_resolve(entry, worktree), top)):
        message = f"{entry} sets core.bare or a core.worktree other than {top}"
        raise _undecided("git.unknown-layout", message, entry)
    return _location(start, top, entry, entry, "main", top, notes)


def _from_gitfile(
    start: str, top: str, entry: str, home: str | None, notes: list[Diagnostic]
) -> GitLocation:
    try:
        target = _gitfile_target(entry)
    except _BadFile as err:
        raise _refuse("git.gitfile-invalid", f"{entry} {err}", entry) from None
    except OSError as err:
        raise _undecided("git.unreadable", f"cannot read {entry}: {_why(err)}", entry) from None
    admin = _resolve(top, target)
    wide = _too_wide(admin, home)
    if wide:
        raise _refuse("git.gitdir-implausible", f"{entry} points at {wide}; not followed", entry)
    try:
        info = os.stat(admin)
    except (FileNotFoundError, NotADirectoryError):
        # The target is not echoed: it names nothing on disk and may be any text.
        raise _refuse("git.gitdir-missing", f"{entry} points at a directory that does not exist", entry) from None
    except OSError as err:
        raise _undecided("git.unreadable", f"cannot inspect {admin}: {_why(err)}", entry) from None
    kind = _admin_kind(admin) if stat.S_ISDIR(info.st_mode) else None
    if kind is None:
        raise _refuse("git.gitdir-implausible", f"{entry} points at {admin}, which is not a git directory", entry)
    if kind == "linked":
        return _from_linked(start, top, entry, admin, home, notes)
    return _from_repository_pointer(start, top, entry, admin, notes)


def _from_linked(
    start: str, top: str, entry: str, admin: str, home: str | None, notes: list[Diagnostic]
) -> GitLocation:
    back_file = _child(admin, "gitdir")
    try:
        back = _resolve(admin, _single_line(_read_small(back_file)))
    except (FileNotFoundError, NotADirectoryError, _BadFile):
        back = None
    except OSError as err:
        raise _undecided("git.unreadable", f"cannot read {back_file}: {_why(err)}", back_file) from None
    if back is None or not _same(back, entry):
        message = f"{admin} does not point back at {entry} (moved? try 'git worktree repair'); not followed"
        raise _refuse("git.no-backlink", message, entry)
    common = _common_dir(admin, home)
    main = _main_worktree(common, notes)
    return _location(start, top, admin, common, "linked", main, notes)


def _common_dir(admin: str, home: str | None) -> str:
    path = _child(admin, "commondir")
    try:
        common = _resolve(admin, _single_line(_read_small(path)))
    except (OSError, _BadFile) as err:
        raise _undecided("git.unreadable", f"cannot read {path}: {_why(err)}", path) from None
    if _too_wide(common, home):
        raise _refuse("git.gitdir-implausible", f"{path} names {common}; not followed", path)
    expected = os.path.join(common, "worktrees", os.path.basename(admin))
    if not _same(expected, admin) or _admin_kind(common) != "repository":
        message = f"{admin} is not <common>/worktrees/<name> of a repository"
        raise _undecided("git.unknown-layout", message, path)
    return common


def _from_repository_pointer(
    start: str, top: str, entry: str, repo: str, notes: list[Diagnostic]
) -> GitLocation:
    bare, worktree = _core_settings(repo)
    if worktree is not None:
        if not _same(_resolve(repo, worktree), top):
            message = f"core.worktree of {repo} does not point back at {top}; not followed"
            raise _refuse("git.no-backlink", message, entry)
        if bare:
            raise _undecided("git.unknown-layout", f"{repo} sets both core.bare and core.worktree", entry)
        kind: Kind = "submodule" if _is_module_dir(repo) else "main"
        return _location(start, top, repo, repo, kind, top, notes)
    if _same(repo, top) or not is_within(fold(repo), fold(top)):
        message = f"{entry} points at {repo}, which does not point back (no core.worktree); not followed"
        raise _refuse("git.no-backlink", message, entry)
    if bare:  # the bare hub: <hub>/.git says "gitdir: ./.bare"
        return _location(start, None, repo, repo, "bare", None, notes)
    return _location(start, top, repo, repo, "main", top, notes)


def _main_worktree(common: str, notes: list[Diagnostic]) -> str | None:
    """The main checkout of a repository reached from a linked worktree."""
    bare, worktree = _core_settings(common)
    if bare:
        return None
    if worktree is not None:
        main = _resolve(common, worktree)
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
            return _same(dot_git, git_dir)
        return _same(_resolve(os.path.dirname(dot_git), _gitfile_target(dot_git)), git_dir)
    except (OSError, _BadFile):
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
    worktrees = _linked_worktrees(common, notes)
    return GitLocation(start, top, git_dir, common, kind, main, worktrees)


# --- listing linked worktrees ------------------------------------------------


def _linked_worktrees(common: str, notes: list[Diagnostic]) -> tuple[LinkedWorktree, ...]:
    listed = _worktree_names(_child(common, "worktrees"), notes)
    if listed is None:
        return ()
    root, names = listed
    parents = _Parents()
    found: list[LinkedWorktree] = []
    for name in names:
        admin = root + _SEP + name
        cached = _entries.get(admin)
        if cached is not None and _still_valid(cached, parents):
            _counts[0] += 1
            found.append(cached.worktree)
            continue
        _counts[1] += 1
        worktree = _worktree_entry(admin, name, parents, notes)
        if worktree is not None:
            found.append(worktree)
    return tuple(found)


def _worktree_names(root: str, notes: list[Diagnostic]) -> tuple[str, tuple[str, ...]] | None:
    """``(root, sorted admin dir names)`` of ``<common>/worktrees``; ``None`` without one."""
    since = time.time_ns()
    try:
        info = os.lstat(root)
        if stat.S_ISLNK(info.st_mode):
            root = os.path.realpath(root)  # not cached: the link's target would need checking too
            return root, _subdirectories(root)
        signature = _signature(info)
        cached = _listings.get(root)
        if cached is not None and cached[0] == signature:
            return root, cached[1]
        names = _subdirectories(root)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as err:
        notes.append(Diagnostic("warning", "git.unreadable", f"cannot list {root}: {_why(err)}", root))
        return None
    if _settled(signature, since):
        if len(_listings) >= _MAX_ENTRIES:
            _listings.clear()
        _listings[root] = (signature, names)
    return root, names


def _subdirectories(root: str) -> tuple[str, ...]:
    with os.scandir(root) as entries:
        return tuple(sorted(e.name for e in entries if e.is_dir(follow_symlinks=False)))


def _worktree_entry(
    admin: str, name: str, parents: _Parents, notes: list[Diagnostic]
) -> LinkedWorktree | None:
    """One ``<common>/worktrees/<name>`` entry read from its files, or ``None`` (with a
    note) when unusable; remembered when every signature it rests on is settled."""
    worktree, entry = _read_worktree_entry(admin, name, parents, notes)
    if entry is None:
        _entries.pop(admin, None)
    else:
        if len(_entries) >= _MAX_ENTRIES:
            _entries.clear()
        _entries[admin] = entry
    return worktree


def _read_worktree_entry(
    admin: str, name: str, parents: _Parents, notes: list[Diagnostic]
) -> tuple[LinkedWorktree | None, _Entry | None]:
    """The entry read from its files, and what to cache of it (``None``: nothing)."""
    since = time.time_ns()
    pointer_file = admin + _SEP + "gitdir"
    try:
        data, gitdir_signature = _read_signed(pointer_file)
        pointer = _single_line(data)
    except (OSError, _BadFile) as err:
        notes.append(_skipped(name, f"cannot use {pointer_file} ({_why(err)})", pointer_file, "information"))
        return None, None
    raw = pointer if os.path.isabs(pointer) else os.path.join(admin, pointer)
    if not raw.endswith(_SEP + ".git"):
        notes.append(_skipped(name, f"{pointer_file} does not name a .git file", pointer_file))
        return None, None
    path, parent = _worktree_path(raw[:-5] or _SEP, parents)  # "/.git" names the root
    locked, reason, lock_signature = _lock_state(admin)
    dot_git = path + _SEP + ".git"
    try:
        data, dot_git_signature = _read_signed(dot_git)
        target = _gitfile_line(data)
    except (FileNotFoundError, NotADirectoryError):
        prune_reason = None if locked else _PRUNE_MISSING
        worktree = LinkedWorktree(path, admin, name, locked, reason, not locked, prune_reason, True)
        dot_git_signature, by_text = None, True
    except (OSError, _BadFile) as err:
        notes.append(_skipped(name, f"{dot_git} {_why(err)}", dot_git, code="git.worktree-mismatch"))
        return None, None
    else:
        points_back, by_text = _names_admin(path, target, admin)
        if not points_back:
            notes.append(_skipped(name, f"{dot_git} does not point back at {admin}", dot_git, code="git.worktree-mismatch"))
            return None, None
        worktree = LinkedWorktree(path, admin, name, locked, reason)
    if parent is None or not by_text:
        return worktree, None
    real_parent, parent_signature, parent_settled = parents.resolve(parent)
    signatures = (gitdir_signature, lock_signature, dot_git_signature)
    if not (parent_settled and all(_settled(s, since) for s in signatures)):
        return worktree, None
    entry = _Entry(
        gitdir_signature, lock_signature, parent, real_parent, parent_signature, dot_git_signature,
        worktree, pointer_file, admin + _SEP + "locked", dot_git,
    )
    return worktree, entry


def _skipped(
    name: str, why: str, file: str, severity: Severity = "warning", code: str = "git.worktree-skipped"
) -> Diagnostic:
    return Diagnostic(severity, code, f"worktree {name!r}: {why}; left out", file)


def _worktree_path(raw: str, parents: _Parents) -> tuple[str, str | None]:
    """``(realpath(raw), raw parent)``; the parent is ``None`` when the path cannot be cached.

    The parent is resolved once per call; the worktree directory's own entry
    only needs an ``lstat`` to see whether it is a symbolic link.
    """
    parent, _, leaf = raw.rpartition(_SEP)
    if leaf in ("", ".", ".."):
        return os.path.realpath(raw), None
    parent = parent or _SEP
    real_parent = parents.resolve(parent)[0]
    candidate = real_parent + _SEP + leaf if real_parent != _SEP else _SEP + leaf
    try:
        if stat.S_ISLNK(os.lstat(candidate).st_mode):
            return os.path.realpath(candidate), None
    except OSError:
        pass
    return candidate, parent


def _names_admin(path: str, target: str, admin: str) -> tuple[bool, bool]:
    """Whether the ``.git`` file of ``path`` names ``admin``; and whether its text alone says so.

    The text alone decides for ``admin`` itself, or a relative path whose only
    ``..`` steps come first: they climb the canonical ``path``, which has no
    symbolic link to step back through. Anything else needs ``realpath``, whose
    answer depends on more of the file system, so it is not cached.
    """
    if target == admin:
        return True, True
    if not os.path.isabs(target) and _climbs_first(target):
        if os.path.normpath(os.path.join(path, target)) == admin:
            return True, True
    return _same(_resolve(path, target), admin), False


def _climbs_first(relative: str) -> bool:
    parts = [p for p in relative.split(_SEP) if p not in ("", ".")]
    downward = [i for i, p in enumerate(parts) if p != ".."]
    return not downward or all(p != ".." for p in parts[downward[0]:])


def _lock_state(admin: str) -> tuple[bool, str | None, Signature | None]:
    """``(locked, reason, signature of the lock file)``; the signature is ``None`` when absent."""
    try:
        data, signature = _read_signed(admin + _SEP + "locked")
    except (FileNotFoundError, NotADirectoryError):
        return False, None, None
    except (OSError, _BadFile):
        return True, None, _UNKNOWN
    return True, data.decode("utf-8", errors="replace").strip() or None, signature


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
