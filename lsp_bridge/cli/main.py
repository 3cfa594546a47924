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
import os
import sys
from collections.abc import Sequence

from lsp_bridge.cli.start import COLLECTOR

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing at start-up (core/record.py)
if TYPE_CHECKING:
    from typing import NoReturn

EXIT_ALLOW, EXIT_DENY, EXIT_BAD_INPUT, EXIT_REQUEST = 0, 1, 2, 3
EXIT_UNCONFINED = 125  # rootguard run: confinement cannot be set up (lsp_bridge.sandbox.runner)
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
    collector = COLLECTOR  # paused by the entry point (cli/start.py) or here
    try:
        if argv and argv[0] in DELEGATED:  # these parse their own options, --help included
            collector.release()  # long-running servers: the collector as Python sets it
            return _delegate(argv[0], argv[1:])
        collector.pause()
        _untranslated_where_no_catalogue()
        parser = _parser(only=argv[0] if argv and not argv[0].startswith("-") else None)
        parser.run_mode = argv[:1] == ["run"]  # its usage errors are 125
        args = parser.parse_args(argv)
        if not getattr(args, "run", None):
            parser.print_help(sys.stderr)
            return EXIT_BAD_INPUT
        if argv[0] not in BOUNDED:
            collector.resume()
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
    finally:
        collector.restore()


# Commands whose work is bounded (no tree walk: a few small files and system calls):
# the cyclic garbage collector stays paused for the whole command (cli/start.py).
BOUNDED = frozenset({"roots", "check"})


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
        from lsp_bridge.sandbox.docker import docker_command
        from lsp_bridge.sandbox.profile import ProfileError, build_profile

        try:
            profile = build_profile(session, reconciliation=reconciliation, landlock=False)
        except ProfileError as err:
            raise UsageError(str(err)) from None
        docker = docker_command(profile, reconciliation, image=args.image, program=args.program)
        for path in docker.skipped:
            print(f"rootguard: {_safe(path)} has no place under /workspace; left out of the docker command",
                  file=sys.stderr)
        _write(" ".join(_shell_quote(a) for a in docker.argv))
        return 0
    data = reconciliation.to_json()
    data["warnings"] = warnings_of([*session.diagnostics, *reconciliation.diagnostics])
    _emit(args, data, format_mounts)
    return 0


def cmd_run(args) -> int:
    """``rootguard run``: parse, build the profile, run (or print) it; 125 when it cannot."""
    import shlex

    from lsp_bridge.sandbox.profile import ProfileError, build_profile
    from lsp_bridge.sandbox.runner import ConfinementError, find_bwrap, run

    command = list(args.command)
    if command[:1] == ["--"]:
        command = command[1:]
    try:
        if not command and not args.print:
            raise ConfinementError("no COMMAND given (rootguard run [--root FOLDER]... -- COMMAND [ARG...])")
        try:
            session = _session(args.root, option="--root")
        except UsageError as err:
            raise ConfinementError(str(err)) from None
        except ConfigError as err:
            raise ConfinementError(f"invalid configuration: {_config_text(err.diagnostics[0])}") from None
        profile = build_profile(session, cwd=os.getcwd(), toolchain=not args.no_toolchain)
        if args.print:
            line = profile.command_line(command or ["COMMAND"], bwrap=find_bwrap() or "bwrap")
            _write(_format_command(line, shlex.quote))
            return 0
        return run(profile, command, landlock_only=args.landlock_only)
    except (ConfinementError, ProfileError) as err:
        print(f"rootguard run: {_safe(str(err))}", file=sys.stderr)
        return EXIT_UNCONFINED
    except Exception as err:  # a bug: fail closed, and say so in one line (COMMAND did not run)
        if os.environ.get("ROOTGUARD_DEBUG"):
            raise
        print(f"rootguard run: internal error: {type(err).__name__}: {_safe(str(err))}; COMMAND was not run "
              "(set ROOTGUARD_DEBUG=1 for details)", file=sys.stderr)
        return EXIT_UNCONFINED


def _format_command(argv: list[str], quote) -> str:
    """One option (with its values) per line, shell continuation between them."""
    lines: list[list[str]] = [[argv[0]]]
    for arg in argv[1:]:
        if arg.startswith("--") or not lines[-1] or lines[-1][0] == "--":
            lines.append([arg])
        else:
            lines[-1].append(arg)
    return " \\\n  ".join(" ".join(quote(a) for a in line) for line in lines)


