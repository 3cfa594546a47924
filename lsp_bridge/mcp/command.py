"""``rootguard mcp``: the command line of the guarded MCP file server (``server``).

It checks the arguments and the configuration, then starts the server, which the
MCP SDK serves from the first message on.
"""

from __future__ import annotations

import argparse
import importlib.util
import logging
import os
import sys
from collections.abc import Sequence

from lsp_bridge.core.paths import canonical
from lsp_bridge.core.session import Session, open_session
from lsp_bridge.mcp.file_tools import Limits
from lsp_bridge.mcp.tool_list import NO_ROOTS

SDK_MODULES = ("mcp", "mcp_types", "anyio", "pydantic")  # the 'mcp' extra, found before anything is answered


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="rootguard mcp",
        description="The guarded MCP file server on stdio: project ids and relative paths, one policy engine.",
    )
    p.add_argument("--root", action="append", default=[], metavar="DIR",
                   help="an absolute project root (repeat for more); MCP client roots can only narrow these")
    p.add_argument("--mirror", action="store_true",
                   help="also log what a plain roots-union check would have decided, and every disagreement")
    p.add_argument("--max-read-bytes", type=int, default=Limits.read_bytes, metavar="N",
                   help=f"largest file read_file returns (default {Limits.read_bytes})")
    p.add_argument("--max-write-bytes", type=int, default=Limits.write_bytes, metavar="N",
                   help=f"largest file write_file, edit_file and apply_patch write (default {Limits.write_bytes}, "
                        "16 MiB); larger writes fail with file_too_large")
    p.add_argument("--tray-socket", metavar="PATH", help="the tray's socket (default: $ROOTGUARD_TRAY_SOCKET, "
                                                         "else the per-user socket)")
    p.add_argument("--no-tray", action="store_true", help="never ask the tray for approvals")
    return p


def check_roots(given: Sequence[str]) -> tuple[list[str], list[str]]:
    """Absolute existing directories; an error message for each other entry."""
    roots, errors = [], []
    for root in given:
        if not os.path.isabs(root):
            errors.append(f"--root {root!r} must be an absolute path (MCP clients start servers in "
                          "unpredictable directories; the current directory is never used)")
        elif not os.path.isdir(root):
            errors.append(f"--root {root!r} is not an existing directory")
        else:
            roots.append(root)
    return roots, errors


def _configuration_errors(session: Session) -> list:
    return [d for d in session.config_diagnostics() if d.severity == "error"]


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    given, errors = check_roots(args.root)
    if args.max_read_bytes < 1:
        errors.append("--max-read-bytes must be at least 1")
    if args.max_write_bytes < 1:
        errors.append("--max-write-bytes must be at least 1")
    for error in errors:
        print(f"rootguard mcp: {error}", file=sys.stderr)
    if errors:
        return 2
    if not given and sys.stdin.isatty():
        print(NO_ROOTS, file=sys.stderr)
        return 2
    roots = list(dict.fromkeys(canonical(r) for r in given))
    session = open_session(roots)
    broken = _configuration_errors(session)
    for diagnostic in broken:  # an invalid configuration never starts a server (it would deny all)
        print(f"rootguard mcp: {diagnostic.format()}", file=sys.stderr)
    if broken:
        return 2
    for name in SDK_MODULES:  # a missing extra fails here, before a client is answered anything
        if importlib.util.find_spec(name) is None:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr, format="rootguard mcp: %(message)s")
    from lsp_bridge.mcp.server import GuardedServer

    server = GuardedServer(
        roots,
        mirror=args.mirror,
        limits=Limits(read_bytes=args.max_read_bytes, write_bytes=args.max_write_bytes),
        tray_socket=args.tray_socket,
        use_tray=not args.no_tray,
    )
    return int(server.run())


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
