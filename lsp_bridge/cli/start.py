"""The ``rootguard`` command's entry point: the garbage collector paused, then ``main``.

Starting the command (argparse and the regular-expression engine it imports, our
modules, their classes, the parser) allocates tens of thousands of objects that live
as long as the process, so the cyclic collections those allocations trigger (about
half a dozen before ``main`` even runs, 1.5-2 ms: a sixth of a bare interpreter's
start) free nothing. The console script and ``python -m lsp_bridge.cli`` come here
first, and this module imports nothing but ``gc``, so the pause covers all of it.
``main`` resumes the collector before any command's work, with what start-up built
moved out of its way (``gc.freeze``), and before handing over to a server; the short
commands (``BOUNDED`` in ``main``) finish with it paused, and as the process then ends,
it stays paused through the interpreter's exit. ``main`` called from other code leaves
the collector as it found it (the tests call it in their own process).
"""

from __future__ import annotations

import gc


class Collector:
    """Pauses, resumes and restores the cyclic garbage collector (one per process)."""

    def __init__(self) -> None:
        self.paused = self.frozen = False
        self.exiting = False  # set by the console script: the process ends when main returns

    def pause(self) -> None:
        if gc.isenabled():
            gc.disable()
            self.paused = True

    def resume(self) -> None:
        """Before a command's work: on, with everything allocated so far left out of its way."""
        if self.paused:
            self.paused = False
            gc.freeze()
            self.frozen = True
            gc.enable()

    def release(self) -> None:
        """On, as Python sets it (before handing over to a long-running server)."""
        if self.paused:
            self.paused = False
            gc.enable()

    def restore(self) -> None:
        """As it was before ``pause``; but when the process ends now and the command ran
        paused (``BOUNDED``), paused: the interpreter's collection at exit would only walk
        what start-up built (~1 ms)."""
        if self.paused and not self.exiting:
            self.paused = False
            gc.enable()
        if self.frozen:
            self.frozen = False
            gc.unfreeze()


COLLECTOR = Collector()


def main() -> int:
    COLLECTOR.pause()
    COLLECTOR.exiting = True
    from lsp_bridge.cli.main import main as run

    return run()
