"""Which file system a device number is, from the kernel's mount table (``/proc/self/mountinfo``).

Two places act on it: the MCP server's listing trusts a directory entry's inode number
only on file systems that give the file's own (``safe_listing.readdir_inodes_exact``), and the
inventory keeps a directory's scan between runs only on file systems whose timestamps this
machine's kernel sets (``inventory.scan_store``). Unknown is never trusted.
"""

from __future__ import annotations

import os
import time

MOUNTINFO = "/proc/self/mountinfo"
_TTL = 30.0  # as the hard-link index's: the table is re-read at least this often
_types: dict[int, str] = {}
_read_at = -1e18

UNKNOWN = "?"


def filesystem_type(device: int) -> str:
    """The type (``ext4``, ``overlay``, ``nfs4``, ``fuse.sshfs``...) of the file system mounted
    as ``device``, or ``UNKNOWN`` when the table does not tell (not mounted as itself, such as
    a btrfs subvolume; two types for one number; no ``/proc``)."""
    global _types, _read_at
    now = time.monotonic()
    if now - _read_at > _TTL or device not in _types:
        types: dict[int, str] = {}
        try:
            with open(MOUNTINFO, encoding="utf-8", errors="replace") as handle:
                for line in handle:
                    fields = line.split()
                    if "-" not in fields:
                        continue
                    major, _, minor = fields[2].partition(":")
                    try:
                        number = os.makedev(int(major), int(minor))
                    except ValueError:
                        continue
                    kind = fields[fields.index("-") + 1]
                    if types.setdefault(number, kind) != kind:
                        types[number] = UNKNOWN  # two types for one number: trust neither
        except OSError:
            types = {}
        types.setdefault(device, UNKNOWN)  # untrusted until the table is re-read
        _types, _read_at = types, now
    return _types[device]


# Kernel interfaces mounted as file systems: their "files" are not data anyone handed over,
# and walking them (``/proc`` alone has a directory per thread) is long and meaningless.
PSEUDO_TYPES = frozenset({
    "proc", "sysfs", "devtmpfs", "devpts", "cgroup", "cgroup2", "securityfs", "debugfs", "tracefs", "pstore",
    "bpf", "configfs", "fusectl", "mqueue", "hugetlbfs", "binfmt_misc", "autofs", "efivarfs", "selinuxfs",
    "rpc_pipefs", "nsfs", "nfsd", "ramfs",
})


def pseudo_mounts() -> dict[str, str]:
    """Mount point -> type for every pseudo file system mounted now (empty without ``/proc``)."""
    found: dict[str, str] = {}
    try:
        with open(MOUNTINFO, encoding="utf-8", errors="replace") as handle:
            for line in handle:
                fields = line.split()
                if "-" not in fields or len(fields) < 5:
                    continue
                kind = fields[fields.index("-") + 1]
                if kind in PSEUDO_TYPES:
                    point = fields[4].encode("utf-8", "surrogateescape").decode("unicode_escape", "replace")
                    found[point] = kind
    except OSError:
        return {}
    return found
