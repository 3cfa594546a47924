"""Progress on stderr for long work, only when a person is watching.

``progress(title)`` is a context manager yielding a callback that takes a
status line. Nothing is drawn for work that ends within ``DELAY`` seconds, when
stderr is not a terminal, or when disabled (``--json``): scripts and pipes see
nothing. Drawn with rich's transient status spinner, which clears itself.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Iterator

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing at start-up (core/record.py)
if TYPE_CHECKING:
    from rich.status import Status

DELAY = 0.5


@contextlib.contextmanager
def progress(title: str, *, enabled: bool = True) -> Iterator[Callable[[str], None]]:
    if not (enabled and sys.stderr.isatty()):
        yield _ignore
        return
    import threading

    message = [title]
    shown: list[Status] = []  # the spinner, once DELAY has passed
    lock = threading.Lock()
    stopped = threading.Event()

    def show() -> None:  # rich is imported here, once the work has taken DELAY (~50 ms to import)
        with lock:
            if not shown and not stopped.is_set():
                from rich.console import Console

                shown.append(Console(stderr=True).status(message[0]))
                shown[0].start()

    def update(text: str) -> None:
        with lock:
            message[0] = f"{title}: {text}"
            if shown:
                shown[0].update(message[0])

    timer = threading.Timer(DELAY, show)
    timer.daemon = True
    timer.start()
    try:
        yield update
    finally:
        stopped.set()
        timer.cancel()
        with lock:
            if shown:
                shown[0].stop()


def _ignore(_message: str) -> None:
    return None
