"""The Root Guard language server (pygls): one process per editor window.

Handlers are thin: they turn LSP messages into calls on ``RootTracker`` (the
window's roots, union and warnings) and the policy engine, and send back what
those return. Slow work (inventory, mount reconciliation) runs in a worker
thread after the status has gone out.
"""

from __future__ import annotations

import asyncio
import logging
import os
import threading
import time
import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from lsprotocol import types
from pygls.lsp.server import LanguageServer
from pygls.protocol import LanguageServerProtocol
from pygls.uris import from_fs_path, to_fs_path

from lsp_bridge import __version__
from lsp_bridge.core.settings import PROJECT_FILE_NAME
from lsp_bridge.lsp.scans import Scan, ScanProgress, Scans

if TYPE_CHECKING:  # imported lazily at run time (start-up speed)
    from lsp_bridge.agents.windows import Publisher
    from lsp_bridge.approvals.service import ApprovalService
    from lsp_bridge.approvals.tray_link import TrayLink
    from lsp_bridge.core.status import Approver, Operation
    from lsp_bridge.inventory.scan import InventoryCache
    from lsp_bridge.lsp.tracker import RootTracker
    from lsp_bridge.lsp.watch import Watcher, WatchPlan

log = logging.getLogger("rootguard.lsp")

STATUS = "rootguard/status"
EXPLAIN = "rootguard/explain"
INVENTORY = "rootguard/inventory"
ACCESS = "rootguard/access"
ACKNOWLEDGE = "rootguard/acknowledge"
TRACE = "rootguard/trace"
MIGRATE_COMMAND = "rootguard.migrateConfig"
ACKNOWLEDGE_COMMAND = "rootguard.acknowledge"
WITHDRAW_COMMAND = "rootguard.withdrawAcknowledgement"
CLOSE_ACTION = "Close"
WITHDRAW_ACTION = "Withdraw acknowledgement"
WATCH_AFTER = 0.1  # seconds: a widening's new watches wait for its scan at most this long
SHOW_REPORT = "Show report"
ACKNOWLEDGE_ACTION = "Acknowledge"


class RootGuardProtocol(LanguageServerProtocol):
    """Tolerates clients that send folder entries without a ``uri``.

    Neovim 0.7's ``add_workspace_folder`` sends ``removed: [{}]``; strict
    deserialization would drop the whole notification, and with it the warning.
    """

    def structure_message(self, data):
        if isinstance(data, dict) and data.get("method") == types.WORKSPACE_DID_CHANGE_WORKSPACE_FOLDERS:
            event = (data.get("params") or {}).get("event")
            if isinstance(event, dict):
                for key in ("added", "removed"):
                    items = event.get(key)
                    if isinstance(items, list):
                        event[key] = [f for f in items if isinstance(f, dict) and isinstance(f.get("uri"), str)]
        return super().structure_message(data)


