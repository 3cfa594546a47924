"""Configuration: built-in defaults, user file, project file and environment, merged.

Sources, low to high:

1. built-in defaults (``settings.Config()``);
2. the user file, ``<platformdirs user_config_dir("rootguard")>/config.toml``;
   ``ROOTGUARD_CONFIG`` names another file (it must then exist);
3. the project file: the nearest ``.rootguard.toml`` from the project root upward,
   stopping at the directory that holds ``.git`` (that directory is checked, its
   parents are not). Without a ``.git`` above, only the project root is checked;
4. the environment: ``ROOTGUARD_ROOTS``, an ``os.pathsep`` list of absolute paths,
   sets ``workspace.roots``.

Merging: tables merge key by key; scalar arrays replace (``workspace.roots`` from a
higher source replaces the lower one). Arrays of tables are concatenated across
sources: every source's ``[[paths]]`` rules stay in force and a higher source's rule
with the same ``id`` replaces the lower one, so a project file never erases the
user's persistent grants. ``[[mounts]]`` are concatenated the same way, keyed by
``target`` (one target holds one mount).

Relative paths resolve against the config-bearing checkout: the project file's
directory for the project file, the ``project_root`` argument for the user file.

Version 1 files (no ``version`` or ``version = 1``) may hold ``[safety]`` booleans;
each one present yields a ``deprecated-v1-boolean`` warning and keeps its v1 meaning.
While any v1 file is active the v1 defaults apply (the OS temporary directory is
allowed unless ``allow_temp_directory = false``); version 2 never allows it.

Parsing: files are read with the standard library's strict TOML 1.0 parser
(``tomllib``, ten times faster than tomlkit on a 1 MiB file) and positions come from
``_Locator``; ``migrate`` edits with tomlkit so comments and formatting survive.
Every error names the file, 1-based line and column in ``Diagnostic.format()``.

Fail closed: a file with an error yields no configuration (``LoadResult.config`` is
``None``) and ``ConfigKeeper`` keeps the last good one, or ``DENY_ALL``. A bad
``ROOTGUARD_ROOTS`` entry is reported as an error and dropped (fewer roots, never
more); if none is valid the roots are empty, which denies.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import posixpath
import re
import stat
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, cast

from lsp_bridge.core.diagnostics import Diagnostic, Range, Severity, has_errors
from lsp_bridge.core.globs import glob_problem
from lsp_bridge.core.paths import canonical
from lsp_bridge.core.settings import (
    DENY_ALL,
    PROJECT_FILE_NAME,
    VERDICTS,
    WORKTREE_MODES,
    Config,
    Mount,
    PathRule,
    Source,
    Verdict,
)

MAX_CONFIG_BYTES = 1024 * 1024
ENV_CONFIG = "ROOTGUARD_CONFIG"
ENV_ROOTS = "ROOTGUARD_ROOTS"
MAX_APPROVAL_TIMEOUT = 3600

V1_SAFETY_DEFAULTS: Mapping[str, bool] = {
    "allow_any_path": False,
    "allow_external_roots": False,
    "allow_temp_directory": True,
    "follow_symlinks": True,
}
V2_SAFETY_VALUES: Mapping[str, bool] = {
    "allow_any_path": False,
    "allow_external_roots": False,
    "allow_temp_directory": False,
    "follow_symlinks": True,
}
V1_REPLACEMENTS: Mapping[str, str] = {
    "allow_any_path": "write a [[paths]] rule for the directories you mean",
    "allow_external_roots": "in version 2, workspace.roots may name any directory",
    "allow_temp_directory": "version 2 never allows the temporary directory implicitly; "
    "add a narrow [[paths]] rule",
    "follow_symlinks": "set follow_symlinks on the [[paths]] rules that need it",
}

TOP_KEYS = ("version", "workspace", "approvals", "paths", "mounts", "safety")
WORKSPACE_KEYS = ("roots", "worktrees")
APPROVAL_KEYS = ("timeout_seconds",)
PATH_KEYS = ("id", "path", "policies", "includes", "excludes", "follow_symlinks")
POLICY_KEYS = ("read", "write", "delete")
MOUNT_KEYS = ("source", "target", "mode")
MOUNT_MODES = ("ro", "rw")


# --------------------------------------------------------------------------- results


@dataclass(frozen=True)
class Layer:
    """What one source says, already validated and resolved."""

    source: str
    file: str | None
    version: int = 2
    roots: tuple[str, ...] | None = None
    worktrees: str | None = None
    approval_timeout: float | None = None
    paths: tuple[PathRule, ...] = ()
    mounts: tuple[Mount, ...] = ()
    safety: Mapping[str, bool] = field(default_factory=dict)  # v1 booleans written


@dataclass(frozen=True)
class ParsedFile:
    """One configuration file: its layer (``None`` on error) and diagnostics."""

    file: str
    source: str
    version: int | None
    layer: Layer | None
    diagnostics: tuple[Diagnostic, ...]

    @property
    def ok(self) -> bool:
        return self.layer is not None


@dataclass(frozen=True)
class LoadResult:
    """``config`` is ``None`` when a configuration file has an error."""

    config: Config | None
    diagnostics: tuple[Diagnostic, ...] = ()


# --------------------------------------------------------------------------- where


def user_config_path(env: Mapping[str, str] = os.environ) -> str:
    """The user file's path; ``ROOTGUARD_CONFIG`` overrides it (absolute only)."""
    override = env.get(ENV_CONFIG, "")
    if override.strip():
        if "\x00" in override:
            raise ValueError(f"{ENV_CONFIG} contains a NUL byte")
        expanded = os.path.expanduser(override)
        if not os.path.isabs(expanded):
            raise ValueError(f"{ENV_CONFIG} must be an absolute path, got {_shown(override)}")
        return os.path.normpath(expanded)
    import platformdirs  # imported here: with ROOTGUARD_CONFIG set, never

    return os.path.join(platformdirs.user_config_dir("rootguard"), "config.toml")


