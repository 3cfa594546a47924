"""A root's directory scans kept between runs, each trusted only while its directory is unchanged.

Counting a tree lists every directory in it. What a listing told (how many files,
which subdirectories, which interesting names) stays true while the directory's
entries do: a listing is kept with its directory's change key
(``core.change_key``: ``(st_dev, st_ino, st_mtime_ns, st_ctime_ns)``, kept only when a
later change will change it), and the next run lists again only the directories
whose key changed: one ``lstat`` instead of one listing.

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
from collections.abc import Mapping

from lsp_bridge.core.atomic import read_cache, write_cache
from lsp_bridge.core.change_key import unchanged

FORMAT = 1
KEPT_ROOTS = 64  # store files kept; the least recently written go first


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
    lists afresh): a cost, never a wrong answer."""
    from binascii import crc32

    import platformdirs

    try:
        base = platformdirs.user_cache_dir("rootguard")
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
