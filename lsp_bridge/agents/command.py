"""``rootguard agents install|uninstall|status``: the hook in each agent's own settings (docs/agents.md).

Exit status: 0 done (``status``: every agent present is guarded), 1 ``status``: an agent
present is unguarded, 2 bad input or a settings file that cannot be read or changed.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence

from lsp_bridge.agents import AGENTS

EXIT_OK, EXIT_UNGUARDED, EXIT_BAD_INPUT = 0, 1, 2


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="rootguard agents",
                                     description="Install, remove and check Root Guard's hook in each agent's settings.")
    sub = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    for action, text in (("install", "write the hook into the agent's own settings (prints the diff, keeps a backup)"),
                         ("uninstall", "restore the agent's settings as they were before install")):
        p = sub.add_parser(action, help=text, description=text)
        p.add_argument("agent", choices=AGENTS, metavar="AGENT", help=f"one of {', '.join(AGENTS)}")
        scope = p.add_mutually_exclusive_group()
        scope.add_argument("--user", dest="scope", action="store_const", const="user",
                           help="the user's settings (the default): every project")
        scope.add_argument("--project", dest="scope", action="store_const", const="project",
                           help="the project's settings (.claude/, .gemini/, .github/hooks/ in --folder)")
        p.add_argument("--folder", metavar="DIR", help="the project folder for --project (default: the current directory)")
        p.add_argument("--dry-run", action="store_true", help="print the diff, change nothing")
    p = sub.add_parser("status", help="the agents present and whether each is guarded",
                       description="The agents present for the folders (their configuration directories) and "
                                   "whether Root Guard's hook guards each. Exit 0: all guarded; 1: one is not.")
    p.add_argument("--folder", action="append", default=[], metavar="DIR",
                   help="a workspace folder (repeat; default: the current directory)")
    p.add_argument("--json", action="store_true", help="print a JSON object")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(list(sys.argv[1:] if argv is None else argv))
    from lsp_bridge.agents.install import InstallError

    try:
        if args.action == "status":
            return status(args)
        return change(args, installing=args.action == "install")
    except InstallError as err:
        print(f"rootguard agents: {err}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except OSError as err:
        print(f"rootguard agents: {err.filename or ''}: {err.strerror or err}", file=sys.stderr)
        return EXIT_BAD_INPUT


def _folder(value: str | None) -> str:
    if value is not None and not value.strip():
        from lsp_bridge.agents.install import InstallError

        raise InstallError("--folder is empty (an unset shell variable?)")
    return os.path.abspath(value) if value else os.getcwd()


def change(args, *, installing: bool) -> int:
    from lsp_bridge.agents.install import apply, plan_install, plan_uninstall

    scope = args.scope or "user"
    folder = _folder(args.folder) if scope == "project" else None
    plan = (plan_install if installing else plan_uninstall)(args.agent, scope, folder, os.environ)
    verb = "install" if installing else "uninstall"
    if not plan.changes:
        print(f"rootguard agents: {args.agent}: nothing to {verb} in {plan.path}"
              + (" (already installed)" if installing and plan.before is not None else ""))
    else:
        sys.stdout.write(plan.diff())
    for note in plan.notes:
        print(f"note: {note}")
    if args.dry_run or not plan.changes:
        if args.dry_run and plan.changes:
            print("(dry run: nothing was written)")
        return EXIT_OK
    kept = apply(plan, installing=installing)
    if installing:
        print(f"rootguard agents: {args.agent}: hook installed in {plan.path}"
              + (f" (the file as it was is kept in {kept})" if kept else ""))
    elif plan.restore:
        print(f"rootguard agents: {args.agent}: {plan.path} restored as it was before install"
              + (" (removed: install had created it)" if plan.after is None else ""))
    else:
        print(f"rootguard agents: {args.agent}: hook removed from {plan.path}")
    return EXIT_OK


def status(args) -> int:
    from lsp_bridge.agents.presence import agent_states

    folders = [_folder(f) for f in args.folder] or [os.getcwd()]
    for folder in folders:
        if not os.path.isdir(folder):
            print(f"rootguard agents: {folder}: not an existing directory", file=sys.stderr)
            return EXIT_BAD_INPUT
    states = agent_states(folders)
    warnings = [{"severity": "warning", "code": "agent-unguarded", "message": s.warning}
                for s in states if s.warning]
    if args.json:
        print(json.dumps({"folders": folders, "agents": [s.to_json() for s in states], "warnings": warnings},
                         indent=2, ensure_ascii=False))
    else:
        for state in states:
            if not state.present:
                line = "not present"
            elif state.guarded:
                line = "guarded (" + ", ".join(state.hooks) + ")"
            else:
                line = "UNGUARDED: " + (state.note or "no Root Guard hook")
            print(f"{state.to_json()['label']:<12} {line}")
            if state.present:
                print(f"{'':<12}   found: {', '.join(state.config_dirs)}")
    return EXIT_UNGUARDED if warnings else EXIT_OK


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
