"""Progress on stderr for long work, only when a person is watching.

``progress(title)`` is a context manager yielding a callback that takes a
status line. Nothing is drawn for work that ends within ``DELAY`` seconds, when
stderr is not a terminal, or when disabled (``--json``): scripts and pipes see
nothing. Drawn with rich's transient status spinner, which clears itself.
"""

from __future__ import annotations

import contextlib
import sys
import threading
from typing import Callable, Iterator

DELAY = 0.5


@contextlib.contextmanager
def progress(title: str, *, enabled: bool = True) -> Iterator[Callable[[str], None]]:
    if not (enabled and sys.stderr.isatty()):
        yield _ignore
        return
    from rich.console import Console

    console = Console(stderr=True)
    state = {"message": title, "status": None}
    lock = threading.Lock()

    def show() -> None:
        with lock:
            if state["status"] is None and not stopped.is_set():
                state["status"] = console.status(state["message"])
                state["status"].start()

    def update(message: str) -> None:
        with lock:
            state["message"] = f"{title}: {message}"
            if state["status"] is not None:
                state["status"].update(state["message"])

    stopped = threading.Event()
    timer = threading.Timer(DELAY, show)
    timer.daemon = True
    timer.start()
    try:
        yield update
    finally:
        stopped.set()
        timer.cancel()
        with lock:
            if state["status"] is not None:
                state["status"].stop()


def _ignore(_message: str) -> None:
    return None
