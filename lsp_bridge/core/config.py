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
sources: every source's ``[[paths]]`` rules stay in force. Rule ids are per source:
a project rule never replaces a user rule, whatever its id (and the user file is a
floor for the project file when deciding: see ``rules``). ``[[mounts]]`` are concatenated the same way, keyed by
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

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from lsp_bridge.core.config_check import (  # noqa: F401 - re-exported: the configuration API
    APPROVAL_KEYS,
    MAX_APPROVAL_TIMEOUT,
    V1_REPLACEMENTS,
    V1_SAFETY_DEFAULTS,
    V2_SAFETY_VALUES,
    Layer,
    ParsedFile,
    diagnostics_for_text,
    parse_file,
    parse_text,
)
from lsp_bridge.core.config_files import (  # noqa: F401 - re-exported
    ENV_CONFIG,
    ENV_ROOTS,
    MAX_CONFIG_BYTES,
    config_candidates,
    find_project_config,
    read_config_text,
    search_stop,
    user_config_path,
)
from lsp_bridge.core.config_trust import ConfigFileText, Recorded, RecordError, TrustStore
from lsp_bridge.core.diagnostics import Diagnostic
from lsp_bridge.core.paths import canonical, is_within
from lsp_bridge.core.settings import (
    AGENT_SHELL_STRICTNESS,
    DENY_ALL,
    GIT_LOOSENESS,
    PROJECT_FILE_NAME,
    Config,
    Mount,
    PathRule,
    Source,
)
from lsp_bridge.core.toml_positions import _error, _shown, parse_toml  # noqa: F401 - re-exported

if TYPE_CHECKING:
    from typing import Any

__all__ = [  # the configuration API, wherever each piece now lives
    "APPROVAL_KEYS", "ENV_CONFIG", "ENV_ROOTS", "MAX_APPROVAL_TIMEOUT", "MAX_CONFIG_BYTES", "PROJECT_FILE_NAME",
    "V1_REPLACEMENTS", "V1_SAFETY_DEFAULTS", "V2_SAFETY_VALUES", "ConfigKeeper", "Layer", "LoadResult", "ParsedFile",
    "Held", "config_candidates", "diagnostics_for_text", "find_project_config", "load_config", "loosening", "parse_file",
    "parse_text", "parse_toml", "read_config_text", "user_config_path",
]


@dataclass(frozen=True)
class LoadResult:
    """``config`` is ``None`` when a configuration file has an error; ``recorded``: the files it read."""

    config: Config | None
    diagnostics: tuple[Diagnostic, ...] = ()
    recorded: Recorded = Recorded()




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
        if layer.agent_shell is not None:  # a project file (a cloned repository) may only make it stricter
            current = fields.get("agent_shell", "confine")
            if layer.source != "project" or AGENT_SHELL_STRICTNESS[layer.agent_shell] > AGENT_SHELL_STRICTNESS[current]:
                fields["agent_shell"] = layer.agent_shell
        if layer.git is not None:  # likewise: a cloned repository cannot hand its own .git over
            current = fields.get("git", "none")
            if layer.source != "project" or GIT_LOOSENESS[layer.git] < GIT_LOOSENESS[current]:
                fields["git"] = layer.git
        rules = _merge_by(rules, layer.paths, lambda rule: (rule.source, rule.id))  # ids are per source
        mounts = _merge_by(mounts, layer.mounts, lambda mount: mount.target)
        if layer.sandbox:
            from lsp_bridge.core.sandbox_settings import merge_sandbox

            merge_sandbox(fields, layer.source, layer.sandbox)
        safety.update(layer.safety)
        if layer.file is not None and (layer.version == 1 or layer.safety):
            fields["safety_source"] = layer.source
    fields.update(safety, paths=rules, mounts=mounts, version=1 if v1_active else 2)
    return fields


def load_config(project_root: str | None, env: Mapping[str, str] = os.environ, *,
                recorded: Recorded | None = None) -> LoadResult:
    """Load and merge every source for ``project_root`` (absolute, or ``None``).

    ``recorded``: the files as they were when this root was last approved
    (``config_trust``), read in place of what is on disk now; the environment is
    read as it is now.
    """
    diagnostics: list[Diagnostic] = []
    layers: list[Layer] = []
    fatal = False
    files: list[str] = []
    texts: list[ConfigFileText] = []
    start = None
    if project_root is not None:
        if "\x00" in project_root or not os.path.isabs(project_root):
            message = f"project root must be an absolute path: {_shown(project_root)}"
            diagnostics.append(_error("bad-project-root", message, None))
            return LoadResult(None, tuple(diagnostics))
        start = canonical(project_root)

    user_file = project_file = None
    stop = search_stop(start) if start is not None else None
    if recorded is not None:
        stop = recorded.stop
        user, project = recorded.file("user"), recorded.file("project")
        user_file, project_file = (user.path if user else None), (project.path if project else None)
        if user is not None:
            fatal |= _take(user, start, layers, diagnostics, files, texts)
        if project is not None:
            fatal |= _take(project, canonical(os.path.dirname(project.path)), layers, diagnostics, files, texts)
    else:
        try:
            user_file = user_config_path(env)
        except ValueError as exc:
            diagnostics.append(_error("bad-environment-config", str(exc), None))
            fatal = True
        explicit = bool(env.get(ENV_CONFIG, "").strip())
        if user_file is not None and (explicit or os.path.lexists(user_file)):
            fatal |= _read_and_take("user", user_file, start, layers, diagnostics, files, texts)
        project_file = find_project_config(start) if start is not None else None
        if project_file is not None:
            fatal |= _read_and_take("project", project_file, canonical(os.path.dirname(project_file)), layers,
                                    diagnostics, files, texts)

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
    return LoadResult(config, tuple(diagnostics), Recorded(tuple(texts), stop))


