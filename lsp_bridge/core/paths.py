"""Canonical paths and containment, the two primitives every decision uses.

A path is judged on its canonical form (``realpath``), and containment is a
component comparison: ``/r/project2`` is not inside ``/r/project``.
"""

from __future__ import annotations

import errno
import os
import stat
import sys
from collections.abc import Callable, Mapping
from typing import Generic, TypeVar

V = TypeVar("V")

SEP = os.sep


_O_PATH = getattr(os, "O_PATH", 0)
_PROC_FD = "/proc/self/fd/"
_KERNEL_REALPATH = bool(_O_PATH) and os.path.isdir(_PROC_FD)


def realpath(path: str, *, loops: bool = False) -> str:
    """``os.path.realpath(path)``, asked of the kernel when the path exists (Linux).

    Opening with ``O_PATH`` resolves every link in one system call and
    ``/proc/self/fd`` names the result: three calls instead of one ``lstat`` per
    component in Python. Anything unusual (a missing tail, no ``/proc``) takes
    ``os.path.realpath``, so the answer is the same. With ``loops=True`` a
    symbolic link loop raises ``OSError(ELOOP)`` instead of being left in place.
    """
    if _KERNEL_REALPATH:
        try:
            found, _ = _kernel_name(path, with_stat=False)
        except OSError as err:
            if loops and err.errno == errno.ELOOP:
                raise
            return os.path.realpath(path)
        if found:
            return found
    if loops:
        try:
            return os.path.realpath(path, strict=True)
        except OSError as err:
            if err.errno == errno.ELOOP:
                raise
    return os.path.realpath(path)


def realpath_stat(path: str) -> tuple[str, os.stat_result | None]:
    """``(realpath(path), stat of what it names)`` from one ``O_PATH`` descriptor (Linux).

    The canonical path and the ``stat`` describe the same object: ``fstat`` of the
    descriptor ``/proc/self/fd`` names (``O_PATH`` opens nothing, so a FIFO or a
    device is inspected, never opened). ``None`` for the stat when the kernel
    cannot open the path (missing, a loop, no permission) or there is no ``/proc``:
    the caller then takes ``realpath`` and ``stat`` the usual way.
    """
    if _KERNEL_REALPATH:
        try:
            found, info = _kernel_name(path, with_stat=True)
        except OSError:
            return realpath(path), None
        if found:
            return found, info
    return realpath(path), None


_OPENER: list[Callable[[str], int] | None] = []  # the process's openat2.opener(), built at the first plain_stat


def plain_stat(path: str) -> os.stat_result | None:
    """The ``stat`` of what absolute, normalised ``path`` names when the kernel reaches it through no
    symbolic link, so that ``path`` is its own canonical name; None otherwise (a link on the way,
    missing, no permission).

    For a long-lived process that asks often: one ``openat2`` with ``RESOLVE_NO_SYMLINKS``
    (``core/openat2.py``, loaded at the first call) and an ``fstat``; where that call is not
    usable, ``realpath_stat`` and a compare, which give the same answers.
    """
    if not _OPENER:
        from lsp_bridge.core import openat2

        _OPENER.append(openat2.opener())
    open_no_symlinks = _OPENER[0]
    if open_no_symlinks is None:
        found, info = realpath_stat(path)
        return info if found == path else None
    try:
        fd = open_no_symlinks(path)
    except (OSError, ValueError):  # ValueError: a NUL in the path
        return None
    try:
        return os.fstat(fd)
    finally:
        os.close(fd)


def _kernel_name(path: str, *, with_stat: bool) -> tuple[str, os.stat_result | None]:
    """The canonical name ``/proc/self/fd`` gives an ``O_PATH`` descriptor of ``path`` (and its
    ``fstat``); ``""`` when that name is unusable (unreadable, relative, deleted). The open's
    ``OSError`` is the caller's."""
    fd = os.open(path, _O_PATH | os.O_CLOEXEC)
    try:
        info = os.fstat(fd) if with_stat else None
        found = os.readlink(_PROC_FD + str(fd))
    except OSError:
        return "", None
    finally:
        os.close(fd)
    if found.startswith(SEP) and not found.endswith(" (deleted)"):
        return found, info
    return "", None


def canonical(path: str | os.PathLike[str]) -> str:
    """The canonical absolute form of an absolute path (symlinks resolved).

    Raises ``ValueError`` for a relative path: a root is never derived from the
    process's current directory.
    """
    text = os.fspath(path)
    if "\x00" in text:
        raise ValueError(f"path contains a NUL byte: {text!r}")
    if not os.path.isabs(text):
        raise ValueError(f"not an absolute path: {text!r}")
    return realpath(text)


def lexical(path: str | os.PathLike[str]) -> str:
    """An absolute path normalised without touching the file system."""
    text = os.fspath(path)
    if not os.path.isabs(text):
        raise ValueError(f"not an absolute path: {text!r}")
    return os.path.normpath(text)