def _search_dirs(start: str) -> list[str]:
    """Directories checked for a project file: start up to the one holding ``.git``."""
    chain = [start]
    current = start
    while True:
        if os.path.lexists(os.path.join(current, ".git")):
            return chain
        parent = os.path.dirname(current)
        if parent == current:
            return [start]  # no repository above: never walk to the top
        current = parent
        chain.append(current)


def find_project_config(start: str) -> str | None:
    """The nearest ``.rootguard.toml`` from ``start`` (absolute) up to the git top."""
    for directory in _search_dirs(canonical(start)):
        candidate = os.path.join(directory, PROJECT_FILE_NAME)
        if os.path.lexists(candidate):  # a broken link or a directory is an error later
            return candidate
    return None


def config_candidates(project_root: str | None, env: Mapping[str, str] = os.environ) -> list[str]:
    """Every path where a configuration file would become active (to watch or protect)."""
    found: list[str] = []
    try:
        found.append(user_config_path(env))
    except ValueError:
        pass
    if project_root is not None and os.path.isabs(project_root):
        found += [os.path.join(d, PROJECT_FILE_NAME) for d in _search_dirs(canonical(project_root))]
    return found


# --------------------------------------------------------------------------- positions

_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")
_BARE_VALUE = re.compile(r"[^,\]}\n#]*")

KeyPath = tuple[Any, ...]  # of str (keys) and int (array indexes)


