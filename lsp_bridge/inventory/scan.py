"""What a set of roots exposes, and what adding a folder hands over (seed 000).

Files are the regular files under the union, links not followed. ``.git``
directories and package-manager stores are reported on their own lines and
not counted. ``InventoryCache`` scans each directory once and keeps per-directory
counts and small lists (never per-file objects); a file watcher keeps it current
with ``file_changed``, which rescans one directory and adjusts its ancestors.

Nothing here returns or logs a file's contents: paths, counts, commit counts,
names of deleted files and CI role identifiers (which are not secrets) only.
"""

from __future__ import annotations

import os
import re
import stat
import subprocess
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

from lsp_bridge.core.git import git_env
from lsp_bridge.core.paths import is_within
from lsp_bridge.inventory.secrets import (
    CREDENTIAL_NAME_PATTERN,
    CREDENTIAL_NAME_STARTS,
    CREDENTIAL_PARENTS,
    count_credentials,
    dotted_hint,
    is_credential_name,
    load_detectors,
)

Progress = Callable[[str], None]

T = TypeVar("T")

MANIFESTS = frozenset({"package.json", "pyproject.toml", "Cargo.toml", "go.mod"})
GIT_TIMEOUT = 30.0
# Git processes running at once: a folder of fifty repositories reads their
# histories a few at a time, not all together.
_GIT_SLOTS = threading.BoundedSemaphore(4)
_MAX_ROLE_FILE = 1 << 20
_DIR, _GIT, _STORE = 0, 1, 2
_CI_FILES = frozenset({".gitlab-ci.yml", ".gitlab-ci.yaml"})
_SPECIAL_NAMES = frozenset({".git", ".pnpm", ".pnpm-store", "node_modules", "cache", "unplugged"})
_INTERESTING_DIRS = CREDENTIAL_PARENTS | {"workflows"}
# Interesting names in a NUL-joined directory listing ("\x00a\x00b..."): a cheap
# hint first (``_worth_a_look``), the exact pattern only on listings that hit.
_DOTTED_HINT = re.compile(dotted_hint(("mod",))).search  # go.mod; other manifests: json/toml
_DOTLESS_HINTS = tuple("\x00" + start for start in CREDENTIAL_NAME_STARTS)
_INTERESTING = re.compile(
    r"(?<![^\x00])(?:\.git|package\.json|pyproject\.toml|Cargo\.toml|go\.mod"
    r"|\.gitlab-ci\.ya?ml|" + CREDENTIAL_NAME_PATTERN + r")(?![^\x00])"
)


# ---------------------------------------------------------------- report data


@dataclass(frozen=True)
class CredentialFile:
    path: str
    count: int

    def to_json(self) -> dict:
        return {"path": self.path, "count": self.count}


@dataclass(frozen=True)
class GitDir:
    """A repository's (common) git directory, reached from ``via`` checkouts."""

    path: str
    bytes: int
    commits: int | None  # None when git could not tell
    deleted_sensitive: tuple[str, ...] | None = ()  # None when git could not tell
    via: tuple[str, ...] = ()

    def to_json(self) -> dict:
        return {"path": self.path, "bytes": self.bytes, "commits": self.commits,
                "deleted_sensitive": None if self.deleted_sensitive is None
                else list(self.deleted_sensitive), "via": list(self.via)}


@dataclass(frozen=True)
class CiRoles:
    path: str
    roles: tuple[str, ...]

    def to_json(self) -> dict:
        return {"path": self.path, "roles": list(self.roles)}


@dataclass(frozen=True)
class Store:
    path: str
    files: int

    def to_json(self) -> dict:
        return {"path": self.path, "files": self.files}


