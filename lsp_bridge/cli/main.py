"""``rootguard``: one command line for the language server, the tray and the checks.

Each command parses its arguments, calls the domain, and prints: a readable
form by default, the stable JSON of PRODUCT.md with ``--json``. Bad input is a
one-line error on stderr and exit code 2.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence


class UsageError(Exception):
    """Bad input: printed as one line, exit code 2."""


DELEGATED = {
    "lsp": ("lsp_bridge.lsp.stdio", "the language server on stdio"),
    "tray": ("tray.cli", "the tray app and approval broker"),
    "mcp": ("lsp_bridge.mcp.server", "the guarded MCP file server on stdio"),
    "audit": ("lsp_bridge.mcp.audit", "the decision log"),
}


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] in DELEGATED:  # these parse their own options, --help included
        import importlib

        return importlib.import_module(DELEGATED[argv[0]][0]).main(argv[1:])
    parser = _parser()
    args = parser.parse_args(argv)
    if not getattr(args, "run", None):
        parser.print_help()
        return 2
    try:
        return args.run(args)
    except UsageError as err:
        print(f"rootguard: {err}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        return 0
    except KeyboardInterrupt:
        return 130


# ---------------------------------------------------------------------------
# commands


def cmd_roots(args) -> int:
    from lsp_bridge.inventory.report import roots_report

    session = _session(args.folders)
    data = roots_report(session, with_mounts=True)
    if args.json:
        _print_json(data)
    else:
        from lsp_bridge.inventory.report import format_roots

        print(format_roots(data))
    return 0


def cmd_check(args) -> int:
    from lsp_bridge.core.policy import PolicyInputError

    if not args.root:
        raise UsageError("check needs at least one --root FOLDER (never the current directory)")
    if args.op == "rename" and not args.dest:
        raise UsageError("--op rename needs PATH and DEST")
    if args.op != "rename" and args.dest:
        raise UsageError(f"--op {args.op} takes one PATH, got a DEST too")
    session = _session(args.root)
    broken = [d for d in session.config_diagnostics() if d.severity == "error"]
    try:
        decision = session.policy.decide(args.op, args.path, args.dest)
    except PolicyInputError as err:
        raise UsageError(str(err)) from None
    data = decision.to_json()
    if broken:
        data["config_errors"] = [d.format() for d in broken]
    if args.json:
        _print_json(data)
    else:
        print(f"{decision.decision.upper()}  {args.op} {decision.path}")
        print(f"  rule:   {decision.rule or '(none)'}")
        print(f"  reason: {decision.reason}")
        for line in data.get("config_errors", []):
            print(f"  config: {line}")
    return 0


def cmd_inventory(args) -> int:
    from lsp_bridge.inventory.scan import inventory

    if not args.root:
        raise UsageError("inventory needs at least one --root FOLDER")
    if not args.add:
        raise UsageError("inventory needs --add FOLDER")
    before = _session(args.root).scope.union
    after = _session([*args.root, args.add]).scope.union
    report = inventory(before.paths, after.paths)
    if args.json:
        _print_json(report.to_json())
    else:
        print("\n".join(report.describe()))
    return 0


def cmd_mounts(args) -> int:
    from lsp_bridge.inventory.report import mounts_report

    session = _session(args.folders)
    reconciliation = mounts_report(session)
    if args.docker:
        print(" ".join(_shell_quote(a) for a in reconciliation.docker_args()))
    elif args.json:
        _print_json(reconciliation.to_json())
    else:
        from lsp_bridge.inventory.report import format_mounts

        print(format_mounts(reconciliation.to_json()))
    return 0


def cmd_config_migrate(args) -> int:
    from lsp_bridge.core.migrate import main_migrate

    forwarded = [*(["--write"] if args.write else []), *(["--check"] if args.check else [])]
    if args.file:
        forwarded.append(args.file)
    return main_migrate(forwarded)


def cmd_demo(args) -> int:
    from lsp_bridge.cli.demo import run_demo

    return run_demo(keep=args.keep, as_json=args.json)


# ---------------------------------------------------------------------------
# helpers


def _session(folders: Sequence[str]):
    from lsp_bridge.core.session import open_session

    checked = []
    for folder in folders:
        if "\x00" in folder:
            raise UsageError(f"folder {folder!r} contains a NUL byte")
        if not folder.strip():
            raise UsageError("an empty folder argument is not a folder (the current directory is never assumed)")
        if not os.path.isabs(folder):
            folder = os.path.abspath(folder)  # an argument the user typed, not a derived root
        if not os.path.isdir(folder):
            raise UsageError(f"{folder}: not an existing directory")
        checked.append(folder)
    return open_session(checked)


def _print_json(data) -> None:
    json.dump(data, sys.stdout, indent=2, ensure_ascii=False)
    sys.stdout.write("\n")


def _shell_quote(text: str) -> str:
    import shlex

    return shlex.quote(text)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="rootguard", description="Root Guard: keep an AI agent's file access as narrow as you meant it."
    )
    sub = parser.add_subparsers(metavar="COMMAND")

    p = sub.add_parser("roots", help="effective roots of FOLDERs: union, shadowed entries, worktrees")
    p.add_argument("folders", nargs="+", metavar="FOLDER")
    p.add_argument("--json", action="store_true")
    p.set_defaults(run=cmd_roots)

    p = sub.add_parser("check", help="decide one access: allow, request or deny")
    p.add_argument("--root", action="append", default=[], metavar="FOLDER")
    p.add_argument("--op", required=True, choices=["read", "write", "delete", "rename", "metadata"])
    p.add_argument("path", metavar="PATH")
    p.add_argument("dest", nargs="?", metavar="DEST")
    p.add_argument("--json", action="store_true")
    p.set_defaults(run=cmd_check)

    p = sub.add_parser("inventory", help="what adding a folder hands over")
    p.add_argument("--root", action="append", default=[], metavar="FOLDER")
    p.add_argument("--add", metavar="FOLDER")
    p.add_argument("--json", action="store_true")
    p.set_defaults(run=cmd_inventory)

    p = sub.add_parser("mounts", help="mount reconciliation and the suggested narrow mount set")
    p.add_argument("folders", nargs="+", metavar="FOLDER")
    p.add_argument("--json", action="store_true")
    p.add_argument("--docker", action="store_true", help="print the docker run volume arguments")
    p.set_defaults(run=cmd_mounts)

    p = sub.add_parser("config", help="configuration tools")
    csub = p.add_subparsers(metavar="ACTION")
    m = csub.add_parser("migrate", help="translate a version 1 file to version 2")
    m.add_argument("--write", action="store_true", help="write it (keeps FILE.v1.bak)")
    m.add_argument("--check", action="store_true", help="exit 0 current, 2 needs migration, 1 invalid")
    m.add_argument("file", nargs="?", metavar="FILE")
    m.set_defaults(run=cmd_config_migrate)

    p = sub.add_parser("demo", help="build a demo monorepo and show what widening it hands over")
    p.add_argument("--keep", action="store_true", help="keep the demo directory")
    p.add_argument("--json", action="store_true")
    p.set_defaults(run=cmd_demo)

    for name, (_, text) in DELEGATED.items():  # listed for --help; main() dispatches them
        sub.add_parser(name, help=text, add_help=False)
    return parser


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
