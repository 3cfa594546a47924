"""The inventory's walk: each directory listed once, kept as counts and small lists.

Files are the regular files under a root, links not followed. ``.git`` directories git
would read (``core.git_admin.admin_kind``) and package-manager stores are leaves (``GIT``,
``STORE``): reported on their own, not counted; a ``.git`` directory git would not read is
a folder like any other.
Per directory ``ScannedTree`` keeps its file count, subdirectory names, manifest and ``.git``
file, credential counts and CI identities; ``file_changed`` relists one directory and adjusts
its ancestors. With ``persistent``, a directory whose key is unchanged since an earlier run is
taken from its kept scan (``scan_store``) instead of being listed. What a union exposes is
computed from this tree by ``scan.InventoryCache``.
"""

from __future__ import annotations

import os
import re
import stat
import time
from collections.abc import Callable

from lsp_bridge.core.change_key import key_of, stable_key, unchanged
from lsp_bridge.core.filesystems import pseudo_mounts
from lsp_bridge.core.git_admin import admin_kind
from lsp_bridge.inventory.ci import read_identities
from lsp_bridge.inventory.model import CiIdentity
from lsp_bridge.inventory.scan_store import ScanStore, plain_names
from lsp_bridge.inventory.secrets import (
    CREDENTIAL_NAME_PATTERN,
    CREDENTIAL_NAME_STARTS,
    CREDENTIAL_PARENTS,
    count_credentials,
    dotted_hint,
    is_credential_name,
)

Progress = Callable[[str], None]

MANIFESTS = frozenset({"package.json", "pyproject.toml", "Cargo.toml", "go.mod"})
DIR, GIT, STORE = 0, 1, 2
_CI_FILES = frozenset({".gitlab-ci.yml", ".gitlab-ci.yaml"})
_SPECIAL_NAMES = frozenset({".git", ".pnpm", ".pnpm-store", "node_modules", "cache", "unplugged"})
_INTERESTINGDIRS = CREDENTIAL_PARENTS | {"workflows"}
# Interesting names in a NUL-joined directory listing ("\x00a\x00b..."): a cheap
# hint first (``_worth_a_look``), the exact pattern only on listings that hit.
# Compiled at the first listing: a run whose directories are all kept lists none.
_DOTTED_HINT = re.compile(dotted_hint(("mod",)), re.IGNORECASE)  # go.mod; other manifests: json/toml
_DOTLESS_HINTS = tuple("\x00" + start for start in CREDENTIAL_NAME_STARTS)
_INTERESTING = re.compile(
    r"(?<![^\x00])(?:\.git|package\.json|pyproject\.toml|Cargo\.toml|go\.mod"
    r"|\.gitlab-ci\.ya?ml|" + CREDENTIAL_NAME_PATTERN + r")(?![^\x00])"
)


# ---------------------------------------------------------------- the cache


class Dir:
    """One scanned directory. Normal ones count their files; special ones are leaves."""

    __slots__ = ("kind", "files", "total", "subdirs", "creds", "roles", "manifest",
                 "gitlink", "dirty", "kept")

    def __init__(self, kind: int = DIR) -> None:
        self.kind = kind
        self.files = 0  # regular files directly here (a store: in its whole subtree)
        self.total = 0  # counted files in the subtree (0 for .git and stores)
        self.subdirs: tuple[str, ...] = ()
        self.creds: tuple[tuple, ...] = ()  # (name, count, *_stat_key): every credential-named file
        self.roles: tuple[tuple, ...] = ()  # (name, (identities, capped), *_stat_key): every CI file
        self.manifest = False
        self.gitlink = False  # a ``.git`` file: a linked worktree or submodule
        self.dirty = False
        # What lets the next run skip this listing (``scan_store``): a directory's stable key,
        # a package store's ``[[relative directory, *key], ...]``; None: listed again next time.
        self.kept: tuple | list | None = None