@dataclass(frozen=True)
class InventoryReport:
    """What the after-union exposes that the before-union did not."""

    before: tuple[str, ...]
    after: tuple[str, ...]
    added_roots: tuple[str, ...]
    widens: bool
    files_before: int
    files_after: int
    credentials: tuple[CredentialFile, ...] = ()
    git: tuple[GitDir, ...] = ()
    siblings: tuple[str, ...] = ()
    ci_roles: tuple[CiRoles, ...] = ()
    stores: tuple[Store, ...] = ()
    errors: tuple[str, ...] = field(default=())

    @property
    def ratio(self) -> float:
        return round(self.files_after / max(self.files_before, 1), 1)

    def to_json(self) -> dict:
        return {
            "widens": self.widens,
            "files_before": self.files_before,
            "files_after": self.files_after,
            "ratio": self.ratio,
            "credentials": [c.to_json() for c in self.credentials],
            "git": [g.to_json() for g in self.git],
            "siblings": list(self.siblings),
            "ci_roles": [r.to_json() for r in self.ci_roles],
            "stores": [s.to_json() for s in self.stores],
            "added_roots": list(self.added_roots),
            "before": list(self.before),
            "after": list(self.after),
            "errors": list(self.errors),
        }

    def summary_line(self) -> str:
        """One line for a status bar, e.g. ``×180: +60,660 files, 3 secrets files, .git (53 commits)``."""
        if not self.widens:
            return "no widening"
        parts = [f"+{self.files_after - self.files_before:,} files"]
        if self.credentials:
            parts.append(_plural(len(self.credentials), "secrets file"))
        for git in self.git:
            commits = "?" if git.commits is None else f"{git.commits:,}"
            parts.append(f".git ({commits} commits)")
        return f"×{_ratio_text(self.ratio)}: " + ", ".join(parts)

    def describe(self) -> list[str]:
        """Human lines for the widening warning (names and counts only)."""
        if not self.widens:
            return ["The union does not widen: every new folder is already inside it."]
        show = self._display
        added = ", ".join(self.added_roots)
        lines = [f"Adding {added} widens the union: {self.files_before:,} → "
                 f"{self.files_after:,} files (×{_ratio_text(self.ratio)})."]
        if self.credentials:
            total = sum(c.count for c in self.credentials)
            items = ", ".join(f"{show(c.path)} ({c.count})" for c in self.credentials)
            lines.append(f"{_plural(total, 'credential')} in "
                         f"{_plural(len(self.credentials), 'file')}: {items}")
        for git in self.git:
            commits = "unknown number of" if git.commits is None else f"{git.commits:,}"
            line = f"Git history {show(git.path)}: {_size(git.bytes)}, {commits} commits"
            if git.deleted_sensitive is None:
                line += "; could not list the files deleted from history"
            elif git.deleted_sensitive:
                line += "; deleted but still in history: " + ", ".join(git.deleted_sensitive)
            lines.append(line)
        if self.siblings:
            names = ", ".join(show(s) for s in self.siblings[:8])
            more = f" (+{len(self.siblings) - 8} more)" if len(self.siblings) > 8 else ""
            lines.append(f"{_plural(len(self.siblings), 'first-party package')} "
                         f"now readable: {names}{more}")
        for ci in self.ci_roles:
            lines.append(f"CI workflow {show(ci.path)} names cloud role "
                         + ", ".join(ci.roles))
        for store in self.stores:
            lines.append(f"Package store {show(store.path)}: {store.files:,} files "
                         "(third-party, not counted above)")
        lines.extend(f"Not inventoried: {error}" for error in self.errors)
        return lines

    def _display(self, path: str) -> str:
        """``path`` as <root name>/<relative>, relative to the after-root holding it."""
        for root in sorted(self.after, key=len, reverse=True):
            if is_within(path, root):
                rel = os.path.relpath(path, root).replace(os.sep, "/")
                name = os.path.basename(root) or root
                return name if rel == "." else f"{name}/{rel}"
        return path


def _plural(count: int, noun: str) -> str:
    return f"{count:,} {noun}" + ("" if count == 1 else "s")


def _ratio_text(ratio: float) -> str:
    return f"{ratio:,.0f}" if ratio >= 10 else f"{ratio:g}"


def _size(count: int) -> str:
    size = float(count)
    for unit in ("B", "KB", "MB", "GB"):
        if size < 1000 or unit == "GB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1000
    return f"{count} B"


# ---------------------------------------------------------------- the cache


class _Dir:
    """One scanned directory. Normal ones count their files; special ones are leaves."""

    __slots__ = ("kind", "files", "total", "subdirs", "creds", "roles", "manifest",
                 "gitlink", "dirty")

    def __init__(self, kind: int = _DIR) -> None:
        self.kind = kind
        self.files = 0  # regular files directly here (a store: in its whole subtree)
        self.total = 0  # counted files in the subtree (0 for .git and stores)
        self.subdirs: tuple[str, ...] = ()
        self.creds: tuple[tuple[str, int, int, int], ...] = ()  # (name, count, mtime, size)
        self.roles: tuple[tuple[str, tuple[str, ...], int, int], ...] = ()
        self.manifest = False
        self.gitlink = False  # a ``.git`` file: a linked worktree or submodule
        self.dirty = False


