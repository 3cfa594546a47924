"""The Root Guard language server (pygls): one process per editor window.

``RootGuardServer`` is layered by concern: ``server_state`` (shared state) < ``window_state`` (what
the person sees) < ``file_events`` (watches) < this module (start-up, applying a change, inventories
and mounts, the tray); the LSP handlers are ``handlers``, which also makes the one server instance.

Handlers are thin: they turn LSP messages into calls on ``RootTracker`` (the
window's roots, union and warnings) and the policy engine, and send back what
those return. Slow work (inventory, mount reconciliation) runs in a worker
thread after the status has gone out.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import TYPE_CHECKING, Any

from lsprotocol import types
from pygls.protocol import LanguageServerProtocol

from lsp_bridge.lsp.file_events import FileEvents
from lsp_bridge.lsp.scans import Scan, ScanProgress
from lsp_bridge.lsp.warm_up import warm_up

if TYPE_CHECKING:
    from pygls.server import ServerErrors

log = logging.getLogger("rootguard.lsp")


class RootGuardProtocol(LanguageServerProtocol):
    """Tolerates clients that send folder entries without a ``uri``, and is silent once closed.

    Neovim 0.7's ``add_workspace_folder`` sends ``removed: [{}]``; strict
    deserialization would drop the whole notification, and with it the warning.

    Closed at ``shutdown`` (or ``exit``): work still in flight (a warm-up step, an
    inventory) finishes without notifying a client that has stopped listening, and
    after ``exit`` has closed stdout there is nothing to write to.
    """

    closed = False

    def notify(self, method: str, params: Any | None = None) -> None:
        if self.closed:
            log.debug("not sent after shutdown: %s", method)
            return
        super().notify(method, params)

    def structure_message(self, data):
        if isinstance(data, dict) and data.get("method") == types.WORKSPACE_DID_CHANGE_WORKSPACE_FOLDERS:
            event = (data.get("params") or {}).get("event")
            if isinstance(event, dict):
                for key in ("added", "removed"):
                    items = event.get(key)
                    if isinstance(items, list):
                        event[key] = [f for f in items if isinstance(f, dict) and isinstance(f.get("uri"), str)]
        return super().structure_message(data)


class RootGuardServer(FileEvents):
    def __init__(self) -> None:
        super().__init__(protocol_cls=RootGuardProtocol)

    def stop_sending(self) -> None:
        """The client said shutdown or exit: nothing more goes out but answers to its requests."""
        if isinstance(self.protocol, RootGuardProtocol):
            self.protocol.closed = True

    def report_server_error(self, error: Exception, source: ServerErrors) -> None:
        """pygls shows an error to the person (``window/showMessage``); once closed there is no one
        to show it to, and a failed write would be reported again by another write, and so on."""
        if isinstance(self.protocol, RootGuardProtocol) and self.protocol.closed:
            log.debug("after shutdown: %s", error)
            return
        super().report_server_error(error, source)

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
        warmed = loop.run_in_executor(None, warm_up, self._scans)
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
