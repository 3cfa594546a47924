"""The start-up warm-up: in a worker, the imports the steps after the first status need."""

from __future__ import annotations

import logging
from collections.abc import Callable

from lsp_bridge.lsp.scans import Scans

log = logging.getLogger("rootguard.lsp")


def warm_up(scans: Scans) -> None:
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