@dataclass
class _Exposure:
    files: int = 0
    credentials: dict[str, int] = field(default_factory=dict)
    git: dict[str, list[str]] = field(default_factory=dict)  # common dir -> via
    manifests: set[str] = field(default_factory=set)
    roles: dict[str, tuple[str, ...]] = field(default_factory=dict)
    stores: dict[str, int] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)


class InventoryCache:
    """Per-directory counts for every directory scanned, kept current by ``file_changed``.

    ``dirs_scanned`` counts directory listings made so far (tests and benches
    use it to show that an update did not rescan the tree). Methods may be
    called from several threads (a watcher and a request handler); they take
    turns. ``report`` can take a while on first sight of a tree or of a git
    history, holding the lock all along: call it off the event loop, and from
    the event loop only ``queue_changes``, which never waits for a scan.
    """

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._queue_lock = threading.Lock()  # held for a moment only, never during a scan
        self._queued: dict[str, None] = {}
        self._flush_due = False
        self.dirs_scanned = 0
        self._clear()

    def _clear(self) -> None:
        self._dirs: dict[str, _Dir] = {}
        self._cred_dirs: set[str] = set()
        self._manifest_dirs: set[str] = set()
        self._role_dirs: set[str] = set()
        self._gitlink_dirs: set[str] = set()
        self._specials: set[str] = set()
        self._histories: dict[str, _History] = {}
        self._git_sizes: dict[str, tuple[tuple, int]] = {}  # common dir -> (key, bytes)
        self._git_size_stale: set[str] = set()
        self._errors: dict[str, str] = {}

    # ------------------------------------------------------------ public API

    def report(self, before: Sequence[str], after: Sequence[str], *,
               progress: Progress | None = None) -> InventoryReport:
        """What ``after`` exposes beyond ``before`` (both lists of absolute paths)."""
        with self._lock:
            self._apply_queued()
            return self._report(_collapse(before), _collapse(after), progress)

    def file_changed(self, path: str) -> None:
        """A file or directory at ``path`` was created, modified or deleted (applied now)."""
        with self._lock:
            self._apply_queued()
            self._file_changed(os.path.normpath(path))

    def queue_changes(self, paths: Iterable[str]) -> bool:
        """Note changed paths without waiting for a running scan.

        They are applied by ``apply_queued`` or at the start of the next
        ``report``, whichever takes the lock first. Returns True when the
        caller should schedule ``apply_queued`` (off the event loop): False
        means one is already due and will apply these too.
        """
        with self._queue_lock:
            for path in paths:
                self._queued[os.path.normpath(path)] = None
            if self._flush_due or not self._queued:
                return False
            self._flush_due = True
            return True

    def apply_queued(self) -> int:
        """Apply the queued changes (waits for a running scan: call it off the event loop)."""
        with self._lock:
            return self._apply_queued()

    def _apply_queued(self) -> int:
        with self._queue_lock:
            queued, self._queued = list(self._queued), {}
            self._flush_due = False
        for path in queued:
            self._file_changed(path)
        return len(queued)

    def invalidate(self, path: str | None = None) -> None:
        """Forget ``path``'s subtree (everything when None); it is rescanned when next needed."""
        with self._lock:
            if path is None:
                self._clear()
                return
            path = os.path.normpath(path)
            for key in [k for k in self._dirs if is_within(k, path)]:
                self._forget(key)
            for common in [k for k in self._histories if is_within(k, path)]:
                del self._histories[common]
                self._git_sizes.pop(common, None)

    # ------------------------------------------------------------ reporting

    def _report(self, old: tuple[str, ...], new: tuple[str, ...],
                progress: Progress | None) -> InventoryReport:
        added = tuple(r for r in new if not _within_any(r, old))
        for root in added:  # git reads the history while we walk the tree
            common = _repository_at(root)
            if common:
                self._history(common, progress)
        for root in dict.fromkeys((*old, *new)):
            self._ensure(root, progress)
        seen_before = self._exposure(old)
        seen_after = self._exposure(new)
        new_git = [(path, tuple(sorted(set(via)))) for path, via in sorted(seen_after.git.items())
                   if path not in seen_before.git]
        for path, _ in new_git:  # repositories met during the walk: start them together
            self._history(path, progress)
        return InventoryReport(
            before=old, after=new, added_roots=added, widens=bool(added),
            files_before=seen_before.files, files_after=seen_after.files,
            credentials=tuple(CredentialFile(p, c) for p, c in sorted(
                seen_after.credentials.items()) if p not in seen_before.credentials),
            git=tuple(self._git_dir(path, via) for path, via in new_git),
            siblings=tuple(sorted(
                d for d in seen_after.manifests - seen_before.manifests
                if not any(is_within(r, d) for r in old))),
            ci_roles=tuple(CiRoles(p, r) for p, r in sorted(seen_after.roles.items())
                           if p not in seen_before.roles),
            stores=tuple(Store(p, n) for p, n in sorted(seen_after.stores.items())
                         if p not in seen_before.stores),
            errors=tuple(sorted(set(seen_after.errors))),
        )

    def _file_changed(self, path: str) -> None:
        node = path
        while node not in self._dirs:
            parent = os.path.dirname(node)
            if parent == node:
                return  # not under anything scanned
            node = parent
        entry = self._dirs[node]
        if entry.kind == _DIR:
            self._rescan(node)
        elif node == path and not os.path.lexists(path) and os.path.dirname(path) in self._dirs:
            self._rescan(os.path.dirname(path))  # a .git directory or store went away
        else:
            entry.dirty = True  # recounted at the next report

    # ------------------------------------------------------------ scanning

    def _ensure(self, root: str, progress: Progress | None) -> None:
        if root in self._dirs:
            return
        try:
            info = os.lstat(root)
        except OSError:
            return
        if not stat.S_ISDIR(info.st_mode):
            return
        kind = _kind_of_path(root)
        if progress:
            progress(f"scanning {root}")
        if kind == _DIR:
            self._scan_tree(root)
        else:
            self._add_special(root, kind)

    def _scan_tree(self, top: str) -> None:
        """Scan ``top`` and every directory below it not already cached."""
        dirs = self._dirs
        links: list[tuple[_Dir, _Dir]] = []  # (child, parent), parents listed first
        stack: list[tuple[str, _Dir | None]] = [(top, None)]
        while stack:
            path, parent = stack.pop()
            entry = self._scan_dir(path, None)
            self._store(path, entry)
            if parent is not None:
                links.append((entry, parent))
            prefix = path + os.sep
            for name in entry.subdirs:
                child = prefix + name
                cached = dirs.get(child)
                if cached is not None:
                    entry.total += cached.total  # reuse a subtree scanned before
                elif name in _SPECIAL_NAMES and (kind := _child_kind(path, name)) != _DIR:
                    self._add_special(child, kind)
                else:
                    stack.append((child, entry))
        # Children were listed after their parents: add each total to its parent.
        for entry, parent in reversed(links):
            parent.total += entry.total

    def _scan_dir(self, path: str, old: _Dir | None) -> _Dir:
        """List one directory: its file count, interesting files and subdirectories."""
        entry = _Dir()
        self.dirs_scanned += 1
        try:
            with os.scandir(path) as listing:
                items = list(listing)
            # d_type answers both questions without a stat; most entries are files.
            names = [item.name for item in items if item.is_file(follow_symlinks=False)]
            if len(names) < len(items):
                entry.subdirs = tuple([item.name for item in items
                                       if item.is_dir(follow_symlinks=False)])
            if self._errors:
                self._errors.pop(path, None)
        except OSError as error:
            self._errors[path] = f"{path}: {error.strerror or type(error).__name__}"
            return entry
        entry.files = entry.total = len(names)
        if names:
            joined = "\x00" + "\x00".join(names)
            found = _INTERESTING.findall(joined) if _worth_a_look(joined) else []
            dir_name = path.rpartition(os.sep)[2]
            if found or dir_name in _INTERESTING_DIRS:
                self._read_interesting(path, dir_name, entry, names, found, old)
        return entry

    def _read_interesting(self, path: str, dir_name: str, entry: _Dir, names: list[str],
                          found: list[str], old: _Dir | None) -> None:
        """Note the manifest, the ``.git`` file, credential counts and CI roles."""
        if dir_name in CREDENTIAL_PARENTS:
            found += [n for n in names if is_credential_name(n, dir_name)]
        workflows = dir_name == "workflows" and os.path.basename(os.path.dirname(path)) == ".github"
        if workflows:
            found += [n for n in names if n.endswith((".yml", ".yaml"))]
        creds, roles = [], []
        old_creds = {c[0]: c for c in old.creds} if old else {}
        old_roles = {r[0]: r for r in old.roles} if old else {}
        for name in dict.fromkeys(found):
            if name == ".git":
                entry.gitlink = True
                entry.files -= 1
                entry.total -= 1
            elif name in MANIFESTS:
                entry.manifest = True
            elif name in _CI_FILES or (workflows and name.endswith((".yml", ".yaml"))):
                roles.append(_reuse(old_roles.get(name), path, name, _read_roles))
            elif is_credential_name(name, dir_name):
                creds.append(_reuse(old_creds.get(name), path, name, count_credentials))
        entry.creds = tuple(creds)
        entry.roles = tuple(r for r in roles if r[1])

    def _add_special(self, path: str, kind: int) -> None:
        entry = _Dir(kind)
        if kind == _STORE:
            entry.files = self._count_files(path)
        self._store(path, entry)

    def _count_files(self, top: str) -> int:
        """Regular files in ``top``'s subtree (a package store)."""
        count = 0
        stack = [top]
        while stack:
            path = stack.pop()
            self.dirs_scanned += 1
            try:
                with os.scandir(path) as listing:
                    items = list(listing)
                files = len([item for item in items if item.is_file(follow_symlinks=False)])
                if files < len(items):
                    stack += [item.path for item in items if item.is_dir(follow_symlinks=False)]
            except OSError:
                continue
            count += files
        return count

    def _rescan(self, path: str) -> None:
        """Relist one directory; scan new subdirectories, drop vanished ones, fix ancestors."""
        old = self._dirs[path]
        if not os.path.isdir(path) or os.path.islink(path):
            parent = os.path.dirname(path)
            if parent in self._dirs and parent != path:
                self._rescan(parent)
            else:
                self._forget_tree(path)
            return
        entry = self._scan_dir(path, old)
        for gone in set(old.subdirs) - set(entry.subdirs):
            self._forget_tree(os.path.join(path, gone))
        for name in entry.subdirs:
            child = os.path.join(path, name)
            if child not in self._dirs:
                kind = _child_kind(path, name)
                if kind == _DIR:
                    self._scan_tree(child)
                else:
                    self._add_special(child, kind)
        self._store(path, entry)
        delta = self._retotal(path) - old.total
        parent = os.path.dirname(path)
        while delta and parent in self._dirs and parent != path:
            self._dirs[parent].total += delta
            path, parent = parent, os.path.dirname(parent)

    def _retotal(self, path: str) -> int:
        entry = self._dirs[path]
        total = entry.files
        for name in entry.subdirs:
            child = self._dirs.get(os.path.join(path, name))
            if child is not None:
                total += child.total
        entry.total = total
        return total

    def _store(self, path: str, entry: _Dir) -> None:
        replaced = self._dirs.get(path)
        self._dirs[path] = entry
        if replaced is None and not (entry.creds or entry.manifest or entry.roles
                                     or entry.gitlink or entry.kind != _DIR):
            return
        for index, present in ((self._cred_dirs, bool(entry.creds)),
                               (self._manifest_dirs, entry.manifest),
                               (self._role_dirs, bool(entry.roles)),
                               (self._gitlink_dirs, entry.gitlink),
                               (self._specials, entry.kind != _DIR)):
            if present:
                index.add(path)
            else:
                index.discard(path)

    def _forget(self, path: str) -> None:
        self._dirs.pop(path, None)
        for index in (self._cred_dirs, self._manifest_dirs, self._role_dirs,
                      self._gitlink_dirs, self._specials):
            index.discard(path)

    def _forget_tree(self, path: str) -> None:
        stack = [path]
        while stack:
            current = stack.pop()
            entry = self._dirs.get(current)
            if entry is None:
                continue
            stack.extend(os.path.join(current, name) for name in entry.subdirs)
            self._forget(current)

    # ------------------------------------------------------------ exposure

    def _exposure(self, union: tuple[str, ...]) -> _Exposure:
        seen = _Exposure()
        for root in union:
            entry = self._dirs.get(root)
            if entry is None:
                self._expose_non_directory(root, seen)
            elif entry.kind == _DIR:
                seen.files += entry.total

        def inside(paths: Iterable[str]) -> list[str]:
            return [p for p in paths if _within_any(p, union)]

        for d in inside(self._cred_dirs):
            for name, count, _, _ in self._dirs[d].creds:
                if count:
                    seen.credentials[os.path.join(d, name)] = count
        seen.manifests = set(inside(self._manifest_dirs))
        for d in inside(self._role_dirs):
            for name, roles, _, _ in self._dirs[d].roles:
                seen.roles[os.path.join(d, name)] = roles
        for special in _outermost(inside(self._specials)):
            self._expose_special(special, seen)
        for d in inside(self._gitlink_dirs):
            common = _common_dir_from_gitfile(os.path.join(d, ".git"))
            if common:
                seen.git.setdefault(common, []).append(d)
        seen.errors += [msg for path, msg in self._errors.items() if _within_any(path, union)]
        return seen

    def _expose_non_directory(self, root: str, seen: _Exposure) -> None:
        try:
            info = os.lstat(root)
        except OSError:
            seen.errors.append(f"{root}: does not exist")
            return
        if stat.S_ISREG(info.st_mode):
            seen.files += 1
            if is_credential_name(os.path.basename(root), os.path.basename(os.path.dirname(root))):
                count = count_credentials(root)
                if count:
                    seen.credentials[root] = count

    def _expose_special(self, path: str, seen: _Exposure) -> None:
        entry = self._dirs[path]
        if entry.kind == _STORE:
            if entry.dirty:
                entry.files = self._count_files(path)
                entry.dirty = False
            if entry.files:
                seen.stores[path] = entry.files
            return
        git_dir = _enclosing_git_dir(path)
        common = _common_dir_of(git_dir) if git_dir else None
        if common and git_dir:
            seen.git.setdefault(common, []).append(os.path.dirname(git_dir))
            if entry.dirty:
                self._git_size_stale.add(common)
                entry.dirty = False

    # ------------------------------------------------------------ git

    def _history(self, common: str, progress: Progress | None) -> _History:
        """The history reading of ``common``: the cached one while no ref moved, else a new one."""
        key = _git_key(common)
        history = self._histories.get(common)
        if history is None or history.key != key:
            if progress:
                progress(f"reading git history of {common}")
            history = self._histories[common] = _History(common, key)
        return history

    def _git_dir(self, common: str, via: tuple[str, ...]) -> GitDir:
        """Size, commit count and deleted credential files (history read by ``_history``)."""
        history = self._histories[common]
        size = self._git_sizes.get(common)
        if size is None or size[0] != history.key or common in self._git_size_stale:
            size = self._git_sizes[common] = (history.key, self._du(common))
            self._git_size_stale.discard(common)
        commits, deleted = history.result()
        return GitDir(common, size[1], commits, deleted, via)

    def _du(self, top: str) -> int:
        """Apparent size of ``top`` like ``du -sb``: files, directories and links, once per inode."""
        try:
            total = os.lstat(top).st_size
        except OSError:
            return 0
        seen_inodes: set[tuple[int, int]] = set()
        stack = [top]
        while stack:
            path = stack.pop()
            self.dirs_scanned += 1
            try:
                with os.scandir(path) as listing:
                    items = list(listing)
            except OSError:
                continue
            for item in items:
                try:
                    info = item.stat(follow_symlinks=False)
                except OSError:  # gone since the listing (git gc, a fetch)
                    continue
                if item.is_dir(follow_symlinks=False):
                    stack.append(item.path)
                elif info.st_nlink > 1:
                    inode = (info.st_dev, info.st_ino)
                    if inode in seen_inodes:
                        continue
                    seen_inodes.add(inode)
                total += info.st_size
        return total


