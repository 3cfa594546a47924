"""What every agent's hook call becomes: a tool call with its file accesses, and an answer.

Plain data and pure helpers shared by the four agent modules (``claude``, ``codex``,
``gemini``, ``copilot``). No file system access beyond reading ``HOME`` for ``~``, no
sockets: each agent module turns its hook JSON into a ``ToolCall`` and a verdict into an
``Answer``; ``hook`` does the deciding.
"""

from __future__ import annotations

import os
import posixpath
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from lsp_bridge.core.terminal_text import one_line

OPERATIONS = ("read", "write", "delete", "rename", "metadata")
EXIT_BLOCK = 2  # every agent blocks a tool call on exit 2 with a non-empty stderr
REASON_PREFIX = "Root Guard: "

# Argument names that hold a path in the agents' tools and in MCP tools people write.
PATH_KEYS = (
    "file_path", "path", "absolute_path", "dir_path", "notebook_path", "filePath", "file", "filename",
    "dir", "directory", "target", "source", "destination", "dest", "src", "target_file", "relative_path",
)
PATH_LIST_KEYS = ("paths", "files", "file_paths", "directories")
# In an unknown tool's arguments, a key whose name contains one of these holds a path (``filepath``,
# ``targetFolder``, ``resourceUri``...), whatever its value looks like.
PATH_KEY_WORDS = ("path", "file", "dir", "uri", "folder")
_SOURCE_KEYS = ("source", "src", "from", "old_path", "oldPath", "source_path", "sourcePath")
_DEST_KEYS = ("destination", "dest", "to", "target", "new_path", "newPath", "destination_path", "destinationPath")
_RENAME_WORDS = ("move", "rename")
# A tool whose name says it changes files: its paths are decided for write (delete for removals).
_WRITE_WORDS = ("write", "edit", "create", "save", "put", "patch", "replace", "append", "update", "insert",
                "mkdir", "move", "rename", "copy", "upload", "set")
_DELETE_WORDS = ("delete", "remove", "unlink", "rmdir", "trash")
GLOB_CHARS = "*?[{"
MAX_PATHS = 256  # more path-like values than this in one unknown tool's call: refused (hook reasons stay readable)
MAX_DEPTH = 64  # an unknown tool's arguments nested deeper than this: refused (never a value left unread)


class HookInputError(ValueError):
    """The hook's stdin is not what the agent sends: one line that names the field."""


class UndecidableCall(HookInputError):
    """Well-formed input the hook cannot fully read (too deep, too many paths, a glob that climbs
    after a wildcard...): the call is refused, saying why."""


@dataclass(frozen=True)
class Access:
    """One operation on one path (absolute, lexical: resolved by the engine)."""

    op: str
    path: str
    dest: str | None = None

    def __post_init__(self) -> None:
        if self.op not in OPERATIONS:
            raise ValueError(f"unknown operation {self.op!r}")
        if (self.op == "rename") != (self.dest is not None):
            raise ValueError("a rename, and only a rename, has a destination")


@dataclass(frozen=True)
class ToolCall:
    """One hook call, as the agent described it."""

    agent: str
    event: str  # PreToolUse, BeforeTool, preToolUse, PermissionRequest, DirectoryAdded
    session: str  # the agent's session id ("" when it sends none)
    cwd: str  # absolute
    tool: str = ""
    tool_input: Mapping[str, Any] = field(default_factory=dict)
    accesses: tuple[Access, ...] = ()
    shell: str | None = None  # the command line of a shell tool
    shell_key: str = "command"  # the argument holding it (rewritten under rootguard run)
    added_dirs: tuple[str, ...] = ()  # directories the agent is adding to its own scope (a widening)
    correlation: str | None = None  # the agent's id for this call (tool_use_id...)

    @property
    def is_shell(self) -> bool:
        return self.shell is not None

    @property
    def who(self) -> str:
        """For prompts and the audit log: "claude Read (session 1a2b3c4d)"."""
        session = f" (session {self.session[:12]})" if self.session else ""
        return f"{self.agent} {self.tool or self.event}{session}"


@dataclass(frozen=True)
class Answer:
    """What the hook process prints and exits with."""

    exit_code: int = 0
    stdout: str = ""
    stderr: str = ""

    @property
    def silent(self) -> bool:
        return self.exit_code == 0 and not self.stdout and not self.stderr


NO_OBJECTION = Answer()


def blocked(deny_json: str, reason: str) -> Answer:
    """Exit 2 and the reason on stderr (what every agent obeys), the agent's deny JSON on stdout."""
    return Answer(EXIT_BLOCK, deny_json + "\n", one_line(reason) + "\n")


# ---------------------------------------------------------------------------
# reading the JSON the agent sent