def cmd_config_migrate(args) -> int:
    from lsp_bridge.core.migrate import main_migrate

    if args.file is not None and not args.file:
        raise UsageError("FILE is empty")
    forwarded = [*(["--write"] if args.write else []), *(["--check"] if args.check else [])]
    if args.file:
        forwarded += ["--", args.file]
    return main_migrate(forwarded)


def cmd_probe(args) -> int:
    """``rootguard probe``: 0 every path-taking tool tested and nothing served outside, else 1."""
    command = _after_dashes(args.command, "probe", "SERVER_COMMAND")
    try:
        from lsp_bridge.probe.runner import ProbeError, format_report, run_probe
    except ModuleNotFoundError as err:
        raise UsageError(f"probe needs the 'mcp' extra ({err.name} is not installed): "
                         "pip install '.[mcp]' in the Root Guard source folder") from None
    try:
        report = run_probe(command, trace=args.trace)
    except ProbeError as err:
        raise UsageError(str(err)) from None
    _emit(args, report.to_json() if args.json else {}, lambda _: format_report(report))
    return 0 if report.ok else 1


def cmd_trace(args) -> int:
    """``rootguard trace``: 0 when the trace ran, 125 when it cannot trace here, 2 bad input."""
    from lsp_bridge.trace.run import TraceError, TraceUnavailable, format_trace, run_trace

    command = _after_dashes(args.command, "trace", "COMMAND")
    if not args.root:
        raise UsageError("trace needs at least one --root FOLDER (never the current directory)")
    session = _session(args.root)  # an invalid configuration is exit 2 here
    try:
        result = run_trace(session, command, enforced=args.enforced)
    except TraceUnavailable as err:
        print(f"rootguard trace: {_safe(str(err))}", file=sys.stderr)
        return EXIT_UNCONFINED
    except TraceError as err:
        raise UsageError(str(err)) from None
    _emit(args, result.to_json(), lambda _: format_trace(result))
    return 0


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
        if not folder.strip():
            raise UsageError(f"{option} is blank: the current directory is never used as a root")
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


def _after_dashes(command: Sequence[str], name: str, what: str) -> list[str]:
    command = list(command)
    if command and command[0] == "--":
        command = command[1:]
    if not command:
        raise UsageError(f"{name} needs {what} after --")
    return command


def _emit(args, data: dict, text) -> None:
    """Print ``data`` as JSON with --json, else ``text(data)``."""
    if getattr(args, "json", False):
        import json

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
        import json

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
        import json

        _write(json.dumps({"error": error}, indent=2, ensure_ascii=False))
    return EXIT_BAD_INPUT


def _progress(args, title: str):
    from lsp_bridge.cli.progress import progress

    return progress(title, enabled=not getattr(args, "json", False))


def _shell_quote(text: str) -> str:
    import shlex

    return shlex.quote(text)


class _VersionAction(argparse.Action):
    """``--version``: the package metadata is read only when asked (it costs ~0.1 s per start)."""

    def __init__(self, option_strings, dest=argparse.SUPPRESS, default=argparse.SUPPRESS, help=None):
        super().__init__(option_strings, dest=dest, default=default, nargs=0,
                         help=help or "show the program's version number and exit")

    def __call__(self, parser, namespace, values, option_string=None) -> None:
        _write(f"rootguard {_version()}")
        parser.exit()


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("rootguard")
    except PackageNotFoundError:
        from lsp_bridge import __version__

        return __version__


def _untranslated_where_no_catalogue() -> None:
    """argparse passes each of its messages through ``gettext``, which looks on disk for a
    catalogue for every message and, the first time, imports ``locale`` to expand the
    language names (~1 ms together, a tenth of a bare interpreter's start). Where the
    interpreter has no catalogue directory at all (gettext's default one; the CLI binds no
    other), every lookup returns the message unchanged, so argparse is given that answer
    directly. Where the directory exists, argparse translates as it always does."""
    if argparse._ is not _identity and not os.path.isdir(os.path.join(sys.base_prefix, "share", "locale")):  # type: ignore[attr-defined]
        argparse._ = _identity  # type: ignore[attr-defined]
        argparse.ngettext = _plural  # type: ignore[attr-defined]


def _identity(message: str) -> str:
    return message


def _plural(singular: str, plural: str, n: int) -> str:
    return singular if n == 1 else plural  # gettext's answer without a catalogue