def warm_up() -> None:
    """Load now what the first report would load: the detect-secrets detectors.

    About a quarter of a second, mostly imports; call it from a background
    thread after start-up so the first widening does not wait for it.
    Importing this module stays cheap: nothing heavy happens before this.
    """
    load_detectors()


def inventory(before: Sequence[str], after: Sequence[str], *,
              progress: Progress | None = None) -> InventoryReport:
    """One-shot ``InventoryCache().report(before, after)``."""
    return InventoryCache().report(before, after, progress=progress)


# ---------------------------------------------------------------- helpers


def _collapse(paths: Iterable[str]) -> tuple[str, ...]:
    """Absolute, normalised, without entries contained in another (order kept)."""
    clean: list[str] = []
    for path in paths:
        text = os.fspath(path)
        if not os.path.isabs(text):
            raise ValueError(f"inventory needs absolute paths, got {text!r}")
        clean.append(os.path.normpath(text))
    unique = list(dict.fromkeys(clean))
    return tuple(p for p in unique if not any(o != p and is_within(p, o) for o in unique))


def _within_any(path: str, union: Iterable[str]) -> bool:
    return any(is_within(path, root) for root in union)


def _outermost(paths: Iterable[str]) -> list[str]:
    """Drop paths contained in another path of the list (sorted; linear after sorting)."""
    kept: list[str] = []
    for path in sorted(set(paths), key=lambda p: p + os.sep):
        if not kept or not is_within(path, kept[-1]):
            kept.append(path)
    return kept