class _Locator:
    """Where keys and values sit in a TOML text, found by a small scanner.

    The TOML parsers keep no positions, so this walks the (already valid) text once and
    maps key paths such as ``("paths", 1, "policies", "read")`` to offsets.
    Positions are best effort: a construct it does not follow leaves the rest
    unmapped and callers fall back to the nearest mapped ancestor.
    """

    def __init__(self, text: str) -> None:
        self._text = text
        self._i = 0
        self._aot: dict[KeyPath, int] = {}
        self._line_starts = [0] + [m.end() for m in re.finditer("\n", text)]
        self.keys: dict[KeyPath, tuple[int, int]] = {}
        self.values: dict[KeyPath, tuple[int, int]] = {}
        try:
            self._document()
        except Exception:  # noqa: BLE001 - positions only; never fail a load on them
            pass

    def range_of(self, path: KeyPath, kind: str = "value") -> Range:
        """The range of ``path``'s key or value, else of its nearest mapped ancestor."""
        while True:
            first, second = (self.keys, self.values) if kind == "key" else (self.values, self.keys)
            span = first.get(path) or second.get(path)
            if span is not None:
                return Range(*self.position(span[0]), *self.position(span[1]))
            if not path:
                return Range.point(0, 0)
            path = path[:-1]
            kind = "key"

    def position(self, offset: int) -> tuple[int, int]:
        line = _bisect_right(self._line_starts, offset) - 1
        return line, offset - self._line_starts[line]

    # -- scanner
    def _peek(self, token: str) -> bool:
        return self._text.startswith(token, self._i)

    def _expect(self, token: str) -> None:
        if not self._peek(token):
            raise ValueError(f"expected {token!r}")
        self._i += len(token)

    def _skip(self, newlines: bool) -> None:
        text = self._text
        while self._i < len(text):
            char = text[self._i]
            if char in " \t" or (newlines and char in "\r\n"):
                self._i += 1
            elif char == "#":
                end = text.find("\n", self._i)
                self._i = len(text) if end < 0 else end
            else:
                return

    def _document(self) -> None:
        prefix: KeyPath = ()
        while True:
            self._skip(newlines=True)
            if self._i >= len(self._text):
                return
            start = self._i
            if self._peek("[["):
                self._i += 2
                parts = self._key()[0]
                self._skip(False)
                self._expect("]]")
                array = self._resolve(parts[:-1]) + (parts[-1],)
                index = self._aot.get(array, 0)
                self._aot[array] = index + 1
                prefix = array + (index,)
                self.keys.setdefault(array, (start, self._i))
                self.keys.setdefault(prefix, (start, self._i))
            elif self._peek("["):
                self._i += 1
                parts = self._key()[0]
                self._skip(False)
                self._expect("]")
                prefix = self._resolve(parts)
                self.keys.setdefault(prefix, (start, self._i))
            else:
                self._key_value(prefix)

    def _resolve(self, parts: tuple[str, ...]) -> KeyPath:
        """A header's key path, with the current index after each array of tables."""
        path: KeyPath = ()
        for part in parts:
            path += (part,)
            if path in self._aot:
                path += (self._aot[path] - 1,)
        return path

    def _key(self) -> tuple[tuple[str, ...], int, int]:
        self._skip(False)
        start = self._i
        parts = []
        while True:
            parts.append(self._simple_key())
            end = self._i
            self._skip(False)
            if not self._peek("."):
                return tuple(parts), start, end
            self._i += 1
            self._skip(False)

    def _simple_key(self) -> str:
        if self._peek('"') or self._peek("'"):
            start = self._i
            self._string()
            raw = self._text[start : self._i]
            if raw.startswith("'"):
                return raw[1:-1]
            try:
                key: str = json.loads(raw)
                return key
            except ValueError:
                return raw[1:-1]
        match = _BARE_KEY.match(self._text, self._i)
        if match is None:
            raise ValueError("expected a key")
        self._i = match.end()
        return match.group()

    def _key_value(self, prefix: KeyPath) -> None:
        parts, start, end = self._key()
        path = prefix + parts
        for size in range(len(prefix) + 1, len(path) + 1):
            self.keys.setdefault(path[:size], (start, end))
        self._skip(False)
        self._expect("=")
        self._skip(False)
        self._value(path)

    def _value(self, path: KeyPath) -> None:
        start = self._i
        char = self._text[self._i]
        if char in "\"'":
            self._string()
        elif char == "[":
            self._i += 1
            self._sequence(lambda index: self._value(path + (index,)), "]")
        elif char == "{":
            self._i += 1
            self._sequence(lambda index: self._key_value(path), "}")
        else:
            match = _BARE_VALUE.match(self._text, self._i)
            assert match is not None  # the pattern matches the empty string too
            self._i = start + len(match.group().rstrip())
            if self._i == start:
                raise ValueError("expected a value")
        self.values.setdefault(path, (start, self._i))

    def _sequence(self, item: Callable[[int], None], close: str) -> None:
        index = 0
        while True:
            self._skip(True)
            if self._peek(close):
                self._i += 1
                return
            item(index)
            index += 1
            self._skip(True)
            if self._peek(","):
                self._i += 1

    def _string(self) -> None:
        text, i = self._text, self._i
        quote = text[i]
        if text.startswith(quote * 3, i):
            j = i + 3
            while not text.startswith(quote * 3, j):
                j += 2 if (quote == '"' and text[j] == "\\") else 1
                if j >= len(text):
                    raise ValueError("unterminated string")
            run = 3
            while run < 5 and j + run < len(text) and text[j + run] == quote:
                run += 1
            self._i = j + run
            return
        j = i + 1
        while text[j] != quote:
            j += 2 if (quote == '"' and text[j] == "\\") else 1
        self._i = j + 1


def _bisect_right(items: list[int], value: int) -> int:
    low, high = 0, len(items)
    while low < high:
        middle = (low + high) // 2
        if value < items[middle]:
            high = middle
        else:
            low = middle + 1
    return low


# --------------------------------------------------------------------------- validation


def _display(path: KeyPath) -> str:
    text = ""
    for part in path:
        if isinstance(part, int):
            text += f"[{part}]"
        else:
            shown = part if _BARE_KEY.fullmatch(part) else json.dumps(part)
            text += f".{shown}" if text else shown
    return text


def _shown(text: str, limit: int = 60) -> str:
    """A user value quoted for a message: escaped and cut short."""
    return repr(text) if len(text) <= limit else repr(text[:limit]) + "..."


def _toml_type(value: Any) -> str:
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, float):
        return "a float"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "a table"
    if isinstance(value, (_dt.datetime, _dt.date, _dt.time)):
        return "a date-time"
    return type(value).__name__


class _Checker:
    """Collects diagnostics for one file, positioned by the locator."""

    def __init__(self, file: str, text: str) -> None:
        self.file = file
        self._text = text
        self._locator: _Locator | None = None
        self.diagnostics: list[Diagnostic] = []

    @property
    def locator(self) -> _Locator:
        """Built on the first diagnostic: a clean file is never scanned twice."""
        if self._locator is None:
            self._locator = _Locator(self._text)
        return self._locator

    def report(
        self, severity: Severity, code: str, message: str, path: KeyPath, kind: str = "value", tags: tuple[str, ...] = ()
    ) -> None:
        rng = self.locator.range_of(path, kind)
        self.diagnostics.append(Diagnostic(severity, code, message, self.file, rng, tags))

    def error(self, code: str, message: str, path: KeyPath, kind: str = "value") -> None:
        self.report("error", code, message, path, kind)

    def wrong_type(self, path: KeyPath, value: Any, expected: str) -> None:
        self.error("wrong-type", f"`{_display(path)}` must be {expected}, not {_toml_type(value)}", path)

    def table(self, value: Any, path: KeyPath, allowed: tuple[str, ...]) -> dict[str, Any] | None:
        """The ``allowed`` entries of table ``value``; other keys are reported as errors."""
        if not isinstance(value, dict):
            self.wrong_type(path, value, "a table")
            return None
        for key in value:
            if key not in allowed:
                self.error(
                    "unknown-key",
                    f"unknown key `{_display(path + (key,))}` (expected one of: {', '.join(allowed)})",
                    path + (key,),
                    "key",
                )
        return {key: item for key, item in value.items() if key in allowed}

    def string(self, value: Any, path: KeyPath) -> str | None:
        if isinstance(value, str):
            return value
        self.wrong_type(path, value, "a string")
        return None

    def boolean(self, value: Any, path: KeyPath) -> bool | None:
        if isinstance(value, bool):
            return value
        self.wrong_type(path, value, "a boolean (true or false)")
        return None

    def choice(self, value: Any, path: KeyPath, choices: tuple[str, ...]) -> str | None:
        text = self.string(value, path)
        if text is None or text in choices:
            return text
        self.error("bad-value", f"`{_display(path)}` must be one of {', '.join(choices)}, not {_shown(text)}", path)
        return None

    def strings(self, value: Any, path: KeyPath) -> list[str] | None:
        if not isinstance(value, list):
            self.wrong_type(path, value, "an array of strings")
            return None
        good = [self.string(item, path + (index,)) for index, item in enumerate(value)]
        strings = [item for item in good if item is not None]
        return strings if len(strings) == len(good) else None

    def path_text(self, value: Any, path: KeyPath) -> str | None:
        text = self.string(value, path)
        if text is None:
            return None
        if "\x00" in text:
            self.error("bad-path", f"`{_display(path)}` contains a NUL byte", path)
            return None
        if not text.strip():
            self.error("bad-path", f"`{_display(path)}` is empty", path)
            return None
        return text


def _resolve(ck: _Checker, text: str, path: KeyPath, base_dir: str | None) -> tuple[str, str | None] | None:
    """(canonical anchor, base dir used or None) for a path field."""
    expanded = os.path.expanduser(text) if text.startswith("~") else text
    if os.path.isabs(expanded):
        return canonical(expanded), None
    if base_dir is None:
        ck.error(
            "relative-path-without-project",
            f"`{_display(path)}` is relative ({_shown(text)}) but there is no project root to resolve it against",
            path,
        )
        return None
    return canonical(os.path.join(base_dir, expanded)), base_dir


def _check_glob(ck: _Checker, pattern: str, path: KeyPath) -> bool:
    problem = glob_problem(pattern)
    if problem is None:
        return True
    ck.error("bad-glob", f"`{_display(path)}` is not a valid glob ({_shown(pattern)}): {problem}", path)
    return False


def _check_version(ck: _Checker, data: dict[str, Any]) -> int | None:
    if "version" not in data:
        return 1
    value = data["version"]
    if isinstance(value, bool) or not isinstance(value, int):
        ck.wrong_type(("version",), value, "an integer (1 or 2)")
        return None
    if value not in (1, 2):
        ck.error("unsupported-version", f"`version` must be 1 or 2, not {value}", ("version",))
        return None
    return value


def _check_safety(ck: _Checker, data: dict[str, Any], version: int | None) -> dict[str, bool]:
    if "safety" not in data or version is None:
        return {}
    if version == 2:
        ck.error(
            "safety-in-v2",
            "`[safety]` is version 1 only; version 2 expresses it with [[paths]] rules",
            ("safety",),
            "key",
        )
        return {}
    table = ck.table(data["safety"], ("safety",), tuple(V1_SAFETY_DEFAULTS))
    found: dict[str, bool] = {}
    for name, value in (table or {}).items():
        flag = ck.boolean(value, ("safety", name))
        if flag is None:
            continue
        found[name] = flag
        ck.report(
            "warning",
            "deprecated-v1-boolean",
            f"`safety.{name}` is a deprecated version 1 setting ({V1_REPLACEMENTS[name]}); "
            "`rootguard config migrate` translates it",
            ("safety", name),
            "key",
            ("deprecated",),
        )
    return found


