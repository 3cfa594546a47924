"""``rootguard lsp`` and ``python -m lsp_bridge``: the pygls server on stdin/stdout.

pygls answers ``initialize`` itself (an error in it reaches the client). Start-up
is kept short by importing little: the server module imports pygls and
lsprotocol, everything else (configuration, worktrees, the inventory, the
watcher, detect-secrets) is imported when first used, and the slow parts run
after the first ``rootguard/status`` has gone out (``server.on_initialized``).
The one exception is the inventory's own modules, a few milliseconds, imported
before serving so that a folder added right after start-up is scanned at once.

The objects those imports create (pygls, lsprotocol's hundreds of classes) live
as long as the process: they are moved out of the garbage collector's reach
(``gc.freeze``) before serving, and the collector is off while they are
imported (they hold no garbage), so no full collection walks them, neither
before the first status (a 30-40 ms pause there otherwise) nor later. It stays
off until the first status has gone out (the configuration modules imported on
the way are permanent too; ``server.collect_garbage_again``), or a few seconds
after ``initialize`` when no ``initialized`` follows.
"""

from __future__ import annotations

import os
import sys


def main(argv: list[str] | None = None) -> int:
    import gc

    gc.disable()  # imports only, until start_io: see the module's docstring
    import logging

    args = sys.argv[1:] if argv is None else argv
    # As editors start it (no option, or --stdio): no argparse import on the way to the first status.
    level = os.environ.get("ROOTGUARD_LOG", "WARNING") if set(args) <= {"--stdio"} else _parse(args).log_level
    logging.basicConfig(stream=sys.stderr, level=level.upper(), format="rootguard: %(levelname)s %(message)s")
    from lsp_bridge.lsp.server import server

    _import_what_a_widening_scans_with()
    gc.freeze()  # module-level objects are permanent: full collections need not walk them
    server.start_io()  # the collector comes back on after the first status (server.collect_garbage_again)
    return 0


def _import_what_a_widening_scans_with() -> None:
    """The inventory's own modules (~4 ms, no third-party import): with the server's.

    A folder added right after start-up is scanned at once, in a worker; had the
    scan to import these itself, it would do so while the start-up warm-up imports
    too (both hold the interpreter in turn), and its warning came ~10 ms later
    (bench_lsp.py, "added right at start-up"). detect-secrets' detectors come from
    the pattern caches in the warm-up, after the first status."""
    import lsp_bridge.inventory.ci
    import lsp_bridge.inventory.history
    import lsp_bridge.inventory.scan
    import lsp_bridge.inventory.secrets  # noqa: F401


def _parse(argv: list[str]):
    import argparse

    parser = argparse.ArgumentParser(prog="rootguard lsp", description="Root Guard language server (stdio)")
    parser.add_argument("--stdio", action="store_true", help="talk LSP on stdin/stdout (the default and only transport)")
    parser.add_argument("--log-level", default=os.environ.get("ROOTGUARD_LOG", "WARNING"),
                        choices=["DEBUG", "INFO", "WARNING", "ERROR", "debug", "info", "warning", "error"],
                        metavar="LEVEL", help="log to stderr from LEVEL up: debug, info, warning (default, "
                        "or $ROOTGUARD_LOG), error")
    return parser.parse_args(argv)