def _worth_a_look(listing: str) -> bool:
    """Whether a NUL-joined listing may hold an interesting name (a fast, loose test)."""
    if _DOTTED_HINT(listing):
        return True
    return any(start in listing for start in _DOTLESS_HINTS)


def _mtime(path: str) -> int:
    try:
        return os.lstat(path).st_mtime_ns
    except OSError:
        return -1


def _stat_key(path: str) -> tuple[int, int]:
    try:
        info = os.lstat(path)
    except OSError:
        return (-1, -1)
    return (info.st_mtime_ns, info.st_size)


def _reuse(old: tuple | None, directory: str, name: str, read: Callable[[str], object]) -> tuple:
    """(name, value, mtime, size): the old tuple when the file is unchanged, else re-read."""
    path = os.path.join(directory, name)
    key = _stat_key(path)
    if old is not None and old[2:] == key:
        return old
    return (name, read(path), *key)


def _child_kind(parent: str, name: str) -> int:
    """How the subdirectory ``name`` of ``parent`` is treated."""
    parent_name = parent.rpartition(os.sep)[2]
    if name == ".git":
        return _GIT
    if name == ".pnpm" and parent_name == "node_modules":
        return _STORE
    if name == ".pnpm-store" or (parent_name == ".yarn" and name in ("cache", "unplugged")):
        return _STORE
    if name == "node_modules":
        # pnpm's node_modules holds links and a .pnpm store; npm's holds the packages.
        try:
            return _DIR if stat.S_ISDIR(os.lstat(os.path.join(parent, name, ".pnpm")).st_mode) \
                else _STORE
        except OSError:
            return _STORE
    return _DIR


