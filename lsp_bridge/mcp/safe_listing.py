"""Directory listings below an approved root, race-safe as ``safe_io`` (directory descriptors, no link followed).

``list_columns`` lists one directory by column (names, kinds, and the inode and link count of the
regular files asked for); ``KeptListings`` keeps names and kinds while a directory's change key is the
same; ``walk_files`` yields the files below a directory for a search.
"""

from __future__ import annotations

import operator
import os
import threading
import time
from collections.abc import Callable, Iterator
from itertools import repeat
from typing import NamedTuple

from lsp_bridge.core.change_key import Key, stable_key, unchanged
from lsp_bridge.core.filesystems import filesystem_type
from lsp_bridge.mcp.safe_io import Entry, SafeIOError, open_directory, relative_parts


class Listing(NamedTuple):
    """A directory's entries by column, in name order: ``kinds[i]`` is ``names[i]``'s kind (file,
    directory, symlink, other); ``stats[i]`` its ``(inode, nlink)`` as ``Entry`` has them, or
    ``stats`` None when no file was read with more than one link (every ``(None, 1)`` then
    decides alike: only a link count above one makes an inode matter)."""

    names: list[str]
    kinds: list[str]
    stats: list[tuple[tuple[int, int] | None, int]] | None


def list_directory(root: str, relative: str, *,
                   file_stats: bool | Callable[[int], bool | frozenset[int]] = True) -> list[Entry]:
    """The entries of a directory, sorted by name, links reported as links (``list_columns`` as tuples)."""
    names, kinds, stats = list_columns(root, relative, file_stats=file_stats)
    new = tuple.__new__
    return [new(Entry, (name, kind, *stat_)) for name, kind, stat_ in
            zip(names, kinds, stats if stats is not None else repeat((None, 1)), strict=False)]


def list_columns(root: str, relative: str, *,
                 file_stats: bool | Callable[[int], bool | frozenset[int]] = True,
                 kept: KeptListings | None = None) -> Listing:
    """The entries of a directory, sorted by name, links reported as links, by column.

    ``file_stats`` says which regular files get their inode and link count read (one
    ``fstatat`` per file, relative to the directory's descriptor): all (True), none
    (False), or those whose inode number, as the directory entry gives it, is in the
    set (only where that number is the file's own: ``readdir_inodes_exact``; elsewhere
    every file is read). Given a function, it is asked once with the directory's
    ``st_dev``. A file not read has ``(None, 1)``.

    ``kept``: where a listing that reads no file (``file_stats`` False) is taken from
    while its directory is unchanged, and where each new listing is kept.
    """
    read_at = kept.clock() if kept is not None else 0  # before the directory's stat: ``stable_key``'s "read at"
    with open_directory(root, relative_parts(relative)) as dfd:
        info = os.fstat(dfd)
        wanted: bool | frozenset[int] = True
        if callable(file_stats):
            wanted = file_stats(info.st_dev)
            if not isinstance(wanted, bool) and not readdir_inodes_exact(info.st_dev):
                wanted = True
        else:
            wanted = file_stats
        if wanted is False and kept is not None:
            known = kept.get(info)
            if known is not None:
                return known
        with os.scandir(dfd) as it:
            items = sorted(it, key=_ITEM_NAME)  # names are unique: by name
        try:
            kinds = [_FILE if item.is_file(follow_symlinks=False) else _kind(item) for item in items]
        except OSError:  # an entry gone or unreadable while its type was asked (no type in the entry): left out
            known_kinds = [_kind_or_none(item) for item in items]
            items = [item for item, kind in zip(items, known_kinds, strict=True) if kind is not None]
            kinds = [kind for kind in known_kinds if kind is not None]
        names = list(map(_ITEM_NAME, items))
        if kept is not None:
            kept.keep(info, read_at, names, kinds)
        stats: list[tuple[tuple[int, int] | None, int]] | None = None
        if wanted is True or (wanted and not wanted.isdisjoint(map(_ITEM_INODE, items))):
            screen = None if isinstance(wanted, bool) else wanted
            stats = [(None, 1)] * len(items)
            several = False
            unread: list[int] = []
            for index, (item, kind) in enumerate(zip(items, kinds, strict=True)):
                if kind is _FILE and (screen is None or item.inode() in screen):
                    try:
                        found = item.stat(follow_symlinks=False)  # fstatat(dfd, name): the engine checks hard links
                    except OSError:
                        unread.append(index)  # gone or unreadable since: left out, never shown undecided
                        continue
                    stats[index] = ((found.st_dev, found.st_ino), found.st_nlink)
                    several = several or found.st_nlink > 1
            if unread:
                names, kinds = list(names), list(kinds)  # the kept columns stay as listed
                for index in reversed(unread):
                    del names[index], kinds[index], stats[index]
            stats = stats if several or screen is None else None
    return Listing(names, kinds, stats)


