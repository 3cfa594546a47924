"""Connected sessions and what each one exposes, as plain data (no Qt).

A session is one connection: a language server (one editor window) or an MCP
server. Its status payload is the ``rootguard/status`` content; ``describe``
turns it into titled sections of text lines for the menu and the main window.
Status payloads come from other processes, so every field is read defensively:
a field of the wrong type is skipped, never trusted and never a crash.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field

from lsp_bridge.approvals.protocol import Hello

SECTION_LIMIT = 200  # lines per section in the window (the menu shows fewer)


@dataclass
class SessionInfo:
    conn: int
    session: str
    client: str
    pid: int | None
    folders: tuple[str, ...]
    connected_at: float = field(default_factory=time.time)
    status: dict | None = None
    widened: bool = False  # an unacknowledged widening
    last_widening: dict | None = None  # the status payload that widened, and when
    widened_at: float | None = None

    @property
    def window(self) -> str:
        """What the user recognises: the workspace's folder names."""
        return ", ".join(os.path.basename(f.rstrip("/")) or f for f in self.roots)

    @property
    def label(self) -> str:
        """Which editor, which workspace: "Neovim — checkout" vs "Visual Studio Code — checkout, shop"."""
        return f"{self.client} — {self.window}" if self.window else self.client

    @property
    def roots(self) -> tuple[str, ...]:
        roots = _strings(self.status.get("roots")) if self.status else []
        return tuple(roots) if roots else self.folders

    @property
    def withdrawable(self) -> bool:
        """The session says an acknowledgement of its folders can be withdrawn."""
        return self.status is not None and self.status.get("withdrawable") is True

    @property
    def summary(self) -> str:
        text = self.status.get("summary") if self.status else None
        if isinstance(text, str) and text:
            return text
        n = len(self.roots)
        return f"{n} root{'s' if n != 1 else ''}"


@dataclass(frozen=True)
class StatusChange:
    widened_now: bool  # notify the user
    folders_changed: bool
    measured: bool = False  # the widening's inventory just arrived: update the notification


class SessionRegistry:
    """Sessions by connection id, in connection order."""

    def __init__(self, wall=time.time):
        self._sessions: dict[int, SessionInfo] = {}
        self.wall = wall

    def hello(self, conn: int, msg: Hello) -> bool:
        """Register or update a session. True if its folders changed."""
        old = self._sessions.get(conn)
        if old is None:
            self._sessions[conn] = SessionInfo(conn, msg.session, msg.client, msg.pid, msg.folders, self.wall())
            return False
        changed = set(old.folders) != set(msg.folders)
        old.session, old.client, old.pid, old.folders = msg.session, msg.client, msg.pid, msg.folders
        return changed

    def update_status(self, conn: int, payload: dict) -> StatusChange:
        info = self._sessions[conn]
        before_roots = set(info.roots)
        before_union = _strings(info.status.get("union")) if info.status else None
        info.status = payload
        widened_now = measured = False
        unacknowledged = payload.get("widened") is True and payload.get("acknowledged") is not True
        if unacknowledged and (_strings(payload.get("union")) != before_union or not info.widened):
            info.widened = True
            info.last_widening = payload
            info.widened_at = self.wall()
            widened_now = True
        elif unacknowledged and info.last_widening is not None:
            # Same widening, later news (the inventory arrived, a file changed): keep it current.
            measured = not isinstance(info.last_widening.get("inventory"), dict) and isinstance(payload.get("inventory"), dict)
            info.last_widening = payload
        elif payload.get("acknowledged") is True:
            info.widened = False
        return StatusChange(widened_now, set(info.roots) != before_roots, measured)

    def remove(self, conn: int) -> SessionInfo | None:
        return self._sessions.pop(conn, None)

    def get(self, conn: int) -> SessionInfo | None:
        return self._sessions.get(conn)

    def sessions(self) -> list[SessionInfo]:
        return list(self._sessions.values())

    def acknowledge(self, conn: int | None = None) -> None:
        """The user has seen the widening (of one session, or all)."""
        for info in self._sessions.values():
            if conn is None or info.conn == conn:
                info.widened = False

    @property
    def any_widened(self) -> bool:
        return any(s.widened for s in self._sessions.values())

    def __len__(self) -> int:
        return len(self._sessions)