def _kind_of_path(path: str) -> int:
    """The kind of a root: special when it is, or lies inside, a .git directory or a store."""
    current = os.sep
    for part in path.split(os.sep):
        if not part:
            continue
        kind = _child_kind(current, part)
        if kind != _DIR:
            return kind
        current = os.path.join(current, part)
    return _DIR


# ---------------------------------------------------------------- CI roles

_ROLE_KEYS = re.compile(
    r"(?:role-to-assume|role_to_assume|role-arn|role_arn|workload[_-]identity[_-]provider"
    r"|service[_-]account)\s*:\s*[\"']?(\$\{\{.*?\}\}|[^\s\"'#]+)"
)
_ARN = re.compile(r"arn:aws[\w-]*:iam::\d{12}:role/[\w+=,.@/-]+")
_ROLE_SHAPES = re.compile(
    r"arn:aws[\w-]*:iam::\d{12}:role/[\w+=,.@/-]+"
    r"|projects/[\w.-]+/locations/[\w.-]+/workloadIdentityPools/[\w./-]+"
    r"|[\w.+-]+@[\w.-]+\.iam\.gserviceaccount\.com"
    r"|\$\{\{[^}]{1,120}\}\}"
)
_MAX_ROLES = 20


def _read_roles(path: str) -> tuple[str, ...]:
    """Cloud role identifiers a CI file names (ARNs, workload identity, service accounts)."""
    try:
        with open(path, "rb") as handle:
            text = handle.read(_MAX_ROLE_FILE).decode("utf-8", errors="replace")
    except OSError:
        return ()
    found = [m.group(1) for m in _ROLE_KEYS.finditer(text)] + _ARN.findall(text)
    roles = [value for value in found if _ROLE_SHAPES.fullmatch(value)]
    return tuple(dict.fromkeys(roles))[:_MAX_ROLES]