class RootGuardServer(LanguageServer):
    def __init__(self) -> None:
        super().__init__(
            "rootguard",
            __version__,
            text_document_sync_kind=types.TextDocumentSyncKind.Full,
            protocol_cls=RootGuardProtocol,
        )
        self._tracker: RootTracker | None = None
        self.folders: list[str] = []
        self._approvals: ApprovalService | None = None
        self._inventory_cache: InventoryCache | None = None
        self._watcher: Watcher | None = None
        self._published: set[str] = set()
        self._inventory_task: asyncio.Future | None = None
        self.client_name = "unknown editor"
        self.report_view = False  # the client shows the report itself (initializationOptions.reportView)
        self._tasks: set[asyncio.Task] = set()
        self._mounts_generation = 0  # bumped by every change: older reconciliations are stale
        self._recount_task: asyncio.Future | None = None
        self._recount_again = False
        self._tray: TrayLink | None = None
        self._window: Publisher | None = None  # this window, published for the agents' hooks
        self._scans = Scans()  # background work waits while an inventory scan runs
        self._watch_lock = threading.Lock()
        self._watch_plans = 0  # plans made; the watcher applies none older than the last it applied
        self._watch_applied = 0

    @property
    def approvals(self) -> ApprovalService:
        """The one approval service (built on first use: nothing asks before the first status)."""
        if self._approvals is None:
            from lsp_bridge.approvals.service import ApprovalService

            self._approvals = ApprovalService(lambda: self.tracker.session, on_always=self._reload_after_always)
        return self._approvals

    @property
    def tracker(self) -> RootTracker:
        """The window's domain state, built on first use (keeps start-up fast)."""
        if self._tracker is None:
            from lsp_bridge.lsp.acknowledgements import AcknowledgementStore
            from lsp_bridge.lsp.tracker import RootTracker

            self._tracker = RootTracker(store=AcknowledgementStore())
        return self._tracker

    # -- sending -------------------------------------------------------------

    def send_status(self) -> None:
        from lsp_bridge.core.status import to_json

        note = self._watcher.limit_note if self._watcher is not None else None
        status = to_json(self.tracker.status(self.approver(), watch_limit=note or None))
        self.protocol.notify(STATUS, status)
        if self._tray is not None:
            self._tray.publish_status(status)
        self.publish_window(status)

    def publish_window(self, status: dict) -> None:
        """Where the agents' hooks find this window's folders (``lsp_bridge/agents/windows.py``)."""
        try:
            if self._window is None:
                import atexit

                from lsp_bridge.agents.windows import Publisher

                self._window = Publisher(self.tracker.session_id, self.client_name)
                atexit.register(self._window.remove)
            self._window.publish(status, status.get("agents") or ())
        except (OSError, ValueError) as err:  # the editor keeps working; the hooks fall back to the project folder
            log.warning("cannot publish this window for the agents' hooks: %s", err)

    def approver(self) -> Approver:
        """Who answers request-level accesses now: the tray, the editor, or nobody."""
        if self._tray is not None and self._tray.connected:
            return "tray"
        window = self.client_capabilities.window
        return "editor" if window is not None and window.show_message is not None else "none"

    def warn(self, message: str) -> None:
        self.window_show_message(types.ShowMessageParams(type=types.MessageType.Warning, message=message))

    def announce_widening(self, line: str) -> None:
        """The one line, with actions where the client has them; then the full report to the log.

        The line goes out first, here and now: it is what the person waits for. The status
        sent after it and the report for the log (built on the
        loop's next turn) follow it; the answer to the actions is awaited by a task."""
        window = self.client_capabilities.window
        if window is None or window.show_message is None:
            self.warn(line)
        else:
            params = types.ShowMessageRequestParams(
                type=types.MessageType.Warning,
                message=line,
                actions=[types.MessageActionItem(title=SHOW_REPORT), types.MessageActionItem(title=ACKNOWLEDGE_ACTION)],
            )
            try:
                answer = asyncio.wrap_future(self.window_show_message_request(params))
            except Exception as err:  # the request could not be sent
                self._warn_instead(line, err)
            else:
                self._spawn(self._act_on_widening_answer(answer, line))
        loop = asyncio.get_running_loop()
        loop.call_soon(self._log_report)
        loop.run_in_executor(None, self._remember_window)

    def _remember_window(self) -> None:
        try:
            self.tracker.remember_window()  # starting these folders again is "reopening" them
        except OSError as err:
            log.info("could not note the window as warned about: %s", err)

    def _warn_instead(self, line: str, err: Exception) -> None:
        """The widening's request failed: the plain warning, never nothing."""
        log.info("showMessageRequest failed (%s); sending showMessage", err)
        self.warn(line)

    def _log_report(self) -> None:
        self.window_log_message(types.LogMessageParams(type=types.MessageType.Warning, message=self.tracker.report()))

    async def _act_on_widening_answer(self, answer: asyncio.Future, line: str) -> None:
        try:
            choice = await answer
        except Exception as err:  # the client could not show it
            self._warn_instead(line, err)
            return
        title = getattr(choice, "title", None)
        if title == ACKNOWLEDGE_ACTION:
            self.acknowledge()
        elif title == SHOW_REPORT:
            await self.show_report()

    async def show_report(self) -> None:
        """The whole report, once, in the best view the client has.

        A client with its own report view (VS Code's webview: ``initializationOptions.reportView``)
        shows it itself: nothing here. A client that opens documents gets the report as one; a client
        with ``window/showMessageRequest`` only (Neovim 0.7) gets the whole report as one request, with
        Acknowledge or Withdraw acknowledgement as its actions; any other client a message."""
        if self.report_view:
            return
        text = self.tracker.report()
        window = self.client_capabilities.window
        if window is not None and window.show_document is not None and window.show_document.support:
            from lsp_bridge.lsp.acknowledgements import write_report

            try:
                path = write_report(self.tracker.session_id, text)
                result = await self.window_show_document_async(
                    types.ShowDocumentParams(uri=from_fs_path(path), take_focus=True)
                )
                if result.success:
                    return
            except Exception:
                log.exception("showDocument failed")
        if window is not None and window.show_message is not None:
            action = ACKNOWLEDGE_ACTION if self.tracker.pending else WITHDRAW_ACTION if self.tracker.withdrawable else None
            actions = [types.MessageActionItem(title=t) for t in (action, CLOSE_ACTION) if t]
            try:
                choice = await asyncio.wrap_future(self.window_show_message_request(types.ShowMessageRequestParams(
                    type=types.MessageType.Info, message=text, actions=actions)))
            except Exception as err:
                log.info("showMessageRequest failed (%s); sending showMessage", err)
            else:
                title = getattr(choice, "title", None)
                if title == ACKNOWLEDGE_ACTION:
                    self.acknowledge()
                elif title == WITHDRAW_ACTION:
                    self.withdraw()
                return
        self.window_show_message(types.ShowMessageParams(type=types.MessageType.Info, message=text))

    def acknowledge(self) -> dict:
        """Record the current union as accepted for this window's folders."""
        try:
            self.tracker.acknowledge()
        except OSError as err:
            message = f"Root Guard: could not record the acknowledgement: {err}"
            self.warn(message)
            return {"acknowledged": False, "reason": message}
        if self._inventory_task is not None:
            self._inventory_task.cancel()
        self.send_status()
        union = self.tracker.union.paths
        self.window_log_message(
            types.LogMessageParams(type=types.MessageType.Info, message="Root Guard: acknowledged " + ", ".join(union))
        )
        return {"acknowledged": True, "union": list(union)}

    def withdraw(self) -> dict:
        """Take back this window's acknowledgement: it is measured and warned about again."""
        if not self.tracker.withdrawable:
            return {"withdrawn": False, "reason": "no acknowledgement of these folders to withdraw"}
        try:
            change = self.tracker.withdraw()
        except OSError as err:
            message = f"Root Guard: could not withdraw the acknowledgement: {err}"
            self.warn(message)
            return {"withdrawn": False, "reason": message}
        self.window_log_message(types.LogMessageParams(
            type=types.MessageType.Info, message="Root Guard: acknowledgement withdrawn for " + ", ".join(self.folders)))
        self.apply_change(change)
        return {"withdrawn": True, "reference": list(self.tracker.status().reference)}

    def _spawn(self, coro) -> None:
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def publish_config_diagnostics(self) -> None:
        from lsp_bridge.lsp.convert import disk_hints, group_by_file

        grouped = group_by_file([*self.tracker.session.diagnostics, *disk_hints(self.tracker)])
        for path in self._published - set(grouped):
            self.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=from_fs_path(path), diagnostics=[]))
        for path, diags in grouped.items():
            if self.workspace.text_documents.get(from_fs_path(path)) is None:
                self.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=from_fs_path(path), diagnostics=diags))
        self._published = set(grouped)

    # -- start-up ------------------------------------------------------------

    async def after_first_status(self, inventory_started: bool = False, since: int | None = None) -> None:
        """The rest of start-up, once the first status has gone out.

        First, in a worker, the imports the next steps need (``_warm_up``): the event
        loop stays free for messages. Then, each step on the loop short: watches
        (whatever changed between the first read and the watches is caught by
        reading once more: watch, then read), the tray, and the mount
        reconciliation (in a worker). A widening's inventory goes first: no step
        starts while it runs (``_yield_to_inventory``; the warm-up waits too). A
        window that started wide already runs its inventory (mounts follow it).
        ``since``: when the folders were first read (the deep rescan reports what changed after).
        """
        try:
            await self._start_up_steps(inventory_started, since)
        except Exception:
            log.exception("start-up failed after the first status")

    async def _start_up_steps(self, inventory_started: bool, since: int | None) -> None:
        from lsp_bridge.core.status import to_json

        loop = asyncio.get_running_loop()
        await self._yield_to_inventory()
        warmed = loop.run_in_executor(None, _warm_up, self._scans)
        self.publish_config_diagnostics()
        await warmed
        await self._yield_to_inventory()
        before = to_json(self.tracker.status())
        self.refresh_watches(since)
        # Read again now that the watches run: what changed on disk since the first read was
        # not made in the editor, so a loosening is held and shown, as a file event's would be.
        change = self.tracker.reload(trusted=False)
        mounts = not inventory_started
        if change.after.paths != change.before.paths or to_json(self.tracker.status()) != before:
            self.apply_change(change)  # reconciles mounts itself (after its inventory if it widened)
            mounts = False
        self._warn_held()
        await self._yield_to_inventory()
        self.connect_tray()
        if mounts:
            await self._yield_to_inventory()
            await loop.run_in_executor(None, self._reconcile_mounts, loop, self._mounts_generation)

    async def _yield_to_inventory(self) -> None:
        """Let waiting messages in, then wait while a widening's inventory runs (it has the CPU first)."""
        await asyncio.sleep(0)
        while self._inventory_task is not None and not self._inventory_task.done():
            await asyncio.wait({self._inventory_task})
            await asyncio.sleep(0)

    # -- changes -------------------------------------------------------------

    def apply_change(self, change) -> None:
        """Status and, for a widening, its inventory (started first, in a worker), then the rest.

        A widening's watches follow its scan (``_refresh_watches_in_worker``).
        """
        since = time.time_ns()
        self._mounts_generation += 1
        if change.after.paths != change.before.paths:
            if self._approvals is not None:  # none made yet: no grant to end
                self._approvals.workspace_changed()  # session grants end when the workspace changes
            if self._tray is not None:
                self._tray.set_folders(self.tracker.session.folders)
        if change.widened:
            try:
                self._start_inventory()  # the scan walks (in its worker) while the status goes out
            finally:  # the widened status goes out whatever happened to the scan
                self.send_status()
                self.publish_config_diagnostics()
            self._spawn(self._refresh_watches_in_worker(since))
            return
        self.send_status()
        self.publish_config_diagnostics()
        # A configuration directory newly watched (say the user config directory was just made)?
        if self.refresh_watches(since) and self._read_again():
            return
        self.schedule_mounts()

    def _start_inventory(self) -> None:
        """Measure the widening now: the scan begins before this returns, not when the task first runs."""
        if self._inventory_task is not None:
            self._inventory_task.cancel()
        scan = self.start_scan(warn=True)
        self._inventory_task = asyncio.ensure_future(self._inventory_then_mounts(scan))
        self._inventory_task.add_done_callback(scan.done)  # cancelled before it ran: uncounted all the same

    async def _inventory_then_mounts(self, scan: Scan) -> None:
        """The warning matters most: mounts wait for it rather than share the CPU."""
        try:
            while not await self.finish_inventory(scan, warn=True):
                # Superseded by a change that did not measure again itself (say the union
                # narrowed but is still wider than what was acknowledged): measure it now.
                scan = self.start_scan(warn=True)
        finally:
            self.schedule_mounts()

    def start_scan(self, *, warn: bool) -> Scan:
        """Start measuring the union as it is now, in a worker thread, without waiting for anything.

        The imports the scan needs happen in the worker when the start-up warm-up
        has not done them yet; credential detectors load when a candidate file is
        first read. Work-done progress is created meanwhile (a round trip with the
        client) and shows the scan's messages once it exists.
        """
        loop = asyncio.get_running_loop()
        reference, current = self.tracker.inventory_span()
        progress = ScanProgress(self, loop)

        def measure():
            # Everything that takes the cache's lock runs here, never on the event
            # loop: a running scan holds it for as long as the scan takes.
            cache = self._cache()
            if warn:
                # A new widening: count afresh. Watches are shallow (watch.py), so
                # only file events between widenings are applied incrementally.
                cache.invalidate()
            return cache.report(reference, current, progress=progress.from_worker)

        done = self._scans.begin()  # until the result is shown (finish_inventory), or dropped
        job = loop.run_in_executor(None, measure)
        progress.begin("Root Guard: measuring what the new root hands over")
        return Scan(job, reference, current, progress, time.perf_counter(), done)

    def _cache(self) -> InventoryCache:
        """The window's inventory cache (made on first use, from any thread)."""
        with _CACHE_LOCK:
            if self._inventory_cache is None:
                from lsp_bridge.inventory.scan import InventoryCache

                self._inventory_cache = InventoryCache()
            return self._inventory_cache

    async def run_inventory(self, *, warn: bool) -> None:
        await self.finish_inventory(self.start_scan(warn=warn), warn=warn)  # a recount: file events bring the next

    async def finish_inventory(self, scan: Scan, *, warn: bool) -> bool:
        """Wait for ``scan``; show its report (and, for a widening, the warning) unless superseded.

        False when the union changed meanwhile and still waits for an inventory.
        """
        try:
            return await self._finish_inventory(scan, warn=warn)
        finally:
            scan.done()

    async def _finish_inventory(self, scan: Scan, *, warn: bool) -> bool:
        try:
            report = await scan.job
            log.info("inventory of %s took %.0f ms", ", ".join(scan.current), (time.perf_counter() - scan.started) * 1000)
        except asyncio.CancelledError:
            scan.progress.cancel()
            raise
        except Exception as err:  # never let a scan error hide the warning
            log.exception("inventory failed")
            await scan.progress.end()
            self.tracker.inventory_done(None, error=str(err))
            if warn:
                self.announce_widening(self.tracker.warning_line(None, str(err)))
            self.send_status()
            return True
        await scan.progress.end()
        if not self.tracker.pending:
            return True  # acknowledged (or narrowed) meanwhile
        if self.tracker.inventory_span() != (scan.reference, scan.current):
            return not self.tracker.inventory_pending  # superseded by a newer change
        self.tracker.inventory_done(report.to_json(), summary=report.summary_line())
        if warn:
            self.announce_widening(self.tracker.warning_line(self.tracker.inventory))
        # The report's human lines are for the log and the report document, both after the
        # line: rendered once it is out.
        self.tracker.inventory_described(report.describe())
        self.send_status()
        # The scans are kept for the next session (``scan_store``) once the warning is out.
        asyncio.get_running_loop().run_in_executor(None, self._cache().save_scans)
        return True

    def schedule_mounts(self) -> None:
        """Reconcile mounts off the event loop for the workspace as it is now."""
        loop = asyncio.get_running_loop()
        loop.run_in_executor(None, self._reconcile_mounts, loop, self._mounts_generation)

    def _reconcile_mounts(self, loop, generation: int) -> None:
        from lsp_bridge.inventory.report import mounts_report

        if generation != self._mounts_generation:
            return  # the workspace changed before this one started: a newer reconciliation follows
        try:
            reconciliation = mounts_report(self.tracker.session, narrow=self.tracker.acknowledged_roots())
        except Exception:
            log.exception("mount reconciliation failed")
            return
        loop.call_soon_threadsafe(self._mounts_ready, reconciliation, generation)

    def _mounts_ready(self, reconciliation, generation: int) -> None:
        if generation != self._mounts_generation:
            return  # the workspace changed while it ran: a newer reconciliation follows
        self.tracker.set_mounts(reconciliation)
        self.send_status()

    # -- progress ------------------------------------------------------------

    async def _progress_begin(self, title: str):
        window = self.client_capabilities.window
        if not (window and window.work_done_progress):
            return None
        token = f"rootguard-inventory-{uuid.uuid4().hex[:8]}"
        try:
            await self.work_done_progress.create_async(token)
        except Exception:
            return None
        self.work_done_progress.begin(token, types.WorkDoneProgressBegin(title=title, cancellable=False))
        return token

    def _progress_report(self, token, message: str) -> None:
        self.work_done_progress.report(token, types.WorkDoneProgressReport(message=message))

    def _progress_end(self, token) -> None:
        if token:
            self.work_done_progress.end(token, types.WorkDoneProgressEnd(message="done"))

    # -- tray ------------------------------------------------------------------

    def connect_tray(self) -> None:
        """Join the tray's approval broker when one runs (reconnects on its own)."""
        try:
            from lsp_bridge.approvals.tray_link import TrayLink
        except ImportError:
            return
        self._tray = TrayLink.start(self)
        self.approvals.tray = self._tray.client

    def _reload_after_always(self) -> None:
        """The tray wrote a rule to the user file: decide with it from now on."""
        self.apply_change(self.tracker.reload())

    # -- watching ------------------------------------------------------------

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