# ---------------------------------------------------------------------------
# What a session exposes, as text


@dataclass(frozen=True)
class Section:
    title: str
    lines: tuple[str, ...]


def describe(info: SessionInfo) -> list[Section]:
    """Folders, worktrees, union, shadowed, mount mismatches, last widening, warnings."""
    status = info.status or {}
    sections = [
        Section("Folders", tuple(info.roots) or ("(none)",)),
        Section("Worktrees", tuple(_worktree_line(w) for w in _dicts(status.get("worktrees")))),
        Section("Effective union", tuple(_union_lines(status))),
        Section("Shadowed", tuple(f"{s['path']} (inside {_str(s.get('by'), '?')})" for s in _with_path(status.get("shadowed")))),
        Section("Mount mismatches", tuple(_mount_lines(status.get("mounts")))),
        Section("Last widening", tuple(_widening_lines(info))),
        Section("Warnings", tuple(_warning_line(w) for w in _dicts(status.get("warnings")))),
    ]
    return [Section(s.title, _limit(s.lines, SECTION_LIMIT)) for s in sections]


def _worktree_line(w: dict) -> str:
    path = _str(w.get("path"), "?")
    flags = [f for f in ("locked", "prunable") if w.get(f) is True]
    extra = f", {', '.join(flags)}" if flags else ""
    return f"{path} [{_str(w.get('mode'), '?')}{extra}]"


def _union_lines(status: dict) -> list[str]:
    reasons = {e["path"]: e for e in _with_path(status.get("entries"))}
    lines = []
    for path in _strings(status.get("union")):
        entry = reasons.get(path)
        why = ""
        if entry:
            why = " — " + ": ".join(x for x in (_str(entry.get("origin")), _str(entry.get("reason"))) if x)
        lines.append(path + why)
    return lines


def _mount_lines(mounts) -> list[str]:
    if not isinstance(mounts, dict):
        return []
    lines = [f"not mounted: {p}" for p in _strings(mounts.get("roots_without_mount"))]
    lines += [
        f"mounted outside the union: {_str(m.get('source'), '?')} → {_str(m.get('target'), '?')}"
        for m in _dicts(mounts.get("mounts_outside_union"))
    ]
    lines += [
        f"link cannot be mounted: {_str(m.get('link'), '?')} → {_str(m.get('target'), '?')} ({_str(m.get('reason'))})"
        for m in _dicts(mounts.get("unrescuable"))
    ]
    return lines


def _widening_lines(info: SessionInfo) -> list[str]:
    """The widening as the server words it (``summary`` and ``widening_lines``), never re-rendered."""
    status = info.last_widening
    if not status:
        return []
    when = time.strftime("%H:%M:%S", time.localtime(info.widened_at)) if info.widened_at else ""
    lines = [f"{when}  {_str(status.get('summary'), 'union widened')}".strip()]
    return lines + _strings(status.get("widening_lines"))


def _warning_line(w: dict) -> str:
    return f"{_str(w.get('severity'), 'warning')}: {_str(w.get('message'))}"


# ---------------------------------------------------------------------------
# Defensive readers


def _strings(value) -> list[str]:
    return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []


def _dicts(value) -> list[dict]:
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []


def _with_path(value) -> list[dict]:
    return [d for d in _dicts(value) if isinstance(d.get("path"), str)]


def _str(value, default: str = "") -> str:
    return value if isinstance(value, str) else default


def _limit(lines: tuple[str, ...], limit: int) -> tuple[str, ...]:
    if len(lines) <= limit:
        return lines
    return lines[:limit] + (f"… {len(lines) - limit} more",)
