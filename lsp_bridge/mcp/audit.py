"""The decision audit log: one JSON line per decision (shown by ``rootguard audit``: ``cli/audit.py``).

Each line carries the seed 003 fields (``time``, ``client``, ``session_id``,
``protocol_version``, ``tool``, ``project_id``, ``root_digest``,
``relative_path``, ``canonicalization``, ``decision``, ``reason``,
``correlation_id``) plus what explains the decision (``op``, ``policy``,
``rule``, ``code``, ``approval``, ``mirror``...). Paths, rule ids and reasons
only: file contents and secret values are never passed here.

The log lives at ``<platformdirs user_state_dir('rootguard')>/audit.jsonl``
(mode 0600, directory 0700). It rotates by size: when a line would take the
file past ``max_bytes`` it becomes ``audit.jsonl.1`` (older ones shift up to
``backups``). Several servers may write at once: each write holds an
``flock`` on ``audit.jsonl.lock`` and appends one whole line. An ``flock`` belongs
to an open file, which every thread of a process shares, so the threads of one
server also take ``AuditLog``'s own lock: without it one thread's rotation closed
the descriptor another was about to write, and that line was lost.

One decision, one line per target (all of a call's lines share its
``correlation_id``); an allowed call whose I/O then fails adds nothing: the
agent gets the error, the log keeps the decision.
"""

from __future__ import annotations

import fcntl
import functools
import hashlib
import json
import os
import threading
import unicodedata
from collections.abc import Iterator
from datetime import UTC, datetime

from lsp_bridge.core.paths import open_regular
from lsp_bridge.core.places import audit_path
from lsp_bridge.core.terminal_text import one_line

DEFAULT_MAX_BYTES = 10 * 1024 * 1024
DEFAULT_BACKUPS = 5
MAX_FIELD_CHARS = 2048

FIELDS = (
    "time", "client", "session_id", "protocol_version", "tool", "project_id", "root_digest",
    "relative_path", "canonicalization", "decision", "reason", "correlation_id",
)


class AuditError(OSError):
    """The log could not be written; the message names the file."""


@functools.lru_cache(maxsize=256)
def root_digest(root: str) -> str:
    """A stable digest of an approved root's canonical path (a session has few roots: kept)."""
    return "sha256:" + hashlib.sha256(root.encode("utf-8", "surrogateescape")).hexdigest()


def now_text() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