_CACHE_LOCK = threading.Lock()


server = RootGuardServer()


def _fs_path(uri: str) -> str:
    """The path of a ``file:`` URI (callers check the scheme; pygls answers None for any other)."""
    path = to_fs_path(uri)
    if path is None:
        raise ValueError(f"not a file: URI: {uri!r}")
    return path


def _folders_from_initialize(params: types.InitializeParams) -> list[str]:
    if params.workspace_folders:
        return [_fs_path(f.uri) for f in params.workspace_folders if f.uri.startswith("file:")]
    if params.root_uri and params.root_uri.startswith("file:"):
        return [_fs_path(params.root_uri)]
    return []  # no folder: no root, never the server's working directory


@server.feature(types.INITIALIZE)
def on_initialize(ls: RootGuardServer, params: types.InitializeParams) -> None:
    ls.folders = _folders_from_initialize(params)
    options = params.initialization_options
    ls.report_view = isinstance(options, dict) and options.get("reportView") is True
    if params.client_info and params.client_info.name:
        ls.client_name = params.client_info.name[:200]
    log.info("initialize from %s with %d folder(s)", ls.client_name, len(ls.folders))


@server.feature(types.INITIALIZED)
async def on_initialized(ls: RootGuardServer, params: types.InitializedParams) -> None:
    # Compared with what was acknowledged: a window that starts wide warns like a live change.
    since = time.time_ns()
    change = ls.tracker.set_folders(ls.folders, initial=True)
    ls.send_status()  # what the user waits for: nothing else before it
    if change.widened:
        ls._start_inventory()
    ls._spawn(ls.after_first_status(change.widened, since))


