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

To add a command: write ``cmd_name(args) -> int``, give it its options in
``grammar._parser`` and its name in ``COMMANDS``.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence

from lsp_bridge.cli import grammar
from lsp_bridge.cli.common import (
    DECISION_EXIT,
    DELEGATED,
    EXIT_BAD_INPUT,
    EXIT_UNCONFINED,
    EXTRA_MODULES,
    silence_stdout,
    wants_json,
    write,
)
from lsp_bridge.core.terminal_text import one_line


class UsageError(Exception):
    """Bad input: printed as one line, exit code 2."""


class ConfigError(Exception):
    """An invalid configuration: each diagnostic printed with file:line:column, exit code 2."""

    def __init__(self, diagnostics) -> None:
        super().__init__("invalid configuration")
        self.diagnostics = list(diagnostics)


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        if argv and argv[0] in DELEGATED:  # these parse their own options, --help included
            return _delegate(argv[0], argv[1:])
        args = grammar.parse(argv)
        if args is None:  # no command: the help went to stderr
            return EXIT_BAD_INPUT
        return COMMANDS[args.subcommand](args)
    except UsageError as err:
        return _fail(argv, str(err))
    except ConfigError as err:
        return _fail_config(argv, err.diagnostics)
    except BrokenPipeError:
        silence_stdout()
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
            from lsp_bridge.cli.install_hint import missing_extra

            raise UsageError(missing_extra(name, extra, missing)) from None
        raise


# ---------------------------------------------------------------------------
# commands


def cmd_roots(args) -> int:
    from lsp_bridge.inventory.report import format_roots, roots_report

    session = _session(args.folders)
    with _progress(args, "reading the roots and mounts"):
        data = roots_report(session, with_mounts=True)
    from lsp_bridge.agents.presence import unguarded_warnings

    data["warnings"] += unguarded_warnings(session.folders)
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
    session = _session(args.root, option="--root", toolchain=getattr(args, "toolchain", False))
    # Like every path typed on a command line, PATH and DEST are read against the current
    # directory (not against the first root, which is how the engine reads a relative path).
    path, dest = _typed_path(args.path), _typed_path(args.dest)
    try:
        decision = session.policy.decide(args.op, path, dest)
    except PolicyInputError as err:
        raise UsageError(str(err)) from None
    data = decision.to_json()
    missing = [p for p in (path, dest) if p is not None and not os.path.lexists(p)]
    data["exists"] = not missing

    def text(data: dict) -> str:
        lines = [f"{decision.decision.upper()}  {args.op} {one_line(decision.path)}",
                 f"  rule:   {decision.rule or '(none)'}",
                 f"  reason: {one_line(decision.reason)}"]
        lines += [f"  note:   {one_line(p)} does not exist (decided as if it were created)" for p in missing]
        return "\n".join(lines)

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
    from lsp_bridge.inventory.report import format_mounts, mounts_report, settle_toolchain, warnings_of

    session = _session(args.folders)
    with _progress(args, "reading links, stores and tsconfig files"):
        reconciliation = settle_toolchain(session, mounts_report(session))  # a held mount is never suggested
    if args.docker:
        from lsp_bridge.sandbox.docker import docker_command
        from lsp_bridge.sandbox.profile import ProfileError, build_profile

        try:
            profile = build_profile(session, landlock=False)
        except ProfileError as err:
            raise UsageError(str(err)) from None
        docker = docker_command(profile, reconciliation, image=args.image, program=args.program)
        for path in docker.skipped:
            print(f"rootguard: {one_line(path)} has no place under /workspace; left out of the docker command",
                  file=sys.stderr)
        write(" ".join(_shell_quote(a) for a in docker.argv))
        return 0
    data = reconciliation.to_json()
    data["warnings"] = warnings_of([*session.diagnostics, *reconciliation.diagnostics])
    _emit(args, data, format_mounts)
    return 0


