"""What a set of roots exposes, and what adding a folder hands over (seed 000): the walk.

Files are the regular files under the union, links not followed. ``.git``
directories and package-manager stores are reported on their own lines and
not counted. The walk is ``tree`` (``ScannedTree``: each directory listed once,
kept as counts and small lists); ``InventoryCache`` adds what a union exposes
and the git histories, and a file watcher keeps it current with ``file_changed``.

The report model is ``model``; git discovery and history are ``history``
(discovery through ``core.worktrees``, the one validated ``.git`` reader); CI
identities are ``ci``; credential counting is ``secrets``.

Nothing here returns or logs a file's contents: paths, counts, commit counts,
names of deleted files and CI identities (which are not secrets) only.
"""

from __future__ import annotations

import os
import stat
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace

from lsp_bridge.core.paths import is_within
from lsp_bridge.inventory.history import (
    _History,
    common_dir_of,
    disk_usage,
    enclosing_checkout,
    git_key,
)
from lsp_bridge.inventory.model import CiRoles, CredentialFile, GitDir, InventoryReport, Store
from lsp_bridge.inventory.secrets import count_credentials, is_credential_name, load_detectors
from lsp_bridge.inventory.tree import DIR, STORE, Progress, ScannedTree

__all__ = ["InventoryCache", "InventoryReport", "inventory", "warm_up"]


@dataclass
class _Exposure:
    """What one union exposes."""

    files: int = 0
    credentials: dict[str, int] = field(default_factory=dict)
    git: dict[str, list[str]] = field(default_factory=dict)  # common dir -> via
    manifests: set[str] = field(default_factory=set)
    roles: dict[str, tuple] = field(default_factory=dict)  # path -> (identities, capped)
    stores: dict[str, int] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)


