"""strace output → file events (pure parsing, plus the command prefix).

The trace runs ``strace -f -qq -y --seccomp-bpf -e trace=%file,execve -o LOG``.
``-y`` prints each descriptor with its path (``AT_FDCWD</cwd>``, ``3</dir>``,
and the opened file after ``= 3</path>``), so every relative path can be
resolved. Lines of a call interrupted by another process (``<unfinished ...>``)
are joined with their ``<... resumed>`` half.

When the command runs under bubblewrap, bubblewrap's own setup calls (mounts,
pivot_root, its probes of the host) come first: ``skip_until_exec`` drops every
event before the first successful ``execve`` of the traced command, and every
later event of a process that was already seen before it (bubblewrap's
monitoring parent).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

STRACE_ARGS = ("-f", "-qq", "-y", "--seccomp-bpf", "-e", "trace=%file,execve")

LINE = re.compile(r"^(?P<pid>\d+)\s+(?P<rest>.*)$")
CALL = re.compile(r"^(?P<name>[a-z0-9_]+)\((?P<args>.*)\)\s+=\s+(?P<ret>-?\d+|\?)(?P<fd><[^>]*>)?(?:\s+(?P<errno>E[A-Z]+))?")
FD = re.compile(r"^(?:AT_FDCWD|-?\d+)<(?P<path>[^>]*)>$")

# syscall -> (index of the dirfd argument or None, index of the path argument, kind)
SYSCALLS: dict[str, tuple[int | None, int, str]] = {
    "open": (None, 0, "open"), "creat": (None, 0, "write"),
    "openat": (0, 1, "open"), "openat2": (0, 1, "open"),
    "stat": (None, 0, "stat"), "lstat": (None, 0, "stat"), "stat64": (None, 0, "stat"),
    "lstat64": (None, 0, "stat"), "newfstatat": (0, 1, "stat"), "fstatat64": (0, 1, "stat"),
    "statx": (0, 1, "stat"), "access": (None, 0, "stat"), "faccessat": (0, 1, "stat"),
    "faccessat2": (0, 1, "stat"), "readlink": (None, 0, "stat"), "readlinkat": (0, 1, "stat"),
    "execve": (None, 0, "exec"), "execveat": (0, 1, "exec"),
    "chdir": (None, 0, "chdir"),
    "mkdir": (None, 0, "write"), "mkdirat": (0, 1, "write"), "unlink": (None, 0, "write"),
    "unlinkat": (0, 1, "write"), "rmdir": (None, 0, "write"), "rename": (None, 0, "write"),
    "renameat": (0, 1, "write"), "renameat2": (0, 1, "write"), "truncate": (None, 0, "write"),
    "chmod": (None, 0, "write"), "fchmodat": (0, 1, "write"), "chown": (None, 0, "write"),
    "lchown": (None, 0, "write"), "fchownat": (0, 1, "write"), "utimensat": (0, 1, "write"),
    "utime": (None, 0, "write"), "utimes": (None, 0, "write"), "link": (None, 1, "write"),
    "linkat": (2, 3, "write"), "symlink": (None, 1, "write"), "symlinkat": (1, 2, "write"),
    "mknod": (None, 0, "write"), "mknodat": (0, 1, "write"), "statfs": (None, 0, "stat"),
    "getxattr": (None, 0, "stat"), "lgetxattr": (None, 0, "stat"),
}


@dataclass(frozen=True)
class Event:
    pid: int
    syscall: str
    path: str  # absolute, lexically normalized (for a successful open: the opened file's path)
    op: str  # read | write | list | stat | exec
    ok: bool
    errno: str | None = None


def strace_prefix(log: str) -> list[str]:
    return ["strace", *STRACE_ARGS, "-o", log, "--"]


def _join_resumed(lines: Iterable[str]) -> Iterator[tuple[int, str]]:
    pending: dict[int, str] = {}
    for raw in lines:
        m = LINE.match(raw.rstrip("\n"))
        if not m:
            continue
        pid, rest = int(m["pid"]), m["rest"]
        if rest.endswith("<unfinished ...>"):
            pending[pid] = rest[: -len("<unfinished ...>")].rstrip()
            continue
        resumed = re.match(r"^<\.\.\. [a-z0-9_]+ resumed>\s?(.*)$", rest)
        if resumed:
            rest = pending.pop(pid, "") + resumed.group(1)
        yield pid, rest


def _split_args(args: str) -> list[str]:
    """Top-level arguments of a call (strings, arrays and structs kept whole)."""
    out, depth, buf, quoted, escape = [], 0, [], False, False
    for ch in args:
        if quoted:
            buf.append(ch)
            if escape:
                escape = False
            elif ch == "\\":
                escape = True
            elif ch == '"':
                quoted = False
            continue
        if ch == '"':
            quoted = True
        elif ch in "[{(<":
            depth += 1
        elif ch in "]})>":
            depth -= 1
        elif ch == "," and depth == 0:
            out.append("".join(buf).strip())
            buf = []
            continue
        buf.append(ch)
    if buf:
        out.append("".join(buf).strip())
    return out


def _c_string(token: str) -> str | None:
    """The value of a strace C string literal ("..." possibly followed by ... when truncated)."""
    if not token.startswith('"'):
        return None
    end = token.rfind('"')
    if end <= 0 or token[end + 1:].strip() not in ("", "..."):
        return None
    body = token[1:end]
    try:
        return body.encode("latin-1", "backslashreplace").decode("unicode_escape").encode("latin-1").decode(
            "utf-8", "surrogateescape")
    except (UnicodeDecodeError, UnicodeEncodeError):
        return body


def _open_op(flags: str) -> str:
    if any(f in flags for f in ("O_WRONLY", "O_RDWR", "O_CREAT", "O_TRUNC")):
        return "write"
    if "O_PATH" in flags:
        return "stat"
    if "O_DIRECTORY" in flags:
        return "list"
    return "read"


def parse_lines(lines: Iterable[str], cwd: str) -> list[Event]:
    """Events from strace output lines; ``cwd`` is the traced command's starting directory."""
    cwds: dict[int, str] = {}
    events: list[Event] = []
    for pid, rest in _join_resumed(lines):
        m = CALL.match(rest)
        if not m or m["name"] not in SYSCALLS:
            continue
        name = m["name"]
        dir_index, path_index, kind = SYSCALLS[name]
        args = _split_args(m["args"])
        if len(args) <= path_index:
            continue
        path = _c_string(args[path_index])
        if path is None:
            continue
        ok = m["ret"] not in ("?",) and not m["ret"].startswith("-")
        base = cwds.get(pid, cwd)
        if dir_index is not None and len(args) > dir_index:
            fd = FD.match(args[dir_index])
            if fd:
                if args[dir_index].startswith("AT_FDCWD"):
                    cwds[pid] = fd["path"]
                base = fd["path"]
        if path == "" and dir_index is not None:
            continue  # fstat-like call on an open descriptor
        full = os.path.normpath(os.path.join(base, path))
        if name == "chdir":
            if ok:
                cwds[pid] = full
            continue
        op = kind
        if kind == "open":
            op = _open_op(args[path_index + 1] if len(args) > path_index + 1 else "")
            if ok and m["fd"]:
                full = m["fd"][1:-1] or full  # the file actually opened (links resolved)
        events.append(Event(pid, name, full, op, ok, m["errno"]))
    return events


def skip_until_exec(events: list[Event], program: str) -> list[Event]:
    """Drop bubblewrap's own calls: everything before the first successful execve of ``program``."""
    for i, event in enumerate(events):
        if event.syscall == "execve" and event.ok and event.path == program:
            before = {e.pid for e in events[:i]} - {event.pid}
            return [e for e in events[i:] if e.pid not in before]
    return []


def parse_log(log: str, cwd: str, program: str | None = None) -> list[Event]:
    with open(log, encoding="utf-8", errors="surrogateescape") as fh:
        events = parse_lines(fh, cwd)
    return skip_until_exec(events, program) if program else events


def collect(events: Iterable[Event]) -> list[dict]:
    """One entry per path: its operations (failed ones as ``missing``/``denied``), first-seen order."""
    seen: dict[str, list[str]] = {}
    for event in events:
        ops = seen.setdefault(event.path, [])
        op = event.op if event.ok else ("denied" if event.errno in ("EACCES", "EPERM", "EROFS") else "missing")
        if op not in ops:
            ops.append(op)
    return [{"path": p, "ops": ops} for p, ops in seen.items()]
