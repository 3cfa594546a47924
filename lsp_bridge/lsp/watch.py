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
  ``.env`` at the root or a new package in ``packages/`` shows up at once; a
  change deeper down is counted at the next widening, which recounts.

Reads (open, close without writing) are filtered out, so the inventory's own
scans do not wake the watcher.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

WATCH_BUDGET = 16
INVENTORY_DEPTH = 1
_SKIP = {".git", "node_modules", "__pycache__", ".venv", "venv", "dist", "build", "target"}


@dataclass(frozen=True)
class WatchPlan:
    config_dirs: tuple[str, ...]
    worktree_dirs: tuple[str, ...]
    inventory_dirs: tuple[str, ...]
    truncated: int = 0  # directories left out because of the budget

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
    return WatchPlan(tuple(config_dirs), tuple(worktree_dirs), tuple(inventory_dirs), truncated)


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

    def __init__(self, on_batch: Callable[[set[str]], object], *, debounce: float = 0.15):
        from watchdog.observers import Observer

        _load_changes()

        self._on_batch = on_batch
        self._debounce = debounce
        self._observer = Observer()
        self._observer.daemon = True
        self._pending: set[str] = set()
        self._lock = threading.Lock()
        self._timer: threading.Timer | None = None
        self._handler = _Handler(self._event)
        self._watched: list[str] = []
        self._observer.start()

    @property
    def watched(self) -> list[str]:
        return list(self._watched)

    def apply(self, plan: WatchPlan) -> None:
        wanted = plan.all()
        if wanted == self._watched:
            return
        self._observer.unschedule_all()
        scheduled = []
        for directory in wanted:
            try:
                self._observer.schedule(self._handler, directory, recursive=False, event_filter=_CHANGES)
                scheduled.append(directory)
            except OSError:
                continue  # vanished, or the OS is out of watches: never crash the server
        self._watched = scheduled

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
        self._observer.stop()


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
