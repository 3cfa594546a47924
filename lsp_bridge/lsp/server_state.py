"""The language server's state: what every part of ``RootGuardServer`` shares.

``ServerState`` holds the window's domain state (``RootTracker``, built on first use), the approval
service, the inventory cache, the watcher and the tasks in flight. The server's behaviour is layered
on it by concern, each a module: ``window_state`` (what the person sees: status, warnings, the report,
acknowledgements, progress), ``file_events`` (watches and what a file event changes), ``server``
(start-up, applying a change, inventories and mounts, the tray) and ``handlers`` (the LSP messages).
"""

from __future__ import annotations

import asyncio
import threading
from typing import TYPE_CHECKING, Any

from lsprotocol import types
from pygls.lsp.server import LanguageServer
from pygls.protocol import LanguageServerProtocol

from lsp_bridge import __version__
from lsp_bridge.lsp.scans import Scan, Scans

if TYPE_CHECKING:  # imported lazily at run time (start-up speed)
    from lsp_bridge.agents.windows import Publisher
    from lsp_bridge.approvals.service import ApprovalService
    from lsp_bridge.approvals.tray_link import TrayLink
    from lsp_bridge.inventory.scan import InventoryCache
    from lsp_bridge.lsp.tracker import RootTracker
    from lsp_bridge.lsp.watch import Watcher

_CACHE_LOCK = threading.Lock()


class ServerState(LanguageServer):
    """The shared state; the methods each layer calls on another are declared here for the type checker."""

    def __init__(self, protocol_cls: type[LanguageServerProtocol] = LanguageServerProtocol) -> None:
        super().__init__(
            "rootguard",
            __version__,
            text_document_sync_kind=types.TextDocumentSyncKind.Full,
            protocol_cls=protocol_cls,
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

    def _spawn(self, coro) -> None:
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _cache(self) -> InventoryCache:
        """The window's inventory cache (made on first use, from any thread)."""
        with _CACHE_LOCK:
            if self._inventory_cache is None:
                from lsp_bridge.inventory.scan import InventoryCache

                self._inventory_cache = InventoryCache()
            return self._inventory_cache

    if TYPE_CHECKING:  # defined by the layers above (window_state, file_events, server)

        def send_status(self) -> None: ...

        def warn(self, message: str) -> None: ...

        def publish_config_diagnostics(self) -> None: ...

        def announce_widening(self, line: str) -> None: ...

        def apply_change(self, change: Any) -> None: ...

        def _start_inventory(self) -> None: ...

        def start_scan(self, *, warn: bool) -> Scan: ...

        async def run_inventory(self, *, warn: bool) -> None: ...

        def schedule_mounts(self) -> None: ...

        def refresh_watches(self, since: int | None = None) -> bool: ...

        def _read_again(self) -> bool: ...

        def _reload_after_always(self) -> None: ...
