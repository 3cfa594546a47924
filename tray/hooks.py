"""``Hook``: a list of callbacks with the ``connect``/``emit`` shape of a Qt signal.

The tray never emits a Qt ``Signal`` from Python: with PySide6 6.12 on Python
3.11, every Python-side ``Signal.emit()`` drops a reference to ``True``, and
after a few thousand emits the interpreter aborts ("bool_dealloc"). Signals that
Qt emits itself (``readyRead``, ``clicked``...) into Python slots are not
affected. Callbacks run synchronously, in connection order, on the caller's
thread (always the GUI thread here).
"""

from __future__ import annotations

from collections.abc import Callable


class Hook:
    def __init__(self) -> None:
        self._callbacks: list[Callable] = []

    def connect(self, callback: Callable) -> None:
        self._callbacks.append(callback)

    def emit(self, *args) -> None:
        for callback in list(self._callbacks):
            callback(*args)
