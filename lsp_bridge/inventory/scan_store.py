"""A root's directory scans kept between runs, each trusted only while its directory is unchanged.

Counting a tree lists every directory in it. What a listing told (how many files,
which subdirectories, which interesting names) stays true while the directory's
entries do, and any change of entries (a file created, removed or renamed, a
subdirectory added) sets the directory's ``st_ctime``, which no program can set
back. So a listing is kept with its directory's key, ``(st_dev, st_ino,
st_mtime_ns, st_ctime_ns)``, and the next run lists again only the directories
whose key changed: one ``lstat`` instead of one listing. The idea and its limits
are git's untracked cache.

A key is kept only when it can tell a later change (``stable_key``):

* **racy**: a change within the same clock tick as the key was read would leave
  the key as it was, so a directory (or file) changed less than ``MARGIN_NS``
  before it was read is never kept (``COARSE_MARGIN_NS`` on a file system that
  keeps whole seconds): it is listed again next time;
* **whose clock**: only on file systems whose timestamps this machine's kernel sets
  (``LOCAL_TYPES``); a network or FUSE file system's come from elsewhere, so there
  every directory is listed every time.

Files whose contents the inventory reads (credential counts) carry their own key,
and are read again when it changed. The file is the user's, in the cache directory,
like the git history answers beside it: what it guards against is staleness and
damage (a record that does not decode is no record), not a program of the user's
that rewrites it on purpose: the cache directory is a protected target (an agent's write
to it needs approval, ``core/protected.py``) and ``rootguard run`` binds it read-only.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Mapping

from lsp_bridge.core.atomic import read_cache, write_cache
from lsp_bridge.core.filesystems import filesystem_type

Key = tuple[int, int, int, int]  # st_dev, st_ino, st_mtime_ns, st_ctime_ns

FORMAT = 1
MARGIN_NS = 100_000_000  # ten ticks of the coarsest kernel clock (HZ=100)
COARSE_MARGIN_NS = 3_000_000_000  # whole-second (or two-second) timestamps
LOCAL_TYPES = frozenset({"ext2", "ext3", "ext4", "xfs", "btrfs", "tmpfs", "f2fs", "jfs", "bcachefs",
                         "overlay", "zfs", "reiserfs"})
KEPT_ROOTS = 64  # store files kept; the least recently written go first
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


def unchanged(key: list | tuple, info: os.stat_result) -> bool:
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


def plain_names(names: object) -> bool:
    """Whether ``names`` is a list of single path components: strings, none empty, ``.`` or
    ``..``, none holding a ``/`` or a NUL (one join and five searches, not a loop per name)."""
    if type(names) is not list:
        return False
    if not names:
        return True
    try:
        joined = "/" + "/".join(names) + "/"
    except TypeError:  # not all strings
        return False
    return (joined.count("/") == len(names) + 1 and "\0" not in joined and "//" not in joined
            and "/./" not in joined and "/../" not in joined)


class ScanStore:
    """The kept scans of one root: ``records`` maps a directory's path relative to the root
    ("" for the root) to ``[*key, ...what the scan keeps]``; ``counts`` does the same for a
    package store's file count. What the records hold is the scanner's business
    (``scan.py``); this class finds, reads and writes them.
    """

    def __init__(self, top: str, file: str | None) -> None:
        self.top = top
        self.file = file
        self.records: dict[str, list] = {}
        self.counts: dict[str, list] = {}
        self.changed = False  # set by the scanner when it listed what a record could have spared
        if file is None:
            return
        data = read_cache(file)  # None: none yet, or not readable as ours: everything is listed, then written
        if (isinstance(data, dict) and data.get("format") == FORMAT and data.get("top") == top
                and isinstance(data.get("records"), dict) and isinstance(data.get("counts"), dict)):
            self.records, self.counts = data["records"], data["counts"]

    @classmethod
    def for_root(cls, top: str) -> ScanStore:
        """The store of ``top`` in the user's cache directory (none kept when there is none)."""
        return cls(top, store_file(top))

    def relative(self, path: str) -> str:
        top = self.top
        return "" if path == top else path[len(top) + (not top.endswith(os.sep)):]

    def record(self, path: str, info: os.stat_result) -> list | None:
        """The record of the directory ``path`` when it was kept with the key ``info`` (its
        ``lstat`` now) has: nothing in it changed since. Else None."""
        found = self.records.get(self.relative(path))
        return found if type(found) is list and len(found) > 4 and unchanged(found, info) else None

    def save(self, records: Mapping[str, list], counts: Mapping[str, list]) -> bool:
        """Write these records in place of the kept ones; False when nothing could be written."""
        if self.file is None:
            return False
        # ASCII: a name that is not UTF-8 (its bytes kept as lone surrogates) is written as an
        # escape and read back the same, where UTF-8 output could not encode it at all.
        text = json.dumps({"format": FORMAT, "top": self.top, "records": records, "counts": counts},
                          separators=(",", ":"), check_circular=False)
        written = write_cache(self.file, text)
        if written:
            self.records, self.counts, self.changed = dict(records), dict(counts), False
            _forget_oldest(os.path.dirname(self.file))
        return written


def store_file(top: str) -> str | None:
    """Where ``top``'s scans are kept: ``<cache>/scans/<name>-<CRC-32 of the path>.json``. Two roots
    whose paths share a checksum share the file (each finds the other's ``top`` in it and
    lists afresh): a cost, never a wrong answer. (``hashlib`` would take 15 ms to import.)"""
    from binascii import crc32

    from lsp_bridge.core.userdirs import user_cache_dir

    try:
        base = user_cache_dir()
    except (ImportError, RuntimeError):
        return None
    name = "".join(c if c.isalnum() or c in "-_." else "_" for c in os.path.basename(top)[:40]) or "root"
    return os.path.join(base, "scans", f"{name}-{crc32(os.fsencode(top)):08x}.json")


def _forget_oldest(directory: str) -> None:
    """Keep at most ``KEPT_ROOTS`` store files in ``directory``: the least recently written go."""
    try:
        with os.scandir(directory) as listing:
            files = [(entry.stat(follow_symlinks=False).st_mtime_ns, entry.path) for entry in listing
                     if entry.name.endswith(".json") and entry.is_file(follow_symlinks=False)]
    except OSError:
        return
    for _, path in sorted(files)[:max(0, len(files) - KEPT_ROOTS)]:
        try:
            os.unlink(path)
        except OSError:
            pass
