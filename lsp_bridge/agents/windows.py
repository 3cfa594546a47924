"""Editor windows as their language-server sessions publish them, for the agents' hooks.

Each language-server session (one editor window) writes what it exposes to
``<runtime dir>/rootguard/sessions/<session>.json`` after every status: its folders,
effective union, worktrees, pid and the process's start time. The file is written
atomically (mode 0600, in a 0700 directory) and removed when the session ends.
``rootguard hook`` reads these to find the window whose folders contain the agent's
working directory, without the tray.

What is read is checked so that a stale file, or one another user or a confined process could
leave, is refused: the directory and each file must be ours and private (no group or other bits),
a regular file (links are not followed), at most ``MAX_BYTES``; the pid must be a live process
of ours whose start time is the one recorded (a recycled pid, or a record without its start
time, is refused); folders must be absolute paths. A refused file is skipped (and a stale one
of ours removed). A sessions directory that exists but cannot be trusted (another owner, open
to others, a link) raises ``UntrustedSessions``: the hook then blocks instead of falling back
to the agent's project folder, which may be wider than the window. The roots are then built
from the folders with the session's own configuration, as ``rootguard check --root`` builds
them; the published union is shown, never trusted. The directory is a protected target
(``core/protected.py``): an agent's tools need approval to write there, and a shell confined by
``rootguard run`` cannot reach it at all.

These checks do not authenticate the writer: another unconfined process of the same user (an
MCP server not run under ``rootguard run``, a shell allowed with ``[agents] shell = "allow"``)
can write a record that passes them, naming wider folders, just as it could rewrite the user's
configuration or the agents' settings. Root Guard does not defend against such a process
(docs/agents.md, "What is defended").
"""

from __future__ import annotations

import json
import os
import stat
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from lsp_bridge.core.paths import canonical, is_within

RECORD_VERSION = 1
DIRECTORY = "sessions"
MAX_BYTES = 1 << 20
MAX_FILES = 256


class UntrustedSessions(Exception):
    """The sessions directory, or the runtime directory holding it, exists but cannot be trusted."""

    def __init__(self, path: str, why: str) -> None:
        super().__init__(f"{path}: {why}")
        self.path = path
        self.why = why


@dataclass(frozen=True)
class Window:
    """One editor window, as its session published it."""

    session: str
    pid: int
    folders: tuple[str, ...]
    union: tuple[str, ...]
    client: str = ""
    started: float = 0.0  # the process's start time (``process_start``); 0.0: not recorded (refused)
    worktrees: tuple[tuple[str, str], ...] = ()  # (path, mode)
    agents: tuple[dict, ...] = ()

    def match(self, path: str) -> str | None:
        """The deepest folder (or union entry) containing canonical ``path``, else None."""
        best = None
        for entry in (*self.folders, *self.union):
            if is_within(path, entry) and (best is None or len(entry) > len(best)):
                best = entry
        return best

    @property
    def label(self) -> str:
        names = ", ".join(os.path.basename(f.rstrip("/")) or f for f in self.folders)
        return f"{self.client or 'editor'} — {names}" if names else (self.client or "editor")


def sessions_dir() -> str:
    """``<runtime dir>/rootguard/sessions`` (the runtime directory is a protected target)."""
    from lsp_bridge.core.protected import runtime_dir

    return os.path.join(runtime_dir(), DIRECTORY)


# ---------------------------------------------------------------------------
# publishing (the language server)


def process_start(pid: int) -> float | None:
    """The process's start time in clock ticks since boot (``/proc/PID/stat`` field 22), else None."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            data = handle.read()
    except OSError:
        return None
    try:
        fields = data[data.rindex(b")") + 2:].split()
        return float(fields[19])
    except (ValueError, IndexError):
        return None


class Publisher:
    """Writes one session's record; ``remove`` deletes it (called at shutdown and at exit)."""

    def __init__(self, session: str, client: str = "") -> None:
        if not session or "/" in session or session.startswith("."):
            raise ValueError(f"a session id fit for a file name is needed, not {session!r}")
        self.session = session
        self.client = client
        self.path = os.path.join(sessions_dir(), f"{session}.json")
        self.pid = os.getpid()
        self.started = process_start(self.pid)
        self._written = False

    def publish(self, status: Mapping, agents: Iterable[Mapping] = ()) -> None:
        """Write the record for ``status`` (the ``rootguard/status`` payload)."""
        from lsp_bridge.approvals.runtime import ensure_private_dir
        from lsp_bridge.core.atomic import atomic_write

        record = {
            "version": RECORD_VERSION,
            "session": self.session,
            "pid": self.pid,
            "started": self.started,
            "client": self.client,
            "folders": _strings(status.get("roots")),
            "union": _strings(status.get("union")),
            "worktrees": [{"path": w.get("path"), "mode": w.get("mode")}
                          for w in status.get("worktrees") or [] if isinstance(w, dict)],
            "agents": [dict(a) for a in agents],
            "time": time.time(),
        }
        directory = os.path.dirname(self.path)
        ensure_private_dir(os.path.dirname(directory))
        ensure_private_dir(directory)
        atomic_write(self.path, json.dumps(record, ensure_ascii=False), mode=0o600)
        self._written = True

    def remove(self) -> None:
        if not self._written:
            return
        self._written = False
        try:
            os.unlink(self.path)
        except FileNotFoundError:
            pass