def _check_workspace(ck: _Checker, data: dict[str, Any], base_dir: str | None) -> tuple[tuple[str, ...] | None, str | None]:
    table = ck.table(data.get("workspace", {}), ("workspace",), WORKSPACE_KEYS)
    if table is None:
        return None, None
    roots = None
    if "roots" in table:
        texts = ck.strings(table["roots"], ("workspace", "roots"))
        resolved = []
        for index, text in enumerate(texts or []):
            where = ("workspace", "roots", index)
            checked = ck.path_text(text, where)
            anchor = checked and _resolve(ck, checked, where, base_dir)
            if anchor:
                resolved.append(anchor[0])
        roots = tuple(dict.fromkeys(resolved))
    worktrees = None
    if "worktrees" in table:
        worktrees = ck.choice(table["worktrees"], ("workspace", "worktrees"), WORKTREE_MODES)
    return roots, worktrees


def _check_approvals(ck: _Checker, data: dict[str, Any]) -> float | None:
    table = ck.table(data.get("approvals", {}), ("approvals",), APPROVAL_KEYS)
    if not table or "timeout_seconds" not in table:
        return None
    where = ("approvals", "timeout_seconds")
    value = table["timeout_seconds"]
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        ck.wrong_type(where, value, "a number of seconds")
        return None
    if not 0 < value <= MAX_APPROVAL_TIMEOUT:  # NaN fails too
        message = f"`approvals.timeout_seconds` must be > 0 and <= {MAX_APPROVAL_TIMEOUT}, not {value}"
        ck.error("bad-value", message, where)
        return None
    return float(value)


def _tables(ck: _Checker, data: dict[str, Any], name: str) -> list[tuple[KeyPath, Any]]:
    value = data.get(name, [])
    if not isinstance(value, list):
        ck.wrong_type((name,), value, f"an array of tables ([[{name}]])")
        return []
    return [((name, index), item) for index, item in enumerate(value)]


def _required(ck: _Checker, table: dict[str, Any], where: KeyPath, key: str) -> Any:
    if key not in table:
        ck.error("missing-key", f"`{_display(where)}` needs `{key}`", where, "key")
    return table.get(key)


def _check_policies(ck: _Checker, value: Any, where: KeyPath) -> dict[str, Verdict | None] | None:
    table = ck.table(value, where, POLICY_KEYS)
    if table is None:
        return None
    verdicts = {name: cast("Verdict | None", ck.choice(table[name], where + (name,), VERDICTS)) for name in table}
    if any(verdict is None for verdict in verdicts.values()):
        return None
    verdicts.setdefault("delete", verdicts.get("write"))
    return verdicts


def _rule_id(ck: _Checker, table: dict[str, Any], where: KeyPath) -> str | None:
    rule_id = _required(ck, table, where, "id")
    rule_id = None if rule_id is None else ck.string(rule_id, where + ("id",))
    if rule_id is not None and not rule_id.strip():
        ck.error("bad-value", f"`{_display(where + ('id',))}` is empty", where + ("id",))
        return None
    return rule_id


def _globs(ck: _Checker, table: dict[str, Any], where: KeyPath) -> tuple[str, ...] | None:
    patterns = ck.strings(table.get(where[-1], []), where)
    if patterns is None:
        return None
    checked = [_check_glob(ck, pattern, where + (index,)) for index, pattern in enumerate(patterns)]
    return tuple(patterns) if all(checked) else None


def _check_rule(
    ck: _Checker, where: KeyPath, value: Any, source: Source, file: str, base_dir: str | None, follow_default: bool
) -> PathRule | None:
    table = ck.table(value, where, PATH_KEYS)
    if table is None:
        return None
    rule_id = _rule_id(ck, table, where)
    text = _required(ck, table, where, "path")
    text = None if text is None else ck.path_text(text, where + ("path",))
    anchor = None if text is None else _resolve(ck, text, where + ("path",), base_dir)
    policies = _check_policies(ck, table.get("policies", {}), where + ("policies",))
    includes = _globs(ck, table, where + ("includes",))
    excludes = _globs(ck, table, where + ("excludes",))
    follow: bool | None = follow_default
    if "follow_symlinks" in table:
        follow = ck.boolean(table["follow_symlinks"], where + ("follow_symlinks",))
    if rule_id is None or text is None or anchor is None or policies is None or includes is None or excludes is None:
        return None
    if follow is None:
        return None
    return PathRule(
        id=rule_id,
        path=text,
        anchor=anchor[0],
        read=policies.get("read"),
        write=policies.get("write"),
        delete=policies.get("delete"),
        includes=includes,
        excludes=excludes,
        follow_symlinks=follow,
        base_dir=anchor[1],
        source=source,
        file=file,
        is_file=os.path.lexists(anchor[0]) and not os.path.isdir(anchor[0]),  # resolved here, not in rules.py
    )


