"""The ``rootguard`` command line's grammar: argparse, its help and its usage errors.

``parse(argv)`` gives the arguments of one command, with ``subcommand`` naming it
(``main.COMMANDS``). Usage errors are one line on stderr and exit 2 (``--json``: an
error object on stdout too); ``rootguard run``'s are 125, leaving 1 and 2 to its COMMAND.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import NoReturn

from lsp_bridge.cli.common import CHECK_OPS, DELEGATED, EXIT_BAD_INPUT, EXIT_UNCONFINED, wants_json, write


def parse(argv: Sequence[str]) -> argparse.Namespace | None:
    """The arguments of the command in ``argv``; None (help printed) when no command is given."""
    parser = _parser()
    parser.run_mode = argv[:1] == ["run"]  # its usage errors are 125
    args = parser.parse_args(argv)
    if not getattr(args, "subcommand", None):
        parser.print_help(sys.stderr)
        return None
    return args


class _VersionAction(argparse.Action):
    """``--version``: the package metadata is read only when asked."""

    def __init__(self, option_strings, dest=argparse.SUPPRESS, default=argparse.SUPPRESS, help=None):
        super().__init__(option_strings, dest=dest, default=default, nargs=0,
                         help=help or "show the program's version number and exit")

    def __call__(self, parser, namespace, values, option_string=None) -> None:
        write(f"rootguard {_version()}")
        parser.exit()


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("rootguard")
    except PackageNotFoundError:
        from lsp_bridge import __version__

        return __version__


class _Parser(argparse.ArgumentParser):
    """Usage errors are one line on stderr and exit 2 (``--json``: an error object too);
    ``rootguard run`` exits 125 instead, leaving 1 and 2 to COMMAND."""

    run_mode = False  # set on the top-level parser when the command is ``run``

    def error(self, message: str) -> NoReturn:
        if self.prog.split()[-1:] == ["run"] or self.run_mode:
            print(f"{self.prog}: error: {message}; COMMAND was not run (see {self.prog} --help)", file=sys.stderr)
            sys.exit(EXIT_UNCONFINED)
        print(f"{self.prog}: error: {message} (see {self.prog} --help)", file=sys.stderr)
        if wants_json(sys.argv[1:]):
            import json

            write(json.dumps({"error": {"kind": "bad-input", "message": message, "diagnostics": []}}))
        sys.exit(EXIT_BAD_INPUT)


JSON_HELP = "print the stable JSON object (docs/cli.md) instead of text"


class _Commands:
    """The subcommands: each parser names its command in the arguments (``subcommand``);
    a ``group`` (``config``) is run by one of its actions, each naming itself."""

    def __init__(self, sub) -> None:
        self.sub = sub

    def add_parser(self, name: str, *, group: bool = False, **kwargs):
        parser = self.sub.add_parser(name, **kwargs)
        if not group:
            parser.set_defaults(subcommand=name)
        return parser

    def listed(self, name: str, text: str | None) -> None:
        """A command that parses its own options (``main.DELEGATED``): listed for ``--help`` only."""
        self.sub.add_parser(name, help=text, add_help=False)


def _parser() -> _Parser:
    parser = _Parser(
        prog="rootguard",
        description="Root Guard: keep an AI agent's file access as narrow as you meant it.",
        epilog="Exit codes: 0 success (check: allow), 1 check: deny, 3 check: request, "
               "2 bad input or invalid configuration. See docs/cli.md.",
    )
    parser.add_argument("--version", action=_VersionAction, help="show the version and exit")
    sub = _Commands(parser.add_subparsers(metavar="COMMAND", parser_class=_Parser))
    for add in (_add_roots, _add_check, _add_inventory, _add_mounts, _add_run, _add_config, _add_demo, _add_trace,
                _add_probe):
        add(sub)
    for name, (_, text, _) in DELEGATED.items():  # listed for --help; main() dispatches them
        sub.listed(name, text)
    return parser


def _add_roots(sub: _Commands) -> None:
    p = sub.add_parser("roots", help="effective roots of FOLDERs: union, shadowed entries, worktrees",
                       description="Show the effective roots of an editor window opened on FOLDERs.")
    p.add_argument("folders", nargs="+", metavar="FOLDER", help="a workspace folder, as the editor sends it")
    p.add_argument("--json", action="store_true", help=JSON_HELP)


def _add_check(sub: _Commands) -> None:
    p = sub.add_parser("check", help="decide one access: allow, request or deny",
                       description="Decide one access. Exit status: 0 allow, 1 deny, 3 request, "
                                   "2 bad input or invalid configuration.")
    p.add_argument("--root", action="append", required=True, metavar="FOLDER",
                   help="a workspace folder (repeat for more; never the current directory)")
    p.add_argument("--op", required=True, choices=list(CHECK_OPS),
                   help="the operation to decide")
    p.add_argument("path", metavar="PATH", help="the path accessed (relative: from the current directory)")
    p.add_argument("dest", nargs="?", metavar="DEST", help="the destination, for --op rename only (relative: "
                   "from the current directory)")
    p.add_argument("--toolchain", action="store_true",
                   help="decide with the toolchain rules rootguard run mounts by (pnpm store, configuration "
                        "files above the root), as run does")
    p.add_argument("--json", action="store_true", help=JSON_HELP)


def _add_inventory(sub: _Commands) -> None:
    p = sub.add_parser("inventory", help="what adding a folder hands over",
                       description="What adding FOLDER to the --root folders hands over: files, "
                                   "credentials, git history, sibling packages, CI roles.")
    p.add_argument("--root", action="append", required=True, metavar="FOLDER",
                   help="a folder already open (repeat for more)")
    p.add_argument("--add", required=True, metavar="FOLDER", help="the folder being added")
    p.add_argument("--json", action="store_true", help=JSON_HELP)


def _add_mounts(sub: _Commands) -> None:
    p = sub.add_parser("mounts", help="mount reconciliation and the suggested narrow mount set",
                       description="Compare configured mounts with the union of FOLDERs and suggest "
                                   "the narrow mount set a container needs.")
    p.add_argument("folders", nargs="+", metavar="FOLDER", help="a workspace folder, as the editor sends it")
    p.add_argument("--json", action="store_true", help=JSON_HELP)
    p.add_argument("--docker", action="store_true",
                   help="print a whole docker run command with the same mount set as rootguard run")
    p.add_argument("--image", default="IMAGE", help="the image for --docker (default: the placeholder IMAGE)")
    p.add_argument("--program", default="docker", choices=["docker", "podman"], help="docker or podman for --docker")


def _add_run(sub: _Commands) -> None:
    p = sub.add_parser(
        "run", help="run COMMAND with the file system narrowed by the kernel to the effective policy",
        description="Run COMMAND and its children in a bubblewrap sandbox (plus Landlock inside) built from the "
        "session's effective policy. Exit status: COMMAND's own; 125 when confinement cannot be set up "
        "(COMMAND is never run unconfined). See docs/confinement.md.",
    )
    p.add_argument("--root", action="append", default=[], metavar="FOLDER",
                   help="a workspace folder (repeat for more; without one only system directories are visible)")
    p.add_argument("--print", action="store_true", help="print the sandbox command line and exit")
    p.add_argument("--no-toolchain", action="store_true",
                   help="leave out the toolchain mounts (pnpm store, configuration files above the root)")
    p.add_argument("--landlock-only", action="store_true",
                   help="without bubblewrap, run under Landlock alone (degraded: no masks, no read-only .git)")
    p.add_argument("command", nargs=argparse.REMAINDER, metavar="-- COMMAND [ARG...]")


def _add_config(sub: _Commands) -> None:
    p = sub.add_parser("config", group=True, help="configuration tools", description="Configuration tools.")
    csub = p.add_subparsers(metavar="ACTION", parser_class=_Parser)
    m = csub.add_parser("migrate", help="translate a version 1 file to version 2",
                        description="Translate a version 1 configuration file to version 2 (a diff "
                                    "by default). Exit status: 0 done or already current, 1 needs "
                                    "migration (with --check), 2 bad input or invalid file.")
    mode = m.add_mutually_exclusive_group()
    mode.add_argument("--write", action="store_true", help="write it (keeps FILE.v1.bak)")
    mode.add_argument("--check", action="store_true",
                      help="change nothing; exit 0 current, 1 needs migration, 2 invalid")
    m.add_argument("file", nargs="?", metavar="FILE", help="the file (default: the user configuration file)")
    m.set_defaults(subcommand="config migrate")
    h = csub.add_parser("held", help="show configuration changes waiting for your approval",
                        description="Show, for each FOLDER, a change to its configuration that would loosen "
                                    "the boundary and waits for your approval: why, and the difference. "
                                    "Exit status: 0 nothing held, 1 something held, 2 bad input.")
    h.add_argument("--json", action="store_true", help="print the stable JSON shape (docs/cli.md)")
    h.add_argument("folders", nargs="+", metavar="FOLDER")
    h.set_defaults(subcommand="config held")
    a = csub.add_parser("approve", help="approve the held configuration changes of FOLDERs",
                        description="Show each held change of FOLDERs and, once you confirm (or with --yes), "
                                    "apply it and record it as approved for the next sessions. Exit status: "
                                    "0 approved or nothing held, 1 not confirmed, 2 bad input or not recorded.")
    a.add_argument("--yes", action="store_true", help="approve without asking (the difference is still printed)")
    a.add_argument("folders", nargs="+", metavar="FOLDER")
    a.set_defaults(subcommand="config approve")


def _add_demo(sub: _Commands) -> None:
    p = sub.add_parser("demo", help="build a demo monorepo and show what widening it hands over",
                       description="Build a small monorepo in a temporary folder, open a package as an "
                                   "editor would, add the repository root, and show the report.")
    p.add_argument("--keep", action="store_true", help="keep the demo folder (its path is printed)")
    p.add_argument("--json", action="store_true", help="print the reports as one JSON object")


def _add_trace(sub: _Commands) -> None:
    p = sub.add_parser(
        "trace", help="run COMMAND traced; propose the named-file grants it needs outside the roots",
        description="Run COMMAND once in the first root with the disk read-only and the roots writable, traced by "
        "strace; report what it used outside the roots, the read-only grants to add to the user file (never a "
        "credential file or a denied path) and the quiet failures. COMMAND's output goes to stderr. Exit status: "
        "0 when the trace ran, 125 when it cannot trace here (no strace or bubblewrap, ptrace not allowed), "
        "2 bad input. See docs/trace.md.",
    )
    p.add_argument("--root", action="append", default=[], metavar="FOLDER", help="a workspace folder (repeat for more)")
    p.add_argument("--json", action="store_true", help=JSON_HELP)
    p.add_argument("--enforced", action="store_true",
                   help="run in rounds under rootguard run's narrow sandbox, adding what each round could not find")
    p.add_argument("--write", action="store_true",
                   help="merge the proposal into your user file (ids stable, equal rules reused; twice = once)")
    p.add_argument("--apply", metavar="PROPOSAL.json",
                   help="check again and merge a proposal printed by `rootguard trace --json` ('-' = stdin); "
                        "no command is run")
    p.add_argument("--timeout", type=float, default=600.0, metavar="SECONDS",
                   help="kill the traced command (and everything it started) after SECONDS (default 600)")
    p.add_argument("command", nargs=argparse.REMAINDER, metavar="-- COMMAND [ARG...]")


def _add_probe(sub: _Commands) -> None:
    p = sub.add_parser(
        "probe", help="the boundary test matrix for any stdio MCP server ({root} = the narrow root)",
        description="Build a fixture in a temporary folder (a narrow root, a prefix sibling, an outside secret, "
        "links), start SERVER_COMMAND with {root} replaced by the narrow root, and call every tool that takes a "
        "path with inside / outside / prefix-sibling / traversal / encoded / absolute / symlink-out / dangling "
        "targets. Exit status: 0 every path-taking tool tested and nothing outside served, 1 otherwise, "
        "2 the server cannot be started. See docs/probe.md.",
    )
    p.add_argument("--json", action="store_true", help=JSON_HELP)
    p.add_argument("--trace", action="store_true", help="also trace the server and list what it opened outside")
    p.add_argument("command", nargs=argparse.REMAINDER, metavar="-- SERVER_COMMAND [ARG...]")
