"""Race-safe file I/O below an approved root: directory descriptors, O_NOFOLLOW, temp + rename.

The policy decides on a canonical path. Between that decision and the I/O a
directory on the way could be swapped for a symbolic link (the classic
check-then-use race). Every operation here therefore:

* reaches the target's directory without following a link: where ``/proc/self/fd``
  exists, by opening its whole path and keeping the descriptor only when ``/proc``
  names it exactly where the decision saw it (a link on the way would land it
  elsewhere); otherwise, or when that check fails, by walking from the canonical
  root one component at a time with ``O_DIRECTORY | O_NOFOLLOW``, relative to
  the previous directory's descriptor, so a link met on the way is refused;
* opens or inspects the last name relative to its parent's descriptor with
  ``O_NOFOLLOW`` (or ``lstat``), so a link swapped in at the leaf is refused;
* where ``/proc/self/fd`` exists, checks that the opened directory is still
  where the decision saw it (catches a directory moved out of the root);
* writes a temporary file in the same directory and renames it over the name:
  a rename replaces a name, it never follows one.

``relative`` arguments are canonical paths below ``root`` with ``/``
separators ("" is the root itself), as the resolver produced them. Errors are
``SafeIOError`` with a ``code`` an agent can act on.
"""

from __future__ import annotations

import errno
import operator
import os
import secrets
import stat
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from itertools import repeat
from typing import NamedTuple

from lsp_bridge.core.change_key import Key, stable_key, unchanged
from lsp_bridge.core.filesystems import filesystem_type

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_TEMP_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
_PROC_FD = "/proc/self/fd"
_HAS_PROC = os.path.isdir(_PROC_FD)
_NAME = operator.itemgetter(0)