def cmd_run(args) -> int:
    """``rootguard run``: parse, build the profile, run (or print) it; 125 when it cannot."""
    import shlex

    from lsp_bridge.sandbox.profile import ProfileError, build_profile, watch_judges
    from lsp_bridge.sandbox.runner import ConfinementError, describe, find_bwrap, run

    command = list(args.command)
    if command[:1] == ["--"]:
        command = command[1:]
    try:
        if not command and not args.print:
            raise ConfinementError("no COMMAND given (rootguard run [--root FOLDER]... -- COMMAND [ARG...])")
        try:
            session = _session(args.root, option="--root", toolchain=not args.no_toolchain)
        except UsageError as err:
            raise ConfinementError(str(err)) from None
        except ConfigError as err:
            raise ConfinementError(f"invalid configuration: {_config_text(err.diagnostics[0])}") from None
        profile = build_profile(session, cwd=os.getcwd(), toolchain=not args.no_toolchain)
        for note in profile.notes:  # what the toolchain asked for and does not get, and why
            if note.startswith("toolchain"):
                print(f"rootguard run: {one_line(note)}", file=sys.stderr)
        if args.print:
            line = profile.command_line(command or ["COMMAND"], bwrap=find_bwrap() or "bwrap")
            write(_format_command(line, shlex.quote))
            for note in describe(profile):
                print(f"rootguard run --print: {one_line(note)}", file=sys.stderr)
            return 0
        return run(profile, command, landlock_only=args.landlock_only, judges=watch_judges(session))
    except (ConfinementError, ProfileError) as err:
        print(f"rootguard run: {one_line(str(err))}", file=sys.stderr)
        return EXIT_UNCONFINED
    except Exception as err:  # a bug: fail closed, and say so in one line (COMMAND did not run)
        if os.environ.get("ROOTGUARD_DEBUG"):
            raise
        print(f"rootguard run: internal error: {type(err).__name__}: {one_line(str(err))}; COMMAND was not run "
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


def cmd_config_held(args) -> int:
    """``rootguard config held``: each held (loosening) configuration change of FOLDERs; 1 when there is one."""
    session = _session(args.folders, toolchain=True)
    held = [_held_json(root, change) for root, change in session.held_changes()]
    _emit(args, {"held": held}, lambda data: "\n".join(_held_text(item) for item in data["held"])
          or "nothing held: every folder's configuration is the approved one")
    return 1 if held else 0


def cmd_config_approve(args) -> int:
    """``rootguard config approve``: show each held change, confirm, apply it and record it as approved."""
    session = _session(args.folders, toolchain=True)
    held = session.held_changes()
    if not held:
        write("nothing held: every folder's configuration is the approved one")
        return 0
    for root, change in held:
        write(_held_text(_held_json(root, change)))
    if not args.yes:
        if not sys.stdin.isatty():
            raise UsageError("not confirmed: run it at a terminal to answer, or pass --yes")
        answer = input("Approve these changes for the next sessions? [y/N] ").strip().lower()
        if answer not in ("y", "yes"):
            write("not approved: the approved configuration stays in force")
            return 1
    session.accept_held()
    problems = [d.message for d in session.config_diagnostics() if d.code == "approved-config-unwritten"]
    if problems:
        raise UsageError(f"approved for this command only, not recorded: {problems[0]}")
    write(f"approved: {len(held)} change(s) recorded; the next sessions use them")
    return 0


def _held_json(root: str, change) -> dict:
    return {"root": root, "files": [f.path for f in change.recorded.files], "reasons": list(change.reasons),
            "diff": change.diff()}


def _held_text(item: dict) -> str:
    """The change as a person reads it; every line escaped (the text may be the agent's)."""
    lines = [one_line(f"{item['root']}: held, it would loosen the policy: {'; '.join(item['reasons'])}")]
    lines += ["  " + one_line(line) for line in item["diff"].splitlines()]
    return "\n".join(lines)


def cmd_probe(args) -> int:
    """``rootguard probe``: 0 every path-taking tool tested and nothing served outside, else 1."""
    command = _after_dashes(args.command, "probe", "SERVER_COMMAND")
    from lsp_bridge.cli.install_hint import missing_extra

    try:
        from lsp_bridge.probe.runner import ProbeError, format_report, run_probe
    except ModuleNotFoundError as err:
        raise UsageError(missing_extra("probe", "mcp", err.name or "mcp")) from None
    try:
        report = run_probe(command, trace=args.trace)
    except ProbeError as err:
        raise UsageError(str(err)) from None
    except ModuleNotFoundError as err:  # the SDK is imported when the probe connects
        if (err.name or "").split(".")[0] not in EXTRA_MODULES["mcp"]:
            raise
        raise UsageError(missing_extra("probe", "mcp", err.name or "mcp")) from None
    _emit(args, report.to_json() if args.json else {}, lambda _: format_report(report))
    return 0 if report.ok else 1


def cmd_trace(args) -> int:
    """``rootguard trace``: 0 when the trace ran, 125 when it cannot trace here, 2 bad input."""
    from lsp_bridge.trace import proposal
    from lsp_bridge.trace.run import TraceError, TraceUnavailable, format_trace, run_trace

    if not args.root:
        raise UsageError("trace needs at least one --root FOLDER (never the current directory)")
    if args.apply:
        return _trace_apply(args)
    command = _after_dashes(args.command, "trace", "COMMAND")
    session = _session(args.root)  # an invalid configuration is exit 2 here
    try:
        result = run_trace(session, command, enforced=args.enforced, timeout=args.timeout)
    except TraceUnavailable as err:
        print(f"rootguard trace: {one_line(str(err))}", file=sys.stderr)
        return EXIT_UNCONFINED
    except TraceError as err:
        raise UsageError(str(err)) from None
    data = result.to_json()
    if args.write:
        try:
            data["written"] = proposal.write(session, result)  # GrantError is a ValueError
        except ValueError as err:
            raise UsageError(f"nothing written: {err}") from None
    written = "\n\n" + one_line(proposal.written_text(data["written"])) if args.write else ""
    _emit(args, data, lambda _: format_trace(result) + written)
    return 0


def _trace_apply(args) -> int:
    """``rootguard trace --apply PROPOSAL.json``: the editor's "Add" button, through the one writer."""
    from lsp_bridge.trace import proposal

    try:
        with (open(args.apply, encoding="utf-8") if args.apply != "-" else sys.stdin) as fh:
            text = fh.read()
        out = proposal.apply_text(_session(args.root), text)
    except (OSError, ValueError) as err:
        raise UsageError(f"{args.apply}: nothing written: {err}") from None
    _emit(args, out, lambda _: one_line(proposal.written_text(out["written"]).strip()) + "".join(
        "\n" + one_line(f"refused: {r['path']}: {r['reason']}") for r in out["refused"]))
    return 0


def cmd_demo(args) -> int:
    from lsp_bridge.cli.demo import run_demo

    return run_demo(keep=args.keep, as_json=args.json)


# ---------------------------------------------------------------------------
# helpers


def _session(folders: Sequence[str], *, option: str = "FOLDER", toolchain: bool = False):
    """A session for folders typed by the user; bad folders and invalid configuration raise.
    ``toolchain``: with the toolchain mounts of its union as engine rules (``core.toolchain``)."""
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
            raise UsageError(f"{one_line(folder)}: not an existing directory")
        checked.append(folder)
    session = open_session(checked)
    broken = [d for d in session.config_diagnostics() if d.severity == "error"]
    if broken:
        raise ConfigError(broken)
    if toolchain:
        from lsp_bridge.inventory.mounts import enable_toolchain

        enable_toolchain(session)
    for line in session.held():  # decided with the approved configuration: say why, every time
        print(f"rootguard: held: {one_line(line)}", file=sys.stderr)
    return session


def _typed_path(path: str | None) -> str | None:
    """A path the user typed: absolute as given, relative against the current directory."""
    if path is None or os.path.isabs(path):
        return path
    return os.path.join(os.getcwd(), path)


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

        # A path that is not UTF-8 (a name's bytes kept as lone surrogates) is written as the JSON
        # escape of its surrogate: the output stays valid UTF-8 JSON and reads back to the same str.
        write(json.dumps(data, indent=2, ensure_ascii=False).encode("utf-8", "backslashreplace").decode("utf-8"))
    else:
        write(text(data))


def _fail(argv: Sequence[str], message: str) -> int:
    message = one_line(message)
    print(f"rootguard: {message}", file=sys.stderr)
    if wants_json(argv):
        import json

        write(json.dumps({"error": {"kind": "bad-input", "message": message, "diagnostics": []}}, indent=2))
    return EXIT_BAD_INPUT


def _config_text(d) -> str:
    """file:line:column: error: message [code]; a problem with no file (ROOTGUARD_ROOTS) without one."""
    if d.file:
        return d.format()
    message = d.message.removesuffix("; ignored")  # the command refuses instead of ignoring it
    return f"{d.severity}: {message} [{d.code}]"


def _fail_config(argv: Sequence[str], diagnostics) -> int:
    for diagnostic in diagnostics:
        print(f"rootguard: {one_line(_config_text(diagnostic))}", file=sys.stderr)
    if wants_json(argv):
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

        write(json.dumps({"error": error}, indent=2, ensure_ascii=False))
    return EXIT_BAD_INPUT


def _progress(args, title: str):
    from lsp_bridge.cli.progress import progress

    return progress(title, enabled=not getattr(args, "json", False))


def _shell_quote(text: str) -> str:
    import shlex

    return shlex.quote(text)


COMMANDS = {
    "roots": cmd_roots, "check": cmd_check, "inventory": cmd_inventory, "mounts": cmd_mounts, "run": cmd_run,
    "config migrate": cmd_config_migrate, "config held": cmd_config_held, "config approve": cmd_config_approve,
    "demo": cmd_demo, "trace": cmd_trace, "probe": cmd_probe,
}


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