def _warm_up(scans: Scans) -> None:
    """Import, in a worker, what the steps after start-up and the first widening need.

    Most of it is imports: done here, the event loop stays free for
    messages. First the inventory modules, which a widening's scan needs at once:
    that step goes on while a scan runs, since the scan would wait for it anyway.
    Each later step waits while an inventory scan runs (it needs the CPU more),
    the credential detectors too: a scan whose directories and credential files
    are unchanged since they were kept (``scan_store``) never reads a file, and one
    that does loads them itself at its first candidate file.
    """
    import importlib

    def detectors() -> None:
        importlib.import_module("lsp_bridge.inventory.scan").warm_up()

    def watch_events() -> None:  # watchdog's event classes: the first watches
        importlib.import_module("lsp_bridge.lsp.watch")._load_changes()

    _warm_up_step("lsp_bridge.inventory.scan")
    for step in (
        detectors,
        watch_events,
        "watchdog.observers.inotify_c",
        "watchdog.observers.inotify",
        "watchdog.observers",
        "lsp_bridge.approvals.service",  # every change of folders
        "lsp_bridge.approvals.tray_link",
        "lsp_bridge.inventory.mounts",
        "lsp_bridge.lsp.convert",
    ):
        scans.wait_idle()
        _warm_up_step(step)


