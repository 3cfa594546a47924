"""Reading a git administrative directory without git: small files, pointers, ``[core]`` settings.

The building blocks of worktree discovery (``core/worktrees.py``) and of the listing of linked
worktrees (``core/worktree_list.py``). Every file is read fresh: what a directory holds decides
which checkouts may become roots, so no answer is kept between calls. The one cache here,
``core_entries``, is of a pure function (the text of a config file to its ``[core]`` keys).

Hostile content never raises anything but ``BadFile`` (not a small regular text file), ``OSError``
(unreadable) or ``Stop`` (discovery ends: ``refused`` or ``undecided``, with a diagnostic).
"""

from __future__ import annotations

import errno
import os
from functools import lru_cache
from typing import Literal

from lsp_bridge.core.diagnostics import Diagnostic
from lsp_bridge.core.paths import fold

MAX_SMALL_FILE = 4096  # .git files, gitdir, commondir, HEAD, locked
MAX_CONFIG_FILE = 1 << 20
_MAX_PARSED_CONFIG = 16384  # characters; the parse of a larger config is not remembered
_OPEN_FLAGS = (
    os.O_RDONLY
    | getattr(os, "O_NOFOLLOW", 0)
    | getattr(os, "O_NONBLOCK", 0)  # a FIFO named .git must not block us
    | getattr(os, "O_CLOEXEC", 0)
    | getattr(os, "O_BINARY", 0)
)
SEP = os.sep
SEPS = (os.sep, os.altsep) if os.altsep else os.sep


class Stop(Exception):
    """Discovery ends with ``status`` (refused or undecided) and a diagnostic."""

    def __init__(self, status: Literal["refused", "undecided"], diagnostic: Diagnostic):
        super().__init__(diagnostic.message)
        self.status = status
        self.diagnostic = diagnostic


class BadFile(Exception):
    """Not a small regular text file."""


def refuse(code: str, message: str, file: str) -> Stop:
    return Stop("refused", Diagnostic("error", code, message, file))


def undecided(code: str, message: str, file: str) -> Stop:
    return Stop("undecided", Diagnostic("warning", code, message, file))


def why(err: BaseException) -> str:
    if isinstance(err, OSError):
        return err.strerror or type(err).__name__
    return str(err)


# --- small file reading -----------------------------------------------------


def read_small(path: str, limit: int = MAX_SMALL_FILE) -> bytes:
    """A small file's bytes, never following a final symbolic link.

    Raises ``FileNotFoundError``/``NotADirectoryError`` when absent, ``BadFile``
    when it is a link or too large, ``OSError`` otherwise (a directory fails
    with ``EISDIR``; a FIFO, opened non-blocking, reads empty).
    """
    try:
        fd = os.open(path, _OPEN_FLAGS)
    except OSError as err:
        if err.errno in (errno.ELOOP, errno.EMLINK):
            raise BadFile("is a symbolic link") from None
        raise
    try:
        info = os.fstat(fd)
        want = min(info.st_size, limit) + 1  # no 1 MiB buffer for a 90-byte config
        data = os.read(fd, want)
        if len(data) == want and want <= limit:  # it grew since fstat
            data += os.read(fd, limit + 1 - want)
    finally:
        os.close(fd)
    if len(data) > limit:
        raise BadFile("is too large")
    return data


def text(data: bytes) -> str:
    try:
        decoded = data.decode("utf-8")
    except UnicodeDecodeError:
        raise BadFile("is not UTF-8 text") from None
    if "\x00" in decoded:
        raise BadFile("contains NUL bytes")
    return decoded


def single_line(data: bytes) -> str:
    """The one line of a path file (git strips trailing CR/LF)."""
    line = text(data).rstrip("\r\n")
    if not line or "\n" in line or "\r" in line:
        raise BadFile("is not a single non-empty line")
    return line


def gitfile_target(path: str) -> str:
    """The path named by a ``gitdir: <path>`` file (raw, maybe relative)."""
    return gitfile_line(read_small(path))


def gitfile_line(data: bytes) -> str:
    line = single_line(data)
    if not line.startswith("gitdir: ") or not line[8:].strip():
        raise BadFile("is not a 'gitdir: <path>' file")
    return line[8:]