class InventoryCache(ScannedTree):
    """What a union exposes, from a ``ScannedTree`` kept current by ``file_changed``.

    ``dirs_scanned`` counts directory listings made so far (tests and benches
    use it to show that an update did not rescan the tree). Methods may be
    called from several threads (a watcher and a request handler); they take
    turns. ``report`` can take a while on first sight of a tree or of a git
    history, holding the lock all along: call it off the event loop, and from
    the event loop only ``queue_changes``, which never waits for a scan.
    """

    def __init__(self, *, persistent: bool = True, clock: Callable[[], int] = time.time_ns) -> None:
        """``persistent``: reuse what earlier runs kept in the user's cache directory: git history
        answers while every ref is unchanged (``history.refs_digest``), and a directory's scan while
        its stat is (``scan_store``; ``save_scans`` writes them). False lists every directory and
        reads the history afresh each time a ref moves. ``clock``: the wall clock in ns (``ScannedTree``)."""
        self._lock = threading.RLock()
        self._queue_lock = threading.Lock()  # held for a moment only, never during a scan
        self._queued: dict[str, None] = {}
        self._flush_due = False
        super().__init__(persistent=persistent, clock=clock)

    def _clear(self) -> None:
        super()._clear()
        self._histories: dict[str, _History] = {}
        self._git_sizes: dict[str, tuple[tuple, int]] = {}  # common dir -> (key, bytes)
        self._git_size_stale: set[str] = set()

    # ------------------------------------------------------------ public API

    def report(self, before: Sequence[str], after: Sequence[str], *,
               progress: Progress | None = None, notes: Sequence[str] = ()) -> InventoryReport:
        """What ``after`` exposes beyond ``before`` (both lists of absolute paths).

        ``notes`` say why the union may not follow the folders (shown when it does not widen).
        """
        with self._lock:
            self._apply_queued()
            report = self._report(_collapse(before), _collapse(after), progress)
        return replace(report, notes=tuple(notes)) if notes else report

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

    def save_scans(self) -> None:
        """Keep the scans of the roots listed since the last save in the user's cache directory
        (``scan_store``), so that the next run lists only the directories changed meanwhile.
        Quietly nothing when the cache directory cannot be written."""
        with self._lock:
            work = [(store, *self._kept_under(store)) for store in self._stores.values()
                    if store.changed and store.top in self._dirs]
        for store, records, counts in work:
            store.save(records, counts)

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
            common = common_dir_of(root)[0]
            if common:
                self._history(common, progress)
        for root in sorted(dict.fromkeys((*old, *new)), key=len):  # outer roots first: theirs are the kept scans
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
            ci_roles=tuple(CiRoles(p, *r) for p, r in sorted(seen_after.roles.items())
                           if p not in seen_before.roles),
            stores=tuple(Store(p, n) for p, n in sorted(seen_after.stores.items())
                         if p not in seen_before.stores),
            errors=tuple(sorted(set(seen_after.errors))),
            added_files=tuple((root, self._exposure((root,)).files
                               - self._exposure(tuple(o for o in old if is_within(o, root))).files) for root in added),
        )

    # ------------------------------------------------------------ exposure

    def _exposure(self, union: tuple[str, ...]) -> _Exposure:
        seen = _Exposure()
        for root in union:
            entry = self._dirs.get(root)
            if entry is None:
                self._expose_non_directory(root, seen)
            elif entry.kind == DIR:
                seen.files += entry.total

        def inside(paths: Iterable[str]) -> list[str]:
            return [p for p in paths if _within_any(p, union)]

        for d in inside(self._cred_dirs):
            for name, count, *_ in self._dirs[d].creds:
                if count:
                    seen.credentials[os.path.join(d, name)] = count
        seen.manifests = set(inside(self._manifest_dirs))
        for d in inside(self._role_dirs):
            for name, roles, *_ in self._dirs[d].roles:
                if roles[0]:  # a CI file that names no identity is kept only to know it was read
                    seen.roles[os.path.join(d, name)] = roles
        for special in _outermost(inside(self._specials)):
            self._expose_special(special, seen)
        for d in inside(self._gitlink_dirs):
            common, why = common_dir_of(d)
            if common:
                seen.git.setdefault(common, []).append(d)
            elif why:
                seen.errors.append(why)
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
        if entry.kind == STORE:
            if entry.dirty:
                entry.files, entry.kept = self._count_files(path)
                entry.dirty = False
            if entry.files:
                seen.stores[path] = entry.files
            return
        checkout = enclosing_checkout(path)
        common = common_dir_of(checkout)[0] if checkout else None
        if checkout and not common and os.path.isdir(os.path.join(checkout, ".git")):
            # A .git directory inside the union is exposed whatever its layout: report it
            # (history unknown if git cannot read it); nothing it points at is followed.
            common = os.path.join(checkout, ".git")
        if common and checkout:
            seen.git.setdefault(common, []).append(checkout)
            if entry.dirty:
                self._git_size_stale.add(common)
                entry.dirty = False

    # ------------------------------------------------------------ git

    def _history(self, common: str, progress: Progress | None) -> _History:
        """The history reading of ``common``: the cached one while no ref moved, else a new one."""
        key = git_key(common)
        history = self._histories.get(common)
        if history is None or history.key != key:
            if progress:
                progress(f"reading git history of {common}")
            history = self._histories[common] = _History(common, key, persistent=self.persistent)
        return history

    def _git_dir(self, common: str, via: tuple[str, ...]) -> GitDir:
        """Size, commit count and deleted credential files (history read by ``_history``)."""
        history = self._histories[common]
        size = self._git_sizes.get(common)
        if size is None or size[0] != history.key or common in self._git_size_stale:
            size = self._git_sizes[common] = (history.key, self._du(common))
            self._git_size_stale.discard(common)
        commits, lost = history.result()
        deleted, renamed = (None, ()) if lost is None else lost
        return GitDir(common, size[1], commits, deleted, via, renamed)

    def _du(self, top: str) -> int:
        counter = [0]
        total = disk_usage(top, counter)
        self.dirs_scanned += counter[0]
        return total


def warm_up() -> None:
    """Load now what the first report would load: the detect-secrets detectors.

    About a quarter of a second, mostly imports; call it from a background
    thread after start-up so the first widening does not wait for it.
    Importing this module stays cheap: nothing heavy happens before this.
    """
    load_detectors()


def inventory(before: Sequence[str], after: Sequence[str], *,
              progress: Progress | None = None, notes: Sequence[str] = ()) -> InventoryReport:
    """One-shot ``InventoryCache().report(before, after)``, its scans kept for the next run."""
    cache = InventoryCache()
    report = cache.report(before, after, progress=progress, notes=notes)
    cache.save_scans()
    return report


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