def _read_and_take(source: Source, path: str, base_dir: str | None, layers: list[Layer],
                   diagnostics: list[Diagnostic], files: list[str], texts: list[ConfigFileText]) -> bool:
    """Read, check and record one file from disk; True when it failed."""
    text, problem = read_config_text(path)
    if problem is not None:
        diagnostics.append(problem)
        return True
    assert text is not None  # read_config_text returns text or a problem
    return _take(ConfigFileText(source, path, text), base_dir, layers, diagnostics, files, texts)


def _take(file: ConfigFileText, base_dir: str | None, layers: list[Layer], diagnostics: list[Diagnostic],
          files: list[str], texts: list[ConfigFileText]) -> bool:
    """Check and record one file's text; True when it failed."""
    parsed = parse_text(file.text, file.path, source=file.source, base_dir=base_dir)  # type: ignore[arg-type]
    diagnostics.extend(parsed.diagnostics)
    if parsed.layer is None:
        return True
    layers.append(parsed.layer)
    files.append(canonical(parsed.file))
    texts.append(file)
    return False


class ConfigKeeper:
    """Keeps the configuration in force for one root: the last good one, or ``DENY_ALL`` if there never
    was one; and, with a ``TrustStore``, never a loosening the person has not approved, across sessions."""

    def __init__(self, project_root: str | None, env: Mapping[str, str] = os.environ, *,
                 store: TrustStore | None = None, agent_writable: Callable[[str], bool] | None = None) -> None:
        self.project_root = project_root
        self.env = env
        self.store = store
        # Where the agent can write (the session's folders): only a change made there can be held.
        self.agent_writable = agent_writable or (lambda path: project_root is not None and is_within(path, project_root))
        self.held: Held | None = None
        self._good: Config | None = None
        self._recorded: Recorded | None = None  # the files ``_good`` was loaded from
        self._last = LoadResult(None)
        self._store_note: Diagnostic | None = None
        self.reload(trusted=False)

    def reload(self, *, trusted: bool = True) -> LoadResult:
        """Load again; on failure the previous good configuration stays current.

        ``trusted=False`` (the files may have been written by the agent: at the start of a
        session, or when a file changed while it ran): a configuration that validates but
        would loosen a decision, compared with the one in force (or, at the start, with the
        one this root was last approved with), is *held*: the one in force stays, ``held``
        says why, and a diagnostic names it, until ``accept_held``. ``trusted=True``: the
        person made the change (saved it in the editor, answered "always"): it applies.
        """
        result = load_config(self.project_root, self.env)
        self._last = result
        if result.config is None:
            return result
        if self._good is None and not trusted:
            self._adopt_record()
        reasons: list[str] = []
        if not trusted and self._good is not None and self._recorded is not None:
            places = self._recorded.changed_places(result.recorded)
            if any(self.agent_writable(p) for p in places):
                reasons = loosening(self._good, result.config)
                if reasons and self._recorded.stop != result.recorded.stop:
                    reasons.insert(0, f"the search for the project file now stops at {result.recorded.stop} "
                                      f"(a .git there), not at {self._recorded.stop}")
        if reasons:
            self.held = Held(result.config, result.recorded, tuple(reasons), self._recorded)
            files = ", ".join(result.config.files) or "the configuration"
            note = Diagnostic("warning", "config-change-held",
                              f"a change to {files} would loosen the policy ({'; '.join(reasons)}); it is not "
                              "applied until you approve it (rootguard config approve, the tray, or save the "
                              "file in the editor)",
                              result.config.project_file or result.config.user_file)
            self._last = LoadResult(result.config, (*result.diagnostics, note), result.recorded)
            return self._last
        self.held = None
        self._apply(result.config, result.recorded)
        return result

    def _adopt_record(self) -> None:
        """At the start: the configuration this root was last approved with is the one in force."""
        if self.store is None:
            return
        try:
            recorded = self.store.recorded(self.project_root)
        except (RecordError, OSError) as exc:
            self._store_note = Diagnostic("warning", "approved-config-unreadable",
                                          f"the record of the configuration last approved for this root is unreadable "
                                          f"({exc}); the configuration on disk is taken as approved", None)
            return
        if recorded is None:
            return  # first use: what is on disk now is recorded as approved
        before = load_config(self.project_root, self.env, recorded=recorded)
        if before.config is not None:
            self._good, self._recorded = before.config, recorded

    def _apply(self, config: Config, recorded: Recorded) -> None:
        self._good, self._recorded = config, recorded
        if self.store is not None:
            try:
                self.store.record(self.project_root, recorded)
            except OSError as exc:  # read-only state (inside a sandbox): the next session compares again
                self._store_note = Diagnostic("warning", "approved-config-unwritten",
                                              f"cannot record the approved configuration ({exc.strerror or exc})", None)

    def accept_held(self) -> bool:
        """The person approved a held change: apply it (and record it as approved)."""
        if self.held is None:
            return False
        held, self.held = self.held, None
        self._apply(held.config, held.recorded)
        return True

    @property
    def current(self) -> Config:
        return self._good if self._good is not None else DENY_ALL

    @property
    def diagnostics(self) -> tuple[Diagnostic, ...]:
        """Diagnostics of the latest load (errors included when it failed)."""
        found = self._last.diagnostics
        return (*found, self._store_note) if self._store_note is not None else found

    @property
    def healthy(self) -> bool:
        """Whether the latest load succeeded (``current`` reflects the files on disk)."""
        return self._last.config is not None


