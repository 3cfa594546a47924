"""``rootguard lsp`` and ``python -m lsp_bridge``: the pygls server on stdin/stdout.

pygls answers ``initialize`` itself (an error in it reaches the client) and serves
with its public ``start_io``. The server module imports pygls and lsprotocol;
configuration, worktrees, the watcher and detect-secrets are imported when first
used, and the slow parts (the inventory's modules among them) run after the first
``rootguard/status`` has gone out (``server.on_initialized``).
"""

from __future__ import annotations

import argparse
import logging
import os
import sys


def main(argv: list[str] | None = None) -> int:
    args = _parse(sys.argv[1:] if argv is None else argv)
    logging.basicConfig(stream=sys.stderr, level=args.log_level.upper(), format="rootguard: %(levelname)s %(message)s")
    from lsp_bridge.lsp.handlers import server

    server.start_io()
    return 0


def _parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="rootguard lsp", description="Root Guard language server (stdio)")
    parser.add_argument("--stdio", action="store_true", help="talk LSP on stdin/stdout (the default and only transport)")
    parser.add_argument("--log-level", default=os.environ.get("ROOTGUARD_LOG", "WARNING"),
                        choices=["DEBUG", "INFO", "WARNING", "ERROR", "debug", "info", "warning", "error"],
                        metavar="LEVEL", help="log to stderr from LEVEL up: debug, info, warning (default, "
                        "or $ROOTGUARD_LOG), error")
    return parser.parse_args(argv)
