"""Watches and file events: what the session depends on is watched, and a change on disk reloads the
configuration or recounts the inventory (``FileEvents``, a layer of ``RootGuardServer``)."""

from __future__ import annotations

import asyncio
import logging
import os
from typing import TYPE_CHECKING

from lsp_bridge.core.settings import PROJECT_FILE_NAME
from lsp_bridge.lsp.window_state import WindowState

if TYPE_CHECKING:
    from lsp_bridge.lsp.watch import WatchPlan

log = logging.getLogger("rootguard.lsp")

WATCH_AFTER = 0.1  # seconds: a widening's new watches wait for its scan at most this long


class FileEvents(WindowState):
    def refresh_watches(self, since: int | None = None) -> bool:
        """Watch what the session now depends on; True when a configuration or worktree directory was added.

        ``since``: when the change being applied happened (``time.time_ns()``), see ``Watcher.apply``.
        """
        return self._apply_watches(self._watch_plan(), since, asyncio.get_running_loop())

    async def _refresh_watches_in_worker(self, since: int) -> None:
        """A widening's ``refresh_watches``: after its scan (or ``WATCH_AFTER``), in a worker.

        Starting watches while the scan runs doubles the scan's time (each watch
        starts two threads, each waiting for the interpreter), so they wait for it,
        but not for long: a long scan (a big tree, a long git history) gets its
        watches after ``WATCH_AFTER`` seconds. Nothing is missed meanwhile: the deep
        rescan reports every directory modified since the change (``since``) and
        configuration is read once more once watched. Made in a worker, the watches
        never hold up the event loop.
        """
        task = self._inventory_task
        if task is not None and not task.done():
            await asyncio.wait({task}, timeout=WATCH_AFTER)
        loop = asyncio.get_running_loop()
        added = await loop.run_in_executor(None, self._apply_watches, self._watch_plan(), since, loop)
        if added:
            self._read_again()

    def _watch_plan(self) -> WatchPlan:
        from lsp_bridge.lsp.watch import plan_watches

        self._watch_plans += 1
        return plan_watches(
            config_files=self.tracker.session.config_files(),
            folders=self.tracker.scope.folders,
            common_dirs=self.tracker.common_dirs(),
            union=self.tracker.scope.union.paths,
            sequence=self._watch_plans,
        )

    def _apply_watches(self, plan: WatchPlan, since: int | None, loop: asyncio.AbstractEventLoop) -> bool:
        """Apply ``plan`` (from any thread; an older plan than the last applied is dropped)."""
        from lsp_bridge.lsp.watch import Watcher

        with self._watch_lock:
            if plan.sequence < self._watch_applied:
                return False
            self._watch_applied = plan.sequence
            if self._watcher is None:
                self._watcher = Watcher(lambda batch: loop.call_soon_threadsafe(self.on_files_changed, batch),
                                        on_limit=lambda: loop.call_soon_threadsafe(self.send_status),
                                        idle=self._scans.wait_idle)
            before = set(self._watcher.watched)
            self._watcher.apply(plan, since=since)
            added = set(self._watcher.watched) - before
        return any(d in added for d in (*plan.config_dirs, *plan.worktree_dirs))

    def _read_again(self) -> bool:
        """After new configuration watches: read once more, so a file written before its watch began is seen.

        True when that changed the union (the change is applied).
        """
        from lsp_bridge.core.status import to_json

        before = to_json(self.tracker.status())
        again = self.tracker.reload()
        if again.after.paths != again.before.paths:
            self.apply_change(again)  # a scan under way is superseded: it measures again if needed
            if self.tracker.inventory_pending and (self._inventory_task is None or self._inventory_task.done()):
                self._start_inventory()  # the union is still wider than acknowledged: measure it
            return True
        if to_json(self.tracker.status()) != before:
            self.send_status()
        self.publish_config_diagnostics()
        return False

    def on_files_changed(self, batch: set[str]) -> None:
        """A debounced batch of changed paths: reload what configures us, recount the rest."""
        from lsp_bridge.lsp.watch import is_on_config_path

        log.debug("file events: %s", sorted(batch)[:20])
        config_files = self.tracker.session.config_files()
        watched = self._watcher.watched if self._watcher is not None else set()
        unwatched = [f for f in config_files if os.path.dirname(f) not in watched]
        structural = any(
            p in config_files
            or is_on_config_path(p, unwatched)  # e.g. the user config directory was just made
            or os.path.basename(p) in (PROJECT_FILE_NAME, "mcp.json", ".mcp.json")
            or "/worktrees" in p
            or os.path.basename(p) == "worktrees"
            for p in batch
        )
        if self._inventory_cache is not None and self._inventory_cache.queue_changes(batch):
            # Applied in a worker (or by the next report): a running scan holds the
            # cache's lock, and the event loop must never wait for it.
            asyncio.get_running_loop().run_in_executor(None, self._inventory_cache.apply_queued)
        change = self.tracker.reload(trusted=False) if structural else None
        if change is not None:
            self.apply_change(change)
            self._warn_held()
        if self.tracker.widened and self._inventory_cache is not None and not (change and change.widened):
            self.recount()

    def _warn_held(self) -> None:
        for line in self.tracker.session.held():  # never applied silently: the person sees it
            self.warn(f"Root Guard: {line}. Save the file in the editor to accept it.")

    def recount(self) -> None:
        """Recount the inventory after file events: one run at a time, one more if events came meanwhile."""
        if self._recount_task is not None and not self._recount_task.done():
            self._recount_again = True  # a run is waiting for (or doing) the scan: go once more after it
            return
        self._recount_task = asyncio.ensure_future(self._recount_while_changing())

    async def _recount_while_changing(self) -> None:
        while True:
            self._recount_again = False
            await self.run_inventory(warn=False)
            if not self._recount_again:
                return

    def shutdown_watches(self) -> None:
        if self._watcher is not None:
            self._watcher.stop()
            self._watcher = None
