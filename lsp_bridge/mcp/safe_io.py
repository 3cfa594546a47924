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

This module holds the walk, the leaf checks and the single-file operations;
directory listings are ``safe_listing``, multi-file changes ``safe_batch``
(both built on the pieces here).
"""

from __future__ import annotations

import errno
import os
import secrets
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from typing import NamedTuple

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
TEMP_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
_PROC_FD = "/proc/self/fd"
_HAS_PROC = os.path.isdir(_PROC_FD)


class SafeIOError(Exception):
    """A refused or failed operation: ``code`` and a message naming the path."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


# The file a decision was made on: its (st_dev, st_ino), None when it was not a regular file
# then (missing, a directory), and its link count (``Resolved.inode`` / ``nlink``, ``Target``).
Identity = tuple[tuple[int, int] | None, int]


class Entry(NamedTuple):
    """One directory entry, links not followed (a tuple: a listing makes thousands)."""

    name: str
    kind: str  # file | directory | symlink | other
    inode: tuple[int, int] | None = None  # (st_dev, st_ino) of a regular file (fstatat on the directory)
    nlink: int = 1  # a regular file's hard-link count


# ---------------------------------------------------------------------------
# Public operations


def read_file(root: str, relative: str, *, limit: int, decided: Identity) -> bytes:
    """The bytes of a regular file, at most ``limit`` of them (else ``file_too_large``).

    ``decided``: the identity of the file the decision was made on (``require_decided``);
    the opened descriptor must still be that file.
    """
    parents, name = split_leaf(relative)
    with open_directory(root, parents) as dfd:
        fd = open_leaf(dfd, name, _READ_FLAGS, relative)
        try:
            info = os.fstat(fd)
            _require_regular(info.st_mode, relative)
            require_decided(info, decided, relative)
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
    parents, name = split_leaf(relative)
    with open_directory(root, parents, create=create_parents) as dfd:
        existing = lstat_at(dfd, name)
        if existing is not None:
            require_plain_leaf(existing.st_mode, relative)
        temp = temp_name(name)
        fd = open_leaf(dfd, temp, TEMP_FLAGS, relative, mode=0o666)
        try:
            try:
                write_all(fd, data)
                if existing is not None:
                    os.fchmod(fd, stat.S_IMODE(existing.st_mode))
                os.fsync(fd)
            finally:
                os.close(fd)
            os.rename(temp, name, src_dir_fd=dfd, dst_dir_fd=dfd)
        except BaseException:
            unlink_quietly(dfd, temp)
            raise
        fsync_dir(dfd)
    return existing is None


def delete_file(root: str, relative: str) -> None:
    """Remove a regular file (never a directory, never a link's target)."""
    parents, name = split_leaf(relative)
    with open_directory(root, parents) as dfd:
        info = lstat_at(dfd, name)
        if info is None:
            raise SafeIOError("not_found", f"{relative} does not exist")
        require_plain_leaf(info.st_mode, relative)
        os_call(os.unlink, relative, name, dir_fd=dfd)


def move_file(root: str, source: str, dest_root: str, dest: str) -> None:
    """Move a regular file to a name that does not exist yet (no overwrite)."""
    src_parents, src_name = split_leaf(source)
    dst_parents, dst_name = split_leaf(dest)
    with open_directory(root, src_parents) as sfd, open_directory(dest_root, dst_parents, create=True) as dfd:
        info = lstat_at(sfd, src_name)
        if info is None:
            raise SafeIOError("not_found", f"{source} does not exist")
        require_plain_leaf(info.st_mode, source)
        if lstat_at(dfd, dst_name) is not None:
            raise SafeIOError("already_exists", f"{dest} already exists; delete it first or choose another name")
        _move(sfd, src_name, dfd, dst_name, source, dest)
        fsync_dir(dfd)


def file_info(root: str, relative: str) -> os.stat_result:
    """``lstat`` of the target (the root itself for "")."""
    if relative == "":
        with open_directory(root, []) as dfd:
            return os.fstat(dfd)
    parents, name = split_leaf(relative)
    with open_directory(root, parents) as dfd:
        info = lstat_at(dfd, name)
    if info is None:
        raise SafeIOError("not_found", f"{relative} does not exist")
    return info

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
    info = lstat_at(dirfd, name)
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


def relative_parts(relative: str) -> list[str]:
    if not isinstance(relative, str) or relative.startswith("/") or "\x00" in relative:
        raise SafeIOError("invalid_path", f"{relative!r} is not a canonical relative path")
    parts = relative.split("/") if relative else []
    if any(p in ("", ".", "..") for p in parts):
        raise SafeIOError("invalid_path", f"{relative!r} is not a canonical relative path")
    return parts


def split_leaf(relative: str) -> tuple[list[str], str]:
    parts = relative_parts(relative)
    if not parts:
        raise SafeIOError("is_a_directory", "the project root is a directory, not a file")
    return parts[:-1], parts[-1]


def open_leaf(dirfd: int, name: str, flags: int, shown: str, mode: int = 0o600) -> int:
    try:
        return os.open(name, flags, mode, dir_fd=dirfd)
    except FileNotFoundError:
        raise SafeIOError("not_found", f"{shown} does not exist") from None
    except OSError as exc:
        info = lstat_at(dirfd, name)
        if info is not None and stat.S_ISLNK(info.st_mode):
            raise SafeIOError(
                "symlink_not_permitted",
                f"{shown} is a symbolic link now; it was not when access was decided, so it is not followed",
            ) from None
        if exc.errno == errno.EISDIR:
            raise SafeIOError("is_a_directory", f"{shown} is a directory") from None
        raise SafeIOError("io_error", f"{shown}: {exc.strerror}") from None


def lstat_at(dirfd: int, name: str) -> os.stat_result | None:
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


def require_decided(info: os.stat_result, decided: Identity, shown: str) -> None:
    """``path_changed`` unless ``info`` (an ``fstat`` of what was opened) is the file the decision saw.

    The name is reached without following a link, but it can be renamed over between the
    decision and the open: another file there, or a hard link to a denied file, was never
    decided. Refused: another inode than the decided one, or a regular file with several
    links where the decision saw one (or none), since the engine asks its hard-link index
    only about a file it knows has several.
    """
    inode, nlink = decided
    if inode is not None and (info.st_dev, info.st_ino) != inode:
        raise SafeIOError("path_changed", f"{shown} was replaced after access was decided; nothing was read")
    if info.st_nlink > 1 and stat.S_ISREG(info.st_mode) and (inode is None or nlink <= 1):
        raise SafeIOError("path_changed", f"{shown} gained a hard link after access was decided; nothing was read")


def require_plain_leaf(mode: int, shown: str) -> None:
    """An existing leaf a mutation may replace or remove: a regular file, nothing else."""
    if stat.S_ISLNK(mode):
        raise SafeIOError(
            "symlink_not_permitted", f"{shown} is a symbolic link; it is neither followed nor replaced"
        )
    _require_regular(mode, shown)

def temp_name(name: str) -> str:
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
        os_call(os.rename, source, src, dst, src_dir_fd=sfd, dst_dir_fd=dfd)
        return
    os_call(os.unlink, source, src, dir_fd=sfd)


def os_call(function, shown: str, *args, **kwargs) -> None:
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


def write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def unlink_quietly(dirfd: int, name: str) -> None:
    try:
        os.unlink(name, dir_fd=dirfd)
    except OSError:
        pass


def fsync_dir(dirfd: int) -> None:
    try:
        os.fsync(dirfd)
    except OSError:
        pass