# ---------------------------------------------------------------- git directories


def _repository_at(root: str) -> str | None:
    """The common git directory of the ``.git`` directory or file directly in ``root``."""
    dot_git = os.path.join(root, ".git")
    try:
        mode = os.lstat(dot_git).st_mode
    except OSError:
        return None
    if stat.S_ISDIR(mode):
        return _common_dir_of(dot_git)
    return _common_dir_from_gitfile(dot_git) if stat.S_ISREG(mode) else None


def _enclosing_git_dir(path: str) -> str | None:
    """``path`` up to and including its last ``.git`` component."""
    parts = path.split(os.sep)
    for index in range(len(parts) - 1, -1, -1):
        if parts[index] == ".git":
            return os.sep.join(parts[:index + 1]) or None
    return None


def _common_dir_of(git_dir: str) -> str | None:
    """A git directory's common directory (itself, unless it names one in ``commondir``)."""
    if not os.path.isdir(git_dir):
        return None
    try:
        with open(os.path.join(git_dir, "commondir"), encoding="utf-8") as handle:
            pointer = handle.read().strip()
    except OSError:
        return os.path.realpath(git_dir)
    common = os.path.realpath(os.path.join(git_dir, pointer))
    return common if os.path.isdir(common) else None


def _common_dir_from_gitfile(gitfile: str) -> str | None:
    """The common git directory a ``.git`` file (``gitdir: ...``) leads to, if any."""
    try:
        with open(gitfile, encoding="utf-8") as handle:
            first = handle.readline(4096).strip()
    except (OSError, UnicodeDecodeError):
        return None
    if not first.startswith("gitdir:"):
        return None
    pointer = first[len("gitdir:"):].strip()
    admin = os.path.join(os.path.dirname(gitfile), pointer)
    return _common_dir_of(os.path.normpath(admin))


