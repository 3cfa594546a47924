"""What to watch, and a debounced watchdog observer that watches it.

The plan is pure (``plan_watches``); ``Watcher`` is the I/O edge. Every watch
is non-recursive. watchdog gives each watched directory its own inotify
instance and thread, and Linux allows 128 instances per user by default,
shared by every program (editors use many), so a window watches at most
``WATCH_BUDGET`` directories, whatever the size of the repository:

* configuration: the user config directory, every directory a project
  ``.rootguard.toml`` could be found in, the folders' ``.vscode``/``.cursor``
  directories and the folders themselves (``.mcp.json``);
* worktrees: each repository's ``<common dir>/worktrees`` (or the common dir
  itself until that exists), so ``git worktree add``/``remove`` is seen;
* inventory: each union entry and the directories right below it (skipping
  ``.git``, ``node_modules`` and hidden directories except ``.github``): a new
  ``.env`` at the root or a new package in ``packages/`` shows up at once.

Deeper down, where inotify instances do not reach, a cheap rescan polls the
modification time of every directory of each union entry (``DeepScan``: one
``stat`` per directory, twice a second, slower on a large tree so it never takes
more than a few percent of a core; a directory listed again only when its time
changed). A file created anywhere in a union entry is therefore seen within a
second. At most ``DEEP_BUDGET`` directories are polled; beyond it the status
carries ``watch_limit``, a sentence saying what is not followed until the next
widening recounts.
The rescan pauses while an inventory scan runs (``idle``): the widening's
warning waits for that scan, and both want the same CPU.

Watches change incrementally: a directory still planned keeps its watch, so a
widening starts only the new ones (each is an inotify instance and two threads).

Reads (open, close without writing) are filtered out, so the inventory's own
scans do not wake the watcher.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

WATCH_BUDGET = 16
INVENTORY_DEPTH = 1
DEEP_BUDGET = 20_000  # directories the deep rescan polls
DEEP_INTERVAL = 0.5  # seconds between two polls (at least)
DEEP_SHARE = 0.05  # at most this share of a core: a slow poll waits longer before the next
DEEP_SETTLE = 0.5  # seconds after the roots change before the first walk (the inventory scans first)
_SKIP = {".git", "node_modules", "__pycache__", ".venv", "venv", "dist", "build", "target"}


@dataclass(frozen=True)
class WatchPlan:
    config_dirs: tuple[str, ...]
    worktree_dirs: tuple[str, ...]
    inventory_dirs: tuple[str, ...]
    truncated: int = 0  # directories left out because of the budget
    deep_roots: tuple[str, ...] = ()  # union entries: polled below the watched levels (DeepScan)
    sequence: int = 0  # the caller's count of plans made: a later plan has a higher one

    def all(self) -> list[str]:
        seen: list[str] = []
        for d in (*self.config_dirs, *self.worktree_dirs, *self.inventory_dirs):
            if d not in seen:
                seen.append(d)
        return seen


def plan_watches(
    *,
    config_files: Iterable[str],
    folders: Sequence[str],
    common_dirs: Iterable[str],
    union: Sequence[str],
    budget: int = WATCH_BUDGET,
    sequence: int = 0,
) -> WatchPlan:
    config_dirs: list[str] = []
    for path in config_files:
        _add_existing(config_dirs, _nearest_existing(os.path.dirname(path)))
    for folder in folders:
        for sub in ("", ".vscode", ".cursor"):
            _add_existing(config_dirs, os.path.join(folder, sub) if sub else folder)
    worktree_dirs: list[str] = []
    for common in common_dirs:
        worktrees = os.path.join(common, "worktrees")
        _add_existing(worktree_dirs, worktrees if os.path.isdir(worktrees) else common)
    remaining = max(budget - len(config_dirs) - len(worktree_dirs), 0)
    inventory_dirs: list[str] = []
    truncated = 0
    for entry in union:
        for directory in _shallow_dirs(entry, INVENTORY_DEPTH):
            if directory in inventory_dirs or directory in config_dirs:
                continue
            if len(inventory_dirs) >= remaining:
                truncated += 1
                continue
            inventory_dirs.append(directory)
    return WatchPlan(tuple(config_dirs), tuple(worktree_dirs), tuple(inventory_dirs), truncated, tuple(union),
                     sequence)


def _nearest_existing(directory: str) -> str:
    """``directory`` or its closest existing parent: a config dir made later is still seen."""
    while directory and not os.path.isdir(directory):
        parent = os.path.dirname(directory)
        if parent == directory:
            return ""
        directory = parent
    return directory


def is_on_config_path(path: str, config_files: Iterable[str]) -> bool:
    """Whether a change at ``path`` can create, remove or edit one of ``config_files``."""
    return any(f == path or f.startswith(path.rstrip(os.sep) + os.sep) for f in config_files)


def _add_existing(found: list[str], directory: str) -> None:
    if directory and directory not in found and os.path.isdir(directory):
        found.append(directory)


def _shallow_dirs(root: str, depth: int):
    frontier = [root]
    for level in range(depth + 1):
        next_frontier = []
        for directory in frontier:
            yield directory
            if level == depth:
                continue
            try:
                with os.scandir(directory) as it:
                    for item in it:
                        if item.is_dir(follow_symlinks=False) and _worth_watching(item.name):
                            next_frontier.append(item.path)
            except OSError:
                continue
        frontier = sorted(next_frontier)


def _worth_watching(name: str) -> bool:
    if name in _SKIP:
        return False
    return not name.startswith(".") or name == ".github"


class Watcher:
    """A watchdog observer over a ``WatchPlan`` that reports debounced batches of paths."""

    def __init__(self, on_batch: Callable[[set[str]], object], *, debounce: float = 0.15,
                 on_limit: Callable[[], object] | None = None, deep_budget: int = DEEP_BUDGET,
                 idle: Callable[[float], bool] | None = None):
        from watchdog.observers import Observer

        _load_changes()
        self._deep = DeepScan(lambda paths: self._event(*paths), on_limit=on_limit, budget=deep_budget, idle=idle)

        self._on_batch = on_batch
        self._debounce = debounce
        self._observer = Observer()
        self._observer.daemon = True
        self._pending: set[str] = set()
        self._lock = threading.Lock()
        self._timer: threading.Timer | None = None
        self._handler = _Handler(self._event)
        self._watches: dict[str, tuple[Any, tuple[int, int]]] = {}  # directory -> (watchdog's handle, identity)
        self._apply_lock = threading.Lock()
        self._observer.start()

    @property
    def watched(self) -> list[str]:
        return list(self._watches)

    @property
    def limit_note(self) -> str | None:
        """A sentence for the status when the deep rescan's budget is exhausted, else None."""
        return self._deep.limit_note

    def apply(self, plan: WatchPlan, *, since: int | None = None) -> None:
        """Watch what ``plan`` names: directories kept keep their watch, only the others change.

        ``since`` (``time.time_ns()``): when the union last changed, if earlier than
        now. The deep rescan reports any directory modified after it (a file made
        while the union was being scanned, before these watches began).
        """
        self._deep.set_roots(plan.deep_roots, since=since)
        wanted = plan.all()
        # Each watch is an inotify instance and two threads: stopping and starting the
        # ones that stay would cost milliseconds while the widening's inventory runs.
        # A kept directory that was removed and made again is watched anew (its identity changed).
        # Safe from any thread: one apply at a time; ``watched`` sees the old set until the new one is complete.
        with self._apply_lock:
            identities = {d: _identity(d) for d in wanted}
            kept = dict(self._watches)
            for directory in [d for d, (_, ident) in kept.items() if identities.get(d) != ident]:
                watch, _ = kept.pop(directory)
                try:
                    self._observer.unschedule(watch)
                except (KeyError, OSError):
                    pass  # already gone with its directory
            watches = {}
            for directory in wanted:
                if directory in kept:
                    watches[directory] = kept[directory]
                    continue
                try:
                    watch = self._observer.schedule(self._handler, directory, recursive=False, event_filter=_CHANGES)
                except OSError:
                    continue  # vanished, or the OS is out of watches: never crash the server
                watches[directory] = (watch, identities[directory])
            self._watches = watches

    def _event(self, *paths: str) -> None:
        with self._lock:
            self._pending.update(p for p in paths if p)
            if self._timer is not None:
                self._timer.cancel()
            self._timer = threading.Timer(self._debounce, self._flush)
            self._timer.daemon = True
            self._timer.start()

    def _flush(self) -> None:
        with self._lock:
            batch, self._pending, self._timer = self._pending, set(), None
        if batch:
            self._on_batch(batch)

    def stop(self) -> None:
        with self._lock:
            if self._timer is not None:
                self._timer.cancel()
        self._deep.stop()
        self._observer.stop()