def _check_paths(
    ck: _Checker, data: dict[str, Any], source: Source, file: str, base_dir: str | None, follow_default: bool
) -> tuple[PathRule, ...]:
    rules: list[PathRule] = []
    first_seen: dict[str, KeyPath] = {}
    for where, value in _tables(ck, data, "paths"):
        rule = _check_rule(ck, where, value, source, file, base_dir, follow_default)
        rule_id = value.get("id") if isinstance(value, dict) else None
        if isinstance(rule_id, str) and rule_id in first_seen:
            line = ck.locator.range_of(first_seen[rule_id] + ("id",)).start_line + 1
            message = f"duplicate [[paths]] id {_shown(rule_id)} (first at line {line})"
            ck.error("duplicate-id", message, where + ("id",))
        elif isinstance(rule_id, str):
            first_seen[rule_id] = where
        if rule is not None:
            rules.append(rule)
    return tuple(rules)


def _check_mount(ck: _Checker, where: KeyPath, value: Any, file: str, base_dir: str | None) -> Mount | None:
    table = ck.table(value, where, MOUNT_KEYS)
    if table is None:
        return None
    text = _required(ck, table, where, "source")
    text = None if text is None else ck.path_text(text, where + ("source",))
    source = None if text is None else _resolve(ck, text, where + ("source",), base_dir)
    target = _required(ck, table, where, "target")
    target = None if target is None else ck.path_text(target, where + ("target",))
    if target is not None and not target.startswith("/"):
        ck.error("bad-path", f"`{_display(where + ('target',))}` must be an absolute POSIX path", where + ("target",))
        target = None
    mode = cast('Literal["ro", "rw"] | None', ck.choice(table.get("mode", "ro"), where + ("mode",), MOUNT_MODES))
    if source is None or target is None or mode is None:
        return None
    return Mount(source=source[0], target=_posix_normpath(target), mode=mode, file=file)


def _posix_normpath(target: str) -> str:
    normal = posixpath.normpath(target)
    return "/" + normal.lstrip("/")


def _check_mounts(ck: _Checker, data: dict[str, Any], file: str, base_dir: str | None) -> tuple[Mount, ...]:
    mounts: dict[str, Mount] = {}
    for where, value in _tables(ck, data, "mounts"):
        mount = _check_mount(ck, where, value, file, base_dir)
        if mount is None:
            continue
        if mount.target in mounts:
            ck.error("duplicate-mount", f"two [[mounts]] share target {_shown(mount.target)}", where + ("target",))
            continue
        mounts[mount.target] = mount
    return tuple(mounts.values())


def _version_notice(ck: _Checker, data: dict[str, Any]) -> None:
    ck.report(
        "information",
        "config-version-1",
        "version 1 configuration: the OS temporary directory stays allowed unless "
        "`safety.allow_temp_directory = false`; `rootguard config migrate` translates it to version 2",
        ("version",) if "version" in data else (),
        "key",
    )


def _check_document(
    ck: _Checker, data: dict[str, Any], source: Source, file: str, base_dir: str | None
) -> Layer | None:
    for key in data:
        if key not in TOP_KEYS:
            message = f"unknown key `{_display((key,))}` (expected one of: {', '.join(TOP_KEYS)})"
            ck.error("unknown-key", message, (key,), "key")
    version = _check_version(ck, data)
    safety = _check_safety(ck, data, version)
    if version == 1:
        _version_notice(ck, data)
    follow_default = {**V1_SAFETY_DEFAULTS, **safety}["follow_symlinks"] if version == 1 else False
    roots, worktrees = _check_workspace(ck, data, base_dir)
    timeout = _check_approvals(ck, data)
    rules = _check_paths(ck, data, source, file, base_dir, follow_default)
    mounts = _check_mounts(ck, data, file, base_dir)
    if has_errors(ck.diagnostics) or version is None:
        return None
    return Layer(source, file, version, roots, worktrees, timeout, rules, mounts, safety)


# --------------------------------------------------------------------------- parsing


def _error(code: str, message: str, file: str | None, rng: Range | None = None) -> Diagnostic:
    return Diagnostic("error", code, message, file, rng)


_TOML_ERROR_AT = re.compile(
    r"^(?P<message>.*?)(?: \(at line (?P<line>\d+), column (?P<column>\d+)\)| \(at end of document\))?$", re.S
)


