"""``rootguard``: one command line for the language server, the tray and the checks.

Each command is one ``cmd_*`` function: parse, call the domain, present. A
readable form by default, the stable JSON of PRODUCT.md with ``--json``. The
contract (docs/cli.md):

* exit 2 for bad input and for an invalid configuration (each error names
  file:line:column), with one line per problem on stderr and, with ``--json``,
  an ``{"error": ...}`` object on stdout -- never a quiet empty report;
* ``check`` exits with its decision: 0 allow, 1 deny, 3 request;
* an empty folder argument is bad input: nothing comes from the current directory;
* no command ends in a traceback (``ROOTGUARD_DEBUG=1`` shows one for a bug).

To add a command: write ``cmd_name(args) -> int`` and register it in ``_parser``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from typing import NoReturn

EXIT_ALLOW, EXIT_DENY, EXIT_BAD_INPUT, EXIT_REQUEST = 0, 1, 2, 3
DECISION_EXIT = {"allow": EXIT_ALLOW, "deny": EXIT_DENY, "request": EXIT_REQUEST}


class UsageError(Exception):
    """Bad input: printed as one line, exit code 2."""


class ConfigError(Exception):
    """An invalid configuration: each diagnostic printed with file:line:column, exit code 2."""

    def __init__(self, diagnostics) -> None:
        super().__init__("invalid configuration")
        self.diagnostics = list(diagnostics)


# command -> (module, what it is, extra that provides its third-party modules, those modules)
DELEGATED = {
    "lsp": ("lsp_bridge.lsp.stdio", "the language server on stdio", None),
    "tray": ("tray.cli", "the tray app and approval broker", "tray"),
    "mcp": ("lsp_bridge.mcp.server", "the guarded MCP file server on stdio", "mcp"),
    "audit": ("lsp_bridge.mcp.audit", "the decision log", None),
}
EXTRA_MODULES = {"tray": ("PySide6", "shiboken6"), "mcp": ("mcp", "anyio", "pydantic", "httpx")}


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        if argv and argv[0] in DELEGATED:  # these parse their own options, --help included
            return _delegate(argv[0], argv[1:])
        parser = _parser()
        args = parser.parse_args(argv)
        if not getattr(args, "run", None):
            parser.print_help(sys.stderr)
            return EXIT_BAD_INPUT
        return args.run(args)
    except UsageError as err:
        return _fail(argv, str(err))
    except ConfigError as err:
        return _fail_config(argv, err.diagnostics)
    except BrokenPipeError:
        _silence_stdout()
        return 0
    except KeyboardInterrupt:
        return 130
    except Exception as err:  # a bug: one line, never a traceback (security code fails closed)
        if os.environ.get("ROOTGUARD_DEBUG"):
            raise
        print(f"rootguard: internal error: {type(err).__name__}: {err} "
              "(set ROOTGUARD_DEBUG=1 for details)", file=sys.stderr)
        return EXIT_BAD_INPUT


def _delegate(name: str, rest: list[str]) -> int:
    import importlib

    module, _, extra = DELEGATED[name]
    try:
        return int(importlib.import_module(module).main(rest) or 0)
    except ModuleNotFoundError as err:  # at import or when the command loads its toolkit
        missing = (err.name or "").split(".")[0]
        if extra and missing in EXTRA_MODULES[extra]:
            raise UsageError(
                f"{name} needs the '{extra}' extra ({missing} is not installed): "
                f"pip install '.[{extra}]' in the Root Guard source folder"
            ) from None
        raise


# ---------------------------------------------------------------------------
# commands


def cmd_roots(args) -> int:
    from lsp_bridge.inventory.report import format_roots, roots_report

    session = _session(args.folders)
    with _progress(args, "reading the roots and mounts"):
        data = roots_report(session, with_mounts=True)
    _emit(args, data, format_roots)
    return 0


def cmd_check(args) -> int:
    from lsp_bridge.core.policy import PolicyInputError

    if args.op == "rename" and not args.dest:
        raise UsageError("--op rename needs PATH and DEST")
    if args.op != "rename" and args.dest:
        raise UsageError(f"--op {args.op} takes one PATH, got a DEST too")
    for label, value in (("PATH", args.path), ("DEST", args.dest)):
        if value is not None and not value:
            raise UsageError(f"{label} is empty")
    session = _session(args.root, option="--root")
    try:
        decision = session.policy.decide(args.op, args.path, args.dest)
    except PolicyInputError as err:
        raise UsageError(str(err)) from None
    data = decision.to_json()

    def text(data: dict) -> str:
        return "\n".join([f"{decision.decision.upper()}  {args.op} {_safe(decision.path)}",
                          f"  rule:   {decision.rule or '(none)'}",
                          f"  reason: {_safe(decision.reason)}"])

    _emit(args, data, text)
    return DECISION_EXIT[decision.decision]


def cmd_inventory(args) -> int:
    from lsp_bridge.inventory.report import union_notes
    from lsp_bridge.inventory.scan import inventory

    before_session = _session(args.root, option="--root")
    after_session = _session([*args.root, args.add], option="--add")
    before, after = before_session.scope.union, after_session.scope.union
    with _progress(args, "measuring what the new folder hands over") as progress:
        report = inventory(before.paths, after.paths, progress=progress,
                           notes=union_notes(before_session, after_session))
    _emit(args, report.to_json(), lambda _: "\n".join(report.describe()))
    return 0


def cmd_mounts(args) -> int:
    from lsp_bridge.inventory.report import format_mounts, mounts_report, warnings_of

    session = _session(args.folders)
    with _progress(args, "reading links, stores and tsconfig files"):
        reconciliation = mounts_report(session)
    if args.docker:
        _write(" ".join(_shell_quote(a) for a in reconciliation.docker_args()))
        return 0
    data = reconciliation.to_json()
    data["warnings"] = warnings_of([*session.diagnostics, *reconciliation.diagnostics])
    _emit(args, data, format_mounts)
    return 0


def cmd_config_migrate(args) -> int:
    from lsp_bridge.core.migrate import main_migrate

    if args.file is not None and not args.file:
        raise UsageError("FILE is empty")
    forwarded = [*(["--write"] if args.write else []), *(["--check"] if args.check else [])]
    if args.file:
        forwarded += ["--", args.file]
    return main_migrate(forwarded)


def cmd_demo(args) -> int:
    from lsp_bridge.cli.demo import run_demo

    return run_demo(keep=args.keep, as_json=args.json)


# ---------------------------------------------------------------------------
# helpers


def _session(folders: Sequence[str], *, option: str = "FOLDER"):
    """A session for folders typed by the user; bad folders and invalid configuration raise."""
    from lsp_bridge.core.session import open_session

    checked = []
    for folder in folders:
        if not folder:
            raise UsageError(f"{option} is empty (an unset shell variable?): the current "
                             "directory is never used as a root")
        if "\x00" in folder:
            raise UsageError(f"{option} {folder!r} contains a NUL byte")
        if not os.path.isabs(folder):
            folder = os.path.abspath(folder)  # an argument the user typed, not a derived root
        if not os.path.isdir(folder):
            raise UsageError(f"{_safe(folder)}: not an existing directory")
        checked.append(folder)
    session = open_session(checked)
    broken = [d for d in session.config_diagnostics() if d.severity == "error"]
    if broken:
        raise ConfigError(broken)
    return session


def _emit(args, data: dict, text) -> None:
    """Print ``data`` as JSON with --json, else ``text(data)``."""
    if getattr(args, "json", False):
        _write(json.dumps(data, indent=2, ensure_ascii=False))
    else:
        _write(text(data))


def _write(text: str) -> None:
    """Print to stdout; a closed pipe (``| head``) ends the output, not the exit code."""
    try:
        sys.stdout.write(text + "\n")
        sys.stdout.flush()
    except BrokenPipeError:
        _silence_stdout()


def _silence_stdout() -> None:
    """Point stdout at /dev/null so the interpreter's last flush does not fail."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):
        pass


