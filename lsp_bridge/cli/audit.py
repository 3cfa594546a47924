"""``rootguard audit``: the decision log (``lsp_bridge.mcp.audit``) shown, filtered or followed."""

from __future__ import annotations

import os
import stat
import sys
import time
from collections.abc import Iterable

from lsp_bridge.cli.common import silence_stdout
from lsp_bridge.core.places import audit_path
from lsp_bridge.mcp.audit import Follower, format_record, json_line, read_records, rotated_files


def build_parser():
    import argparse  # here: every hook call writes this log, and never parses a command line

    p = argparse.ArgumentParser(prog="rootguard audit", description="Show the Root Guard decision log.")
    p.add_argument("--follow", "-f", action="store_true", help="keep printing new decisions as they happen")
    p.add_argument("--json", action="store_true", help="print the raw JSON lines")
    p.add_argument("--lines", "-n", type=int, metavar="N", help="only the last N decisions")
    p.add_argument("--all", action="store_true", help="include rotated files")
    p.add_argument("--disagreements", action="store_true",
                   help="only decisions where mirror mode saw the roots union decide differently")
    p.add_argument("--file", metavar="PATH", help="read this log instead of the user's")
    return p


def main(argv: list[str] | None = None) -> int:
    """Exit 0 shown (or no log yet), 2 bad input: a --file that is missing, a directory or unreadable."""
    args = build_parser().parse_args(argv)
    if args.lines is not None and args.lines < 0:
        return _bad("--lines must be >= 0")
    if args.file is not None and not args.file:
        return _bad("--file is empty")
    path = os.path.abspath(args.file) if args.file else audit_path()
    problem = _unreadable(path, explicit=args.file is not None)
    if problem:
        return _bad(problem)
    if not args.follow and not os.path.exists(path):
        print(f"rootguard audit: no decisions logged yet ({path})", file=sys.stderr)
        return 0
    try:
        follower = Follower(path)
        older = [r for name in rotated_files(path) for r in read_records(name)] if args.all else []
        records = _selected(older + follower.poll(), args)
        if args.lines is not None:
            records = records[-args.lines:] if args.lines else []
        _print(records, args.json)
        if args.follow:
            return _follow(follower, args)
    except BrokenPipeError:  # `rootguard audit | head`: the reader has what it wanted
        silence_stdout()
    except OSError as err:
        return _bad(f"cannot read {path}: {err.strerror or err}")
    return 0


def _bad(message: str) -> int:
    print(f"rootguard audit: {message}", file=sys.stderr)
    return 2


def _unreadable(path: str, *, explicit: bool) -> str | None:
    """Why ``path`` cannot be read as a log; a missing default log is not a problem."""
    try:
        info = os.stat(path)
    except FileNotFoundError:
        return f"{path}: no such file" if explicit else None
    except OSError as err:
        return f"{path}: {err.strerror}"
    if stat.S_ISDIR(info.st_mode):
        return f"{path} is a directory, not a decision log"
    if not stat.S_ISREG(info.st_mode):
        return f"{path} is not a regular file (a FIFO, a socket or a device), not a decision log"
    if not os.access(path, os.R_OK):
        return f"{path}: permission denied"
    return None


def _selected(records: Iterable[dict], args) -> list[dict]:
    if not args.disagreements:
        return list(records)
    return [r for r in records if isinstance(r.get("mirror"), dict) and r["mirror"].get("agrees") is False]


def _print(records: Iterable[dict], as_json: bool) -> None:
    for record in records:
        print(json_line(record) if as_json else format_record(record))
    sys.stdout.flush()


def _follow(follower: Follower, args, poll_seconds: float = 0.5) -> int:
    try:
        while True:
            _print(_selected(follower.poll(), args), args.json)
            time.sleep(poll_seconds)
    except KeyboardInterrupt:
        return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