def parse_toml(text: str, file: str) -> tuple[dict[str, Any] | None, Diagnostic | None]:
    """(data, None), or (None, a syntax error diagnostic at the parser's position).

    Loading uses the standard library's strict TOML 1.0 parser (an order of
    magnitude faster than tomlkit on large files); tomlkit keeps no positions
    either, so ``_Locator`` supplies them. ``migrate`` edits with tomlkit.
    """
    try:
        return tomllib.loads(text), None
    except tomllib.TOMLDecodeError as exc:
        match = _TOML_ERROR_AT.match(str(exc))
        rng = _end_range(text)
        assert match is not None  # every part of the pattern is optional
        if match.group("line"):
            rng = Range.point(int(match.group("line")) - 1, int(match.group("column")) - 1)
        return None, _error("toml-syntax", f"invalid TOML: {match.group('message')}", file, rng)
    except Exception as exc:  # noqa: BLE001 - e.g. RecursionError: hostile input must never crash a load
        return None, _error("toml-syntax", f"invalid TOML ({type(exc).__name__})", file, Range.point(0, 0))


def _end_range(text: str) -> Range:
    lines = text.split("\n")
    return Range.point(len(lines) - 1, len(lines[-1]))


def _canonical_file(file: str) -> str:
    return canonical(file) if os.path.isabs(file) else file


def parse_text(text: str, file: str, *, source: Source, base_dir: str | None) -> ParsedFile:
    """Validate configuration ``text`` (as if read from ``file``) and resolve it."""
    data, problem = parse_toml(text, file)
    if problem is not None:
        return ParsedFile(file, source, None, None, (problem,))
    assert data is not None  # parse_toml returns data or a problem
    checker = _Checker(file, text)
    layer = _check_document(checker, data, source, _canonical_file(file), base_dir)
    version = layer.version if layer else None
    return ParsedFile(file, source, version, layer, tuple(sorted(checker.diagnostics, key=_position)))


def _position(diagnostic: Diagnostic) -> tuple[int, int]:
    rng = diagnostic.range
    return (rng.start_line, rng.start_column) if rng else (-1, -1)


def read_config_text(path: str) -> tuple[str | None, Diagnostic | None]:
    """The file's text, or a diagnostic naming it (missing, not a file, too big, not UTF-8)."""
    try:
        info = os.stat(path)
    except FileNotFoundError:
        return None, _error("config-missing", f"configuration file not found: {path}", path)
    except OSError as exc:
        return None, _error("config-unreadable", f"cannot read configuration file {path}: {exc.strerror}", path)
    if stat.S_ISDIR(info.st_mode):
        return None, _error("config-unreadable", f"configuration file {path} is a directory", path)
    if not stat.S_ISREG(info.st_mode):
        return None, _error("config-unreadable", f"configuration file {path} is not a regular file", path)
    if info.st_size > MAX_CONFIG_BYTES:
        return None, _too_large(path)
    try:
        with open(path, "rb") as handle:
            data = handle.read(MAX_CONFIG_BYTES + 1)
    except OSError as exc:
        return None, _error("config-unreadable", f"cannot read configuration file {path}: {exc.strerror}", path)
    if len(data) > MAX_CONFIG_BYTES:
        return None, _too_large(path)
    try:
        return data.decode("utf-8"), None
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n")
        column = exc.start - (data.rfind(b"\n", 0, exc.start) + 1)
        message = f"configuration file {path} is not UTF-8"
        return None, _error("config-encoding", message, path, Range.point(line, column))


def _too_large(path: str) -> Diagnostic:
    return _error("config-too-large", f"configuration file {path} is larger than {MAX_CONFIG_BYTES} bytes", path)


def parse_file(path: str, *, source: Source, base_dir: str | None) -> ParsedFile:
    """Read and validate one configuration file."""
    text, problem = read_config_text(path)
    if problem is not None:
        return ParsedFile(path, source, None, None, (problem,))
    assert text is not None  # read_config_text returns text or a problem
    return parse_text(text, path, source=source, base_dir=base_dir)


def diagnostics_for_text(text: str, file: str, source: Source, base_dir: str | None) -> list[Diagnostic]:
    """Diagnostics for an unsaved editor buffer holding a configuration file."""
    return list(parse_text(text, file, source=source, base_dir=base_dir).diagnostics)


# --------------------------------------------------------------------------- loading


def _environment_roots(env: Mapping[str, str]) -> tuple[tuple[str, ...] | None, list[Diagnostic]]:
    """``ROOTGUARD_ROOTS`` as canonical roots; bad entries are reported and dropped."""
    raw = env.get(ENV_ROOTS)
    if raw is None or not raw.strip():
        return None, []
    roots: list[str] = []
    problems: list[Diagnostic] = []
    for entry in raw.split(os.pathsep):
        if not entry.strip():
            continue
        expanded = os.path.expanduser(entry) if entry.startswith("~") else entry
        if "\x00" in entry or not os.path.isabs(expanded):
            reason = "contains a NUL byte" if "\x00" in entry else "is not an absolute path"
            message = f"{ENV_ROOTS} entry {_shown(entry)} {reason}; ignored"
            problems.append(_error("bad-environment-root", message, None))
            continue
        roots.append(canonical(expanded))
    return tuple(dict.fromkeys(roots)), problems


