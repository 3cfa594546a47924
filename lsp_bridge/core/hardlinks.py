"""Hard links: a read is judged by name, so a second name for a denied file must not be served.

The rule (docs/configuration.md, "Hard links"): reading a regular file that has more
than one link (``st_nlink > 1``) is denied when its inode (``st_dev``, ``st_ino``) is
the inode of a file that a deny rule covers for ``read`` inside the union. Every other
multiply-linked file is served, because a pnpm store is made of hard links into the
global store and refusing them would break the commonest layout.

A project file's deny rules are walked from their anchor, wherever it lies, so a narrow
root's hard link to the repository's denied ``.env`` is refused too; a user rule is
walked only where it meets the union.

What this cannot detect (documented): a hard link to a file *outside* the union that no
rule covers, or that only a user rule anchored above the union covers (the other name is
unknown without scanning the whole disk), a denied file created or replaced since the
index was built (the index is rebuilt at most every ``TTL`` seconds when a multiply-
linked file is read), and more than ``MAX_ENTRIES`` entries below the deny rules'
anchors (then every multiply-linked file is refused: fail closed). Writes through a hard
link are safe already: a write replaces the name (temporary file + rename), never the
shared inode.

This is an I/O edge of the engine: it walks the directories below deny rules (links
not followed) to learn their files' inodes.
"""

from __future__ import annotations

import os
import stat
import time
from _thread import allocate_lock  # threading.Lock, without importing threading for a short command
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TYPE_CHECKING, Protocol

from lsp_bridge.core.decision import Target
from lsp_bridge.core.paths import is_within

if TYPE_CHECKING:  # pragma: no cover
    from lsp_bridge.core.decision import Decision
    from lsp_bridge.core.rules import RuleSet
    from lsp_bridge.core.scope import Scope


class Engine(Protocol):
    """What the index asks of the engine (``core.policy.Policy``; a Protocol, so that this module
    does not import the engine that owns the index)."""

    @property
    def scope(self) -> Scope: ...

    def rulesets(self) -> list[RuleSet]: ...

    def decide_target(self, op: str, target: Target, *, reported_op: str | None = None) -> Decision: ...

TTL = 30.0
MAX_ENTRIES = 500_000

_NO_WALK: ContextVar[bool] = ContextVar("rootguard_hardlinks_no_walk", default=False)


class IndexStale(Exception):
    """The index needs a rebuild and the caller asked for no walk (``no_walk``)."""


@contextmanager
def no_walk() -> Iterator[None]:
    """Within: asking a stale index raises ``IndexStale`` instead of walking (a caller that
    must not block, such as the MCP server's event loop, then asks from a worker thread)."""
    token = _NO_WALK.set(True)
    try:
        yield
    finally:
        _NO_WALK.reset(token)


class HardLinkIndex:
    """The inodes of files a deny rule covers for ``read`` inside the union, built lazily."""

    def __init__(self, policy: Engine) -> None:
        self._policy = policy
        self._lock = allocate_lock()
        self._built = -1e18
        self._inodes: dict[tuple[int, int], str] = {}
        self._devices: frozenset[int] = frozenset()
        self._complete = True

    def denied(self, inode: tuple[int, int], path: str) -> str | None:
        """Why a read of ``path`` (inode ``inode``, several links) is refused, or None."""
        with self._fresh():
            other = self._inodes.get(inode)
            complete = self._complete
        if other is not None and other != path:
            return ("it is a hard link to a file a deny rule covers (another name of the same inode is denied); "
                    "hard links to denied files are never served")
        if not complete:
            return ("it has several hard links and the denied files could not all be indexed "
                    f"(more than {MAX_ENTRIES} entries): refused, failing closed")
        return None

    def devices(self) -> frozenset[int] | None:
        """The devices (``st_dev``) holding a denied file's inode; None when the index is incomplete.

        A hard link never crosses file systems, so a regular file on any other device
        is no other name of a denied file: a listing of a directory on such a device
        needs no inode per entry (``denied`` could only answer None). A file
        bind-mounted from another device is not a hard link and is outside this rule,
        as it is for ``denied``; reading it still resolves and checks its own inode.
        None: every multiply-linked file is refused, so each one's link count is needed.
        """
        with self._fresh():
            return self._devices if self._complete else None

    def inodes_on(self, device: int) -> frozenset[int] | None:
        """The inode numbers of denied files on ``device``; None when the index is incomplete.

        A regular file there whose inode number is none of these is no other name of
        a denied file (``denied`` could only answer None), whatever its link count.
        """
        with self._fresh():
            if not self._complete:
                return None
            return frozenset(inode for dev, inode in self._inodes if dev == device)

    @contextmanager
    def _fresh(self) -> Iterator[None]:
        """The lock held over an index no older than ``TTL`` (rebuilt here, unless ``no_walk``:
        then a stale index, or one another thread is rebuilding, raises ``IndexStale``)."""
        quick = _NO_WALK.get()
        if not self._lock.acquire(blocking=not quick):
            raise IndexStale("the hard-link index is being rebuilt")
        try:
            if time.monotonic() - self._built > TTL:
                if quick:
                    raise IndexStale("the hard-link index needs a rebuild")
                self._build()
            yield
        finally:
            self._lock.release()

    # -- building ----------------------------------------------------------------

    def _build(self) -> None:
        policy = self._policy
        union = [e.path for e in policy.scope.union.entries]
        anchors: list[tuple[str, bool]] = []
        for ruleset in policy.rulesets():
            for rule in ruleset.config.paths:
                if rule.read == "deny":
                    anchors.append((rule.anchor, rule.source == "project"))
        starts: list[str] = []
        for anchor, from_project in anchors:
            if from_project:
                # A project rule is anchored in its own checkout: the repository's ``.env``
                # beside a narrow root is a hard link's likeliest other name, so a project
                # rule's whole anchor is walked, not only the union's part of it.
                starts.append(anchor)
                continue
            for entry in union:
                if is_within(anchor, entry):
                    starts.append(anchor)
                elif is_within(entry, anchor):
                    starts.append(entry)
        starts = sorted(set(starts), key=len)
        roots = [s for i, s in enumerate(starts) if not any(is_within(s, t) for t in starts[:i])]
        inodes: dict[tuple[int, int], str] = {}
        complete = True
        for count, (path, info) in enumerate(_walk(roots), 1):
            if count > MAX_ENTRIES:
                complete = False
                break
            decision = policy.decide_target("read", Target(path))
            if decision.decision == "deny" and decision.rule is not None:
                inodes[(info.st_dev, info.st_ino)] = path
        self._inodes, self._complete, self._built = inodes, complete, time.monotonic()
        self._devices = frozenset(device for device, _ in inodes)


def _walk(roots: list[str]) -> Iterator[tuple[str, os.stat_result]]:
    """(path, stat) of every regular file below ``roots`` (or a root that is a file); links not followed."""
    for root in roots:
        try:
            info = os.lstat(root)
        except OSError:
            continue
        if stat.S_ISREG(info.st_mode):
            yield root, info
            continue
        if not stat.S_ISDIR(info.st_mode):
            continue
        stack = [root]
        while stack:
            directory = stack.pop()
            try:
                with os.scandir(directory) as entries:
                    for entry in entries:
                        try:
                            if entry.is_dir(follow_symlinks=False):
                                stack.append(entry.path)
                            elif entry.is_file(follow_symlinks=False):
                                yield entry.path, entry.stat(follow_symlinks=False)
                        except OSError:
                            continue
            except OSError:
                continue