def _git_key(common: str) -> tuple:
    """Changes when a ref moves or objects arrive (commit, fetch, gc)."""
    return tuple(_mtime(os.path.join(common, name)) for name in _GIT_KEY_FILES)


_GIT_KEY_FILES = ("HEAD", "packed-refs", "FETCH_HEAD", os.path.join("logs", "HEAD"),
                  os.path.join("refs", "heads"), os.path.join("objects", "pack"))


class _History:
    """Commit count and deleted credential files of one repository, read in the background.

    Git runs in its own processes, so the history is read while the tree is
    walked; ``result()`` waits for both answers. ``key`` is the ``_git_key``
    the reading started from.
    """

    def __init__(self, common: str, key: tuple) -> None:
        self.key = key
        self._commits = _in_background(_commit_count, common)
        self._deleted = _in_background(_deleted_sensitive, common)

    def result(self) -> tuple[int | None, tuple[str, ...] | None]:
        return self._commits(), self._deleted()


def _in_background(function: Callable[..., T], *args: object) -> Callable[[], T | None]:
    """Start ``function(*args)`` in a daemon thread; the returned callable waits for its value.

    The value is None when the function raised: for git that means "could not tell".
    """
    box: list[T | None] = [None]

    def run() -> None:
        try:
            box[0] = function(*args)
        except Exception:  # reported as unknown, never as "none"
            box[0] = None

    thread = threading.Thread(target=run, name="rootguard-git", daemon=True)
    try:
        thread.start()
    except RuntimeError:  # no thread to spare: answer now
        run()
        return lambda: box[0]

    def wait() -> T | None:
        thread.join()
        return box[0]

    return wait


def _git(common: str, *args: str, data: bytes | None = None) -> bytes | None:
    """Run a read-only git command against ``common``; None on any failure."""
    command = ["git", f"--git-dir={common}", "-c", "core.fsmonitor=false",
               "-c", "log.showSignature=false", *args]
    try:
        with _GIT_SLOTS:
            result = subprocess.run(command, input=data, capture_output=True, env=git_env(),
                                    timeout=GIT_TIMEOUT, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return result.stdout if result.returncode == 0 else None


def _commit_count(common: str) -> int | None:
    out = _git(common, "rev-list", "--all", "--count")
    try:
        return int(out.strip()) if out is not None else None
    except ValueError:
        return None


def _deleted_sensitive(common: str) -> tuple[str, ...] | None:
    """Credential-named files deleted in some commit and absent from HEAD (names only).

    None when git failed or timed out: "we could not tell" is never shown as "none".
    Without rename detection (faster), a credential file renamed away is listed
    too: its old name is gone from HEAD while its content stays in history.
    """
    out = _git(common, "log", "--all", "--no-renames", "--diff-filter=D", "--name-only",
               "-z", "--format=")
    if out is None:
        return None
    unique = {n.strip("\n") for n in out.decode("utf-8", errors="replace").split("\x00")}
    names = sorted(n for n in unique if n and "\n" not in n and _is_sensitive_name(n))
    if not names:
        return ()
    query = "".join(f"HEAD:{n}\n" for n in names).encode()
    answer = _git(common, "cat-file", "--batch-check", data=query)
    if answer is None:
        return tuple(names)
    lines = answer.decode("utf-8", errors="replace").splitlines()
    return tuple(n for n, line in zip(names, lines, strict=False) if line.endswith(" missing"))


def _is_sensitive_name(relative: str) -> bool:
    parts = relative.split("/")
    return is_credential_name(parts[-1], parts[-2] if len(parts) > 1 else "")