# ---------------------------------------------------------------------------
# reading (the hook)


def published_windows(problems: list[str] | None = None) -> list[Window]:
    """Every live window's record that passes the checks; ``problems`` collects why others did not.

    No directory is no window; a directory that exists but cannot be trusted or listed raises
    ``UntrustedSessions`` (the caller must not fall back to something wider)."""
    problems = [] if problems is None else problems
    directory = sessions_dir()
    for path in (os.path.dirname(directory), directory):
        why = _private_directory(path)
        if why == "missing":
            return []
        if why is not None:
            raise UntrustedSessions(path, why)
    try:
        names = sorted(n for n in os.listdir(directory) if n.endswith(".json") and not n.startswith("."))
    except OSError as err:
        raise UntrustedSessions(directory, f"cannot be listed ({err.strerror})") from None
    windows: list[Window] = []
    for name in names[:MAX_FILES]:
        path = os.path.join(directory, name)
        window, problem = read_window(path)
        if window is not None:
            windows.append(window)
        elif problem == "stale":
            try:
                os.unlink(path)  # ours (checked), its process gone: clean up
            except OSError:
                pass
        elif problem:
            problems.append(f"{path}: {problem}")
    return windows


def read_window(path: str) -> tuple[Window | None, str | None]:
    """(window, None), or (None, why it was refused; "stale" for a dead or recycled pid)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as err:
        return None, f"cannot open ({err.strerror})"
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return None, "not a regular file"
        if info.st_uid != os.getuid():
            return None, f"owned by uid {info.st_uid}, not by this user"
        if stat.S_IMODE(info.st_mode) & 0o077:
            return None, f"mode {stat.S_IMODE(info.st_mode):o} is open to others (0600 expected)"
        if info.st_size > MAX_BYTES:
            return None, "too large"
        data = os.read(fd, MAX_BYTES + 1)
    finally:
        os.close(fd)
    try:
        record = json.loads(data)
    except (ValueError, RecursionError):
        return None, "not JSON"
    window, problem = _window(record)
    if window is None:
        return None, problem
    if not _process_of_ours(window.pid):
        return None, "stale"
    if not window.started:
        return None, "no start time: a window's record names its process's start time"
    now = process_start(window.pid)
    if now is None:
        return None, f"the start time of pid {window.pid} cannot be read"
    if now != window.started:
        return None, "stale"  # the pid was reused
    return window, None


def _window(record: object) -> tuple[Window | None, str | None]:
    if not isinstance(record, dict) or record.get("version") != RECORD_VERSION:
        return None, "not a version 1 session record"
    pid, session = record.get("pid"), record.get("session")
    if not isinstance(pid, int) or isinstance(pid, bool) or pid <= 0:
        return None, "no pid"
    if not isinstance(session, str) or not session:
        return None, "no session id"
    folders = record.get("folders")
    if not isinstance(folders, list) or not all(isinstance(f, str) and os.path.isabs(f) and "\x00" not in f
                                                 for f in folders):
        return None, "folders must be absolute paths"
    started = record.get("started")
    if not isinstance(started, (int, float)) or isinstance(started, bool) or started <= 0:
        started = 0.0  # not recorded: refused by ``read_window`` (after the stale check)
    worktrees = tuple((w["path"], w["mode"]) for w in record.get("worktrees") or []
                      if isinstance(w, dict) and isinstance(w.get("path"), str) and isinstance(w.get("mode"), str))
    agents = tuple(a for a in record.get("agents") or [] if isinstance(a, dict))
    client = record.get("client") if isinstance(record.get("client"), str) else ""
    return Window(session, pid, tuple(folders), tuple(_strings(record.get("union"))), str(client),
                  float(started), worktrees, agents), None


def _process_of_ours(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return False  # another user's process: not a session of ours
    try:
        if os.stat(f"/proc/{pid}").st_uid != os.getuid():
            return False
    except OSError:
        pass  # no /proc here: the kill check stands
    return True


def _private_directory(path: str) -> str | None:
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return "missing"
    except OSError as err:
        return err.strerror or "unreadable"
    if stat.S_ISLNK(info.st_mode):
        return "a symbolic link, not a directory"
    if not stat.S_ISDIR(info.st_mode):
        return "not a directory"
    if info.st_uid != os.getuid():
        return f"owned by uid {info.st_uid}, not by this user"
    if stat.S_IMODE(info.st_mode) & 0o077:
        return f"mode {stat.S_IMODE(info.st_mode):o} is open to others (0700 expected)"
    return None


def window_for(cwd: str, windows: Iterable[Window]) -> Window | None:
    """The window whose folders contain ``cwd``: the deepest containing folder wins, then the
    window with the fewest union entries (the narrower), then the oldest session."""
    try:
        path = canonical(cwd)
    except (OSError, ValueError):
        path = os.path.normpath(cwd)
    best: tuple[int, int, float] | None = None
    chosen = None
    for window in windows:
        entry = window.match(path)
        if entry is None:
            continue
        key = (-len(entry), len(window.union) or len(window.folders), window.started)
        if best is None or key < best:
            best, chosen = key, window
    return chosen


def _strings(value: object) -> list[str]:
    return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []
