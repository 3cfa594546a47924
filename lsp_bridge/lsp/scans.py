"""An inventory scan under way in the language server, and what waits for it.

``Scans`` counts the scans running, from their start until their result is shown
(background work -- the warm-up's imports, the deep rescan -- waits while one
runs: the interpreter is shared, and the warning waits for the scan). ``Scan`` is
one of them (``RootGuardServer.start_scan``); ``ScanProgress`` its work-done
progress, begun before the client has made the token.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol


class ProgressClient(Protocol):
    """The server's work-done progress calls (``RootGuardServer``; a Protocol, so that the server
    imports this module and not the other way round)."""

    async def _progress_begin(self, title: str) -> Any: ...

    def _progress_report(self, token: Any, message: str) -> None: ...

    def _progress_end(self, token: Any) -> None: ...


class Scans:
    """How many inventories are under way, from the scan's start until their result is shown.

    Background work (the warm-up's imports, the deep rescan) waits for none
    (``wait_idle``): the interpreter is shared, and the warning waits for the scan.
    """

    def __init__(self) -> None:
        self._idle = threading.Condition()
        self._count = 0

    def begin(self) -> Callable[..., None]:
        """Count one; the returned function uncounts it (once, however often it is called)."""
        with self._idle:
            self._count += 1
        done = threading.Event()

        def end(*_: object) -> None:
            if done.is_set():
                return
            done.set()
            with self._idle:
                self._count -= 1
                self._idle.notify_all()

        return end

    def wait_idle(self, timeout: float | None = None) -> bool:
        """Wait until no scan runs (at most ``timeout`` seconds); True when none runs."""
        with self._idle:
            return self._idle.wait_for(lambda: self._count == 0, timeout)


@dataclass
class Scan:
    """An inventory scan under way in a worker thread (``RootGuardServer.start_scan``)."""

    job: asyncio.Future
    reference: tuple[str, ...]
    current: tuple[str, ...]
    progress: ScanProgress
    started: float
    done: Callable[..., None]  # the inventory is shown or dropped: background work may go on


class ScanProgress:
    """Work-done progress for a scan that started before the client made its token.

    Messages from the scan's thread come to the event loop; those sent before the
    token exists are shown once it does. ``end`` waits for the token (a round
    trip begun with the scan, over long before a real scan ends), so the client
    sees begin, the reports, then end, before the status that carries the result.
    """

    def __init__(self, ls: ProgressClient, loop: asyncio.AbstractEventLoop) -> None:
        self._ls = ls
        self._loop = loop
        self._token: str | None = None
        self._early: list[str] = []
        self._ended = False
        self._created: asyncio.Task | None = None

    def begin(self, title: str) -> None:
        self._created = asyncio.ensure_future(self._begin(title))

    async def _begin(self, title: str) -> None:
        self._token = await self._ls._progress_begin(title)
        if self._token:
            for message in self._early:
                self._ls._progress_report(self._token, message)
        self._early = []

    def from_worker(self, message: str) -> None:
        self._loop.call_soon_threadsafe(self._report, message)

    def _report(self, message: str) -> None:
        if self._ended:
            return
        if self._token:
            self._ls._progress_report(self._token, message)
        elif self._created is not None and not self._created.done():
            self._early.append(message)

    async def end(self) -> None:
        if self._created is not None:
            try:
                await asyncio.shield(self._created)
            except Exception:
                pass  # no progress then; the result still goes out
        self._finish()

    def cancel(self) -> None:
        """A superseded scan: end its progress whenever the token comes."""
        if self._created is not None and not self._created.done():
            self._created.add_done_callback(lambda _: self._finish())
        else:
            self._finish()

    def _finish(self) -> None:
        if not self._ended:
            self._ended = True
            self._ls._progress_end(self._token)
