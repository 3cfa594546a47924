"""Guard against PySide6 builds that drop references to None/True/False on Python < 3.12.

PySide6-Essentials 6.12.0 on CPython 3.11 returns ``None`` from every void method
(and ``True``/``False`` from ``Signal.emit``) without taking a reference. Python
3.12 made those objects immortal, so the bug only shows on 3.11: after a few
thousand Qt calls the interpreter aborts ("Fatal Python error: none_dealloc").
6.11.x is not affected. Importing this module probes for the leak once and, only
when it is there, makes the three objects immortal as 3.12 does (their reference
count is raised far out of reach), with a warning naming the remedy.
"""

from __future__ import annotations

import ctypes
import logging
import sys

log = logging.getLogger("rootguard.tray")

PROBE_CALLS = 64
_OUT_OF_REACH = 1 << 40


def _leaks() -> bool:
    from PySide6.QtCore import QObject, QTimer, Signal

    class Probe(QObject):
        ping = Signal()

    probe, timer = Probe(), QTimer()
    none_before, true_before = sys.getrefcount(None), sys.getrefcount(True)
    for _ in range(PROBE_CALLS):
        timer.stop()
        probe.ping.emit()
    lost = max(none_before - sys.getrefcount(None), true_before - sys.getrefcount(True))
    return lost >= PROBE_CALLS // 2


def guard_refcounts() -> bool:
    """Apply the workaround if this PySide6 leaks on this Python. True if applied."""
    if sys.version_info >= (3, 12) or sys.implementation.name != "cpython" or not _leaks():
        return False
    for obj in (None, True, False):
        ctypes.c_ssize_t.from_address(id(obj)).value += _OUT_OF_REACH
    import PySide6

    log.warning(
        "PySide6 %s loses references on Python %d.%d; worked around. "
        "Install PySide6-Essentials<6.12 or use Python 3.12+.",
        PySide6.__version__, *sys.version_info[:2],
    )
    return True


APPLIED = guard_refcounts()
