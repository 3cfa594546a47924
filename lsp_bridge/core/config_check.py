"""Validation of one configuration file: schema, values, globs; every problem at file:line:column.

``parse_text`` turns a file's text into a ``Layer`` (what that source says, resolved)
or diagnostics. Relative paths resolve against the config-bearing checkout
(``base_dir``). Version 1 files (no ``version`` or ``version = 1``) may hold
``[safety]`` booleans; each one present yields a ``deprecated-v1-boolean`` warning
and keeps its version 1 meaning. Globs are checked by ``globs.check_pattern``: a
pattern the matcher cannot honour is an error, never a silent non-match.
"""

from __future__ import annotations

import os
import posixpath
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, cast

from lsp_bridge.core.config_files import read_config_text
from lsp_bridge.core.diagnostics import Diagnostic, has_errors
from lsp_bridge.core.globs import GlobError, check_pattern
from lsp_bridge.core.paths import canonical
from lsp_bridge.core.settings import AGENT_SHELL_MODES, GIT_MODES, VERDICTS, WORKTREE_MODES, Mount, PathRule
from lsp_bridge.core.toml_positions import (
    KeyPath,
    _display,
    _Locator,
    _shown,
    parse_toml,
)

if TYPE_CHECKING:
    from typing import Any, Literal  # noqa: F401 - Literal: in a string cast

    from lsp_bridge.core.diagnostics import Severity
    from lsp_bridge.core.settings import Source, Verdict

MAX_APPROVAL_TIMEOUT = 3600


V1_SAFETY_DEFAULTS: Mapping[str, bool] = {  # ast-mcp's meanings: links and external roots are opt-in
    "allow_any_path": False,
    "allow_external_roots": False,
    "allow_temp_directory": True,
    "follow_symlinks": False,
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

TOP_KEYS = ("version", "workspace", "approvals", "agents", "paths", "mounts", "safety", "sandbox")
WORKSPACE_KEYS = ("roots", "worktrees", "git")
APPROVAL_KEYS = ("timeout_seconds",)
AGENTS_KEYS = ("shell",)
PATH_KEYS = ("id", "path", "policies", "includes", "excludes", "follow_symlinks")
POLICY_KEYS = ("read", "write", "delete")
MOUNT_KEYS = ("source", "target", "mode")
MOUNT_MODES = ("ro", "rw")




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
    agent_shell: str | None = None  # [agents] shell
    git: str | None = None  # [workspace] git
    sandbox: Mapping[str, Any] = field(default_factory=dict)  # [sandbox] (core/sandbox_settings.py)


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
    import datetime as _dt  # only for a value of no other type (a TOML date): not imported on every start

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
    try:
        check_pattern(pattern)
    except GlobError as exc:
        ck.error("bad-glob", f"`{_display(path)}` is not a valid glob ({_shown(pattern)}): {exc}", path)
        return False
    return True


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


def _check_workspace(
    ck: _Checker, data: dict[str, Any], base_dir: str | None
) -> tuple[tuple[str, ...] | None, str | None, str | None]:
    table = ck.table(data.get("workspace", {}), ("workspace",), WORKSPACE_KEYS)
    if table is None:
        return None, None, None
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
    git = ck.choice(table["git"], ("workspace", "git"), GIT_MODES) if "git" in table else None
    return roots, worktrees, git


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


def _check_agents(ck: _Checker, data: dict[str, Any]) -> str | None:
    table = ck.table(data.get("agents", {}), ("agents",), AGENTS_KEYS)
    if not table or "shell" not in table:
        return None
    return ck.choice(table["shell"], ("agents", "shell"), AGENT_SHELL_MODES)


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
    roots, worktrees, git = _check_workspace(ck, data, base_dir)
    timeout = _check_approvals(ck, data)
    shell = _check_agents(ck, data)
    rules = _check_paths(ck, data, source, file, base_dir, follow_default)
    mounts = _check_mounts(ck, data, file, base_dir)
    sandbox: dict[str, Any] = {}
    if "sandbox" in data:
        from lsp_bridge.core.sandbox_settings import check_sandbox

        sandbox = check_sandbox(ck, data, source)
    if has_errors(ck.diagnostics) or version is None:
        return None
    return Layer(source, file, version, roots, worktrees, timeout, rules, mounts, safety, shell, git,
                 sandbox=sandbox)


# --------------------------------------------------------------------------- parsing


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