class ScannedTree:
    """Every directory scanned so far, with per-directory counts and small lists (never per-file objects).

    ``dirs_scanned`` counts directory listings made so far, ``dirs_kept`` the directories (and package
    stores) taken from a kept scan instead (tests and benches use them to show what an update listed).
    Not thread-safe on its own: ``InventoryCache`` holds its lock around every call.
    """

    def __init__(self, *, persistent: bool = True, clock: Callable[[], int] = time.time_ns) -> None:
        self.persistent = persistent
        self.clock = clock  # the wall clock in ns, read before a walk: ``change_key.stable_key``'s "read at"
        self.dirs_scanned = 0
        self.dirs_kept = 0
        self._clear()

    def _clear(self) -> None:
        self._dirs: dict[str, Dir] = {}
        self._cred_dirs: set[str] = set()
        self._manifest_dirs: set[str] = set()
        self._role_dirs: set[str] = set()
        self._gitlink_dirs: set[str] = set()
        self._specials: set[str] = set()
        self._errors: dict[str, str] = {}
        self._stores: dict[str, ScanStore] = {}  # root -> its kept scans, to save when changed
        self._pseudo: dict[str, str] | None = None  # mount point -> type of /proc, /sys, /dev...: never walked

    def _file_changed(self, path: str) -> None:
        """Apply one changed path: relist its directory, or mark a .git directory or store for a recount."""
        node = path
        while node not in self._dirs:
            parent = os.path.dirname(node)
            if parent == node:
                return  # not under anything scanned
            node = parent
        entry = self._dirs[node]
        if _git_kind_changed(node, entry, self._dirs):  # history <-> folder: listed again
            self._forget_tree(node)
            self._rescan(os.path.dirname(node))
        elif entry.kind == DIR:
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
        if kind == DIR:
            if self._pseudo is None:
                self._pseudo = pseudo_mounts()
            store = None
            if self.persistent:
                store = self._stores.get(root)
                if store is None:
                    store = self._stores[root] = ScanStore.for_root(root)
            self._scan_tree(root, store)
        else:
            self._add_special(root, kind)

    def _scan_tree(self, top: str, store: ScanStore | None = None) -> None:
        """Scan ``top`` and every directory below it not already cached (nor kept in ``store``
        with its directory unchanged)."""
        dirs = self._dirs
        links: list[tuple[Dir, Dir]] = []  # (child, parent), parents listed first
        stack: list[tuple[str, Dir | None]] = [(top, None)]
        persistent = self.persistent
        now = self.clock()  # before every lstat of the walk: ``stable_key``'s "read at"
        while stack:
            path, parent = stack.pop()
            entry, key = None, None
            if persistent:
                try:
                    info = os.lstat(path)
                except OSError:
                    pass  # the listing says why
                else:
                    entry = self._from_store(path, info, store) if store is not None else None
                    key = stable_key(info, now) if entry is None else None
            if entry is None:
                entry = self._scan_dir(path, None, key)
                if store is not None and key is not None:
                    store.changed = True
            self._store(path, entry)
            if parent is not None:
                links.append((entry, parent))
            prefix = path if path.endswith(os.sep) else path + os.sep
            for name in entry.subdirs:
                child = prefix + name
                cached = dirs.get(child)
                if cached is not None:
                    entry.total += cached.total  # reuse a subtree scanned before
                elif name in _SPECIAL_NAMES and (kind := _child_kind(path, name)) != DIR:
                    self._add_special(child, kind, store)
                elif self._pseudo and child in self._pseudo:
                    self._errors[child] = f"{child}: a {self._pseudo[child]} pseudo file system, not walked"
                else:
                    stack.append((child, entry))
        # Children were listed after their parents: add each total to its parent.
        for entry, parent in reversed(links):
            parent.total += entry.total

    def _scan_dir(self, path: str, old: Dir | None, key: tuple | None) -> Dir:
        """List one directory: its file count, interesting files and subdirectories. ``key``:
        its ``change_key.stable_key`` read before the listing (None: never kept)."""
        entry = Dir()
        entry.kept = key
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
            if found or dir_name in _INTERESTINGDIRS:
                self._read_interesting(path, dir_name, entry, names, found, old)
        return entry

    def _read_interesting(self, path: str, dir_name: str, entry: Dir, names: list[str],
                          found: list[str], old: Dir | None) -> None:
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
                roles.append(_reuse(old_roles.get(name), path, name, read_identities))
            elif is_credential_name(name, dir_name):
                creds.append(_reuse(old_creds.get(name), path, name, count_credentials))
        entry.creds = tuple(creds)
        entry.roles = tuple(roles)

    def _from_store(self, path: str, info: os.stat_result, store: ScanStore) -> Dir | None:
        """The directory as ``store`` kept it when ``info`` (its ``lstat`` now) still has the kept
        key, its credential and CI files read again if they changed; else None."""
        record = store.record(path, info)
        if record is None:
            return None
        try:
            *key, files, subdirs, flags, creds, roles = record
            entry = Dir()
            entry.files = entry.total = files
            entry.subdirs = tuple(subdirs)
            if creds:
                kept_creds = [_kept_credential(c) for c in creds]
                entry.creds = tuple(_reuse(c, path, c[0], count_credentials) for c in kept_creds)
                if any(new is not old for new, old in zip(entry.creds, kept_creds, strict=True)):
                    store.changed = True  # a file read again: keep its new key
            if roles:
                kept_roles = [_kept_roles(r) for r in roles]
                entry.roles = tuple(_reuse(r, path, r[0], read_identities) for r in kept_roles)
                if any(new is not old for new, old in zip(entry.roles, kept_roles, strict=True)):
                    store.changed = True
        except (TypeError, ValueError, IndexError):
            return None  # not what ``_kept_under`` writes
        if not (type(files) is int and files >= 0 and type(flags) is int and plain_names(subdirs)
                and type(creds) is list and type(roles) is list):
            return None
        entry.kept = tuple(key)
        entry.manifest, entry.gitlink = bool(flags & 1), bool(flags & 2)
        if self._errors:
            self._errors.pop(path, None)
        self.dirs_kept += 1
        return entry
    def _kept_under(self, store: ScanStore) -> tuple[dict[str, list], dict[str, list]]:
        """The records ``store`` keeps for what is cached below its root: directories whose key
        was stable when listed, and package stores whose every directory's was."""
        records: dict[str, list] = {}
        counts: dict[str, list] = {}
        top = store.top
        prefix = top if top.endswith(os.sep) else top + os.sep
        cut = len(prefix)
        for path, entry in self._dirs.items():
            if entry.kept is None or not (path.startswith(prefix) or path == top):
                continue
            relative = path[cut:] if path != top else ""
            if entry.kind == DIR:
                creds = [list(c) for c in entry.creds] if entry.creds else []
                roles = [[name, [[i.cloud, i.kind, i.value] for i in found[0]], found[1], *key]
                         for name, found, *key in entry.roles] if entry.roles else []
                records[relative] = [*entry.kept, entry.files, list(entry.subdirs),
                                     entry.manifest | entry.gitlink << 1, creds, roles]
            elif entry.kind == STORE:
                counts[relative] = [entry.files, entry.kept]
        return records, counts
    def _add_special(self, path: str, kind: int, store: ScanStore | None = None) -> None:
        entry = Dir(kind)
        if kind == STORE:
            kept = self._kept_count(path, store) if store is not None else None
            if kept is not None:
                entry.files, entry.kept = kept
                self.dirs_kept += 1
            else:
                entry.files, entry.kept = self._count_files(path)
                if store is not None and entry.kept is not None:
                    store.changed = True
        self._store(path, entry)
    def _kept_count(self, top: str, store: ScanStore) -> tuple[int, list] | None:
        """(files, directories' keys) of the package store ``top`` as ``store`` kept it, when no
        directory in it changed since (each has its key: the root's lists the others)."""
        record = store.counts.get(store.relative(top))
        if not (type(record) is list and len(record) == 2 and type(record[0]) is int and type(record[1]) is list):
            return None
        files, keys = record
        prefix = top if top.endswith(os.sep) else top + os.sep
        rooted = False
        for item in keys:
            if not (type(item) is list and len(item) == 5 and type(item[0]) is str):
                return None
            relative = item[0]
            if relative and not plain_names(relative.split(os.sep)):
                return None
            rooted = rooted or not relative
            try:
                info = os.lstat(prefix + relative if relative else top)
            except OSError:
                return None
            if not unchanged(item[1:], info):
                return None
        return (files, keys) if rooted else None
    def _count_files(self, top: str) -> tuple[int, list | None]:
        """Regular files in ``top``'s subtree (a package store), and each directory's stable key
        (``[relative path, *key]``, None when one is not stable or the cache is not persistent)."""
        count = 0
        stack = [top]
        keys: list | None = [] if self.persistent else None
        start = len(top) + (not top.endswith(os.sep))
        now = self.clock()
        while stack:
            path = stack.pop()
            self.dirs_scanned += 1
            if keys is not None:
                key = key_of(path, now)
                if key is None:
                    keys = None
                else:
                    keys.append([path[start:], *key])
            try:
                with os.scandir(path) as listing:
                    items = list(listing)
                files = len([item for item in items if item.is_file(follow_symlinks=False)])
                if files < len(items):
                    stack += [item.path for item in items if item.is_dir(follow_symlinks=False)]
            except OSError:
                keys = None  # not kept: an unreadable directory is read again next time
                continue
            count += files
        return count, keys

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
        entry = self._scan_dir(path, old, key_of(path, self.clock()) if self.persistent else None)
        for gone in set(old.subdirs) - set(entry.subdirs):
            self._forget_tree(os.path.join(path, gone))
        for name in entry.subdirs:
            child = os.path.join(path, name)
            if child not in self._dirs:
                kind = _child_kind(path, name)
                if kind == DIR:
                    self._scan_tree(child)
                else:
                    self._add_special(child, kind)
        self._store(path, entry)
        delta = _retotal(self._dirs, path) - old.total
        parent = os.path.dirname(path)
        while delta and parent in self._dirs and parent != path:
            self._dirs[parent].total += delta
            path, parent = parent, os.path.dirname(parent)

    def _store(self, path: str, entry: Dir) -> None:
        replaced = self._dirs.get(path)
        self._dirs[path] = entry
        if replaced is None and not (entry.creds or entry.manifest or entry.roles
                                     or entry.gitlink or entry.kind != DIR):
            return
        for index, present in ((self._cred_dirs, bool(entry.creds)),
                               (self._manifest_dirs, entry.manifest),
                               (self._role_dirs, bool(entry.roles)),
                               (self._gitlink_dirs, entry.gitlink),
                               (self._specials, entry.kind != DIR)):
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