def require_object(payload: Any) -> Mapping[str, Any]:
    if not isinstance(payload, dict):
        raise HookInputError(f"the hook input must be a JSON object, not {type(payload).__name__}")
    return payload


def text_field(payload: Mapping[str, Any], key: str, *, required: bool = True) -> str:
    value = payload.get(key)
    if value is None and not required:
        return ""
    if not isinstance(value, str) or (required and not value):
        what = "missing" if value is None else f"not a non-empty string ({type(value).__name__})"
        raise HookInputError(f"`{key}` is {what} in the hook input")
    if "\x00" in value:
        raise HookInputError(f"`{key}` contains a NUL byte")
    return value


def object_field(payload: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    value = payload.get(key)
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise HookInputError(f"`{key}` must be a JSON object, not {type(value).__name__}")
    return value


def absolute_cwd(payload: Mapping[str, Any], key: str = "cwd") -> str:
    cwd = text_field(payload, key)
    if not os.path.isabs(cwd):
        raise HookInputError(f"`{key}` must be an absolute path, not {cwd!r}")
    return posixpath.normpath(cwd) if os.sep == "/" else os.path.normpath(cwd)


# ---------------------------------------------------------------------------
# paths


def expand(value: str, cwd: str, env: Mapping[str, str]) -> list[str]:
    """The absolute path(s) a tool may take ``value`` for: relative to ``cwd``; a leading ``~``
    is decided both as the home folder (tools that expand it) and literally (tools that do not)."""
    if not isinstance(value, str) or not value or "\x00" in value:
        raise HookInputError(f"a path argument is empty or not a string: {value!r}")
    found: list[str] = []
    if value == "~" or value.startswith("~/"):
        home = env.get("HOME") or os.path.expanduser("~")
        if os.path.isabs(home):
            found.append(os.path.normpath(home + value[1:]))
    found.append(value if os.path.isabs(value) else os.path.join(cwd, value))
    return [_squash(p) for p in dict.fromkeys(found)]


def _squash(path: str) -> str:
    """Collapse repeated slashes and ``.`` components; keep ``..`` (the engine climbs after links
    as the kernel does)."""
    while "//" in path:
        path = path.replace("//", "/")
    while "/./" in path:
        path = path.replace("/./", "/")
    if path.endswith("/.") and len(path) > 2:
        path = path[:-2]
    return path


def glob_base(pattern: str) -> str:
    """The literal directory part of a glob pattern: ``../../**/.env`` -> ``../..``.

    A pattern that can climb or jump past that base (a ``..`` after a wildcard or inside braces:
    ``*/../../.env``, ``{.,../..}/.env``; a brace alternative that is absolute: ``{/etc,.}/x``) is
    refused: the base would not bound what it matches."""
    parts = pattern.split("/")
    literal: list[str] = []
    for part in parts[:-1]:
        if any(c in part for c in GLOB_CHARS):
            break
        literal.append(part)
    else:
        if parts and not any(c in parts[-1] for c in GLOB_CHARS):
            literal.append(parts[-1])  # no glob at all: the pattern names a path
    rest = "/".join(parts[len(literal):])
    if _CLIMBS.search(rest):
        raise UndecidableCall(f"the glob pattern {pattern!r} climbs (`..`) or jumps to an absolute path after a "
                              "wildcard or inside braces, so no folder bounds what it matches; name the folder "
                              "before the first wildcard")
    base = "/".join(literal)
    if pattern.startswith("/") and not base:
        return "/"
    return base or "."


_CLIMBS = re.compile(r"(?:^|[/{,])\.\.(?:$|[/},])|[{,][/~]")


def under(base: str, relative: str) -> str:
    """``relative`` (a glob's literal part) read from ``base``: ``under(".", "../x")`` is ``../x``."""
    if relative.startswith("/") or base in ("", "."):
        return relative
    if relative in ("", "."):
        return base
    return f"{base.rstrip('/')}/{relative}"


def accesses(op: str | tuple[str, ...], values: Iterable[str], cwd: str, env: Mapping[str, str]) -> list[Access]:
    ops = (op,) if isinstance(op, str) else op
    found: list[Access] = []
    for value in values:
        for path in expand(value, cwd, env):
            found.extend(Access(o, path) for o in ops)
    return found


def path_values(args: Mapping[str, Any], keys: Iterable[str] = PATH_KEYS, *, lists: bool = True) -> list[str]:
    """The strings under ``keys`` (present ones; with ``lists``, the strings of ``PATH_LIST_KEYS`` too)."""
    values: list[str] = []
    for key in keys:
        value = args.get(key)
        if isinstance(value, str) and value:
            values.append(value)
        elif value is not None and not isinstance(value, str):
            raise HookInputError(f"tool argument `{key}` must be a string, not {type(value).__name__}")
    for key in PATH_LIST_KEYS if lists else ():
        value = args.get(key)
        if value is None:
            continue
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise HookInputError(f"tool argument `{key}` must be a list of strings")
        values.extend(v for v in value if v)
    return values


def path_like(value: Any) -> bool:
    return isinstance(value, str) and (value.startswith(("/", "~/", "./", "../")) or value in ("~", ".", "..")
                                       or value[:6].lower() == "file:/")


def path_key(key: str | None) -> bool:
    """Whether an unknown tool's argument named ``key`` holds a path (``filepath``, ``targetFolder``...)."""
    if key is None:
        return False
    name = key.lower()
    return key in PATH_KEYS or key in PATH_LIST_KEYS or any(w in name for w in PATH_KEY_WORDS)


def file_uri_path(value: str) -> str:
    """The local path a ``file:`` URI names (percent-decoded); a URI naming another host, or one
    that is not ``file:/PATH`` / ``file://[localhost]/PATH``, is refused."""
    from urllib.parse import unquote

    rest = value[5:]
    if rest.startswith("//"):
        host, slash, path = rest[2:].partition("/")
        if host.lower() not in ("", "localhost"):
            raise UndecidableCall(f"the file URI {value!r} names the host {host!r}, not this machine")
        rest = slash + path
    if not rest.startswith("/"):
        raise UndecidableCall(f"the file URI {value!r} names no absolute path")
    try:
        path = unquote(rest, errors="strict")
    except UnicodeDecodeError:
        raise UndecidableCall(f"the file URI {value!r} is not UTF-8 once decoded") from None
    if "\x00" in path:
        raise UndecidableCall(f"the file URI {value!r} contains a NUL byte")
    return path


def generic_accesses(tool: str, args: Mapping[str, Any], cwd: str, env: Mapping[str, str]) -> list[Access]:
    """An unknown tool (an MCP tool, a new built-in): its path-like arguments (and every argument
    whose name says it is a path), for the operation its name suggests; a move or rename with a
    source and a destination is a rename. Nested objects and lists are looked into, to
    ``MAX_DEPTH`` levels; deeper, more than ``MAX_PATHS`` paths, or a NUL in a string is refused."""
    values: list[str] = []
    _collect(args, values, depth=0)
    if not values:
        return []
    name = tool.lower()
    renamed = _renames(name, args, cwd, env)
    if renamed is not None:
        return renamed
    if any(w in name for w in _DELETE_WORDS):
        op: str | tuple[str, ...] = "delete"
    elif any(w in name for w in _WRITE_WORDS):
        op = "write"
    else:
        op = "read"
    return accesses(op, [_literal(v) for v in values], cwd, env)


def _literal(value: str) -> str:
    """A collected value as the path it names: a ``file:`` URI decoded, a glob's base."""
    if value[:5].lower() == "file:":
        value = file_uri_path(value)
    return glob_base(value) if any(c in value for c in GLOB_CHARS) else value


def _renames(name: str, args: Mapping[str, Any], cwd: str, env: Mapping[str, str]) -> list[Access] | None:
    """A ``*move*``/``*rename*`` tool with one source and one destination argument: the rename
    ``rootguard check --op rename`` decides (the source deleted, the destination written); its other
    path arguments are read. None when the tool is not shaped so."""
    if not any(w in name for w in _RENAME_WORDS):
        return None
    sources = [args[k] for k in _SOURCE_KEYS if isinstance(args.get(k), str) and args[k]]
    dests = [args[k] for k in _DEST_KEYS if isinstance(args.get(k), str) and args[k]]
    if len(sources) != 1 or len(dests) != 1:
        return None
    found = [Access("rename", s, d) for s in expand(_literal(sources[0]), cwd, env)
             for d in expand(_literal(dests[0]), cwd, env)]
    others: list[str] = []
    _collect({k: v for k, v in args.items() if k not in _SOURCE_KEYS and k not in _DEST_KEYS}, others, depth=0)
    return found + accesses("read", [_literal(v) for v in others], cwd, env)


def _collect(value: Any, out: list[str], depth: int, key: str | None = None) -> None:
    if depth > MAX_DEPTH:
        raise UndecidableCall(f"the tool's arguments are nested deeper than {MAX_DEPTH} levels")
    if isinstance(value, dict):
        for k, v in value.items():
            _collect(v, out, depth + 1, k if isinstance(k, str) else None)
    elif isinstance(value, list):
        for v in value:
            _collect(v, out, depth + 1, key)
    elif isinstance(value, str) and value:
        if "\x00" in value:
            raise UndecidableCall(f"tool argument `{key}` contains a NUL byte" if key else
                                  "a tool argument contains a NUL byte")
        if path_like(value) or path_key(key) and "\n" not in value:
            out.append(value)
            if len(out) > MAX_PATHS:
                raise UndecidableCall(f"the tool names more than {MAX_PATHS} paths in one call")
