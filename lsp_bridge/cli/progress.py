"""Progress on stderr for long work, only when a person is watching.

``progress(title)`` is a context manager yielding a callback that takes a
status line. Nothing is drawn for work that ends within ``DELAY`` seconds, when
stderr is not a terminal, or when disabled (``--json``): scripts and pipes see
nothing. Drawn with rich's transient status spinner, which clears itself.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rich.status import Status

DELAY = 0.5


def progress(title: str, *, enabled: bool = True) -> _Progress:
    return _Progress(title, enabled)


class _Progress:
    """The context manager (a class: ``contextlib`` would cost a short command ~0.5 ms)."""

    def __init__(self, title: str, enabled: bool) -> None:
        self.title, self.enabled = title, enabled
        self.stop: Callable[[], None] | None = None

    def __enter__(self) -> Callable[[str], None]:
        if not (self.enabled and sys.stderr.isatty()):
            return _ignore
        # The waiting thread is started with ``_thread``: importing ``threading`` for a
        # ``Timer`` costs ~1.7 ms, 7% of a ``rootguard roots`` at a terminal, for work that
        # usually ends long before DELAY. The spinner (rich) brings its own threads and
        # ``threading`` with them, imported from this thread then: Python allows that
        # (its exit ignores a main thread ``threading`` did not see start, bpo-1596321).
        import _thread

        title = self.title
        message = [title]
        shown: list[Status] = []  # the spinner, once DELAY has passed
        lock = _thread.allocate_lock()  # guards message, shown and stopped
        finished = _thread.allocate_lock()  # held until stop(): the waiting thread waits on it
        finished.acquire()
        stopped = False

        def show_after_delay() -> None:  # rich is imported here, once the work has taken DELAY (~50 ms to import)
            if finished.acquire(timeout=DELAY):
                return  # stopped in time: nothing drawn
            with lock:
                if not shown and not stopped:
                    from rich.console import Console

                    shown.append(Console(stderr=True).status(message[0]))
                    shown[0].start()

        def update(text: str) -> None:
            with lock:
                message[0] = f"{title}: {text}"
                if shown:
                    shown[0].update(message[0])

        def stop() -> None:
            nonlocal stopped
            with lock:
                stopped = True
                if shown:
                    shown[0].stop()
            finished.release()

        _thread.start_new_thread(show_after_delay, ())
        self.stop = stop
        return update

    def __exit__(self, *_exc: object) -> None:
        if self.stop is not None:
            self.stop()
            self.stop = None


def _ignore(_message: str) -> None:
    return None