def _retotal(dirs: dict[str, Dir], path: str) -> int:
    """The subtree total of ``path`` from its files and its children's totals (stored, returned)."""
    entry = dirs[path]
    total = entry.files
    for name in entry.subdirs:
        child = dirs.get(os.path.join(path, name))
        if child is not None:
            total += child.total
    entry.total = total
    return total


def _git_kind_changed(node: str, entry: Dir, dirs: dict[str, Dir]) -> bool:
    """Whether ``node`` is a ``.git`` directory that became, or stopped being, one git reads."""
    parent = os.path.dirname(node)
    return node.endswith(os.sep + ".git") and parent in dirs and _child_kind(parent, ".git") != entry.kind


def _worth_a_look(listing: str) -> bool:
    """Whether a NUL-joined listing may hold an interesting name (a fast, loose test)."""
    if _DOTTED_HINT.search(listing):
        return True
    lowered = listing.lower()  # credential names match in any case (``secrets``)
    return any(start in lowered for start in _DOTLESS_HINTS)


_GONE = (-1, -1, -1, -1)
_UNSTABLE = (-2, -2, -2, -2)  # changed too recently to tell a later change: never matches


def _stat_key(path: str) -> tuple[int, int, int, int] | None:
    """(mtime, size, ctime, inode) of the file at ``path``; ``_GONE`` when it cannot be read;
    None when it changed too recently for a later change to show (``change_key.stable_key``)."""
    now = time.time_ns()
    try:
        info = os.lstat(path)
    except OSError:
        return _GONE
    if stable_key(info, now) is None:
        return None
    return (info.st_mtime_ns, info.st_size, info.st_ctime_ns, info.st_ino)