def resolve(base: str, value: str) -> str:
    """``value`` (absolute, or relative to ``base``) with symbolic links resolved."""
    return os.path.realpath(os.path.join(base, value))


def same(a: str, b: str) -> bool:
    return a == b or fold(a) == fold(b)


def child(directory: str, name: str) -> str:
    """``os.path.join(directory, name)`` for a plain ``name``, without its overhead."""
    return directory + name if directory.endswith(SEPS) else directory + SEP + name


# --- what a git admin directory looks like ----------------------------------


def _valid_head(git_dir: str) -> bool:
    try:
        head = text(read_small(child(git_dir, "HEAD"))).strip()
    except (OSError, BadFile):
        return False
    if head.startswith("ref: refs/"):
        return True
    return len(head) in (40, 64) and all(c in "0123456789abcdef" for c in head)


def admin_kind(git_dir: str) -> Literal["linked", "repository"] | None:
    """``linked`` for a worktree admin dir, ``repository`` for a full git dir."""
    if not _valid_head(git_dir):
        return None
    if os.path.isfile(child(git_dir, "commondir")):
        return "linked"
    objects, refs = child(git_dir, "objects"), child(git_dir, "refs")
    if os.path.isdir(objects) and os.path.isdir(refs):
        return "repository"
    return None


def is_module_dir(repo: str) -> bool:
    """Whether ``repo`` lies under ``<git dir>/modules/`` (a submodule's repository)."""
    current = repo
    while True:
        parent = os.path.dirname(current)
        if parent == current:
            return False
        if os.path.basename(current) == "modules" and admin_kind(parent) == "repository":
            return True
        current = parent


# --- [core] settings ------------------------------------------------------------


def _config_value(raw: str) -> str:
    """A git config value: quotes removed, escapes applied, comment dropped."""
    out, quoted, i = [], False, 0
    while i < len(raw):
        c = raw[i]
        if c == "\\" and i + 1 < len(raw):
            out.append({"n": "\n", "t": "\t", "b": "\b"}.get(raw[i + 1], raw[i + 1]))
            i += 2
            continue
        if c == '"':
            quoted = not quoted
        elif c in "#;" and not quoted:
            break
        else:
            out.append(c)
        i += 1
    return "".join(out).strip()


def _parse_core(config: str) -> tuple[tuple[str, str | None], ...]:
    """``[core]`` keys (lower-cased) of a git config text; ``None`` = bare key."""
    found: dict[str, str | None] = {}
    in_core = False
    for line in config.splitlines():
        line = line.strip()
        if line.startswith("["):
            header, _, line = line.partition("]")
            in_core = header[1:].strip().lower() == "core"
            line = line.strip()
        if not in_core or not line or line[0] in "#;":
            continue
        key, eq, value = line.partition("=")
        found[key.strip().lower()] = _config_value(value) if eq else None
    return tuple(found.items())  # immutable: the result is shared through the cache


_parse_small_core = lru_cache(maxsize=32)(_parse_core)  # a pure function of the text


def core_entries(config: str) -> tuple[tuple[str, str | None], ...]:
    """``[core]`` keys of a config text, remembered for the last few small texts."""
    return _parse_small_core(config) if len(config) <= _MAX_PARSED_CONFIG else _parse_core(config)


def _as_bool(value: str | None, file: str) -> bool:
    if value is None:
        return True
    lowered = value.lower()
    if lowered in ("true", "yes", "on", "1"):
        return True
    if lowered in ("false", "no", "off", "0", ""):
        return False
    raise undecided("git.unknown-layout", f"core.bare in {file} is not a boolean", file)


def core_settings(git_dir: str) -> tuple[bool, str | None]:
    """``(core.bare, core.worktree)`` from ``config`` then ``config.worktree``."""
    entries: dict[str, str | None] = {}
    for name in ("config", "config.worktree"):
        path = child(git_dir, name)
        try:
            entries.update(core_entries(text(read_small(path, MAX_CONFIG_FILE))))
        except (FileNotFoundError, NotADirectoryError):
            continue
        except (OSError, BadFile) as err:
            raise undecided("git.unreadable", f"cannot read {path}: {why(err)}", path) from None
    bare = _as_bool(entries["bare"], git_dir) if "bare" in entries else False
    worktree = entries.get("worktree") or None
    return bare, worktree
