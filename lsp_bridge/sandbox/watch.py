"""Masks stay true: watch the masked paths on the host while the command runs.

A mount covers the file (inode) that was at the path when the sandbox started.
An in-place edit keeps the mask, but a host-side ``mv new .env`` (or a delete
and re-create) puts a *different* file at the path, which the sandbox then
sees. ``MaskWatcher`` watches the parent directory of every masked or nested
mount (watchdog, one non-recursive watch per directory) and calls
``on_violation(path, what)`` the moment such a path is created, deleted or
renamed onto or away; the runner then stops the sandbox and says why.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterable
from typing import Any


class MaskWatcher:
    def __init__(self, paths: Iterable[str], on_violation: Callable[[str, str], None]):
        self.paths = frozenset(paths)
        self.on_violation = on_violation
        self.violation: tuple[str, str] | None = None
        self._lock = threading.Lock()
        self._observer: Any = None

    def start(self) -> None:
        if not self.paths:
            return
        from watchdog.events import FileSystemEventHandler
        from watchdog.observers import Observer

        watcher = self

        class Handler(FileSystemEventHandler):
            def on_any_event(self, event) -> None:
                if event.event_type not in ("created", "deleted", "moved"):
                    return
                src = os.fsdecode(event.src_path)
                dest = os.fsdecode(getattr(event, "dest_path", "") or "")
                if event.event_type == "moved" and dest in watcher.paths:
                    watcher._fire(dest, f"another file was renamed onto it ({src})")
                elif src in watcher.paths:
                    what = {"created": "it was created or replaced", "deleted": "it was deleted",
                            "moved": f"it was renamed away (to {dest})"}[event.event_type]
                    watcher._fire(src, what)

        observer = Observer()
        for directory in sorted({os.path.dirname(p) for p in self.paths}):
            if os.path.isdir(directory):
                observer.schedule(Handler(), directory, recursive=False)
        observer.daemon = True
        observer.start()
        self._observer = observer

    def _fire(self, path: str, what: str) -> None:
        with self._lock:
            if self.violation is not None:
                return
            self.violation = (path, what)
        self.on_violation(path, what)

    def stop(self) -> None:
        if self._observer is not None:
            self._observer.stop()
            self._observer.join(timeout=5)
            self._observer = None