def _merge_by(lower: tuple[Any, ...], higher: tuple[Any, ...], key: Callable[[Any], Any]) -> tuple[Any, ...]:
    replaced = {key(item) for item in higher}
    return tuple(item for item in lower if key(item) not in replaced) + tuple(higher)


def _merge(layers: list[Layer]) -> dict[str, Any]:
    """Config fields from layers, lowest first (see the module docstring)."""
    fields: dict[str, Any] = {}
    rules: tuple[PathRule, ...] = ()
    mounts: tuple[Mount, ...] = ()
    v1_active = any(layer.version == 1 for layer in layers if layer.file is not None)
    safety = dict(V1_SAFETY_DEFAULTS if v1_active else V2_SAFETY_VALUES)
    for layer in layers:
        if layer.roots is not None:
            fields["roots"], fields["roots_source"] = layer.roots, layer.source
        if layer.worktrees is not None:
            fields["worktrees"] = layer.worktrees
        if layer.approval_timeout is not None:
            fields["approval_timeout"] = layer.approval_timeout
        rules = _merge_by(rules, layer.paths, lambda rule: rule.id)
        mounts = _merge_by(mounts, layer.mounts, lambda mount: mount.target)
        safety.update(layer.safety)
        if layer.file is not None and (layer.version == 1 or layer.safety):
            fields["safety_source"] = layer.source
    fields.update(safety, paths=rules, mounts=mounts, version=1 if v1_active else 2)
    return fields


def load_config(project_root: str | None, env: Mapping[str, str] = os.environ) -> LoadResult:
    """Load and merge every source for ``project_root`` (absolute, or ``None``)."""
    diagnostics: list[Diagnostic] = []
    layers: list[Layer] = []
    fatal = False
    files: list[str] = []
    start = None
    if project_root is not None:
        if "\x00" in project_root or not os.path.isabs(project_root):
            message = f"project root must be an absolute path: {_shown(project_root)}"
            diagnostics.append(_error("bad-project-root", message, None))
            return LoadResult(None, tuple(diagnostics))
        start = canonical(project_root)

    user_file = None
    try:
        user_file = user_config_path(env)
    except ValueError as exc:
        diagnostics.append(_error("bad-environment-config", str(exc), None))
        fatal = True
    explicit = bool(env.get(ENV_CONFIG, "").strip())
    if user_file is not None and (explicit or os.path.lexists(user_file)):
        parsed = parse_file(user_file, source="user", base_dir=start)
        fatal |= _take(parsed, layers, diagnostics, files)

    project_file = find_project_config(start) if start is not None else None
    if project_file is not None:
        parsed = parse_file(project_file, source="project", base_dir=canonical(os.path.dirname(project_file)))
        fatal |= _take(parsed, layers, diagnostics, files)

    env_roots, problems = _environment_roots(env)
    diagnostics += problems
    if env_roots is not None:
        layers.append(Layer("environment", None, roots=env_roots))
    if fatal:
        return LoadResult(None, tuple(diagnostics))

    config = Config(
        **_merge(layers),
        user_file=canonical(user_file) if user_file else None,
        project_file=canonical(project_file) if project_file else None,
        project_root=canonical(os.path.dirname(project_file)) if project_file else start,
        files=tuple(dict.fromkeys(files)),
        diagnostics=tuple(d for d in diagnostics if d.severity != "error"),
    )
    return LoadResult(config, tuple(diagnostics))


def _take(parsed: ParsedFile, layers: list[Layer], diagnostics: list[Diagnostic], files: list[str]) -> bool:
    """Record one parsed file; True when it failed."""
    diagnostics.extend(parsed.diagnostics)
    if parsed.layer is None:
        return True
    layers.append(parsed.layer)
    files.append(canonical(parsed.file))
    return False


class ConfigKeeper:
    """Keeps the last good configuration, or ``DENY_ALL`` if there never was one."""

    def __init__(self, project_root: str | None, env: Mapping[str, str] = os.environ) -> None:
        self.project_root = project_root
        self.env = env
        self._good: Config | None = None
        self._last = LoadResult(None)
        self.reload()

    def reload(self) -> LoadResult:
        """Load again; on failure the previous good configuration stays current."""
        self._last = load_config(self.project_root, self.env)
        if self._last.config is not None:
            self._good = self._last.config
        return self._last

    @property
    def current(self) -> Config:
        return self._good if self._good is not None else DENY_ALL

    @property
    def diagnostics(self) -> tuple[Diagnostic, ...]:
        """Diagnostics of the latest load (errors included when it failed)."""
        return self._last.diagnostics

    @property
    def healthy(self) -> bool:
        """Whether the latest load succeeded (``current`` reflects the files on disk)."""
        return self._last.config is not None
