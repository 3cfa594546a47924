"""After the command: every name it could have made in a writable tree, whatever the watch saw.

The host-side watch (``watch.SandboxWatch``) sees only what inotify reports, and inotify can be
blinded from inside the sandbox: a sandboxed process is charged to the same user's inotify
watches, so a command that uses them up leaves the watch unable to add a watch for a directory
it makes next (watchdog then neither watches nor lists it). So once the command has ended, the
writable trees are walked: a directory whose change time (``st_ctime_ns``: set by the kernel
whenever an entry is added, removed or renamed, and on the directory's own creation or rename;
no process can set it back) is at or after the run's start had its entries changed during the
run, and each of its entries is handed to the same judgement as a watch event (``on_made``:
``SandboxWatch.seen``). A directory made during the run is changed by its making, so everything
in it is judged.

Not entered, not judged: the mounts the profile placed in the trees that the command cannot
write (``fixed``: read-only binds of the protected names that existed, masks). They existed at
the start, and a mount point cannot be renamed or removed from inside. Nor a symbolic link
with a protected name that was there at the start (``kept``: no mount can cover a link) while
the same link holds the name: its inode unchanged and its change time before the mark (a
link made, renamed or linked anew has a new one).

The start mark is taken two seconds before the run (``MARGIN_NS``): file-system times come from
a coarse clock (a kernel tick behind the one Python reads) and some file systems keep them to the
second or two; a directory judged needlessly costs a few ``stat`` calls, one missed costs the
boundary.
"""

from __future__ import annotations

import os
import stat
import time
from collections.abc import Callable, Iterable

from lsp_bridge.core.paths import is_within

MARGIN_NS = 2_000_000_000


def start_mark() -> int:
    """The change time from which a directory counts as changed during the run (take it before the run)."""
    return time.time_ns() - MARGIN_NS


def changed_entries(writable: Iterable[str], fixed: Iterable[str], since_ns: int,
                    kept: Iterable[tuple[str, int]] = (), unreadable: list[str] | None = None) -> list[str]:
    """Every entry of every directory in the ``writable`` trees whose entries changed at or after
    ``since_ns``, outside the ``fixed`` mount points (not entered) and but for the ``kept`` links
    (path, inode) still there unchanged. Symbolic links are not followed. A directory that cannot
    be listed (``_listing``) goes to ``unreadable``: what is in it could not be judged."""
    fixed_set = frozenset(fixed)
    links = dict(kept)
    trees = sorted(set(writable))
    trees = [t for t in trees if not any(t != other and is_within(t, other) for other in trees)]
    found: list[str] = []
    stack = list(trees)
    while stack:
        directory = stack.pop()
        try:
            info = os.stat(directory, follow_symlinks=False)
        except FileNotFoundError:
            continue  # removed by the command: nothing left to hold
        except OSError:
            if unreadable is not None:
                unreadable.append(directory)
            continue
        changed = info.st_ctime_ns >= since_ns
        entries = _listing(directory, info)
        if entries is None:
            if unreadable is not None:
                unreadable.append(directory)
            continue
        for entry in entries:
            if entry.path in fixed_set:
                continue
            if changed and not (entry.path in links and _same_link(entry, links[entry.path], since_ns)):
                found.append(entry.path)
            try:
                is_dir = entry.is_dir(follow_symlinks=False)
            except OSError:
                continue
            if is_dir:
                stack.append(entry.path)
    return found


def _listing(directory: str, info: os.stat_result) -> list[os.DirEntry] | None:
    """The entries of ``directory``; None when it cannot be listed. A directory of ours that the
    command made unlistable (``chmod 000``: a plain user's sweep could not look inside) gets its
    owner's read and search bits back first: its content is judged, never skipped."""
    for attempt in range(2):
        try:
            with os.scandir(directory) as it:
                return list(it)
        except FileNotFoundError:
            return []  # removed by the command meanwhile
        except PermissionError:
            if attempt or info.st_uid != os.geteuid():
                return None
            try:
                os.chmod(directory, stat.S_IMODE(info.st_mode) | stat.S_IRUSR | stat.S_IXUSR, follow_symlinks=False)
            except OSError:
                return None
        except OSError:
            return None
    return None


def _same_link(entry: os.DirEntry, inode: int, since_ns: int) -> bool:
    try:
        info = entry.stat(follow_symlinks=False)
    except OSError:
        return False
    return entry.is_symlink() and info.st_ino == inode and info.st_ctime_ns < since_ns


def sweep(writable: Iterable[str], fixed: Iterable[str], since_ns: int, on_made: Callable[[str], None],
          kept: Iterable[tuple[str, int]] = (), on_unreadable: Callable[[str], None] | None = None) -> int:
    """Judge every changed entry (``changed_entries``) as made during the run; how many were judged.
    A directory that could not be listed goes to ``on_unreadable`` (the run then fails closed)."""
    unreadable: list[str] = []
    entries = changed_entries(writable, fixed, since_ns, kept, unreadable)
    for path in entries:
        on_made(path)
    if on_unreadable is not None:
        for path in unreadable:
            on_unreadable(path)
    return len(entries)
