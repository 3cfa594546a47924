"""``openat2(2)`` with ``RESOLVE_NO_SYMLINKS``: open a path only if no component is a symbolic link.

Python has no binding for it, so this is a ``ctypes`` call of ``syscall(2)``
(Linux 5.6 and later; the number, 437, is the same on every architecture). It
answers "is this path its own canonical name?" in one system call, where the
other way is an ``O_PATH`` open, a ``readlink`` of ``/proc/self/fd`` and a
compare. Loading ``ctypes`` costs a few milliseconds, so only a long-lived
process that asks many times loads it (``paths.plain_stat``); a one-shot command
never does.

``opener()`` is None where the kernel, a seccomp filter or the C library refuses
the call: the caller then takes the ``/proc`` way, which gives the same answers.
"""

from __future__ import annotations

import os
from collections.abc import Callable

_SYS_OPENAT2 = 437
_RESOLVE_NO_SYMLINKS = 0x04  # also refuses "magic" links such as /proc/self/root
_AT_FDCWD = -100


def opener() -> Callable[[str], int] | None:
    """A function that opens an absolute path ``O_PATH | O_CLOEXEC`` with no symbolic link followed
    anywhere on it and returns the descriptor (``OSError``: ``ELOOP`` when a link is met, or the
    usual errors); None when ``openat2`` is not usable here. Built at each call (it loads ``ctypes``
    and probes the kernel): the caller keeps it, as ``paths.plain_stat`` does."""
    o_path = getattr(os, "O_PATH", 0)
    if not o_path or not os.path.isdir("/proc/self/fd"):
        return None
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        syscall = libc.syscall
    except (OSError, AttributeError):
        return None

    class OpenHow(ctypes.Structure):
        _fields_ = [("flags", ctypes.c_uint64), ("mode", ctypes.c_uint64), ("resolve", ctypes.c_uint64)]

    syscall.argtypes = [ctypes.c_long, ctypes.c_int, ctypes.c_char_p, ctypes.c_void_p, ctypes.c_size_t]
    syscall.restype = ctypes.c_long
    how = OpenHow(o_path | os.O_CLOEXEC, 0, _RESOLVE_NO_SYMLINKS)
    how_ref, how_size = ctypes.addressof(how), ctypes.sizeof(how)
    get_errno, fsencode = ctypes.get_errno, os.fsencode

    def open_no_symlinks(path: str) -> int:
        fd = syscall(_SYS_OPENAT2, _AT_FDCWD, fsencode(path), how_ref, how_size)
        if fd < 0:
            code = get_errno()
            raise OSError(code, os.strerror(code), path)
        return int(fd)

    open_no_symlinks.how = how  # type: ignore[attr-defined]  # keeps the structure alive with the function
    try:
        os.close(open_no_symlinks("/"))
    except OSError:  # ENOSYS (an older kernel), EPERM (a seccomp filter): not usable here
        return None
    return open_no_symlinks