def _warm_up_step(step: str | Callable[[], None]) -> None:
    import importlib

    try:
        importlib.import_module(step) if isinstance(step, str) else step()
    except Exception:  # an optional part (the tray's client, say): its own step reports it
        log.debug("warm-up step %s failed", step, exc_info=True)


@server.feature(types.WORKSPACE_DID_CHANGE_WORKSPACE_FOLDERS)
async def on_folders_changed(ls: RootGuardServer, params: types.DidChangeWorkspaceFoldersParams) -> None:
    removed = {to_fs_path(f.uri) for f in params.event.removed}
    folders = [f for f in ls.folders if f not in removed]
    added = [_fs_path(f.uri) for f in params.event.added if f.uri.startswith("file:")]  # as at initialize
    folders += [path for path in added if path not in folders]
    ls.folders = folders
    done = ls._scans.begin()  # the person waits: the warm-up's next step waits too
    try:
        ls.apply_change(ls.tracker.set_folders(folders))
    finally:
        done()


@server.feature(types.SHUTDOWN)
def on_shutdown(ls: RootGuardServer, *args) -> None:
    if ls._window is not None:
        ls._window.remove()
    ls.shutdown_watches()
    if ls._tray is not None:
        ls._tray.close()


# -- configuration documents ---------------------------------------------------