class AuditLog:
    """Appends decision records to the log, rotating it by size."""

    def __init__(self, path: str | None = None, *, max_bytes: int = DEFAULT_MAX_BYTES, backups: int = DEFAULT_BACKUPS):
        self.path = path or audit_path()
        self.max_bytes = max(1024, int(max_bytes))
        self.backups = max(1, int(backups))
        self._fd: int | None = None
        self._inode: int | None = None
        self._lock: int | None = None  # the lock file's descriptor (flock: between processes)
        self._threads = threading.Lock()  # between this process's threads

    def record(self, entry: dict) -> None:
        """Write one decision; raises ``AuditError`` if it cannot be written."""
        line = (json.dumps(_bounded(entry), ensure_ascii=False, separators=(",", ":")) + "\n").encode(
            "utf-8", "backslashreplace"
        )
        with self._threads:
            try:
                self._append(line)
            except OSError as exc:
                self._close_all()
                raise AuditError(f"cannot write the audit log {self.path}: {exc.strerror or exc}") from None

    def close(self) -> None:
        with self._threads:
            self._close_all()

    def _close_all(self) -> None:
        self._close_log()
        if self._lock is not None:
            os.close(self._lock)
            self._lock = None

    def _close_log(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
            self._inode = None

    # -- internals -----------------------------------------------------------

    def _append(self, line: bytes) -> None:
        if self._lock is None:
            os.makedirs(os.path.dirname(self.path), mode=0o700, exist_ok=True)
            self._lock = os.open(self.path + ".lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        fcntl.flock(self._lock, fcntl.LOCK_EX)
        try:
            fd, size = self._current()
            if size and size + len(line) > self.max_bytes:
                self._rotate()
                fd, _ = self._current()
            os.write(fd, line)
        finally:
            fcntl.flock(self._lock, fcntl.LOCK_UN)

    def _current(self) -> tuple[int, int]:
        """The open log file and its size, reopened when another process rotated it (under the lock:
        the name's ``stat`` is the open file's while their inodes agree)."""
        try:
            info: os.stat_result | None = os.stat(self.path)
        except FileNotFoundError:
            info = None
        if self._fd is None or info is None or info.st_ino != self._inode:
            self._close_log()
            self._fd = open_regular(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            info = os.fstat(self._fd)
            self._inode = info.st_ino
        return self._fd, info.st_size

    def _rotate(self) -> None:
        self._close_log()
        for index in range(self.backups - 1, 0, -1):
            older = f"{self.path}.{index}"
            if os.path.exists(older):
                os.replace(older, f"{self.path}.{index + 1}")
        os.replace(self.path, f"{self.path}.1")


def _bounded(entry: dict) -> dict:
    """Long strings are cut: a log line stays a log line."""
    if not any(isinstance(value, str) and len(value) > MAX_FIELD_CHARS for value in entry.values()):
        return entry
    out = {}
    for key, value in entry.items():
        if isinstance(value, str) and len(value) > MAX_FIELD_CHARS:
            value = value[:MAX_FIELD_CHARS] + "…"
        out[key] = value
    return out


# ---------------------------------------------------------------------------
# Reading


def read_records(path: str | None = None, *, rotated: bool = False) -> list[dict]:
    """Every record in the log (oldest first); with ``rotated`` the rotated files too."""
    path = path or audit_path()
    files = [*rotated_files(path), path] if rotated else [path]
    records: list[dict] = []
    for name in files:
        try:
            with open(open_regular(name, os.O_RDONLY), "rb") as handle:
                records.extend(_parse_lines(handle.read()))
        except FileNotFoundError:
            continue
    return records


def _parse_lines(data: bytes) -> Iterator[dict]:
    for raw in data.splitlines():
        if not raw.strip():
            continue
        try:
            record = json.loads(raw)
        except (ValueError, RecursionError):
            continue  # a torn or foreign line is skipped, never fatal
        if isinstance(record, dict):
            yield record


class Follower:
    """New records as they are appended, across rotations (``poll`` never blocks)."""

    def __init__(self, path: str, *, from_start: bool = True):
        self.path = path
        self._inode: int | None = None
        self._offset = 0
        self._partial = b""
        if not from_start:
            try:
                info = os.stat(path)
                self._inode, self._offset = info.st_ino, info.st_size
            except FileNotFoundError:
                pass

    def poll(self) -> list[dict]:
        try:
            info = os.stat(self.path)
        except FileNotFoundError:
            return []
        found: list[dict] = []
        if self._inode is not None and info.st_ino != self._inode:
            found.extend(self._drain(f"{self.path}.1", self._inode))  # the tail written before rotation
            self._offset, self._partial = 0, b""
        elif info.st_size < self._offset:  # truncated in place
            self._offset, self._partial = 0, b""
        self._inode = info.st_ino
        found.extend(self._read_from(self.path))
        return found

    def _drain(self, rotated: str, inode: int) -> list[dict]:
        try:
            if os.stat(rotated).st_ino != inode:
                return []
        except FileNotFoundError:
            return []
        return self._read_from(rotated)

    def _read_from(self, name: str) -> list[dict]:
        try:
            with open(open_regular(name, os.O_RDONLY), "rb") as handle:
                handle.seek(self._offset)
                data = handle.read()
        except FileNotFoundError:
            return []
        self._offset += len(data)
        data = self._partial + data
        complete, _, self._partial = data.rpartition(b"\n")
        return list(_parse_lines(complete))


# ---------------------------------------------------------------------------
# ``rootguard audit``


def shown(text: object) -> str:
    """``text`` safe to print on a terminal: every control, format or unassigned character (``\\r``,
    ESC, C1 controls, bidirectional overrides, line separators) written as an escape, so text an
    agent chose cannot rewrite the terminal that reviews it (clear it, move the cursor, set the
    clipboard with OSC 52)."""
    return one_line(str(text))


def json_line(record: dict) -> str:
    """The record as JSON for a terminal: what ``json`` leaves raw (DEL, C1 controls, bidirectional
    and other format characters) is written as a ``\\u`` escape, which JSON reads back the same."""
    text = json.dumps(record, ensure_ascii=False)
    return "".join(f"\\u{ord(c):04x}" if unicodedata.category(c)[0] in "CZ" and c != " " and ord(c) < 0x10000
                   else c for c in text)


def format_record(record: dict) -> str:
    """One human-readable line, safe to print (``shown``)."""
    target = f"{record.get('project_id') or '-'}:{record.get('relative_path') or ''}"
    if record.get("dest_relative_path"):
        target += f" -> {record['dest_relative_path']}"
    why = record.get("code") or record.get("rule") or ""
    parts = [
        str(record.get("time", "?")),
        f"{str(record.get('decision', '?')):<5}",
        f"{str(record.get('tool', '?')):<15}",
        target,
    ]
    if why:
        parts.append(f"[{why}]")
    if record.get("approval"):
        parts.append(f"approval={record['approval']}")
    mirror = record.get("mirror")
    if isinstance(mirror, dict) and mirror.get("agrees") is False:
        parts.append(f"MIRROR: roots union would {mirror.get('roots_union')}")
    parts.append(str(record.get("reason", "")))
    return shown("  ".join(parts))


def rotated_files(path: str) -> list[str]:
    """``audit.jsonl.N`` ... ``audit.jsonl.1``, oldest first."""
    found: list[str] = []
    index = 1
    while os.path.exists(f"{path}.{index}"):
        found.insert(0, f"{path}.{index}")
        index += 1
    return found