class KeptListings:
    """Directories' names and kinds, each kept while its directory's change key is the same.

    A listing's names and kinds change only when the directory's entries do, and
    that changes its key (``core.change_key``): one ``fstat`` of the opened
    directory then stands for the ``getdents``, the sort and a type per entry. The
    key is the directory's own (device and inode, as opened without following a
    link), read before the listing; a directory changed too recently for a later
    change to show, or on a file system whose clock is elsewhere, is never kept.
    What each entry's verdict is stays the policy's, asked at every listing; a
    listing that reads files' link counts reads them every time. At most ``most``
    directories and ``entries`` names in all (the first kept forgotten first; a
    listing of more than a quarter of ``entries`` is not kept): 100,000 names are
    ~10 MB. Any thread may list. ``clock``: the wall clock in nanoseconds (``time.time_ns``),
    read before each listing (a test sets it to tell "changed just now" without racing it).
    """

    def __init__(self, most: int = 64, entries: int = 100_000, *,
                 clock: Callable[[], int] = time.time_ns) -> None:
        self.most = most
        self.entries = entries
        self.clock = clock
        self._kept: dict[tuple[int, int], tuple[Key, list[str], list[str]]] = {}
        self._held = 0  # names kept, in all
        self._lock = threading.Lock()

    def get(self, info: os.stat_result) -> Listing | None:
        """The kept listing of the directory ``info`` is (an ``fstat`` of its descriptor), if unchanged."""
        found = self._kept.get((info.st_dev, info.st_ino))
        if found is None or not unchanged(found[0], info):
            return None
        return Listing(list(found[1]), list(found[2]), None)  # the caller's own lists

    def keep(self, info: os.stat_result, read_at_ns: int, names: list[str], kinds: list[str]) -> None:
        """Keep ``names`` and ``kinds``, listed after ``info`` was read at ``read_at_ns``."""
        key = stable_key(info, read_at_ns)
        with self._lock:
            self._forget((info.st_dev, info.st_ino))
            if key is None or self.most < 1 or len(names) * 4 > self.entries:
                return
            while self._kept and (len(self._kept) >= self.most or self._held + len(names) > self.entries):
                self._forget(next(iter(self._kept)))
            self._kept[(info.st_dev, info.st_ino)] = (key, list(names), list(kinds))
            self._held += len(names)

    def _forget(self, where: tuple[int, int]) -> None:
        gone = self._kept.pop(where, None)
        if gone is not None:
            self._held -= len(gone[1])


_FILE = "file"
_ITEM_NAME = operator.attrgetter("name")
_ITEM_INODE = operator.methodcaller("inode")


def _kind(item: os.DirEntry) -> str:
    """A directory entry's kind other than a regular file, links not followed."""
    if item.is_dir(follow_symlinks=False):
        return "directory"
    return "symlink" if item.is_symlink() else "other"


def _kind_or_none(item: os.DirEntry) -> str | None:
    try:
        return _FILE if item.is_file(follow_symlinks=False) else _kind(item)
    except OSError:
        return None


# File systems whose directory entries carry the file's own inode number (``d_ino`` ==
# ``st_ino`` for a regular file). Not overlayfs, FUSE or network file systems, where
# ``d_ino`` may be another layer's, made up, or the server's: there every file is read.
_EXACT_DINO = frozenset({"ext2", "ext3", "ext4", "xfs", "btrfs", "tmpfs", "f2fs", "jfs", "bcachefs"})


def readdir_inodes_exact(device: int) -> bool:
    """Whether directory entries on ``device`` give each regular file's own inode number
    (its file system type, from the mount table, is in ``_EXACT_DINO``). False where it
    cannot be told."""
    return filesystem_type(device) in _EXACT_DINO


def walk_files(root: str, relative: str, *, skip_dirs: frozenset[str] = frozenset(), limit: int) -> Iterator[str]:
    """Paths (relative to ``root``) of the files and links below a directory, in name order.

    Directory links are never entered; at most ``limit`` paths are yielded.
    """
    count = 0
    stack = [relative]
    while stack and count < limit:
        current = stack.pop()
        try:
            with open_directory(root, relative_parts(current)) as dfd:
                entries = sorted(_entries(dfd), key=lambda e: e.name)
        except SafeIOError:
            continue  # vanished or replaced while walking: skip it
        subdirs = []
        for entry in entries:
            path = f"{current}/{entry.name}" if current else entry.name
            if entry.kind == "directory":
                if entry.name not in skip_dirs:
                    subdirs.append(path)
            elif entry.kind in ("file", "symlink"):
                count += 1
                yield path
                if count >= limit:
                    return
        stack.extend(reversed(subdirs))  # files first, then subdirectories in name order


def _entries(dfd: int) -> list[Entry]:
    """Each entry's kind from the directory entry's type (``lstat`` only where the file system gives none)."""
    new = tuple.__new__  # Entry(...) without the named tuple's Python-level __new__: a walk makes thousands
    with os.scandir(dfd) as it:
        return [new(Entry, (item.name, kind, None, 1)) for item in it if (kind := _kind_or_none(item)) is not None]
