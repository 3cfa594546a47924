"""A directory's change key: what says, without listing it again, that its entries are as they were.

Any change of a directory's entries (a name created, removed or renamed) sets its
``st_ctime``, which no program can set back, and its ``st_mtime``. So what a listing
told (names, kinds, counts) is kept with the directory's key, ``(st_dev, st_ino,
st_mtime_ns, st_ctime_ns)``, and stays true while one ``stat`` gives the same key.
The idea and its limits are git's untracked cache. Two users: the inventory's kept
scans (``inventory.scan_store``) and the MCP server's kept listings
(``mcp.safe_listing.KeptListings``).

A key is kept only when it can tell a later change (``stable_key``):

* **racy**: a change within the same clock tick as the key was read would leave
  the key as it was, so a directory (or file) changed less than ``MARGIN_NS``
  before it was read is never kept (``COARSE_MARGIN_NS`` on a file system that
  keeps whole seconds): it is listed again next time;
* **whose clock**: only on file systems whose timestamps this machine's kernel sets
  (``LOCAL_TYPES``); a network or FUSE file system's come from elsewhere, so there
  every directory is listed every time.
"""

from __future__ import annotations

import os
import time

from lsp_bridge.core.filesystems import filesystem_type

Key = tuple[int, int, int, int]  # st_dev, st_ino, st_mtime_ns, st_ctime_ns

MARGIN_NS = 100_000_000  # ten ticks of the coarsest kernel clock (HZ=100)
COARSE_MARGIN_NS = 3_000_000_000  # whole-second (or two-second) timestamps
LOCAL_TYPES = frozenset({"ext2", "ext3", "ext4", "xfs", "btrfs", "tmpfs", "f2fs", "jfs", "bcachefs",
                         "overlay", "zfs", "reiserfs"})
_SECOND = 1_000_000_000


def stable_key(info: os.stat_result, read_at_ns: int) -> Key | None:
    """``info``'s key when a later change will change it: None when it changed too close to
    ``read_at_ns`` (a ``time.time_ns()`` taken before the ``stat``) or lives on a file system
    whose timestamps this machine does not set."""
    changed = info.st_ctime_ns
    coarse = changed % _SECOND == 0 and info.st_mtime_ns % _SECOND == 0
    if changed > read_at_ns - (COARSE_MARGIN_NS if coarse else MARGIN_NS):
        return None
    if filesystem_type(info.st_dev) not in LOCAL_TYPES:
        return None
    return (info.st_dev, info.st_ino, info.st_mtime_ns, changed)


def unchanged(key: list[int] | tuple[int, ...], info: os.stat_result) -> bool:
    """Whether ``key`` (``[st_dev, st_ino, st_mtime_ns, st_ctime_ns, ...]``, as kept) is still
    ``info``'s: nothing in the directory changed since it was kept."""
    return (key[1] == info.st_ino and key[3] == info.st_ctime_ns and key[2] == info.st_mtime_ns
            and key[0] == info.st_dev)


def key_of(path: str, read_at_ns: int | None = None) -> Key | None:
    """``stable_key`` of ``path`` (links not followed); None when it cannot be read.
    ``read_at_ns``: a ``time.time_ns()`` taken before (default: now)."""
    now = time.time_ns() if read_at_ns is None else read_at_ns
    try:
        return stable_key(os.lstat(path), now)
    except OSError:
        return None