def _is_config_document(ls: RootGuardServer, uri: str) -> bool:
    if not uri.startswith("file:"):
        return False
    path = _fs_path(uri)
    return os.path.basename(path) == PROJECT_FILE_NAME or path == ls.tracker.user_config_path()


def _publish_buffer(ls: RootGuardServer, uri: str) -> None:
    from lsp_bridge.lsp.convert import buffer_diagnostics

    if not _is_config_document(ls, uri):
        return
    doc = ls.workspace.get_text_document(uri)
    diags = buffer_diagnostics(ls.tracker, _fs_path(uri), doc.source)
    ls.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=uri, diagnostics=diags))


@server.feature(types.TEXT_DOCUMENT_DID_OPEN)
def on_open(ls: RootGuardServer, params: types.DidOpenTextDocumentParams) -> None:
    _publish_buffer(ls, params.text_document.uri)


@server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
def on_change(ls: RootGuardServer, params: types.DidChangeTextDocumentParams) -> None:
    _publish_buffer(ls, params.text_document.uri)


@server.feature(types.TEXT_DOCUMENT_DID_SAVE)
async def on_save(ls: RootGuardServer, params: types.DidSaveTextDocumentParams) -> None:
    if _is_config_document(ls, params.text_document.uri):
        ls.apply_change(ls.tracker.reload())
        _publish_buffer(ls, params.text_document.uri)


