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
    """The context manager: ``__enter__`` gives the status-line callback."""

    def __init__(self, title: str, enabled: bool) -> None:
        self.title, self.enabled = title, enabled
        self.stop: Callable[[], None] | None = None

    def __enter__(self) -> Callable[[str], None]:
        if not (self.enabled and sys.stderr.isatty()):
            return _ignore
        import threading

        title = self.title
        message = [title]
        shown: list[Status] = []  # the spinner, once DELAY has passed
        lock = threading.Lock()  # guards message and shown
        finished = threading.Event()

        def show_after_delay() -> None:  # rich is imported here, once the work has taken DELAY
            if finished.wait(DELAY):
                return  # stopped in time: nothing drawn
            with lock:
                if not shown and not finished.is_set():
                    from rich.console import Console

                    shown.append(Console(stderr=True).status(message[0]))
                    shown[0].start()

        def update(text: str) -> None:
            with lock:
                message[0] = f"{title}: {text}"
                if shown:
                    shown[0].update(message[0])

        def stop() -> None:
            with lock:
                finished.set()
                if shown:
                    shown[0].stop()

        threading.Thread(target=show_after_delay, name="rootguard-progress", daemon=True).start()
        self.stop = stop
        return update

    def __exit__(self, *_exc: object) -> None:
        if self.stop is not None:
            self.stop()
            self.stop = None


def _ignore(_message: str) -> None:
    return None