def _safe(text: str) -> str:
    """A path or message on one line: control characters shown escaped."""
    from lsp_bridge.inventory.text import one_line

    return one_line(text)


def _wants_json(argv: Sequence[str]) -> bool:
    return "--json" in argv[: argv.index("--")] if "--" in argv else "--json" in argv


def _fail(argv: Sequence[str], message: str) -> int:
    message = _safe(message)
    print(f"rootguard: {message}", file=sys.stderr)
    if _wants_json(argv):
        _write(json.dumps({"error": {"kind": "bad-input", "message": message, "diagnostics": []}}, indent=2))
    return EXIT_BAD_INPUT


def _config_text(d) -> str:
    """file:line:column: error: message [code]; a problem with no file (ROOTGUARD_ROOTS) without one."""
    if d.file:
        return d.format()
    message = d.message.removesuffix("; ignored")  # the command refuses instead of ignoring it
    return f"{d.severity}: {message} [{d.code}]"


def _fail_config(argv: Sequence[str], diagnostics) -> int:
    for diagnostic in diagnostics:
        print(f"rootguard: {_safe(_config_text(diagnostic))}", file=sys.stderr)
    if _wants_json(argv):
        items = []
        for d in diagnostics:
            item = d.to_json()
            item["text"] = _config_text(d)
            item["line"] = d.range.start_line + 1 if d.range else None
            item["column"] = d.range.start_column + 1 if d.range else None
            items.append(item)
        error = {"kind": "invalid-configuration",
                 "message": "invalid configuration: nothing was checked", "diagnostics": items}
        _write(json.dumps({"error": error}, indent=2, ensure_ascii=False))
    return EXIT_BAD_INPUT