@server.feature(
    types.TEXT_DOCUMENT_CODE_ACTION,
    types.CodeActionOptions(code_action_kinds=[types.CodeActionKind.QuickFix]),
)
def on_code_action(ls: RootGuardServer, params: types.CodeActionParams):
    from lsp_bridge.lsp.convert import migrate_edit

    uri = params.text_document.uri
    if not _is_config_document(ls, uri):
        return None
    doc = ls.workspace.get_text_document(uri)
    edit = migrate_edit(uri, _fs_path(uri), doc.source)
    if edit is None:
        return None
    related = [d for d in params.context.diagnostics if d.code == "deprecated-v1-boolean"]
    return [
        types.CodeAction(
            title="Migrate to version 2",
            kind=types.CodeActionKind.QuickFix,
            diagnostics=related or None,
            edit=edit,
            is_preferred=True,
        )
    ]


@server.command(ACKNOWLEDGE_COMMAND)
def acknowledge_command(ls: RootGuardServer, *args: Any):
    """Accept the current union for this window's folders (any client: workspace/executeCommand)."""
    return ls.acknowledge()


@server.feature(ACKNOWLEDGE)
def on_acknowledge(ls: RootGuardServer, params: Any):
    return ls.acknowledge()


@server.command(WITHDRAW_COMMAND)
def withdraw_command(ls: RootGuardServer, *args: Any):
    """Withdraw the acknowledgement of this window's folders (any client: workspace/executeCommand)."""
    return ls.withdraw()


@server.command(MIGRATE_COMMAND)
async def migrate_command(ls: RootGuardServer, *args: Any):
    """Migrate one configuration file to version 2: ``arguments: [uri]`` (default: the user file)."""
    from lsp_bridge.lsp.convert import migrate_edit

    uri = args[0] if args else from_fs_path(ls.tracker.user_config_path())
    if not isinstance(uri, str) or not uri.startswith("file:"):
        return {"applied": False, "reason": f"not a file: URI: {uri!r}"}
    path = to_fs_path(uri)
    if path is None:
        return {"applied": False, "reason": f"not a file: URI: {uri!r}"}
    doc = ls.workspace.text_documents.get(uri)
    text = doc.source if doc is not None else _read(path)
    edit = migrate_edit(uri, path, text) if text is not None else None
    if edit is None:
        return {"applied": False, "reason": "already version 2, invalid, or unreadable"}
    result = await ls.workspace_apply_edit_async(types.ApplyWorkspaceEditParams(edit=edit, label="Migrate to version 2"))
    return {"applied": bool(result.applied)}