CASE_INSENSITIVE = sys.platform in ("darwin", "win32")
"""macOS and Windows file systems fold case by default; Linux ones do not."""


def fold(path: str) -> str:
    """The comparison key of a canonical path (case-folded where the FS folds)."""
    return path.casefold() if CASE_INSENSITIVE else path


def is_within(path: str, root: str) -> bool:
    """``path`` equals ``root`` or lies beneath it, compared component-wise.

    Both arguments must already be canonical (or both lexical).
    """
    if path == root:
        return True
    prefix = root if root.endswith(SEP) else root + SEP
    return path.startswith(prefix)


def depth(path: str) -> int:
    """Number of components below the file-system root."""
    return len([part for part in path.split(SEP) if part])


def relative_to(path: str, root: str) -> str:
    """``path`` relative to ``root`` with forward slashes ("" for the root itself)."""
    if path == root:
        return ""
    rel = os.path.relpath(path, root)
    return rel.replace(os.sep, "/")


class PrefixIndex(Generic[V]):
    """Values keyed by canonical directory, looked up by any path beneath them.

    A lookup tries only the key lengths present in the index, so it costs
    O(distinct anchor lengths), not O(entries) like ``any(...)`` over a list.
    """

    __slots__ = ("_map", "_lengths")

    def __init__(self, mapping: Mapping[str, V]):
        self._map = dict(mapping)
        self._lengths = sorted({len(k) for k in self._map}, reverse=True)

    def __bool__(self) -> bool:
        return bool(self._map)

    def matches(self, key: str) -> list[tuple[str, V]]:
        """(prefix, value) for every indexed directory containing ``key``, nearest first."""
        found: list[tuple[str, V]] = []
        size = len(key)
        get = self._map.get
        for length in self._lengths:
            if length > size:
                continue
            if length == size or key[length] == SEP or length == 1:
                value = get(key[:length])
                if value is not None:
                    found.append((key[:length], value))
        return found

    def keys(self) -> frozenset[str]:
        """Every indexed directory (folded)."""
        return frozenset(self._map)

    def nearest(self, key: str) -> V | None:
        size = len(key)
        get = self._map.get
        for length in self._lengths:
            if length <= size and (length == size or key[length] == SEP or length == 1):
                value = get(key[:length])
                if value is not None:
                    return value
        return None


_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)


PSEUDO_FILESYSTEMS = frozenset({
    "proc", "sysfs", "debugfs", "tracefs", "securityfs", "configfs", "pstore", "efivarfs", "bpf", "cgroup",
    "cgroup2", "devtmpfs", "devpts", "mqueue", "hugetlbfs", "fusectl", "binfmt_misc", "autofs", "rpc_pipefs",
})
"""Kernel interfaces that show "regular files" which are not: reading one can block for ever
(``/proc/kmsg``), return the kernel's state, or act (``/sys/.../trigger``)."""


def open_regular(path: str, flags: int, mode: int = 0o600) -> int:
    """A descriptor of the regular file ``path`` opened with ``flags``; ``OSError`` for anything
    else. Nothing about it ever blocks: the open (a FIFO put in a file's place would otherwise
    hold the process until someone opened its other end: the audit log, the tray's history) and
    its reads (the descriptor stays non-blocking, which changes nothing for a real file). A file
    of a kernel interface (``/proc``, ``/sys``...) is refused: it only looks regular."""
    try:
        fd = os.open(path, flags | os.O_NONBLOCK | os.O_CLOEXEC, mode)
    except OSError as err:
        if err.errno == errno.ENXIO:  # a FIFO with no reader (or a device with none) opened for writing
            raise OSError(errno.EINVAL, "not a regular file") from None
        raise
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        os.close(fd)
        raise OSError(errno.EINVAL, "not a regular file")
    if _pseudo(info.st_dev):
        os.close(fd)
        raise OSError(errno.EINVAL, "a kernel interface file, not a regular file")
    return fd


def _pseudo(device: int) -> bool:
    from lsp_bridge.core.filesystems import filesystem_type

    return filesystem_type(device) in PSEUDO_FILESYSTEMS


def read_regular(path: str, limit: int, *, follow: bool = False) -> bytes | None:
    """Up to ``limit`` bytes of the regular file at ``path``; None when it is not one (a FIFO,
    a device, a directory; a link unless ``follow``) or cannot be read. Never blocks: a file
    someone swapped for a FIFO after it was listed is refused, not waited on."""
    try:
        fd = open_regular(path, os.O_RDONLY if follow else os.O_RDONLY | _NOFOLLOW)
    except OSError:
        return None
    try:
        with open(fd, "rb", closefd=False) as handle:
            return handle.read(limit)
    except OSError:
        return None
    finally:
        os.close(fd)