def _progress(args, title: str):
    from lsp_bridge.cli.progress import progress

    return progress(title, enabled=not getattr(args, "json", False))


def _shell_quote(text: str) -> str:
    import shlex

    return shlex.quote(text)


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("rootguard")
    except PackageNotFoundError:
        from lsp_bridge import __version__

        return __version__


class _VersionAction(argparse.Action):
    """``--version``: the package metadata is read only when asked (importlib.metadata costs ~30 ms)."""

    def __call__(self, parser, namespace, values, option_string=None) -> None:
        print(f"rootguard {_version()}")
        parser.exit()


class _Parser(argparse.ArgumentParser):
    """Usage errors are one line on stderr and exit 2 (``--json``: an error object too)."""

    def error(self, message: str) -> NoReturn:
        print(f"{self.prog}: error: {message} (see {self.prog} --help)", file=sys.stderr)
        if _wants_json(sys.argv[1:]):
            _write(json.dumps({"error": {"kind": "bad-input", "message": message, "diagnostics": []}}))
        sys.exit(EXIT_BAD_INPUT)


JSON_HELP = "print the stable JSON object (docs/cli.md) instead of text"


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="rootguard",
        description="Root Guard: keep an AI agent's file access as narrow as you meant it.",
        epilog="Exit codes: 0 success (check: allow), 1 check: deny, 3 check: request, "
               "2 bad input or invalid configuration. See docs/cli.md.",
    )
    parser.add_argument("--version", action=_VersionAction, nargs=0, help="show the version and exit")
    sub = parser.add_subparsers(metavar="COMMAND", parser_class=_Parser)

    p = sub.add_parser("roots", help="effective roots of FOLDERs: union, shadowed entries, worktrees",
                       description="Show the effective roots of an editor window opened on FOLDERs.")
    p.add_argument("folders", nargs="+", metavar="FOLDER", help="a workspace folder, as the editor sends it")
    p.add_argument("--json", action="store_true", help=JSON_HELP)
    p.set_defaults(run=cmd_roots)

    p = sub.add_parser("check", help="decide one access: allow, request or deny",
                       description="Decide one access. Exit status: 0 allow, 1 deny, 3 request, "
                                   "2 bad input or invalid configuration.")
    p.add_argument("--root", action="append", required=True, metavar="FOLDER",
                   help="a workspace folder (repeat for more; never the current directory)")
    p.add_argument("--op", required=True, choices=["read", "write", "delete", "rename", "metadata"],
                   help="the operation to decide")
    p.add_argument("path", metavar="PATH", help="the path accessed (relative: from the first --root)")
    p.add_argument("dest", nargs="?", metavar="DEST", help="the destination, for --op rename only")
    p.add_argument("--json", action="store_true", help=JSON_HELP)
    p.set_defaults(run=cmd_check)

    p = sub.add_parser("inventory", help="what adding a folder hands over",
                       description="What adding FOLDER to the --root folders hands over: files, "
                                   "credentials, git history, sibling packages, CI roles.")
    p.add_argument("--root", action="append", required=True, metavar="FOLDER",
                   help="a folder already open (repeat for more)")
    p.add_argument("--add", required=True, metavar="FOLDER", help="the folder being added")
    p.add_argument("--json", action="store_true", help=JSON_HELP)
    p.set_defaults(run=cmd_inventory)

    p = sub.add_parser("mounts", help="mount reconciliation and the suggested narrow mount set",
                       description="Compare configured mounts with the union of FOLDERs and suggest "
                                   "the narrow mount set a container needs.")
    p.add_argument("folders", nargs="+", metavar="FOLDER", help="a workspace folder, as the editor sends it")
    p.add_argument("--json", action="store_true", help=JSON_HELP)
    p.add_argument("--docker", action="store_true", help="print the docker run volume arguments only")
    p.set_defaults(run=cmd_mounts)

    p = sub.add_parser("config", help="configuration tools", description="Configuration tools.")
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
    m.set_defaults(run=cmd_config_migrate)

    p = sub.add_parser("demo", help="build a demo monorepo and show what widening it hands over",
                       description="Build a small monorepo in a temporary folder, open a package as an "
                                   "editor would, add the repository root, and show the report.")
    p.add_argument("--keep", action="store_true", help="keep the demo folder (its path is printed)")
    p.add_argument("--json", action="store_true", help="print the reports as one JSON object")
    p.set_defaults(run=cmd_demo)

    for name, (_, text, _) in DELEGATED.items():  # listed for --help; main() dispatches them
        sub.add_parser(name, help=text, add_help=False)
    return parser


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