def _kept_credential(item: list) -> tuple:
    """A kept ``(name, count, *key)`` (TypeError or ValueError when it is not one)."""
    if not (type(item) is list and len(item) == 6 and plain_names(item[:1]) and all(type(n) is int for n in item[1:])):
        raise ValueError("not a kept credential count")
    return tuple(item)


def _kept_roles(item: list) -> tuple:
    """A kept ``(name, (identities, capped), *key)`` (TypeError or ValueError when it is not one)."""
    name, identities, capped, *key = item
    if not (plain_names([name]) and type(capped) is bool and len(key) == 4 and all(type(n) is int for n in key)):
        raise ValueError("not kept CI identities")
    found = tuple(CiIdentity(*(str(part) for part in identity)) for identity in identities)
    return (name, (found, capped), *key)


def _reuse(old: tuple | None, directory: str, name: str, read: Callable[[str], object]) -> tuple:
    """(name, value, *key): the old tuple when the file is unchanged since, else read again."""
    path = os.path.join(directory, name)
    key = _stat_key(path)
    if old is not None and key is not None and old[2:] == key:
        return old
    return (name, read(path), *(key or _UNSTABLE))


def _child_kind(parent: str, name: str) -> int:
    """How the subdirectory ``name`` of ``parent`` is treated."""
    parent_name = parent.rpartition(os.sep)[2]
    if name == ".git":
        # History only when git would read it (HEAD, objects and refs, or a worktree's admin
        # dir): any other ".git" is a folder the agent reads, its credential files counted.
        return GIT if admin_kind(os.path.join(parent, name)) is not None else DIR
    if name == ".pnpm" and parent_name == "node_modules":
        return STORE
    if name == ".pnpm-store" or (parent_name == ".yarn" and name in ("cache", "unplugged")):
        return STORE
    if name == "node_modules":
        # pnpm's node_modules holds links and a .pnpm store; npm's holds the packages.
        try:
            return DIR if stat.S_ISDIR(os.lstat(os.path.join(parent, name, ".pnpm")).st_mode) \
                else STORE
        except OSError:
            return STORE
    return DIR


def _kind_of_path(path: str) -> int:
    """The kind of a root: special when it is, or lies inside, a .git directory or a store."""
    current = os.sep
    for part in path.split(os.sep):
        if not part:
            continue
        kind = _child_kind(current, part)
        if kind != DIR:
            return kind
        current = os.path.join(current, part)
    return DIR