def _read(path: str) -> str | None:
    from lsp_bridge.core.config_files import read_config_text

    return read_config_text(path)[0]  # a regular file, never waited on, or None


# -- requests for the extension ------------------------------------------------


@server.feature(EXPLAIN)
def on_explain(ls: RootGuardServer, params: Any):
    from lsp_bridge.core import status as contract
    from lsp_bridge.core.policy import PolicyInputError
    from lsp_bridge.lsp.approval import param

    raw = param(params, "path")
    if raw is None:  # no path: the widening report
        tracker = ls.tracker
        return {
            "widened": tracker.widened,
            "acknowledged": not tracker.pending,
            "report": tracker.report(),
            "inventory": tracker.inventory,
        }
    if not isinstance(raw, str) or not raw:
        return contract.to_json(contract.RequestError("explain needs a path"))
    try:
        asked = contract.from_json(contract.ExplainParams, {"path": raw, "op": param(params, "op")})
    except TypeError as err:
        return contract.to_json(contract.RequestError(f"invalid request: {err}"))
    path = _fs_path(raw) if raw.startswith("file:") else raw
    ops: list[Operation] = [asked.op] if asked.op else ["read", "write", "delete"]
    policy = ls.tracker.policy
    try:
        decisions = [policy.decide(o, path) for o in ops]
    except PolicyInputError as err:
        return contract.to_json(contract.RequestError(str(err)))
    return contract.to_json(
        contract.ExplainResult(
            decisions[0].path,
            [contract.ExplainDecision(o, d.decision, d.rule, d.reason) for o, d in zip(ops, decisions, strict=True)],
        )
    )


@server.feature(INVENTORY)
def on_inventory(ls: RootGuardServer, params: Any):
    from lsp_bridge.core import status as contract

    inventory = ls.tracker.inventory
    return contract.to_json(contract.from_json(contract.Inventory, inventory)) if inventory is not None else None


@server.feature(ACCESS)
async def on_access(ls: RootGuardServer, params: Any):
    """Decide an access for a tool; request-level ones go to a person. Malformed params: denied."""
    from lsp_bridge.core import status as contract
    from lsp_bridge.lsp.approval import decide_access, param

    raw = {k: param(params, k) for k in ("path", "op", "dest", "tool") if param(params, k) is not None}
    try:
        contract.from_json(contract.AccessParams, raw)
    except TypeError as err:
        return contract.to_json(contract.AccessResult("deny", None, None, f"invalid request: {err}"))
    return contract.to_json(contract.from_json(contract.AccessResult, await decide_access(ls, params)))


@server.feature(TRACE)
async def on_trace(ls: RootGuardServer, params: Any):
    """Trace a command (``rootguard trace``) under this window's roots, or under ``roots`` when given.

    Params: ``{"command": [program, arg...], "roots": [path...]?}``. Answers the
    ``rootguard trace --json`` object, or ``{"error": text, "exit": 2|125}``.
    """
    from lsp_bridge.core.session import open_session
    from lsp_bridge.lsp.approval import param
    from lsp_bridge.trace.run import TraceError, TraceUnavailable, run_trace

    command = param(params, "command")
    roots = param(params, "roots")
    if not isinstance(command, list) or not command or not all(isinstance(a, str) and a for a in command):
        return {"error": "trace needs a command: a list of non-empty strings", "exit": 2}
    if roots is not None:
        if not isinstance(roots, list) or not all(isinstance(r, str) for r in roots):
            return {"error": "roots must be a list of absolute directories", "exit": 2}
        paths = [str(to_fs_path(r) or "") if r.startswith("file:") else r for r in roots]
        if not all(os.path.isabs(p) and os.path.isdir(p) for p in paths):
            return {"error": "roots must be absolute existing directories", "exit": 2}
        session = open_session(paths, ls.tracker.env)
    else:
        session = ls.tracker.session
    if not session.folders:
        return {"error": "no workspace folder to trace under", "exit": 2}
    try:
        result = await asyncio.to_thread(run_trace, session, command, capture=True)
    except TraceUnavailable as err:
        return {"error": str(err), "exit": 125}
    except TraceError as err:
        return {"error": str(err), "exit": 2}
    return result.to_json()