class SafeIOError(Exception):
    """A refused or failed operation: ``code`` and a message naming the path."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


class Entry(NamedTuple):
    """One directory entry, links not followed (a tuple: a listing makes thousands)."""

    name: str
    kind: str  # file | directory | symlink | other
    inode: tuple[int, int] | None = None  # (st_dev, st_ino) of a regular file (fstatat on the directory)
    nlink: int = 1  # a regular file's hard-link count


# ---------------------------------------------------------------------------
# Public operations


def read_file(root: str, relative: str, *, limit: int) -> bytes:
    """The bytes of a regular file, at most ``limit`` of them (else ``file_too_large``)."""
    parents, name = _split_leaf(relative)
    with open_directory(root, parents) as dfd:
        fd = _open_leaf(dfd, name, _READ_FLAGS, relative)
        try:
            info = os.fstat(fd)
            _require_regular(info.st_mode, relative)
            if info.st_size > limit:
                raise SafeIOError("file_too_large", f"{relative} has {info.st_size} bytes; the limit is {limit}")
            data = _read_all(fd, limit + 1, first=info.st_size + 1)
        finally:
            os.close(fd)
    if len(data) > limit:
        raise SafeIOError("file_too_large", f"{relative} grew beyond the limit of {limit} bytes while reading")
    return data


def write_file(root: str, relative: str, data: bytes, *, create_parents: bool = True) -> bool:
    """Replace (or create) a regular file atomically; True when it was created.

    An existing file keeps its permission bits. Missing parent directories are
    created when ``create_parents`` (each step still refuses links).
    """
    parents, name = _split_leaf(relative)
    with open_directory(root, parents, create=create_parents) as dfd:
        existing = _lstat(dfd, name)
        if existing is not None:
            _require_plain_leaf(existing.st_mode, relative)
        temp = _temp_name(name)
        fd = _open_leaf(dfd, temp, _TEMP_FLAGS, relative, mode=0o666)
        try:
            try:
                _write_all(fd, data)
                if existing is not None:
                    os.fchmod(fd, stat.S_IMODE(existing.st_mode))
                os.fsync(fd)
            finally:
                os.close(fd)
            os.rename(temp, name, src_dir_fd=dfd, dst_dir_fd=dfd)
        except BaseException:
            _unlink_quietly(dfd, temp)
            raise
        _fsync_dir(dfd)
    return existing is None


def delete_file(root: str, relative: str) -> None:
    """Remove a regular file (never a directory, never a link's target)."""
    parents, name = _split_leaf(relative)
    with open_directory(root, parents) as dfd:
        info = _lstat(dfd, name)
        if info is None:
            raise SafeIOError("not_found", f"{relative} does not exist")
        _require_plain_leaf(info.st_mode, relative)
        _os_call(os.unlink, relative, name, dir_fd=dfd)


def move_file(root: str, source: str, dest_root: str, dest: str) -> None:
    """Move a regular file to a name that does not exist yet (no overwrite)."""
    src_parents, src_name = _split_leaf(source)
    dst_parents, dst_name = _split_leaf(dest)
    with open_directory(root, src_parents) as sfd, open_directory(dest_root, dst_parents, create=True) as dfd:
        info = _lstat(sfd, src_name)
        if info is None:
            raise SafeIOError("not_found", f"{source} does not exist")
        _require_plain_leaf(info.st_mode, source)
        if _lstat(dfd, dst_name) is not None:
            raise SafeIOError("already_exists", f"{dest} already exists; delete it first or choose another name")
        _move(sfd, src_name, dfd, dst_name, source, dest)
        _fsync_dir(dfd)


def file_info(root: str, relative: str) -> os.stat_result:
    """``lstat`` of the target (the root itself for "")."""
    if relative == "":
        with open_directory(root, []) as dfd:
            return os.fstat(dfd)
    parents, name = _split_leaf(relative)
    with open_directory(root, parents) as dfd:
        info = _lstat(dfd, name)
    if info is None:
        raise SafeIOError("not_found", f"{relative} does not exist")
    return info


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
    read_at = time.time_ns()  # before the directory's stat: ``change_key.stable_key``'s "read at"
    with open_directory(root, _parts(relative)) as dfd:
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
    ~10 MB. Any thread may list.
    """

    def __init__(self, most: int = 64, entries: int = 100_000) -> None:
        self.most = most
        self.entries = entries
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
            with open_directory(root, _parts(current)) as dfd:
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


# ---------------------------------------------------------------------------
# The walk


@contextmanager
def open_directory(root: str, parts: list[str], *, create: bool = False) -> Iterator[int]:
    """A descriptor for ``root/parts...``, reached without following any link."""
    fd = _open_in_place(root, parts)
    if fd is None:
        fd = _walk(root, parts, create)
    try:
        yield fd
    finally:
        os.close(fd)


def _open_in_place(root: str, parts: list[str]) -> int | None:
    """The directory opened by its whole path, kept only when ``/proc`` names it exactly where
    the decision saw it; else None, and the caller walks.

    A link anywhere on the way (swapped in since the decision) would leave the descriptor
    somewhere else, and ``/proc`` would name that place: what is kept is the directory at
    ``root/parts...``, as the walk's own check requires. Two system calls instead of two per
    component; a missing directory, a link, no ``/proc`` or a name ``/proc`` could confuse
    with its mark for a removed directory go the walk's way, which names the problem.
    """
    if not (_HAS_PROC and parts):
        return None
    expected = os.path.join(root, *parts)
    if expected.endswith(" (deleted)"):
        return None
    try:
        fd = os.open(expected, _DIR_FLAGS)
    except OSError:
        return None
    if _fd_path(fd) == expected:
        return fd
    os.close(fd)
    return None


def _walk(root: str, parts: list[str], create: bool) -> int:
    """One component at a time from the root, refusing links (creating directories when ``create``)."""
    fd = _open_root(root)
    try:
        # Where the directory must be found: below the root the decision saw (a root moved since
        # is refused too). Only where /proc names descriptors.
        base = root if _HAS_PROC else None
        for index, part in enumerate(parts):
            child = _step(fd, part, "/".join(parts[: index + 1]), create)
            os.close(fd)
            fd = child
        if base is not None and parts:
            _verify(fd, os.path.join(base, *parts), "/".join(parts))
    except BaseException:
        os.close(fd)
        raise
    return fd


def _open_root(root: str) -> int:
    try:
        return os.open(root, _DIR_FLAGS)
    except OSError as exc:
        raise SafeIOError("not_found", f"the project root {root} cannot be opened ({exc.strerror})") from None


def _step(dirfd: int, name: str, shown: str, create: bool) -> int:
    """A new descriptor for the directory ``name`` below ``dirfd``."""
    try:
        try:
            return os.open(name, _DIR_FLAGS, dir_fd=dirfd)
        except FileNotFoundError:
            if not create:
                raise SafeIOError("not_found", f"{shown} does not exist") from None
        try:
            os.mkdir(name, 0o777, dir_fd=dirfd)
        except FileExistsError:
            pass  # created meanwhile: opened like any other, links still refused
        return os.open(name, _DIR_FLAGS, dir_fd=dirfd)
    except OSError as exc:
        raise _walk_error(dirfd, name, shown, exc) from None


def _walk_error(dirfd: int, name: str, shown: str, exc: OSError) -> SafeIOError:
    info = _lstat(dirfd, name)
    if info is not None and stat.S_ISLNK(info.st_mode):
        return SafeIOError(
            "symlink_not_permitted",
            f"{shown} is a symbolic link now; it was not when access was decided, so it is not followed",
        )
    if exc.errno in (errno.ENOTDIR, errno.ELOOP):
        return SafeIOError("not_a_directory", f"{shown} is not a directory")
    return SafeIOError("io_error", f"{shown}: {exc.strerror}")


def _fd_path(fd: int) -> str | None:
    """Where the kernel says ``fd`` is (Linux ``/proc``), else None."""
    if not _HAS_PROC:
        return None
    try:
        return os.readlink(f"{_PROC_FD}/{fd}")
    except OSError:
        return None


def _verify(fd: int, expected: str, shown: str) -> None:
    seen = _fd_path(fd)
    if seen is not None and seen != expected:
        raise SafeIOError("path_changed", f"{shown} moved after access was decided; nothing was done")


# ---------------------------------------------------------------------------
# Leaves


def _parts(relative: str) -> list[str]:
    if not isinstance(relative, str) or relative.startswith("/") or "\x00" in relative:
        raise SafeIOError("invalid_path", f"{relative!r} is not a canonical relative path")
    parts = relative.split("/") if relative else []
    if any(p in ("", ".", "..") for p in parts):
        raise SafeIOError("invalid_path", f"{relative!r} is not a canonical relative path")
    return parts


def _split_leaf(relative: str) -> tuple[list[str], str]:
    parts = _parts(relative)
    if not parts:
        raise SafeIOError("is_a_directory", "the project root is a directory, not a file")
    return parts[:-1], parts[-1]


def _open_leaf(dirfd: int, name: str, flags: int, shown: str, mode: int = 0o600) -> int:
    try:
        return os.open(name, flags, mode, dir_fd=dirfd)
    except FileNotFoundError:
        raise SafeIOError("not_found", f"{shown} does not exist") from None
    except OSError as exc:
        info = _lstat(dirfd, name)
        if info is not None and stat.S_ISLNK(info.st_mode):
            raise SafeIOError(
                "symlink_not_permitted",
                f"{shown} is a symbolic link now; it was not when access was decided, so it is not followed",
            ) from None
        if exc.errno == errno.EISDIR:
            raise SafeIOError("is_a_directory", f"{shown} is a directory") from None
        raise SafeIOError("io_error", f"{shown}: {exc.strerror}") from None


def _lstat(dirfd: int, name: str) -> os.stat_result | None:
    try:
        return os.stat(name, dir_fd=dirfd, follow_symlinks=False)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise SafeIOError("io_error", f"{name}: {exc.strerror}") from None


def _require_regular(mode: int, shown: str) -> None:
    if stat.S_ISDIR(mode):
        raise SafeIOError("is_a_directory", f"{shown} is a directory")
    if not stat.S_ISREG(mode):
        raise SafeIOError("special_file", f"{shown} is not a regular file (FIFO, socket or device)")


def _require_plain_leaf(mode: int, shown: str) -> None:
    """An existing leaf a mutation may replace or remove: a regular file, nothing else."""
    if stat.S_ISLNK(mode):
        raise SafeIOError(
            "symlink_not_permitted", f"{shown} is a symbolic link; it is neither followed nor replaced"
        )
    _require_regular(mode, shown)


def _entries(dfd: int) -> list[Entry]:
    """Each entry's kind from the directory entry's type (``lstat`` only where the file system gives none)."""
    new = tuple.__new__  # Entry(...) without the named tuple's Python-level __new__: a walk makes thousands
    with os.scandir(dfd) as it:
        return [new(Entry, (item.name, kind, None, 1)) for item in it if (kind := _kind_or_none(item)) is not None]


def _temp_name(name: str) -> str:
    return f".{name[:180]}.{secrets.token_hex(6)}.rootguard-tmp"


def _move(sfd: int, src: str, dfd: int, dst: str, source: str, dest: str) -> None:
    """Hard-link then unlink (never overwrites); rename where links are unsupported."""
    try:
        os.link(src, dst, src_dir_fd=sfd, dst_dir_fd=dfd, follow_symlinks=False)
    except FileExistsError:
        raise SafeIOError("already_exists", f"{dest} already exists") from None
    except OSError as exc:
        if exc.errno == errno.EXDEV:
            raise SafeIOError("io_error", f"{source} and {dest} are on different file systems") from None
        if exc.errno not in (errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EMLINK):
            raise SafeIOError("io_error", f"{source}: {exc.strerror}") from None
        _os_call(os.rename, source, src, dst, src_dir_fd=sfd, dst_dir_fd=dfd)
        return
    _os_call(os.unlink, source, src, dir_fd=sfd)


def _os_call(function, shown: str, *args, **kwargs) -> None:
    try:
        function(*args, **kwargs)
    except OSError as exc:
        raise SafeIOError("io_error", f"{shown}: {exc.strerror}") from None


def _read_all(fd: int, most: int, *, first: int = 1 << 20) -> bytes:
    """Up to ``most`` bytes of a regular file: a short read is its end.

    ``first`` sizes the first request (the size ``fstat`` gave, plus one to see the end):
    a buffer of the file's size, not of the limit, is allocated; a file that grew is read on.
    """
    chunks = []
    left = most
    asked = min(left, max(first, 1))
    while left > 0:
        chunk = os.read(fd, asked)
        if not chunk:
            break
        chunks.append(chunk)
        left -= len(chunk)
        if len(chunk) < asked:
            break
        asked = min(left, 1 << 20)
    return chunks[0] if len(chunks) == 1 else b"".join(chunks)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def _unlink_quietly(dirfd: int, name: str) -> None:
    try:
        os.unlink(name, dir_fd=dirfd)
    except OSError:
        pass


def _fsync_dir(dirfd: int) -> None:
    try:
        os.fsync(dirfd)
    except OSError:
        pass


# ---------------------------------------------------------------------------
# Batches: every file staged before the first rename; nothing left on failure


class Batch:
    """Changes to several files applied as one: ``apply_patch``.

    ``stage_write`` writes each new content to a temporary file beside its target and
    ``stage_delete`` checks each deletion, before anything visible changes. ``commit``
    then renames in order; an existing target is first kept under a hard-linked backup
    name, so a failure part-way restores every name already changed. Temporary files,
    backups and directories the batch created are removed on failure: nothing is left.
    """

    def __init__(self) -> None:
        from contextlib import ExitStack

        self._stack = ExitStack()
        self._staged: list[tuple[str, int, str, str | None, str]] = []  # (kind, dfd, name, temp, shown)
        self._made_dirs: list[tuple[str, list[str]]] = []  # (root, parts) created, in creation order

    def __enter__(self) -> Batch:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def stage_write(self, root: str, relative: str, data: bytes) -> bool:
        """Write ``data`` beside ``relative``; True when the target does not exist yet."""
        parents, name = _split_leaf(relative)
        self._note_missing_dirs(root, parents)
        dfd = self._stack.enter_context(open_directory(root, parents, create=True))
        existing = _lstat(dfd, name)
        if existing is not None:
            _require_plain_leaf(existing.st_mode, relative)
        temp = _temp_name(name)
        fd = _open_leaf(dfd, temp, _TEMP_FLAGS, relative, mode=0o666)
        self._staged.append(("write", dfd, name, temp, relative))
        try:
            _write_all(fd, data)
            if existing is not None:
                os.fchmod(fd, stat.S_IMODE(existing.st_mode))
            os.fsync(fd)
        except OSError as exc:
            raise SafeIOError("io_error", f"{relative}: {exc.strerror}") from None
        finally:
            os.close(fd)
        return existing is None

    def stage_delete(self, root: str, relative: str) -> None:
        parents, name = _split_leaf(relative)
        dfd = self._stack.enter_context(open_directory(root, parents))
        info = _lstat(dfd, name)
        if info is None:
            raise SafeIOError("not_found", f"{relative} does not exist")
        _require_plain_leaf(info.st_mode, relative)
        self._staged.append(("delete", dfd, name, None, relative))

    def commit(self) -> None:
        """Rename every staged file into place; on failure undo the ones done and raise."""
        done: list[tuple[str, int, str, str | None]] = []  # (kind, dfd, name, backup)
        try:
            for kind, dfd, name, temp, shown in self._staged:
                backup = None
                if _lstat(dfd, name) is not None:
                    backup = _temp_name(name) + ".bak"
                    _os_call(os.link, shown, name, backup, src_dir_fd=dfd, dst_dir_fd=dfd, follow_symlinks=False)
                done.append((kind, dfd, name, backup))
                if kind == "write":
                    _os_call(os.rename, shown, temp, name, src_dir_fd=dfd, dst_dir_fd=dfd)
                else:
                    _os_call(os.unlink, shown, name, dir_fd=dfd)
        except BaseException:
            for kind, dfd, name, backup in reversed(done):
                if backup is not None:
                    try:
                        os.rename(backup, name, src_dir_fd=dfd, dst_dir_fd=dfd)
                    except OSError:
                        pass
                elif kind == "write":
                    _unlink_quietly(dfd, name)
            self.abort()
            raise
        for _, dfd, _, backup in done:
            if backup is not None:
                _unlink_quietly(dfd, backup)
        for _, dfd, _, _, _ in self._staged:
            _fsync_dir(dfd)
        self._staged = []
        self._made_dirs = []

    def abort(self) -> None:
        """Remove the temporary files and the directories the batch created."""
        for _kind, dfd, _, temp, _ in self._staged:
            if temp is not None:
                _unlink_quietly(dfd, temp)
        self._staged = []
        for root, parts in reversed(self._made_dirs):
            try:
                with open_directory(root, parts[:-1]) as parent:
                    os.rmdir(parts[-1], dir_fd=parent)
            except (OSError, SafeIOError):
                pass
        self._made_dirs = []

    def close(self) -> None:
        if self._staged:
            self.abort()
        self._stack.close()

    def _note_missing_dirs(self, root: str, parents: list[str]) -> None:
        for depth in range(1, len(parents) + 1):
            try:
                with open_directory(root, parents[:depth]):
                    pass
            except SafeIOError:
                for missing in range(depth, len(parents) + 1):
                    if (root, parents[:missing]) not in self._made_dirs:
                        self._made_dirs.append((root, parents[:missing]))
                return