def _columns() -> int:
    """``shutil.get_terminal_size().columns`` without importing shutil (and bz2, lzma...)
    on every start: COLUMNS, else the terminal on stdout, else 80."""
    try:
        columns = int(os.environ.get("COLUMNS", "0"))
    except ValueError:
        columns = 0
    if columns <= 0:
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns  # type: ignore[union-attr]
        except (AttributeError, ValueError, OSError):
            columns = 0
    return columns if columns > 0 else 80


class _Formatter(argparse.HelpFormatter):
    """argparse's help layout; the width is found as argparse finds it, minus its shutil import."""

    def __init__(self, prog: str, indent_increment: int = 2, max_help_position: int = 24,
                 width: int | None = None) -> None:
        super().__init__(prog, indent_increment, max_help_position, _columns() - 2 if width is None else width)


class _Parser(argparse.ArgumentParser):
    """Usage errors are one line on stderr and exit 2 (``--json``: an error object too);
    ``rootguard run`` exits 125 instead, leaving 1 and 2 to COMMAND."""

    run_mode = False  # set on the top-level parser when the command is ``run``

    def __init__(self, *args, listed_only: bool = False, **kwargs) -> None:
        if listed_only:  # a command that is not being run: only its name and help line are used
            self.prog = kwargs["prog"]
            return
        kwargs.setdefault("formatter_class", _Formatter)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> NoReturn:
        if self.prog.split()[-1:] == ["run"] or self.run_mode:
            print(f"{self.prog}: error: {message}; COMMAND was not run (see {self.prog} --help)", file=sys.stderr)
            sys.exit(EXIT_UNCONFINED)
        print(f"{self.prog}: error: {message} (see {self.prog} --help)", file=sys.stderr)
        if _wants_json(sys.argv[1:]):
            import json

            _write(json.dumps({"error": {"kind": "bad-input", "message": message, "diagnostics": []}}))
        sys.exit(EXIT_BAD_INPUT)


JSON_HELP = "print the stable JSON object (docs/cli.md) instead of text"


class _Absorb:
    """Stands for the parser of a command that is not being run: every call is ignored."""

    def __getattr__(self, name: str):
        return lambda *args, **kwargs: self


class _OnlyOne:
    """Every command is registered (so the names, the choices and their errors stay the same),
    but only ``only``'s options are built: building them all costs more than a command's own
    work (``roots``, ``check``). ``only=None``: all of them (``rootguard --help``).

    The others are names in the list only: argparse never parses with a command's parser
    unless that command is the one given, which is ``only``, so theirs is not even set up
    (setting up an ``ArgumentParser`` looks its message catalogue up on disk several times)."""

    def __init__(self, sub, only: str | None) -> None:
        self.sub, self.only = sub, only

    def add_parser(self, name: str, **kwargs):
        if self.only is None or name == self.only:
            return self.sub.add_parser(name, **kwargs)
        self.listed(name, kwargs.get("help"))
        return _Absorb()

    def listed(self, name: str, text: str | None) -> None:
        """``name`` in the list and the choices, with no parser of its own (never run)."""
        self.sub.add_parser(name, help=text, add_help=False, listed_only=True)


def _parser(only: str | None = None) -> _Parser:
    parser = _Parser(
        prog="rootguard",
        description="Root Guard: keep an AI agent's file access as narrow as you meant it.",
        epilog="Exit codes: 0 success (check: allow), 1 check: deny, 3 check: request, "
               "2 bad input or invalid configuration. See docs/cli.md.",
    )
    parser.add_argument("--version", action=_VersionAction, help="show the version and exit")
    sub = _OnlyOne(parser.add_subparsers(metavar="COMMAND", parser_class=_Parser), only)

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
    p.add_argument("--docker", action="store_true",
                   help="print a whole docker run command with the same mount set as rootguard run")
    p.add_argument("--image", default="IMAGE", help="the image for --docker (default: the placeholder IMAGE)")
    p.add_argument("--program", default="docker", choices=["docker", "podman"], help="docker or podman for --docker")
    p.set_defaults(run=cmd_mounts)

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
    p.set_defaults(run=cmd_run)

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
    p.add_argument("command", nargs=argparse.REMAINDER, metavar="-- COMMAND [ARG...]")
    p.set_defaults(run=cmd_trace)

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
    p.set_defaults(run=cmd_probe)

    for name, (_, text, _) in DELEGATED.items():  # listed for --help; main() dispatches them
        sub.listed(name, text)
    return parser


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