def _identity(directory: str) -> tuple[int, int]:
    """(device, inode) of ``directory``; (-1, -1) when it is gone."""
    try:
        info = os.stat(directory)
    except OSError:
        return (-1, -1)
    return (info.st_dev, info.st_ino)


class DeepScan:
    """Polls directory modification times below some roots and reports the directories that changed.

    Creating, removing or renaming an entry changes its directory's time, so a
    ``stat`` per directory finds every such change; only a changed directory is
    listed again (for new subdirectories, which join the poll). Directory
    links are not followed and ``_SKIP`` names are not entered, as the
    inventory does. ``report`` receives the changed directories (and the new
    ones) from the polling thread.
    """

    def __init__(self, report: Callable[[list[str]], object], *, on_limit: Callable[[], object] | None = None,
                 budget: int = DEEP_BUDGET, interval: float = DEEP_INTERVAL,
                 idle: Callable[[float], bool] | None = None):
        self._report = report
        self._idle = idle  # idle(timeout): True once no inventory scan runs (the rescan waits for that)
        self._on_limit = on_limit
        self._budget = budget
        self._interval = interval
        self._roots: tuple[str, ...] = ()
        self._times: dict[str, int] = {}  # directory -> st_mtime_ns when last listed
        self._reset = False
        self._since = 0  # when the roots last changed (time.time_ns)
        self._stopped = False
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self.limit_note: str | None = None
        self._thread: threading.Thread | None = None

    def set_roots(self, roots: Sequence[str], *, since: int | None = None) -> None:
        """Poll below ``roots`` from now on; directories modified after ``since`` (default: now) are reported."""
        with self._lock:
            if tuple(roots) == self._roots:
                return
            self._roots = tuple(roots)
            self._reset = True
            self._since = min(since, time.time_ns()) if since is not None else time.time_ns()
            if self._thread is None and roots:
                self._thread = threading.Thread(target=self._run, name="rootguard-deep-scan", daemon=True)
                self._thread.start()
        self._wake.set()

    def stop(self) -> None:
        self._stopped = True
        self._wake.set()

    def _run(self) -> None:
        while not self._stopped:
            with self._lock:
                reset = self._reset
            if reset:
                # The walk waits for the widening's own inventory scan to be done (both want the
                # CPU, see ``idle``); a directory changed since the roots changed is reported when walked.
                self._wake.clear()
                self._wake.wait(DEEP_SETTLE)
                self._wake.clear()
                if self._stopped:
                    return
            while self._idle is not None and not self._idle(DEEP_INTERVAL):  # a scan has the CPU first
                if self._stopped:
                    return
            started = time.monotonic()
            with self._lock:
                reset, self._reset, roots, since = self._reset, False, self._roots, self._since
            if reset:
                self._times = {}
                self._add_trees(roots)
                recent = [d for d, seen in self._times.items() if seen > since]
                if recent:
                    self._report(recent)
            else:
                changed = self._poll()
                if changed:
                    self._report(changed)
            spent = time.monotonic() - started
            self._wake.wait(max(self._interval, spent / DEEP_SHARE))
            self._wake.clear()

    def _add_trees(self, tops: Iterable[str]) -> list[str]:
        """Record the times of ``tops`` and every directory below them; returns those added."""
        added: list[str] = []
        stack = list(tops)
        while stack:
            directory = stack.pop()
            if directory in self._times:
                continue
            if len(self._times) >= self._budget:
                self._over_budget()
                return added
            try:
                self._times[directory] = os.stat(directory, follow_symlinks=False).st_mtime_ns
                with os.scandir(directory) as it:
                    stack.extend(e.path for e in it if e.name not in _SKIP and e.is_dir(follow_symlinks=False))
            except OSError:
                self._times.pop(directory, None)
                continue
            added.append(directory)
        return added

    def _poll(self) -> list[str]:
        changed: list[str] = []
        for directory, seen in list(self._times.items()):
            try:
                now = os.stat(directory, follow_symlinks=False).st_mtime_ns
            except OSError:
                now = None
            if now == seen:
                continue
            changed.append(directory)
            if now is None:  # removed: forget it and what was below it
                prefix = directory + os.sep
                for key in [k for k in self._times if k == directory or k.startswith(prefix)]:
                    del self._times[key]
                continue
            self._times[directory] = now
            try:
                with os.scandir(directory) as it:
                    new = [e.path for e in it
                           if e.name not in _SKIP and e.path not in self._times and e.is_dir(follow_symlinks=False)]
            except OSError:
                continue
            changed.extend(self._add_trees(new))
        return changed

    def _over_budget(self) -> None:
        if self.limit_note is None:
            self.limit_note = (
                f"more than {self._budget:,} directories in the union: changes below the first "
                f"{self._budget:,} are counted at the next widening, not as they happen"
            )
            if self._on_limit is not None:
                self._on_limit()


_CHANGES: list = []


def _load_changes() -> None:
    """Changes only: reads (open, close-no-write) would wake us for our own scans."""
    from watchdog import events as ev

    if not _CHANGES:
        _CHANGES.extend([
            ev.FileCreatedEvent, ev.FileDeletedEvent, ev.FileModifiedEvent, ev.FileMovedEvent,
            ev.FileClosedEvent, ev.DirCreatedEvent, ev.DirDeletedEvent, ev.DirModifiedEvent, ev.DirMovedEvent,
        ])
        # Attribute changes (mode, times) are their own events in watchdog >= 5.
        _CHANGES.extend(getattr(ev, name) for name in ("FileAttribEvent", "DirAttribEvent") if hasattr(ev, name))


def _Handler(callback):  # noqa: N802 - a small factory keeps watchdog imports lazy
    from watchdog.events import FileSystemEventHandler

    class Handler(FileSystemEventHandler):
        def on_any_event(self, event):
            if event.event_type in ("opened", "closed_no_write"):
                return
            callback(os.fsdecode(event.src_path), os.fsdecode(getattr(event, "dest_path", "") or ""))

    return Handler()
