"""Where the tray's socket lives, shared by the tray and its clients.

The socket sits in the user's runtime directory (``platformdirs``), in a
``rootguard`` directory that must be ours and private (0700). ``ROOTGUARD_TRAY_SOCKET``
overrides the socket path (tests, unusual setups). No Qt and no sockets here.
"""

from __future__ import annotations

import os
import stat
import warnings
from collections.abc import Mapping

SOCKET_ENV = "ROOTGUARD_TRAY_SOCKET"
SOCKET_NAME = "tray.sock"


class RuntimeDirError(RuntimeError):
    """The socket directory is not safe to use (wrong owner or mode)."""


def runtime_dir() -> str:
    """The per-user runtime directory for Root Guard (not created here)."""
    import platformdirs

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "XDG_RUNTIME_DIR is not set, falling back to ..."
        return platformdirs.user_runtime_dir("rootguard")


def socket_path(env: Mapping[str, str] | None = None) -> str:
    """The tray socket's path: ``$ROOTGUARD_TRAY_SOCKET`` or ``<runtime dir>/tray.sock``."""
    env = os.environ if env is None else env
    override = env.get(SOCKET_ENV)
    if override:
        return os.path.abspath(override)
    return os.path.join(runtime_dir(), SOCKET_NAME)


def lock_path(sock: str) -> str:
    """The single-instance lock file next to the socket."""
    return sock + ".lock"


def ensure_private_dir(directory: str) -> None:
    """Create ``directory`` with mode 0700, or check an existing one is ours and private.

    An existing directory owned by someone else is refused (it may be planted in
    the shared ``/tmp/runtime-<uid>`` fallback); one of ours open to group/others
    is tightened to 0700. Its parent must be ours or root's, and not writable by
    others unless sticky, or our directory could be swapped under us.
    """
    parent = os.path.dirname(os.path.abspath(directory))
    os.makedirs(parent, mode=0o700, exist_ok=True)
    _check_parent(parent)
    os.makedirs(directory, mode=0o700, exist_ok=True)
    info = os.lstat(directory)
    if not stat.S_ISDIR(info.st_mode):
        raise RuntimeDirError(f"{directory}: not a directory")
    if info.st_uid != os.getuid():
        raise RuntimeDirError(f"{directory}: owned by uid {info.st_uid}, not by this user")
    if stat.S_IMODE(info.st_mode) & 0o077:
        os.chmod(directory, 0o700)


def _check_parent(parent: str) -> None:
    """Whoever owns the parent can swap our directory: it must be us or root, or sticky."""
    info = os.stat(parent)
    if info.st_uid not in (os.getuid(), 0):
        raise RuntimeDirError(f"{parent}: owned by uid {info.st_uid}; refusing to put the tray socket there")
    if stat.S_IMODE(info.st_mode) & 0o022 and not info.st_mode & stat.S_ISVTX:
        raise RuntimeDirError(f"{parent}: writable by others; refusing to put the tray socket there")


def peer_uid(sock) -> int | None:
    """The uid at the other end of a connected unix socket (Linux ``SO_PEERCRED``), else None."""
    import socket as _socket
    import struct
    import sys

    if not sys.platform.startswith("linux"):
        return None
    data = sock.getsockopt(_socket.SOL_SOCKET, _socket.SO_PEERCRED, struct.calcsize("3i"))
    return struct.unpack("3i", data)[1]