@dataclass(frozen=True)
class Held:
    """A loosening change waiting for the person: the configuration on disk, why it loosens, and the
    files in force instead (to show the difference)."""

    config: Config
    recorded: Recorded
    reasons: tuple[str, ...]
    approved: Recorded | None

    def diff(self) -> str:
        """A unified diff of each configuration file, approved → on disk."""
        import difflib

        before = {f.path: f for f in (self.approved.files if self.approved else ())}
        after = {f.path: f for f in self.recorded.files}
        chunks: list[str] = []
        for path in sorted(set(before) | set(after)):
            old = before[path].text if path in before else ""
            new = after[path].text if path in after else ""
            if old != new:
                chunks += difflib.unified_diff(old.splitlines(True), new.splitlines(True),
                                               f"{path} (approved)" if path in before else "/dev/null",
                                               f"{path} (on disk)" if path in after else "/dev/null")
        approved_mounts = self.approved.toolchain if self.approved else None
        if self.recorded.toolchain is not None and self.recorded.toolchain != approved_mounts:
            old_set, new_set = set(approved_mounts or ()), set(self.recorded.toolchain)
            chunks += ["--- toolchain mounts (approved)\n", "+++ toolchain mounts (found now)\n"]
            chunks += [f"-{p}\n" for p in sorted(old_set - new_set)] + [f"+{p}\n" for p in sorted(new_set - old_set)]
        return "".join(chunks)


_LOOSER_WORKTREES = {"ignore": 0, "request": 1, "include": 2}


def _rule_key(rule: PathRule) -> tuple[Any, ...]:
    return (rule.source, rule.id, rule.anchor, rule.read, rule.write, rule.delete, rule.includes,
            rule.excludes, rule.follow_symlinks)


def loosening(old: Config, new: Config) -> list[str]:
    """Why ``new`` could allow something ``old`` did not (empty: only the same or stricter)."""
    reasons: list[str] = []
    before = {_rule_key(r): r for r in old.paths}
    after = {_rule_key(r): r for r in new.paths}
    for key, rule in after.items():
        if key not in before and (rule.follow_symlinks or any(v in ("allow", "request") for v in
                                                               (rule.read, rule.write, rule.delete))):
            reasons.append(f"rule {rule.id!r} ({rule.source}) is new or changed")
    for key, rule in before.items():
        if key not in after and any(v in ("deny", "request") for v in (rule.read, rule.write, rule.delete)):
            reasons.append(f"rule {rule.id!r} ({rule.source}) was removed or changed")
    if new.roots != old.roots and not (new.roots is not None and old.roots is not None
                                       and set(new.roots) <= set(old.roots)):
        reasons.append("workspace.roots changed")
    if _LOOSER_WORKTREES.get(new.worktrees, 2) > _LOOSER_WORKTREES.get(old.worktrees, 2):
        reasons.append(f"worktrees = {new.worktrees!r} (was {old.worktrees!r})")
    if GIT_LOOSENESS.get(new.git, 2) > GIT_LOOSENESS.get(old.git, 2):
        reasons.append(f"workspace.git = {new.git!r} (was {old.git!r})")
    if AGENT_SHELL_STRICTNESS.get(new.agent_shell, 0) < AGENT_SHELL_STRICTNESS.get(old.agent_shell, 0):
        reasons.append(f"agents.shell = {new.agent_shell!r} (was {old.agent_shell!r})")
    for name in ("allow_any_path", "allow_external_roots", "allow_temp_directory", "follow_symlinks"):
        if getattr(new, name) and not getattr(old, name):
            reasons.append(f"{name} became true")
    from lsp_bridge.core.sandbox_settings import loosened

    reasons += loosened(old, new)
    if set(old.files) - set(new.files) and not reasons:
        reasons.append("a configuration file stopped applying")
    return list(dict.fromkeys(reasons))
